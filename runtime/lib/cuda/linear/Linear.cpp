//===- Linear.cpp - Linear layers through cuBLASLt (bitpipe/cuda.h) -------===//
//
// y = x W^T + b and its gradients, x [N, In], W [Out, In], y [N, Out], all
// row-major, on cuBLASLt's column-major products (Gemm.h). The mapping: a
// row-major [r, c] buffer is, read column-major with leading dimension c,
// the matrix [c, r], its transpose. So each product is computed transposed,
// with no copy:
//
//   forward      Y = X W^T  <=>  Y^T [Out, N] = W [Out, In] . X^T [In, N]
//                  A = w as [In, Out] (ld In), op T;  B = x as [In, N]
//                  (ld In), op N;  D = y as [Out, N] (ld Out);
//                  m = Out, n = N, k = In. The bias [Out] runs along D's rows,
//                  which is what cuBLASLt's BIAS epilogue broadcasts, and the
//                  aux matrix (pre) has D's layout: ld Out.
//   input grad   dX = dY W  <=>  dX^T [In, N] = W^T [In, Out] . dY^T [Out, N]
//                  A = w as [In, Out] (ld In), op N;  B = dy as [Out, N]
//                  (ld Out), op N;  D = dx as [In, N] (ld In);
//                  m = In, n = N, k = Out; aux (pre) ld In.
//   weight grad  dW += dY^T X  <=>  dW^T [In, Out] += X^T [In, N] . dY [N, Out]
//                  A = x as [In, N] (ld In), op N;  B = dy as [Out, N]
//                  (ld Out), op T;  C = D = dw as [In, Out] (ld In), fp32,
//                  beta = 1; m = In, n = Out, k = N.
//
// Epilogues, where valid (else the plain product and a kernel of
// Elementwise.h; the counts in EpiloguePolicy.h say which ran):
//  - BIAS in the forward, when b is 16-byte aligned.
//  - GELU_AUX(_BIAS) in the fused forward (aux = pre = x W^T + b,
//    y = gelu(pre)) and DGELU in bwd_input_gelu (aux = pre), in bf16 only,
//    and only when the aux matrix's leading dimension (Out, resp. In) is a
//    multiple of 8 and pre is 16-byte aligned, as cuBLASLt requires of it
//    (cublasLt.h, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD). cuBLASLt's
//    documentation does not write out its GELU; other training code that
//    uses these epilogues treats it as the tanh form, and LinearTest's
//    GELU-tail test checks that it is (there the erf form is 3-30% away).
//    The fp32 variants do not use these two epilogues: --precision fp32
//    exists to match the CPU run to 1e-4, which needs GELU to ~1e-6, and
//    nothing documents the epilogue's accuracy; bf16 needs it only to its
//    own rounding (2^-9), which the tail test checks element by element.
//  - The bias gradient is never an epilogue: cuBLASLt's BGRADA/BGRADB write
//    the bias gradient, while cuda.h's db accumulates (micro-batches, tied
//    weights). db += column sums of dy is one deterministic kernel of ours
//    (Elementwise.h), as PyTorch eager also reduces the bias gradient
//    separately; it reads dy once more (N x Out), small next to the product.
//
// Every tensor pointer is a device pointer; work is enqueued on `stream`.
//
//===----------------------------------------------------------------------===//

#include "Elementwise.h"
#include "EpiloguePolicy.h"
#include "Gemm.h"
#include "LtContext.h"

#include "../Launch.h"

#include <atomic>
#include <initializer_list>
#include <type_traits>

