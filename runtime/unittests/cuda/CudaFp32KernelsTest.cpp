//===- CudaFp32KernelsTest.cpp - _f32 kernels against float64 -------------===//
//
// The fp32 variants of bitpipe/cuda.h's element-wise kernels (--precision
// fp32, the equivalence tests' mode) against Reference.h's float64 loops,
// with plain fp32 inputs (not rounded to bf16), at shapes that are not
// multiples of 16, of a warp or of the block size. Outputs start poisoned
// (NaN) and accumulators from random values, as in CudaKernelsTest.cpp.
//
// Tolerances (allClose's, see TestUtil.h): kFwdRtol (1e-5), the CPU kernels'
// forward tolerance, for what a row computes directly; kFp32SumRtol (1e-4)
// for the gradients, which sum up to 70000 fp32 terms in a different order
// than the reference (an fp32 sum of n terms is good to about
// sqrt(n) * 6e-8 relative to the terms' scale: 1.6e-5 at n = 70000).
//
// Skipped without a device; bench/gpu/check.sh runs them on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "Reference.h"

#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

constexpr double kFp32SumRtol = 1e-4;

/// The fixture of the tests that need no parameters.
using CudaKernelsF32 = CudaTest;

std::string shapeOf(std::initializer_list<std::pair<const char *, int64_t>> dims) {
  std::string s;
  for (const auto &[name, value] : dims)
    s += (s.empty() ? "" : ",") + std::string(name) + "=" +
         std::to_string(value);
  return s + ",fp32";
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

struct Fp32RowsCase {
  int64_t N, H;
};

void PrintTo(const Fp32RowsCase &c, std::ostream *os) {
  *os << "N=" << c.N << " H=" << c.H;
}

class CudaLayerNormF32 : public CudaTest,
                         public ::testing::WithParamInterface<Fp32RowsCase> {};

TEST_P(CudaLayerNormF32, ForwardAndBackwardMatchReference) {
  const auto [N, H] = GetParam();
  const float eps = 1e-5f;
  const uint32_t seed = static_cast<uint32_t>(N * 17 + H);
  const std::string shape = shapeOf({{"N", N}, {"H", H}});
  auto x = randomFloats(N * H, seed, 2.0f, 4.0f);
  auto gamma = randomFloats(H, seed + 1, 0.5f, 1.5f);
  auto beta = randomFloats(H, seed + 2);
  auto dy = randomFloats(N * H, seed + 3);
  auto dgamma0 = randomFloats(H, seed + 4), dbeta0 = randomFloats(H, seed + 5);

  DeviceBuffer<float> dX(x), dGamma(gamma), dBeta(beta), dDy(dy), dY(N * H),
      dDx(N * H), dMean(N), dRstd(N), dDgamma(dgamma0), dDbeta(dbeta0);
  ASSERT_EQ(bp_cuda_layer_norm_fwd_f32(dX.get(), dGamma.get(), dBeta.get(),
                                       dY.get(), dMean.get(), dRstd.get(), N,
                                       H, eps, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_layer_norm_bwd_f32(dDy.get(), dX.get(), dGamma.get(),
                                       dMean.get(), dRstd.get(), dDx.get(),
                                       dDgamma.get(), dDbeta.get(), N, H,
                                       stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  std::vector<double> mean, rstd, dx, dgamma, dbeta;
  auto xD = toDouble(x), gD = toDouble(gamma);
  auto y = ref::layerNorm(xD, gD, toDouble(beta), N, H, double(eps), &mean,
                          &rstd);
  ref::layerNormGrad(toDouble(dy), xD, gD, N, H, double(eps), dx, dgamma,
                     dbeta);
  EXPECT_TRUE(checkClose("layer_norm_fwd_f32", "y", shape, dY.download(), y,
                         kFwdRtol));
  EXPECT_TRUE(checkClose("layer_norm_fwd_f32", "mean", shape, dMean.download(),
                         mean, kFwdRtol));
  EXPECT_TRUE(checkClose("layer_norm_fwd_f32", "rstd", shape, dRstd.download(),
                         rstd, kFwdRtol));
  EXPECT_TRUE(checkClose("layer_norm_bwd_f32", "dx", shape, dDx.download(), dx,
                         kFp32SumRtol));
  EXPECT_TRUE(checkClose("layer_norm_bwd_f32", "dgamma(+=)", shape,
                         dDgamma.download(), plus(dgamma0, dgamma),
                         kFp32SumRtol));
  EXPECT_TRUE(checkClose("layer_norm_bwd_f32", "dbeta(+=)", shape,
                         dDbeta.download(), plus(dbeta0, dbeta),
                         kFp32SumRtol));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaLayerNormF32,
                         ::testing::Values(Fp32RowsCase{1, 1},
                                           Fp32RowsCase{37, 64},
                                           Fp32RowsCase{13, 1000},
                                           Fp32RowsCase{5, 1025},
                                           Fp32RowsCase{3, 8192},
                                           Fp32RowsCase{70000, 33}),
                         [](const auto &info) {
                           return "N" + std::to_string(info.param.N) + "_H" +
                                  std::to_string(info.param.H);
                         });

//===----------------------------------------------------------------------===//
// GELU and add
//===----------------------------------------------------------------------===//

class CudaElementwiseF32 : public CudaTest,
                           public ::testing::WithParamInterface<int64_t> {};

TEST_P(CudaElementwiseF32, GeluAndAddMatchReference) {
  const int64_t n = GetParam();
  const std::string shape = shapeOf({{"n", n}});
  const uint32_t seed = static_cast<uint32_t>(n);
  auto x = randomFloats(n, seed, -6.0f, 6.0f), dy = randomFloats(n, seed + 1);
  auto b = randomFloats(n, seed + 2);
  DeviceBuffer<float> dX(x), dDy(dy), dB(b), dY(n), dDx(n), dSum(n);
  ASSERT_EQ(bp_cuda_gelu_fwd_f32(dX.get(), dY.get(), n, stream()), BP_OK);
  ASSERT_EQ(bp_cuda_gelu_bwd_f32(dDy.get(), dX.get(), dDx.get(), n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_add_fwd_f32(dX.get(), dB.get(), dSum.get(), n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto xD = toDouble(x);
  auto y = ref::gelu(xD);
  auto dx = ref::geluGrad(toDouble(dy), xD);
  auto sum = ref::add(xD, toDouble(b));
  EXPECT_TRUE(checkClose("gelu_fwd_f32", "y", shape, dY.download(), y,
                         kFwdRtol));
  EXPECT_TRUE(checkClose("gelu_bwd_f32", "dx", shape, dDx.download(), dx,
                         kFwdRtol));
  EXPECT_TRUE(checkClose("add_f32", "out", shape, dSum.download(), sum,
                         kFwdRtol));

  // In place, as runtime.h allows: dx over dy, y over x, out over a.
  ASSERT_EQ(bp_cuda_gelu_bwd_f32(dDy.get(), dX.get(), dDy.get(), n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_add_fwd_f32(dX.get(), dB.get(), dB.get(), n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_gelu_fwd_f32(dX.get(), dX.get(), n, stream()), BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose("gelu_fwd_f32", "y(in-place)", shape, dX.download(),
                         y, kFwdRtol));
  EXPECT_TRUE(checkClose("gelu_bwd_f32", "dx(in-place)", shape,
                         dDy.download(), dx, kFwdRtol));
  EXPECT_TRUE(checkClose("add_f32", "out(=b)", shape, dB.download(), sum,
                         kFwdRtol));
}

// One element; a block and one; more than one grid covers (65535 x 256).
INSTANTIATE_TEST_SUITE_P(Sizes, CudaElementwiseF32,
                         ::testing::Values(int64_t{1}, int64_t{257},
                                           int64_t{100003},
                                           int64_t{65535} * 256 + 7),
                         [](const auto &info) {
                           return "n" + std::to_string(info.param);
                         });

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

struct Fp32EmbeddingCase {
  int64_t B, T, H, V;
};

void PrintTo(const Fp32EmbeddingCase &c, std::ostream *os) {
  *os << "B=" << c.B << " T=" << c.T << " H=" << c.H << " V=" << c.V;
}

class CudaEmbeddingF32
    : public CudaTest,
      public ::testing::WithParamInterface<Fp32EmbeddingCase> {};

TEST_P(CudaEmbeddingF32, ForwardAndBackwardMatchReference) {
  const auto [B, T, H, V] = GetParam();
  const int64_t P = T + 3;
  const uint32_t seed = static_cast<uint32_t>(B * 5 + T * 3 + H);
  const std::string shape = shapeOf({{"B", B}, {"T", T}, {"H", H}, {"V", V}});
  // Small ids repeat within and across sequences; the last id is used too.
  auto tokens = randomInts(B * T, seed, 0, 4);
  tokens[0] = static_cast<int32_t>(V - 1);
  auto wte = randomFloats(V * H, seed + 1), wpe = randomFloats(P * H, seed + 2);
  auto dout = randomFloats(B * T * H, seed + 3);
  auto dwte0 = randomFloats(V * H, seed + 4), dwpe0 = randomFloats(P * H, seed + 5);

  DeviceBuffer<int32_t> dTokens(tokens);
  DeviceBuffer<float> dWte(wte), dWpe(wpe), dDout(dout), dOut(B * T * H),
      dDwte(dwte0), dDwpe(dwpe0);
  ASSERT_EQ(bp_cuda_embedding_fwd_f32(dTokens.get(), dWte.get(), dWpe.get(),
                                      dOut.get(), B, T, H, V, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_embedding_bwd_f32(dTokens.get(), dDout.get(), dDwte.get(),
                                      dDwpe.get(), B, T, H, V, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  auto out = ref::embedding(tokens, toDouble(wte), toDouble(wpe), B, T, H);
  std::vector<double> dwte, dwpe;
  ref::embeddingGrad(tokens, toDouble(dout), B, T, H, V, dwte, dwpe);
  dwpe.resize(P * H, 0.0);
  EXPECT_TRUE(checkClose("embedding_fwd_f32", "out", shape, dOut.download(),
                         out, kFwdRtol));
  EXPECT_TRUE(checkClose("embedding_bwd_f32", "dwte(+=)", shape,
                         dDwte.download(), plus(dwte0, dwte), kFp32SumRtol));
  EXPECT_TRUE(checkClose("embedding_bwd_f32", "dwpe(+=)", shape,
                         dDwpe.download(), plus(dwpe0, dwpe), kFp32SumRtol));
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaEmbeddingF32,
                         ::testing::Values(Fp32EmbeddingCase{1, 1, 1, 1},
                                           Fp32EmbeddingCase{3, 7, 64, 50304},
                                           Fp32EmbeddingCase{2, 5, 1000, 301},
                                           Fp32EmbeddingCase{4, 9, 33, 17}),
                         [](const auto &info) {
                           const Fp32EmbeddingCase &c = info.param;
                           return "B" + std::to_string(c.B) + "_T" +
                                  std::to_string(c.T) + "_H" +
                                  std::to_string(c.H) + "_V" +
                                  std::to_string(c.V);
                         });

TEST_F(CudaKernelsF32, EmbeddingReportsOutOfRangeTokens) {
  const int64_t B = 1, T = 3, H = 5, V = 4;
  std::vector<int32_t> tokens = {0, -7, 3};
  DeviceBuffer<int32_t> dTokens(tokens);
  DeviceBuffer<float> dWte(randomFloats(V * H, 1)), dWpe(randomFloats(T * H, 2)),
      dOut(B * T * H);
  ASSERT_EQ(bp_cuda_embedding_fwd_f32(dTokens.get(), dWte.get(), dWpe.get(),
                                      dOut.get(), B, T, H, V, stream()),
            BP_OK);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_ERR_INVALID_ARGUMENT);
  auto out = dOut.download();
  EXPECT_FALSE(std::isnan(out[0]));
  EXPECT_TRUE(std::isnan(out[1 * H]));
  EXPECT_FALSE(std::isnan(out[2 * H]));
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

struct Fp32CrossEntropyCase {
  int64_t N, V;
  float offset;
};

void PrintTo(const Fp32CrossEntropyCase &c, std::ostream *os) {
  *os << "N=" << c.N << " V=" << c.V << " offset=" << c.offset;
}

class CudaCrossEntropyF32
    : public CudaTest,
      public ::testing::WithParamInterface<Fp32CrossEntropyCase> {};

TEST_P(CudaCrossEntropyF32, ForwardAndBackwardMatchReference) {
  const auto [N, V, offset] = GetParam();
  const float dloss = 0.125f;
  const uint32_t seed = static_cast<uint32_t>(N * 29 + V);
  const std::string shape =
      shapeOf({{"N", N}, {"V", V}, {"offset", static_cast<int64_t>(offset)}});
  auto logits = randomFloats(N * V, seed, offset - 4.0f, offset + 4.0f);
  auto labels = randomInts(N, seed + 1, 0, static_cast<int32_t>(V - 1));
  if (N > 2)
    labels[1] = BP_IGNORE_INDEX;
  labels[N - 1] = static_cast<int32_t>(V - 1);

  DeviceBuffer<float> dLogits(logits), dDlogits(N * V), dLoss(1), dRowMax(N),
      dLogSum(N);
  DeviceBuffer<float> dDloss(std::vector<float>{dloss});
  DeviceBuffer<int32_t> dLabels(labels);
  ASSERT_EQ(bp_cuda_cross_entropy_fwd_f32(
                dLogits.get(), dLabels.get(), dLoss.get(), dRowMax.get(),
                dLogSum.get(), N, V, BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_cross_entropy_bwd_f32(
                dLogits.get(), dLabels.get(), dDloss.get(), dRowMax.get(),
                dLogSum.get(), dDlogits.get(), N, V, BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  auto lD = toDouble(logits);
  const double loss = ref::crossEntropy(lD, labels, N, V, BP_IGNORE_INDEX);
  auto dlogits = ref::crossEntropyGrad(lD, labels, N, V, BP_IGNORE_INDEX,
                                       double(dloss));
  EXPECT_TRUE(checkClose("cross_entropy_fwd_f32", "loss", shape,
                         dLoss.download(), {loss}, kFwdRtol));
  EXPECT_TRUE(checkClose("cross_entropy_bwd_f32", "dlogits", shape,
                         dDlogits.download(), dlogits, kFp32SumRtol));

  ASSERT_EQ(bp_cuda_cross_entropy_bwd_f32(
                dLogits.get(), dLabels.get(), dDloss.get(), dRowMax.get(),
                dLogSum.get(), dLogits.get(), N, V, BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose("cross_entropy_bwd_f32", "dlogits(in-place)", shape,
                         dLogits.download(), dlogits, kFp32SumRtol));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaCrossEntropyF32,
    ::testing::Values(Fp32CrossEntropyCase{1, 1, 0.0f},
                      Fp32CrossEntropyCase{9, 11, 0.0f},
                      Fp32CrossEntropyCase{6, 50304, 0.0f},
                      Fp32CrossEntropyCase{70, 1000, 0.0f},
                      Fp32CrossEntropyCase{5, 1001, 200.0f}),
    [](const auto &info) {
      return "N" + std::to_string(info.param.N) + "_V" +
             std::to_string(info.param.V) + "_offset" +
             std::to_string(static_cast<int>(info.param.offset));
    });

//===----------------------------------------------------------------------===//
// Argument checks: on the host, so these run without a device too.
//===----------------------------------------------------------------------===//

TEST(CudaArgumentsF32, NullPointersAndNonPositiveSizesAreRejected) {
  float *f = reinterpret_cast<float *>(uintptr_t(256));
  int32_t *ids = reinterpret_cast<int32_t *>(uintptr_t(256));
  EXPECT_EQ(bp_cuda_add_fwd_f32(f, f, f, 0, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_add_fwd_f32(f, nullptr, f, 3, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_gelu_fwd_f32(nullptr, f, 3, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_gelu_bwd_f32(f, f, f, -2, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_layer_norm_fwd_f32(f, f, f, f, f, f, 2, 3, -1e-5f, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_layer_norm_bwd_f32(f, f, f, f, f, f, nullptr, f, 2, 3,
                                       nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_embedding_fwd_f32(ids, f, f, f, 1, 1, 1, 0, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_embedding_bwd_f32(nullptr, f, f, f, 1, 1, 1, 1, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_cross_entropy_fwd_f32(f, ids, nullptr, f, f, 1, 1,
                                          BP_IGNORE_INDEX, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_cross_entropy_bwd_f32(f, ids, f, f, f, f, 0, 1,
                                          BP_IGNORE_INDEX, nullptr),
            BP_ERR_INVALID_ARGUMENT);
}

} // namespace
