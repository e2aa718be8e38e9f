//===- AttentionEntry.cpp - bitpipe/cuda.h's bp_cuda_attention_* ----------===//
//
// Checks the arguments on the host (before anything is enqueued), then picks
// the kernel family (AttentionKernels.h): the tensor-core kernels for bf16
// when the head dimension and the pointers allow them, the CUDA-core kernels
// otherwise and for fp32. The backward's scratch (D = dO . O per row,
// [B, nh, T] fp32: O(T), never T x T) comes from the device pool and goes
// back to it in stream order.
//
// bp_cuda_attention_dropout_* choose the same way: both families take the
// dropout (AttentionKernels.h), so no path refuses it. p = 0 passes no
// dropout on: attention_fwd/bwd's kernels, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "AttentionKernels.h"
#include "core/ArgChecks.h"
#include "core/Dropout.h"

#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <limits>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::cuda::attention;

namespace {

/// The largest batch and head count: they are grid dimensions y and z.
constexpr int64_t kMaxGridYZ = 65535;

/// Whether the sizes make a call these kernels can run; prints what was
/// expected when they do not (the caller has made the roles' checks of
/// Kernels.h).
bool validShape(const char *fn, int64_t B, int64_t T, int64_t H, int64_t nh,
                int maxHeadDim) {
  if (H % nh != 0) {
    std::fprintf(stderr,
                 "bitpipe: %s: expected H divisible by nh, got H = %lld, "
                 "nh = %lld\n",
                 fn, static_cast<long long>(H), static_cast<long long>(nh));
    return false;
  }
  const int64_t d = H / nh;
  if (d > maxHeadDim) {
    std::fprintf(stderr,
                 "bitpipe: %s: expected a head dimension H / nh of at most "
                 "%d, got %lld\n",
                 fn, maxHeadDim, static_cast<long long>(d));
    return false;
  }
  if (B > kMaxGridYZ || nh > kMaxGridYZ ||
      T > std::numeric_limits<int>::max() / 2 ||
      3 * H > std::numeric_limits<int>::max()) {
    std::fprintf(stderr,
                 "bitpipe: %s: expected B and nh at most %lld, T below 2^30 "
                 "and 3H below 2^31, got B = %lld, T = %lld, H = %lld, nh = %lld\n",
                 fn, static_cast<long long>(kMaxGridYZ),
                 static_cast<long long>(B), static_cast<long long>(T),
                 static_cast<long long>(H), static_cast<long long>(nh));
    return false;
  }
  return true;
}

bool aligned16(std::initializer_list<const void *> ptrs) {
  for (const void *p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
      return false;
  return true;
}

/// The tensor-core kernels: 16-byte loads of whole 8-column pieces of a
/// head, so d % 8 == 0 and every tensor 16-byte aligned (the pool's blocks
/// are 256-byte aligned; an offset view might not be).
bool useFlash(const Shape &s, std::initializer_list<const void *> ptrs) {
  return flashSupportsHeadDim(s.d) && aligned16(ptrs);
}

/// The dropout of a call that checked its arguments: none at p = 0.
DropoutArgs dropoutOf(const int32_t *key, int32_t site, float p) {
  DropoutArgs drop;
  if (p != 0.0f)
    drop = {key, site, p};
  return drop;
}

/// The backward's rowDot scratch, from the pool, returned in stream order.
class RowDotScratch {
public:
  RowDotScratch(const Shape &s, void *stream)
      : stream_(stream),
        data_(static_cast<float *>(bp_cuda_alloc(
            static_cast<int64_t>(s.B) * s.nh * s.T * sizeof(float), stream))) {
  }
  ~RowDotScratch() { bp_cuda_free(data_, stream_); }
  RowDotScratch(const RowDotScratch &) = delete;
  RowDotScratch &operator=(const RowDotScratch &) = delete;
  float *get() const { return data_; }

private:
  void *stream_;
  float *data_;
};

/// The bf16 calls once checked: the tensor-core kernels where they apply,
/// else the CUDA-core ones.
bp_status_t forwardBf16(const bp_bf16_t *qkv, bp_bf16_t *out, float *lse,
                        const Shape &s, const DropoutArgs &drop, void *stream) {
  if (useFlash(s, {qkv, out}))
    return flashForward(qkv, out, lse, s, drop, stream);
  return simtForward(qkv, out, lse, s, drop, stream);
}

bp_status_t backwardBf16(const bp_bf16_t *qkv, const bp_bf16_t *out,
                         const bp_bf16_t *dout, const float *lse,
                         bp_bf16_t *dqkv, const Shape &s,
                         const DropoutArgs &drop, void *stream) {
  RowDotScratch rowDot(s, stream);
  if (!rowDot.get())
    return BP_ERR_OUT_OF_MEMORY;
  if (useFlash(s, {qkv, out, dout, dqkv}))
    return flashBackward(qkv, out, dout, lse, dqkv, rowDot.get(), s, drop,
                         stream);
  return simtBackward(qkv, out, dout, lse, dqkv, rowDot.get(), s, drop, stream);
}

/// The fp32 backward once checked: the CUDA-core kernels.
bp_status_t backwardF32(const float *qkv, const float *out, const float *dout,
                        const float *lse, float *dqkv, const Shape &s,
                        const DropoutArgs &drop, void *stream) {
  RowDotScratch rowDot(s, stream);
  if (!rowDot.get())
    return BP_ERR_OUT_OF_MEMORY;
  return simtBackward(qkv, out, dout, lse, dqkv, rowDot.get(), s, drop, stream);
}

} // namespace

namespace bitpipe::runtime::cuda::attention {

bool validDropout(const char *fn, int64_t B, int64_t T, int64_t nh,
                  int32_t site, float p) {
  if (!dropoutArgsValid(site, p)) {
    std::fprintf(stderr,
                 "bitpipe: %s: expected a dropout probability p in [0, 1) "
                 "and a site in [0, %lld), got p = %g, site = %d\n",
                 fn, static_cast<long long>(kDropoutMaxSites),
                 static_cast<double>(p), static_cast<int>(site));
    return false;
  }
  if (!productAtMost({B, nh, T, T}, kDropoutMaxElements)) {
    std::fprintf(stderr,
                 "bitpipe: %s: expected at most 2^40 attention probabilities "
                 "B nh T T, got B = %lld, nh = %lld, T = %lld\n",
                 fn, static_cast<long long>(B), static_cast<long long>(nh),
                 static_cast<long long>(T));
    return false;
  }
  return true;
}

} // namespace bitpipe::runtime::cuda::attention

extern "C" bp_status_t bp_cuda_attention_fwd(const bp_bf16_t *qkv,
                                             bp_bf16_t *out, float *lse,
                                             int64_t B, int64_t T, int64_t H,
                                             int64_t nh, int32_t causal,
                                             void *stream) {
  if (!BP_KERNEL_ARGS_VALID(attention_fwd) ||
      !validShape("bp_cuda_attention_fwd", B, T, H, nh, kSimtMaxHeadDim))
    return BP_ERR_INVALID_ARGUMENT;
  return forwardBf16(qkv, out, lse, makeShape(B, T, H, nh, causal != 0),
                     DropoutArgs{}, stream);
}

extern "C" bp_status_t
bp_cuda_attention_bwd(const bp_bf16_t *qkv, const bp_bf16_t *out,
                      const bp_bf16_t *dout, const float *lse, bp_bf16_t *dqkv,
                      int64_t B, int64_t T, int64_t H, int64_t nh,
                      int32_t causal, void *stream) {
  if (!BP_KERNEL_ARGS_VALID(attention_bwd) ||
      !validShape("bp_cuda_attention_bwd", B, T, H, nh, kSimtMaxHeadDim))
    return BP_ERR_INVALID_ARGUMENT;
  return backwardBf16(qkv, out, dout, lse, dqkv,
                      makeShape(B, T, H, nh, causal != 0), DropoutArgs{},
                      stream);
}

extern "C" bp_status_t bp_cuda_attention_fwd_f32(const float *qkv, float *out,
                                                 float *lse, int64_t B,
                                                 int64_t T, int64_t H,
                                                 int64_t nh, int32_t causal,
                                                 void *stream) {
  if (!BP_KERNEL_ARGS_VALID(attention_fwd) ||
      !validShape("bp_cuda_attention_fwd_f32", B, T, H, nh, kSimtMaxHeadDim))
    return BP_ERR_INVALID_ARGUMENT;
  return simtForward(qkv, out, lse, makeShape(B, T, H, nh, causal != 0),
                     DropoutArgs{}, stream);
}

extern "C" bp_status_t
bp_cuda_attention_bwd_f32(const float *qkv, const float *out,
                          const float *dout, const float *lse, float *dqkv,
                          int64_t B, int64_t T, int64_t H, int64_t nh,
                          int32_t causal, void *stream) {
  if (!BP_KERNEL_ARGS_VALID(attention_bwd) ||
      !validShape("bp_cuda_attention_bwd_f32", B, T, H, nh, kSimtMaxHeadDim))
    return BP_ERR_INVALID_ARGUMENT;
  return backwardF32(qkv, out, dout, lse, dqkv,
                     makeShape(B, T, H, nh, causal != 0), DropoutArgs{},
                     stream);
}

extern "C" bp_status_t
bp_cuda_attention_dropout_fwd(const bp_bf16_t *qkv, bp_bf16_t *out, float *lse,
                              int64_t B, int64_t T, int64_t H, int64_t nh,
                              int32_t causal, const int32_t *key, int32_t site,
                              float p, void *stream) {
  const char *fn = "bp_cuda_attention_dropout_fwd";
  if (!BP_KERNEL_ARGS_VALID(attention_dropout_fwd) ||
      !validShape(fn, B, T, H, nh, kSimtMaxHeadDim) ||
      !validDropout(fn, B, T, nh, site, p))
    return BP_ERR_INVALID_ARGUMENT;
  return forwardBf16(qkv, out, lse, makeShape(B, T, H, nh, causal != 0),
                     dropoutOf(key, site, p), stream);
}

extern "C" bp_status_t
bp_cuda_attention_dropout_bwd(const bp_bf16_t *qkv, const bp_bf16_t *out,
                              const bp_bf16_t *dout, const float *lse,
                              bp_bf16_t *dqkv, int64_t B, int64_t T, int64_t H,
                              int64_t nh, int32_t causal, const int32_t *key,
                              int32_t site, float p, void *stream) {
  const char *fn = "bp_cuda_attention_dropout_bwd";
  if (!BP_KERNEL_ARGS_VALID(attention_dropout_bwd) ||
      !validShape(fn, B, T, H, nh, kSimtMaxHeadDim) ||
      !validDropout(fn, B, T, nh, site, p))
    return BP_ERR_INVALID_ARGUMENT;
  return backwardBf16(qkv, out, dout, lse, dqkv,
                      makeShape(B, T, H, nh, causal != 0),
                      dropoutOf(key, site, p), stream);
}

extern "C" bp_status_t
bp_cuda_attention_dropout_fwd_f32(const float *qkv, float *out, float *lse,
                                  int64_t B, int64_t T, int64_t H, int64_t nh,
                                  int32_t causal, const int32_t *key,
                                  int32_t site, float p, void *stream) {
  const char *fn = "bp_cuda_attention_dropout_fwd_f32";
  if (!BP_KERNEL_ARGS_VALID(attention_dropout_fwd) ||
      !validShape(fn, B, T, H, nh, kSimtMaxHeadDim) ||
      !validDropout(fn, B, T, nh, site, p))
    return BP_ERR_INVALID_ARGUMENT;
  return simtForward(qkv, out, lse, makeShape(B, T, H, nh, causal != 0),
                     dropoutOf(key, site, p), stream);
}

extern "C" bp_status_t bp_cuda_attention_dropout_bwd_f32(
    const float *qkv, const float *out, const float *dout, const float *lse,
    float *dqkv, int64_t B, int64_t T, int64_t H, int64_t nh, int32_t causal,
    const int32_t *key, int32_t site, float p, void *stream) {
  const char *fn = "bp_cuda_attention_dropout_bwd_f32";
  if (!BP_KERNEL_ARGS_VALID(attention_dropout_bwd) ||
      !validShape(fn, B, T, H, nh, kSimtMaxHeadDim) ||
      !validDropout(fn, B, T, nh, site, p))
    return BP_ERR_INVALID_ARGUMENT;
  return backwardF32(qkv, out, dout, lse, dqkv,
                     makeShape(B, T, H, nh, causal != 0),
                     dropoutOf(key, site, p), stream);
}
