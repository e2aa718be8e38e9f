//===- CudaAbiTest.cpp - runtime.h's functions on the CUDA target ---------===//
//
// The CUDA library's definitions of runtime.h (what compiled stage
// functions call on the CUDA target): each kernel in both precisions
// (bp_<kernel> and bp_<kernel>_bf16), with its activations and weights in
// that precision and
// its statistics, parameter gradients and loss in fp32, against
// Reference.h's float64 loops on the very values the kernel sees; the
// tensor memory on the device pool in the context's stream; bp_fill;
// bp_check's message and abort.
//
// Tolerances: those of CudaKernelsTest.cpp (bf16) and
// CudaFp32KernelsTest.cpp (fp32) for the same kernels, which these calls
// reach.
//
// The device tests skip without one; bp_check, the argument checks and the
// alignment check run everywhere. bench/gpu/check.sh runs the device tests
// on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "Reference.h"
#include "bitpipe/program.h"
#include "bitpipe/runtime.h"
#include "core/Dropout.h"

#include <cstdlib>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

extern "C" void *_mlir_memref_to_llvm_alloc(size_t bytes);
extern "C" void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                    size_t bytes);
extern "C" void _mlir_memref_to_llvm_free(void *ptr);

namespace {

/// Calls runtime.h's kernel in the test's precision: bp_<kernel> or
/// bp_<kernel>_bf16 (ActTensor::abi() is a pointer of either).
#define ABI_CALL(kernel, ...)                                                  \
  (bf16() ? bp_##kernel##_bf16(__VA_ARGS__) : bp_##kernel(__VA_ARGS__))

/// Sets the execution context for the test (the test stream) and restores
/// the default after it; the parameter is the precision of the calls.
class CudaAbi : public CudaTest, public ::testing::WithParamInterface<int32_t> {
protected:
  void SetUp() override {
    CudaTest::SetUp();
    if (IsSkipped())
      return;
    bp_cuda_set_stream(stream());
  }
  void TearDown() override { bp_cuda_set_stream(nullptr); }

  bool bf16() const { return GetParam() == BP_PRECISION_BF16; }
  const char *precisionName() const { return bf16() ? "bf16" : "fp32"; }
  /// Outputs in the context's precision, computed directly.
  double activationRtol() const { return bf16() ? kBf16Rtol : 1e-5; }
  /// Outputs in the context's precision that sum many terms.
  double activationSumRtol() const { return bf16() ? kBf16Rtol : 1e-4; }
  /// fp32 outputs: from bf16 inputs (kFp32Rtol) or fp32 ones.
  double fp32Rtol() const { return bf16() ? kFp32Rtol : 1e-4; }
};

/// A device pointer of either precision that converts to the pointer type
/// of its own (a call of the other precision's kernel is a broken test).
class AbiPointer {
public:
  AbiPointer(void *p, bool bf16) : p_(p), bf16_(bf16) {}
  operator float *() const { return static_cast<float *>(as(false)); }
  operator const float *() const { return static_cast<float *>(as(false)); }
  operator bp_bf16_t *() const { return static_cast<bp_bf16_t *>(as(true)); }
  operator const bp_bf16_t *() const {
    return static_cast<bp_bf16_t *>(as(true));
  }

private:
  void *as(bool bf16) const {
    if (bf16 != bf16_)
      ADD_FAILURE() << "a " << (bf16_ ? "bf16" : "fp32")
                    << " tensor passed to a kernel of the other precision";
    return p_;
  }
  void *p_;
  bool bf16_;
};

/// An activation or weight in the call's precision, fp32 or bf16.
/// values() are what the kernel reads (rounded to bf16 under bf16), for
/// the reference.
class ActTensor {
public:
  ActTensor(bool bf16, const std::vector<float> &values)
      : bf16_(bf16), values_(bf16 ? fromBf16(toBf16(values)) : values),
        f32_(bf16 ? 1 : values.size()), b16_(bf16 ? values.size() : 1) {
    if (bf16_)
      b16_.upload(toBf16(values_));
    else
      f32_.upload(values_);
  }
  ActTensor(bool bf16, int64_t n)
      : bf16_(bf16), f32_(bf16 ? 1 : n), b16_(bf16 ? n : 1) {}

  AbiPointer abi() {
    return bf16_ ? AbiPointer(b16_.get(), true) : AbiPointer(f32_.get(), false);
  }
  const std::vector<float> &values() const { return values_; }
  std::vector<float> download() const {
    return bf16_ ? fromBf16(b16_.download()) : f32_.download();
  }

private:
  bool bf16_;
  std::vector<float> values_;
  DeviceBuffer<float> f32_;
  DeviceBuffer<bp_bf16_t> b16_;
};

std::string tag(const char *shape, const char *precision) {
  return std::string(shape) + "," + precision;
}

TEST_P(CudaAbi, EmbeddingDispatches) {
  const int64_t B = 2, T = 5, H = 37, V = 11, P = 6;
  const std::string shape = tag("B=2,T=5,H=37,V=11", precisionName());
  auto tokens = randomInts(B * T, 1, 0, static_cast<int32_t>(V - 1));
  ActTensor wte(bf16(), randomFloats(V * H, 2)), wpe(bf16(), randomFloats(P * H, 3)),
      dout(bf16(), randomFloats(B * T * H, 4)), out(bf16(), B * T * H);
  auto dwte0 = randomFloats(V * H, 5), dwpe0 = randomFloats(P * H, 6);
  DeviceBuffer<int32_t> dTokens(tokens);
  DeviceBuffer<float> dDwte(dwte0), dDwpe(dwpe0);
  ASSERT_EQ(ABI_CALL(embedding_fwd, dTokens.get(), wte.abi(), wpe.abi(),
                     out.abi(), B, T, H, V),
            BP_OK);
  ASSERT_EQ(ABI_CALL(embedding_bwd, dTokens.get(), dout.abi(), dDwte.get(),
                     dDwpe.get(), B, T, H, V),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto ref = ref::embedding(tokens, toDouble(wte.values()),
                            toDouble(wpe.values()), B, T, H);
  std::vector<double> dwte, dwpe;
  ref::embeddingGrad(tokens, toDouble(dout.values()), B, T, H, V, dwte, dwpe);
  dwpe.resize(P * H, 0.0);
  EXPECT_TRUE(checkClose("bp_embedding_fwd", "out", shape, out.download(), ref,
                         activationRtol()));
  EXPECT_TRUE(checkClose("bp_embedding_bwd", "dwte(+=)", shape,
                         dDwte.download(), plus(dwte0, dwte), fp32Rtol()));
  EXPECT_TRUE(checkClose("bp_embedding_bwd", "dwpe(+=)", shape,
                         dDwpe.download(), plus(dwpe0, dwpe), fp32Rtol()));
}

TEST_P(CudaAbi, LayerNormDispatches) {
  const int64_t N = 7, H = 33;
  const float eps = 1e-5f;
  const std::string shape = tag("N=7,H=33", precisionName());
  ActTensor x(bf16(), randomFloats(N * H, 10, 2.0f, 4.0f)),
      gamma(bf16(), randomFloats(H, 11, 0.5f, 1.5f)),
      beta(bf16(), randomFloats(H, 12)), dy(bf16(), randomFloats(N * H, 13)),
      y(bf16(), N * H), dx(bf16(), N * H);
  auto dgamma0 = randomFloats(H, 14), dbeta0 = randomFloats(H, 15);
  DeviceBuffer<float> dMean(N), dRstd(N), dDgamma(dgamma0), dDbeta(dbeta0);
  ASSERT_EQ(ABI_CALL(layer_norm_fwd, x.abi(), gamma.abi(), beta.abi(), y.abi(),
                     dMean.get(), dRstd.get(), N, H, eps),
            BP_OK);
  ASSERT_EQ(ABI_CALL(layer_norm_bwd, dy.abi(), x.abi(), gamma.abi(),
                     dMean.get(), dRstd.get(), dx.abi(), dDgamma.get(),
                     dDbeta.get(), N, H),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  std::vector<double> mean, rstd, rdx, rdgamma, rdbeta;
  auto xD = toDouble(x.values()), gD = toDouble(gamma.values());
  auto ry = ref::layerNorm(xD, gD, toDouble(beta.values()), N, H, double(eps),
                           &mean, &rstd);
  ref::layerNormGrad(toDouble(dy.values()), xD, gD, N, H, double(eps), rdx,
                     rdgamma, rdbeta);
  EXPECT_TRUE(checkClose("bp_layer_norm_fwd", "y", shape, y.download(), ry,
                         activationRtol()));
  EXPECT_TRUE(checkClose("bp_layer_norm_fwd", "mean", shape, dMean.download(),
                         mean, fp32Rtol()));
  EXPECT_TRUE(checkClose("bp_layer_norm_fwd", "rstd", shape, dRstd.download(),
                         rstd, fp32Rtol()));
  EXPECT_TRUE(checkClose("bp_layer_norm_bwd", "dx", shape, dx.download(), rdx,
                         activationSumRtol()));
  EXPECT_TRUE(checkClose("bp_layer_norm_bwd", "dgamma(+=)", shape,
                         dDgamma.download(), plus(dgamma0, rdgamma),
                         fp32Rtol()));
  EXPECT_TRUE(checkClose("bp_layer_norm_bwd", "dbeta(+=)", shape,
                         dDbeta.download(), plus(dbeta0, rdbeta), fp32Rtol()));
}

TEST_P(CudaAbi, GeluAndAddDispatch) {
  const int64_t n = 1001;
  const std::string shape = tag("n=1001", precisionName());
  ActTensor x(bf16(), randomFloats(n, 20, -5.0f, 5.0f)),
      dy(bf16(), randomFloats(n, 21)), b(bf16(), randomFloats(n, 22)),
      y(bf16(), n), dx(bf16(), n), sum(bf16(), n);
  ASSERT_EQ(ABI_CALL(gelu_fwd, x.abi(), y.abi(), n), BP_OK);
  ASSERT_EQ(ABI_CALL(gelu_bwd, dy.abi(), x.abi(), dx.abi(), n), BP_OK);
  ASSERT_EQ(ABI_CALL(add_fwd, x.abi(), b.abi(), sum.abi(), n), BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto xD = toDouble(x.values());
  EXPECT_TRUE(checkClose("bp_gelu_fwd", "y", shape, y.download(),
                         ref::gelu(xD), activationRtol()));
  EXPECT_TRUE(checkClose("bp_gelu_bwd", "dx", shape, dx.download(),
                         ref::geluGrad(toDouble(dy.values()), xD),
                         activationRtol()));
  EXPECT_TRUE(checkClose("bp_add_fwd", "out", shape, sum.download(),
                         ref::add(xD, toDouble(b.values())),
                         activationRtol()));
}

TEST_P(CudaAbi, GeluErfDispatch) {
  const int64_t n = 1001;
  const std::string shape = tag("n=1001", precisionName());
  ActTensor x(bf16(), randomFloats(n, 23, -5.0f, 5.0f)),
      dy(bf16(), randomFloats(n, 24)), y(bf16(), n), dx(bf16(), n);
  ASSERT_EQ(ABI_CALL(gelu_erf_fwd, x.abi(), y.abi(), n), BP_OK);
  ASSERT_EQ(ABI_CALL(gelu_erf_bwd, dy.abi(), x.abi(), dx.abi(), n), BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto xD = toDouble(x.values());
  EXPECT_TRUE(checkClose("bp_gelu_erf_fwd", "y", shape, y.download(),
                         ref::geluErf(xD), activationRtol()));
  EXPECT_TRUE(checkClose("bp_gelu_erf_bwd", "dx", shape, dx.download(),
                         ref::geluErfGrad(toDouble(dy.values()), xD),
                         activationRtol()));
}

TEST_P(CudaAbi, DropoutDispatchesWithTheKeyOnTheDevice) {
  // The key in device memory, as the runtime stages it; the mask is
  // core/Dropout.h's on the host (CudaDropoutTest.cpp says more).
  const int64_t n = 1001;
  const int32_t site = 4;
  const float p = 0.2f;
  int32_t words[4];
  fillDropoutKey(42, 3, words);
  DeviceBuffer<int32_t> key(std::vector<int32_t>(words, words + 4));
  ActTensor x(bf16(), randomFloats(n, 25, 0.5f, 1.5f)), y(bf16(), n);
  ASSERT_EQ(ABI_CALL(dropout, x.abi(), y.abi(), key.get(), site, p, n), BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  const DropoutMask mask = dropoutMask(words, site, p);
  std::vector<float> expected(n);
  for (int64_t e = 0; e < n; ++e)
    expected[e] = mask.keeps(e) ? x.values()[e] * mask.scale : 0.0f;
  if (bf16())
    expected = fromBf16(toBf16(expected));
  const auto actual = y.download();
  int64_t bad = 0;
  for (int64_t e = 0; e < n; ++e)
    bad += !(actual[e] == expected[e]);
  EXPECT_EQ(bad, 0) << precisionName();
}

TEST_P(CudaAbi, CrossEntropyDispatchesAndWritesTheLossOnTheDevice) {
  const int64_t N = 6, V = 29;
  const float dloss = 0.5f;
  const std::string shape = tag("N=6,V=29", precisionName());
  ActTensor logits(bf16(), randomFloats(N * V, 30, -3.0f, 3.0f)),
      dlogits(bf16(), N * V);
  auto labels = randomInts(N, 31, 0, static_cast<int32_t>(V - 1));
  labels[2] = BP_IGNORE_INDEX;
  DeviceBuffer<int32_t> dLabels(labels);
  DeviceBuffer<float> dLoss(1), dRowMax(N), dLogSum(N);
  DeviceBuffer<float> dDloss(std::vector<float>{dloss});
  ASSERT_EQ(ABI_CALL(cross_entropy_fwd, logits.abi(), dLabels.get(),
                     dLoss.get(), dRowMax.get(), dLogSum.get(), N, V,
                     BP_IGNORE_INDEX),
            BP_OK);
  ASSERT_EQ(ABI_CALL(cross_entropy_bwd, logits.abi(), dLabels.get(),
                     dDloss.get(), dRowMax.get(), dLogSum.get(), dlogits.abi(),
                     N, V, BP_IGNORE_INDEX),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto lD = toDouble(logits.values());
  EXPECT_TRUE(checkClose("bp_cross_entropy_fwd", "loss", shape,
                         dLoss.download(),
                         {ref::crossEntropy(lD, labels, N, V, BP_IGNORE_INDEX)},
                         fp32Rtol()));
  EXPECT_TRUE(checkClose("bp_cross_entropy_bwd", "dlogits", shape,
                         dlogits.download(),
                         ref::crossEntropyGrad(lD, labels, N, V,
                                               BP_IGNORE_INDEX, double(dloss)),
                         activationSumRtol()));
}

//===----------------------------------------------------------------------===//
// The LLaMA kernels (docs/llama.md)
//===----------------------------------------------------------------------===//

TEST_P(CudaAbi, EmbeddingWithoutPositionTableDispatches) {
  const int64_t B = 2, T = 5, H = 37, V = 11;
  const std::string shape = tag("B=2,T=5,H=37,V=11,nopos", precisionName());
  auto tokens = randomInts(B * T, 80, 0, static_cast<int32_t>(V - 1));
  ActTensor wte(bf16(), randomFloats(V * H, 81)),
      dout(bf16(), randomFloats(B * T * H, 82)), out(bf16(), B * T * H);
  auto dwte0 = randomFloats(V * H, 83);
  DeviceBuffer<int32_t> dTokens(tokens);
  DeviceBuffer<float> dDwte(dwte0);
  ASSERT_EQ(ABI_CALL(embedding_fwd, dTokens.get(), wte.abi(), nullptr,
                     out.abi(), B, T, H, V),
            BP_OK);
  ASSERT_EQ(ABI_CALL(embedding_bwd, dTokens.get(), dout.abi(), dDwte.get(),
                     nullptr, B, T, H, V),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  std::vector<double> dwte, dwpe;
  ref::embeddingGrad(tokens, toDouble(dout.values()), B, T, H, V, dwte, dwpe);
  EXPECT_TRUE(checkClose("bp_embedding_fwd", "out", shape, out.download(),
                         ref::embedding(tokens, toDouble(wte.values()),
                                        std::vector<double>(), B, T, H),
                         activationRtol()));
  EXPECT_TRUE(checkClose("bp_embedding_bwd", "dwte(+=)", shape,
                         dDwte.download(), plus(dwte0, dwte), fp32Rtol()));
}

TEST_P(CudaAbi, RmsNormDispatches) {
  // H = 1025: not a multiple of a warp or of the packs; N = 70: several
  // chunks of the gain's column sums.
  const int64_t N = 70, H = 1025;
  const float eps = 1e-6f;
  const std::string shape = tag("N=70,H=1025", precisionName());
  ActTensor x(bf16(), randomFloats(N * H, 84, -3.0f, 3.0f)),
      gamma(bf16(), randomFloats(H, 85, 0.5f, 1.5f)),
      dy(bf16(), randomFloats(N * H, 86)), y(bf16(), N * H), dx(bf16(), N * H);
  auto dgamma0 = randomFloats(H, 87);
  DeviceBuffer<float> dRstd(N), dDgamma(dgamma0);
  ASSERT_EQ(ABI_CALL(rms_norm_fwd, x.abi(), gamma.abi(), y.abi(), dRstd.get(),
                     N, H, eps),
            BP_OK);
  ASSERT_EQ(ABI_CALL(rms_norm_bwd, dy.abi(), x.abi(), gamma.abi(), dRstd.get(),
                     dx.abi(), dDgamma.get(), N, H),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  std::vector<double> rstd, rdx, rdgamma;
  auto xD = toDouble(x.values()), gD = toDouble(gamma.values());
  auto ry = ref::rmsNorm(xD, gD, N, H, double(eps), &rstd);
  ref::rmsNormGrad(toDouble(dy.values()), xD, gD, N, H, double(eps), rdx,
                   rdgamma);
  EXPECT_TRUE(checkClose("bp_rms_norm_fwd", "y", shape, y.download(), ry,
                         activationRtol()));
  EXPECT_TRUE(checkClose("bp_rms_norm_fwd", "rstd", shape, dRstd.download(),
                         rstd, fp32Rtol()));
  EXPECT_TRUE(checkClose("bp_rms_norm_bwd", "dx", shape, dx.download(), rdx,
                         activationSumRtol()));
  EXPECT_TRUE(checkClose("bp_rms_norm_bwd", "dgamma(+=)", shape,
                         dDgamma.download(), plus(dgamma0, rdgamma),
                         fp32Rtol()));
}

TEST_P(CudaAbi, SwiGluDispatches) {
  const int64_t n = 1001;
  const std::string shape = tag("n=1001", precisionName());
  ActTensor gate(bf16(), randomFloats(n, 88, -6.0f, 6.0f)),
      up(bf16(), randomFloats(n, 89)), dy(bf16(), randomFloats(n, 90)),
      y(bf16(), n), dgate(bf16(), n), dup(bf16(), n);
  ASSERT_EQ(ABI_CALL(swiglu_fwd, gate.abi(), up.abi(), y.abi(), n), BP_OK);
  ASSERT_EQ(ABI_CALL(swiglu_bwd, dy.abi(), gate.abi(), up.abi(), dgate.abi(),
                     dup.abi(), n),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto gD = toDouble(gate.values()), uD = toDouble(up.values());
  std::vector<double> rdgate, rdup;
  ref::swigluGrad(toDouble(dy.values()), gD, uD, rdgate, rdup);
  EXPECT_TRUE(checkClose("bp_swiglu_fwd", "y", shape, y.download(),
                         ref::swiglu(gD, uD), activationRtol()));
  EXPECT_TRUE(checkClose("bp_swiglu_bwd", "dgate", shape, dgate.download(),
                         rdgate, activationRtol()));
  EXPECT_TRUE(checkClose("bp_swiglu_bwd", "dup", shape, dup.download(), rdup,
                         activationRtol()));
}

TEST_P(CudaAbi, RotaryDispatches) {
  const int64_t B = 2, T = 37, H = 64, nh = 4, nkv = 2;
  const int64_t width = (nh + 2 * nkv) * (H / nh);
  const float base = 10000.0f;
  const std::string shape = tag("B=2,T=37,H=64,nh=4,nkv=2", precisionName());
  ActTensor qkv(bf16(), randomFloats(B * T * width, 91, -2.0f, 2.0f)),
      dout(bf16(), randomFloats(B * T * width, 92)), out(bf16(), B * T * width),
      dqkv(bf16(), B * T * width);
  ASSERT_EQ(ABI_CALL(rotary_fwd, qkv.abi(), out.abi(), B, T, H, nh, nkv, base),
            BP_OK);
  ASSERT_EQ(
      ABI_CALL(rotary_bwd, dout.abi(), dqkv.abi(), B, T, H, nh, nkv, base),
      BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose(
      "bp_rotary_fwd", "out", shape, out.download(),
      ref::rotary(toDouble(qkv.values()), B, T, H, nh, nkv, double(base)),
      activationRtol()));
  EXPECT_TRUE(checkClose(
      "bp_rotary_bwd", "dqkv", shape, dqkv.download(),
      ref::rotaryGrad(toDouble(dout.values()), B, T, H, nh, nkv, double(base)),
      activationRtol()));
}

TEST_P(CudaAbi, GroupedQueryAttentionDispatches) {
  // Groups of 3 query heads per key/value head; T not a multiple of a tile.
  const int64_t B = 2, T = 45, H = 96, nh = 6, nkv = 2;
  const int64_t width = (nh + 2 * nkv) * (H / nh);
  const std::string shape = tag("B=2,T=45,H=96,nh=6,nkv=2", precisionName());
  ActTensor qkv(bf16(), randomFloats(B * T * width, 93, -1.5f, 1.5f)),
      dout(bf16(), randomFloats(B * T * H, 94)), out(bf16(), B * T * H),
      dqkv(bf16(), B * T * width);
  DeviceBuffer<float> dLse(B * nh * T);
  for (int32_t causal : {1, 0}) {
    ASSERT_EQ(ABI_CALL(attention_gqa_fwd, qkv.abi(), out.abi(), dLse.get(), B,
                       T, H, nh, nkv, causal),
              BP_OK);
    ASSERT_EQ(ABI_CALL(attention_gqa_bwd, qkv.abi(), out.abi(), dout.abi(),
                       dLse.get(), dqkv.abi(), B, T, H, nh, nkv, causal),
              BP_OK);
    ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
    auto qD = toDouble(qkv.values());
    std::vector<double> lse;
    auto rout = ref::groupedAttention(qD, B, T, H, nh, nkv, causal != 0, &lse);
    // The backward's D = dO . out is formed from the out it is given, as
    // the kernels form it (Reference.h, attentionGrad).
    auto rdqkv =
        ref::groupedAttentionGrad(qD, toDouble(out.download()),
                                  toDouble(dout.values()), B, T, H, nh, nkv,
                                  causal != 0);
    EXPECT_TRUE(checkClose("bp_attention_gqa_fwd", "out", shape,
                           out.download(), rout, bf16() ? 2e-2 : 1e-4));
    EXPECT_TRUE(checkClose("bp_attention_gqa_fwd", "lse", shape,
                           dLse.download(), lse, fp32Rtol()));
    EXPECT_TRUE(checkClose("bp_attention_gqa_bwd", "dqkv", shape,
                           dqkv.download(), rdqkv, bf16() ? 5e-2 : 1e-4));
  }
}

TEST_P(CudaAbi, FillWritesFp32InBothPrecisions) {
  // The ABI fills only fp32 buffers (gradient accumulators, the loss seed).
  const int64_t n = 37;
  DeviceBuffer<float> buf(n + 1);
  ASSERT_EQ(bp_fill(buf.get(), 0.25f, n), BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto out = buf.download();
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], 0.25f) << "element " << i;
  EXPECT_TRUE(std::isnan(out[n])) << "written past the end";
  EXPECT_EQ(bp_fill(nullptr, 0.0f, 4), BP_ERR_INVALID_ARGUMENT);
}

TEST_P(CudaAbi, TensorMemoryIsTheDevicePoolInTheContextsStream) {
  int64_t inUse0, peak0, reserved0;
  bp_memory_stats(&inUse0, &peak0, &reserved0);
  int64_t cudaInUse, cudaPeak, cudaReserved;
  bp_cuda_memory_stats(&cudaInUse, &cudaPeak, &cudaReserved);
  EXPECT_EQ(inUse0, cudaInUse);
  EXPECT_EQ(reserved0, cudaReserved);

  auto *a = static_cast<float *>(bp_alloc(1000 * sizeof(float)));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 64, 0u);
  // Device memory: a kernel can write it.
  ASSERT_EQ(bp_fill(a, 2.0f, 1000), BP_OK);
  float back = 0.0f;
  BP_CUDA_OK(cudaMemcpyAsync(&back, a + 999, sizeof back,
                             cudaMemcpyDeviceToHost,
                             static_cast<cudaStream_t>(stream())));
  BP_CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())));
  EXPECT_EQ(back, 2.0f);
  int64_t inUse1;
  bp_memory_stats(&inUse1, nullptr, nullptr);
  EXPECT_GE(inUse1 - inUse0, static_cast<int64_t>(1000 * sizeof(float)));
  bp_free(a);
  // Freed in the context's stream: the next request of that size on it
  // gets the block back.
  void *b = bp_alloc(1000 * sizeof(float));
  EXPECT_EQ(b, a);
  bp_free(b);

  void *m = _mlir_memref_to_llvm_alloc(4096);
  ASSERT_NE(m, nullptr);
  BP_CUDA_OK(cudaMemsetAsync(m, 0, 4096, static_cast<cudaStream_t>(stream())));
  _mlir_memref_to_llvm_free(m);
  void *aligned = _mlir_memref_to_llvm_aligned_alloc(256, 100);
  ASSERT_NE(aligned, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(aligned) % 256, 0u);
  _mlir_memref_to_llvm_free(aligned);
  BP_CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream())));
  int64_t inUse2;
  bp_memory_stats(&inUse2, nullptr, nullptr);
  EXPECT_EQ(inUse2, inUse0);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaAbi,
                         ::testing::Values(int32_t{BP_PRECISION_FP32},
                                           int32_t{BP_PRECISION_BF16}),
                         [](const auto &info) {
                           return std::string(
                               bp_precision_names[info.param]);
                         });

//===----------------------------------------------------------------------===//
// What runs without a device.
//===----------------------------------------------------------------------===//

TEST(CudaAbiHost, ArgumentsAreCheckedInBothPrecisions) {
  float *p = reinterpret_cast<float *>(uintptr_t(256));
  bp_bf16_t *h = reinterpret_cast<bp_bf16_t *>(uintptr_t(256));
  EXPECT_EQ(bp_gelu_fwd(p, nullptr, 4), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_gelu_fwd_bf16(h, nullptr, 4), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_layer_norm_fwd(p, p, p, p, p, p, 0, 4, 1e-5f),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_layer_norm_fwd_bf16(h, h, h, h, p, p, 0, 4, 1e-5f),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cross_entropy_bwd(p, nullptr, p, p, p, p, 2, 2, BP_IGNORE_INDEX),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(
      bp_cross_entropy_bwd_bf16(h, nullptr, p, p, p, h, 2, 2, BP_IGNORE_INDEX),
      BP_ERR_INVALID_ARGUMENT);
}

TEST(CudaAbiHost, AlignmentsBeyondThePoolsAreRefused) {
  EXPECT_EQ(_mlir_memref_to_llvm_aligned_alloc(512, 64), nullptr);
}

TEST(CudaAbiHostDeathTest, CheckPrintsTheCpuTargetsMessageAndAborts) {
  // Death tests fork a child that aborts. Under a CUDA tool that injects
  // itself into the process (compute-sanitizer, Nsight: they set
  // CUDA_INJECTION64_PATH) the child would be instrumented too, and its
  // abort could count against the tool's verdict; this test needs no device
  // and runs everywhere else.
  if (std::getenv("CUDA_INJECTION64_PATH"))
    GTEST_SKIP() << "under a CUDA injection tool (CUDA_INJECTION64_PATH is "
                    "set); runs without it";
  bp_check(BP_OK, "nn.linear"); // Returns.
  EXPECT_DEATH(bp_check(BP_ERR_INVALID_ARGUMENT, "nn.layer_norm"),
               "bitpipe: nn.layer_norm failed: invalid argument \\(status 1\\)");
  EXPECT_DEATH(bp_check(BP_ERR_DEVICE, "nn.gelu"),
               "bitpipe: nn.gelu failed: device failure \\(status 8\\)");
  EXPECT_DEATH(bp_check(BP_ERR_OUT_OF_MEMORY, nullptr),
               "bitpipe: <kernel> failed: out of memory \\(status 2\\)");
}

} // namespace