namespace bitpipe::runtime::cuda::linear {
namespace {

std::atomic<bool> fusionEnabled{true};
std::atomic<int64_t> fusedCount{0};
std::atomic<int64_t> unfusedCount{0};

/// cuBLASLt reads epilogue vectors and matrices with 16-byte loads; a
/// pointer less aligned than that (a view into a buffer) takes the unfused
/// path rather than rely on the heuristic to notice.
constexpr uint32_t kEpilogueAlignment = 16;
/// cublasLt.h: the GELU aux matrix's leading dimension "must be divisible
/// by 8".
constexpr int64_t kAuxLdMultiple = 8;

template <typename T> constexpr Element elementOf() {
  return std::is_same_v<T, bp_bf16_t> ? Element::Bf16 : Element::F32;
}

/// The GELU epilogues in bf16 only; see the file comment.
template <typename T>
constexpr bool kGeluEpilogues = std::is_same_v<T, bp_bf16_t>;

bool canFuseWith(const void *p) {
  return fusionEnabled.load(std::memory_order_relaxed) &&
         alignmentOf(p) >= kEpilogueAlignment;
}

/// True if no non-null output is also one of the inputs (runtime.h: outputs
/// do not alias inputs). The same address only: the cheap check that
/// catches a buffer passed twice.
bool outputsApart(std::initializer_list<const void *> outputs,
                  std::initializer_list<const void *> inputs) {
  for (const void *out : outputs)
    for (const void *in : inputs)
      if (out && out == in)
        return false;
  return true;
}

bp_status_t invalid(const CallSite &site, const char *expected) {
  reportError(site, expected);
  return BP_ERR_INVALID_ARGUMENT;
}

/// A product without an epilogue; the three below fill in the rest.
GemmDesc plainDesc(Element ab, Element cd) {
  GemmDesc d{};
  d.ab = ab;
  d.cd = cd;
  d.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  d.auxLd = 0;
  return d;
}

/// Y^T = W X^T (+ b): see the file comment.
template <typename T> GemmDesc forwardDesc(int64_t N, int64_t In, int64_t Out) {
  GemmDesc d = plainDesc(elementOf<T>(), elementOf<T>());
  d.transA = true;
  d.transB = false;
  d.m = Out, d.n = N, d.k = In;
  d.lda = In, d.ldb = In, d.ldd = Out;
  return d;
}

/// dX^T = W^T dY^T.
template <typename T>
GemmDesc inputGradDesc(int64_t N, int64_t In, int64_t Out) {
  GemmDesc d = plainDesc(elementOf<T>(), elementOf<T>());
  d.transA = false;
  d.transB = false;
  d.m = In, d.n = N, d.k = Out;
  d.lda = In, d.ldb = Out, d.ldd = In;
  return d;
}

/// dW^T += X^T dY, into fp32.
template <typename T>
GemmDesc weightGradDesc(int64_t N, int64_t In, int64_t Out) {
  GemmDesc d = plainDesc(elementOf<T>(), Element::F32);
  d.transA = false;
  d.transB = true;
  d.m = In, d.n = Out, d.k = N;
  d.lda = In, d.ldb = Out, d.ldd = In;
  return d;
}

/// y = x W^T + b (b may be null), the bias through the BIAS epilogue where
/// valid; *biasKernel says whether a kernel of ours added it instead.
/// Arguments already checked.
template <typename T>
bp_status_t forward(const T *x, const T *w, const T *b, T *y, int64_t N,
                    int64_t In, int64_t Out, cudaStream_t stream,
                    const CallSite &site, bool *biasKernel) {
  *biasKernel = false;
  GemmDesc desc = forwardDesc<T>(N, In, Out);
  const GemmOperands ops{w, x, y, /*beta=*/0.0f, b, nullptr};
  bool ran = false;
  if (b && canFuseWith(b)) {
    desc.epilogue = CUBLASLT_EPILOGUE_BIAS;
    if (bp_status_t s =
            runGemm(desc, ops, stream, site, /*mayDecline=*/true, &ran);
        s != BP_OK || ran)
      return s;
    desc.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  }
  if (bp_status_t s =
          runGemm(desc, ops, stream, site, /*mayDecline=*/false, &ran);
      s != BP_OK || !b)
    return s;
  *biasKernel = true;
  return biasGelu(y, b, static_cast<T *>(nullptr), N, Out, stream,
                  site.function);
}

/// Counts one call that had epilogue work.
void countEpilogue(bool usedKernel) {
  ++(usedKernel ? unfusedCount : fusedCount);
}

template <typename T>
bp_status_t geluForward(const T *x, const T *w, const T *b, T *y, T *pre,
                        int64_t N, int64_t In, int64_t Out, cudaStream_t stream,
                        const CallSite &site) {
  if (kGeluEpilogues<T> && Out % kAuxLdMultiple == 0 && canFuseWith(pre) &&
      (!b || canFuseWith(b))) {
    GemmDesc desc = forwardDesc<T>(N, In, Out);
    desc.epilogue =
        b ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    desc.auxLd = Out;
    const GemmOperands ops{w, x, y, /*beta=*/0.0f, b, pre};
    bool ran = false;
    if (bp_status_t s =
            runGemm(desc, ops, stream, site, /*mayDecline=*/true, &ran);
        s != BP_OK)
      return s;
    if (ran) {
      countEpilogue(/*usedKernel=*/false);
      return BP_OK;
    }
  }
  // pre = x W^T + b (its bias possibly fused), then y = gelu(pre).
  bool biasKernel = false;
  if (bp_status_t s =
          forward(x, w, b, pre, N, In, Out, stream, site, &biasKernel);
      s != BP_OK)
    return s;
  countEpilogue(/*usedKernel=*/true);
  return biasGelu(pre, static_cast<const T *>(nullptr), y, N, Out, stream,
                  site.function);
}

template <typename T>
bp_status_t inputGrad(const T *dy, const T *w, T *dx, int64_t N, int64_t In,
                      int64_t Out, cudaStream_t stream, const CallSite &site) {
  bool ran = false;
  return runGemm(inputGradDesc<T>(N, In, Out),
                 {w, dy, dx, /*beta=*/0.0f, nullptr, nullptr}, stream, site,
                 /*mayDecline=*/false, &ran);
}

template <typename T>
bp_status_t inputGradGelu(const T *dy, const T *w, const T *pre, T *dx,
                          int64_t N, int64_t In, int64_t Out,
                          cudaStream_t stream, const CallSite &site) {
  if (kGeluEpilogues<T> && In % kAuxLdMultiple == 0 && canFuseWith(pre)) {
    GemmDesc desc = inputGradDesc<T>(N, In, Out);
    desc.epilogue = CUBLASLT_EPILOGUE_DGELU;
    desc.auxLd = In;
    // DGELU only reads aux; the descriptor's attribute is a void *.
    const GemmOperands ops{
        w, dy, dx, /*beta=*/0.0f, nullptr, const_cast<T *>(pre)};
    bool ran = false;
    if (bp_status_t s =
            runGemm(desc, ops, stream, site, /*mayDecline=*/true, &ran);
        s != BP_OK)
      return s;
    if (ran) {
      countEpilogue(/*usedKernel=*/false);
      return BP_OK;
    }
  }
  if (bp_status_t s = inputGrad(dy, w, dx, N, In, Out, stream, site);
      s != BP_OK)
    return s;
  countEpilogue(/*usedKernel=*/true);
  return scaleByGeluGrad(dx, pre, N * In, stream, site.function);
}

template <typename T>
bp_status_t weightGrad(const T *dy, const T *x, float *dw, float *db, int64_t N,
                       int64_t In, int64_t Out, cudaStream_t stream,
                       const CallSite &site) {
  bool ran = false;
  if (bp_status_t s = runGemm(weightGradDesc<T>(N, In, Out),
                              {x, dy, dw, /*beta=*/1.0f, nullptr, nullptr},
                              stream, site, /*mayDecline=*/false, &ran);
      s != BP_OK || !db)
    return s;
  return addColumnSums(dy, db, N, Out, stream, site.function);
}

//===----------------------------------------------------------------------===//
// The C ABI's argument checks, shared by both element types.
//===----------------------------------------------------------------------===//

template <typename T>
bp_status_t checkedForward(const T *x, const T *w, const T *b, T *y, int64_t N,
                           int64_t In, int64_t Out, void *stream,
                           const CallSite &site) {
  if (!BP_KERNEL_ARGS_VALID(linear_fwd))
    return invalid(site, "expected non-null x, w, y (b may be null) and "
                         "positive N, In, Out");
  if (!outputsApart({y}, {x, w, b}))
    return invalid(site, "expected y to be none of x, w, b");
  bool biasKernel = false;
  bp_status_t s =
      forward(x, w, b, y, N, In, Out, asStream(stream), site, &biasKernel);
  if (s == BP_OK && b)
    countEpilogue(biasKernel);
  return s;
}

template <typename T>
bp_status_t checkedGeluForward(const T *x, const T *w, const T *b, T *y, T *pre,
                               int64_t N, int64_t In, int64_t Out, void *stream,
                               const CallSite &site) {
  if (!BP_KERNEL_ARGS_VALID(linear_gelu_fwd))
    return invalid(site, "expected non-null x, w, y, pre (b may be null) and "
                         "positive N, In, Out");
  if (!outputsApart({y, pre}, {x, w, b}) || y == pre)
    return invalid(site, "expected y and pre to be two buffers, neither of "
                         "them x, w or b");
  return geluForward(x, w, b, y, pre, N, In, Out, asStream(stream), site);
}

template <typename T>
bp_status_t checkedInputGrad(const T *dy, const T *w, T *dx, int64_t N,
                             int64_t In, int64_t Out, void *stream,
                             const CallSite &site) {
  if (!BP_KERNEL_ARGS_VALID(linear_bwd_input))
    return invalid(site, "expected non-null dy, w, dx and positive N, In, Out");
  if (!outputsApart({dx}, {dy, w}))
    return invalid(site, "expected dx to be neither dy nor w");
  return inputGrad(dy, w, dx, N, In, Out, asStream(stream), site);
}

template <typename T>
bp_status_t checkedInputGradGelu(const T *dy, const T *w, const T *pre, T *dx,
                                 int64_t N, int64_t In, int64_t Out,
                                 void *stream, const CallSite &site) {
  if (!BP_KERNEL_ARGS_VALID(linear_bwd_input_gelu))
    return invalid(site,
                   "expected non-null dy, w, pre, dx and positive N, In, Out");
  // The unfused path writes dx before it reads pre.
  if (!outputsApart({dx}, {dy, w, pre}))
    return invalid(site, "expected dx to be none of dy, w, pre");
  return inputGradGelu(dy, w, pre, dx, N, In, Out, asStream(stream), site);
}

template <typename T>
bp_status_t checkedWeightGrad(const T *dy, const T *x, float *dw, float *db,
                              int64_t N, int64_t In, int64_t Out, void *stream,
                              const CallSite &site) {
  if (!BP_KERNEL_ARGS_VALID(linear_bwd_weight))
    return invalid(site, "expected non-null dy, x, dw (db may be null) and "
                         "positive N, In, Out");
  if (!outputsApart({dw, db}, {dy, x}) || dw == db)
    return invalid(site, "expected dw and db to be two buffers, neither of "
                         "them dy or x");
  return weightGrad(dy, x, dw, db, N, In, Out, asStream(stream), site);
}

} // namespace

void setEpilogueFusion(bool enabled) { fusionEnabled = enabled; }
bool epilogueFusion() { return fusionEnabled; }
EpilogueCounts epilogueCounts() {
  EpilogueCounts c;
  c.fused = fusedCount;
  c.unfused = unfusedCount;
  return c;
}

} // namespace bitpipe::runtime::cuda::linear

using namespace bitpipe::runtime::cuda::linear;

extern "C" {

bp_status_t bp_cuda_linear_fwd(const bp_bf16_t *x, const bp_bf16_t *w,
                               const bp_bf16_t *b, bp_bf16_t *y, int64_t N,
                               int64_t In, int64_t Out, void *stream) {
  return checkedForward(x, w, b, y, N, In, Out, stream,
                        {"bp_cuda_linear_fwd", N, In, Out});
}

bp_status_t bp_cuda_linear_gelu_fwd(const bp_bf16_t *x, const bp_bf16_t *w,
                                    const bp_bf16_t *b, bp_bf16_t *y,
                                    bp_bf16_t *pre, int64_t N, int64_t In,
                                    int64_t Out, void *stream) {
  return checkedGeluForward(x, w, b, y, pre, N, In, Out, stream,
                            {"bp_cuda_linear_gelu_fwd", N, In, Out});
}

bp_status_t bp_cuda_linear_bwd_input(const bp_bf16_t *dy, const bp_bf16_t *w,
                                     bp_bf16_t *dx, int64_t N, int64_t In,
                                     int64_t Out, void *stream) {
  return checkedInputGrad(dy, w, dx, N, In, Out, stream,
                          {"bp_cuda_linear_bwd_input", N, In, Out});
}

bp_status_t bp_cuda_linear_bwd_input_gelu(const bp_bf16_t *dy,
                                          const bp_bf16_t *w,
                                          const bp_bf16_t *pre, bp_bf16_t *dx,
                                          int64_t N, int64_t In, int64_t Out,
                                          void *stream) {
  return checkedInputGradGelu(dy, w, pre, dx, N, In, Out, stream,
                              {"bp_cuda_linear_bwd_input_gelu", N, In, Out});
}

bp_status_t bp_cuda_linear_bwd_weight(const bp_bf16_t *dy, const bp_bf16_t *x,
                                      float *dw, float *db, int64_t N,
                                      int64_t In, int64_t Out, void *stream) {
  return checkedWeightGrad(dy, x, dw, db, N, In, Out, stream,
                           {"bp_cuda_linear_bwd_weight", N, In, Out});
}

bp_status_t bp_cuda_linear_fwd_f32(const float *x, const float *w,
                                   const float *b, float *y, int64_t N,
                                   int64_t In, int64_t Out, void *stream) {
  return checkedForward(x, w, b, y, N, In, Out, stream,
                        {"bp_cuda_linear_fwd_f32", N, In, Out});
}

bp_status_t bp_cuda_linear_gelu_fwd_f32(const float *x, const float *w,
                                        const float *b, float *y, float *pre,
                                        int64_t N, int64_t In, int64_t Out,
                                        void *stream) {
  return checkedGeluForward(x, w, b, y, pre, N, In, Out, stream,
                            {"bp_cuda_linear_gelu_fwd_f32", N, In, Out});
}

bp_status_t bp_cuda_linear_bwd_input_f32(const float *dy, const float *w,
                                         float *dx, int64_t N, int64_t In,
                                         int64_t Out, void *stream) {
  return checkedInputGrad(dy, w, dx, N, In, Out, stream,
                          {"bp_cuda_linear_bwd_input_f32", N, In, Out});
}

bp_status_t bp_cuda_linear_bwd_input_gelu_f32(const float *dy, const float *w,
                                              const float *pre, float *dx,
                                              int64_t N, int64_t In,
                                              int64_t Out, void *stream) {
  return checkedInputGradGelu(
      dy, w, pre, dx, N, In, Out, stream,
      {"bp_cuda_linear_bwd_input_gelu_f32", N, In, Out});
}

bp_status_t bp_cuda_linear_bwd_weight_f32(const float *dy, const float *x,
                                          float *dw, float *db, int64_t N,
                                          int64_t In, int64_t Out,
                                          void *stream) {
  return checkedWeightGrad(dy, x, dw, db, N, In, Out, stream,
                           {"bp_cuda_linear_bwd_weight_f32", N, In, Out});
}

} // extern "C"
