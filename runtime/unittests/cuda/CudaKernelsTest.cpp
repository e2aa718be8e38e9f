//===- CudaKernelsTest.cpp - CUDA kernels against the double reference ----===//
//
// Every kernel of bitpipe/cuda.h against the float64 references of
// Reference.h, at the sizes the kernels are built for (H from 64 to 8192,
// including sizes that are not a multiple of a warp; V up to 50304), with
// fresh random bf16 inputs per test and outputs poisoned with NaN before
// each run. Accumulated outputs start from random values, so "accumulates"
// and "writes" are both checked. Tolerances: kBf16Rtol for bf16 outputs,
// kFp32Rtol for fp32 ones (see CudaTestUtil.h).
//
// Every test skips itself without a device. Only the argument checks, which
// are made on the host before anything is enqueued, run everywhere.
// bench/gpu/check.sh runs these tests on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "Reference.h"

#include <cmath>
#include <ostream>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

/// The fixture of the tests that need no parameters.
using CudaKernels = CudaTest;

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

struct RowsCase {
  int64_t N, H;
};

/// Keeps gtest (and ctest's test names) from printing the raw bytes.
void PrintTo(const RowsCase &c, std::ostream *os) {
  *os << "N=" << c.N << " H=" << c.H;
}

std::string rowsCaseName(const ::testing::TestParamInfo<RowsCase> &info) {
  return "N" + std::to_string(info.param.N) + "_H" +
         std::to_string(info.param.H);
}

class CudaLayerNorm : public CudaTest,
                      public ::testing::WithParamInterface<RowsCase> {};

TEST_P(CudaLayerNorm, ForwardAndBackwardMatchReference) {
  const auto [N, H] = GetParam();
  const float eps = 1e-5f;
  const uint32_t seed = static_cast<uint32_t>(N * 131 + H);
  const std::string shape = "N=" + std::to_string(N) + ",H=" + std::to_string(H);
  // A mean of 3 with a spread of 1: the two-pass variance matters.
  auto x = randomBf16Values(N * H, seed, 2.0f, 4.0f);
  auto gamma = randomBf16Values(H, seed + 1, 0.5f, 1.5f);
  auto beta = randomBf16Values(H, seed + 2);
  auto dy = randomBf16Values(N * H, seed + 3);
  auto dgamma0 = randomFloats(H, seed + 4), dbeta0 = randomFloats(H, seed + 5);

  DeviceBuffer<bp_bf16_t> dX(toBf16(x)), dGamma(toBf16(gamma)),
      dBeta(toBf16(beta)), dDy(toBf16(dy)), dY(N * H), dDx(N * H);
  DeviceBuffer<float> dMean(N), dRstd(N), dDgamma(dgamma0), dDbeta(dbeta0);
  ASSERT_EQ(bp_cuda_layer_norm_fwd(dX.get(), dGamma.get(), dBeta.get(),
                                   dY.get(), dMean.get(), dRstd.get(), N, H,
                                   eps, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_layer_norm_bwd(dDy.get(), dX.get(), dGamma.get(),
                                   dMean.get(), dRstd.get(), dDx.get(),
                                   dDgamma.get(), dDbeta.get(), N, H, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  std::vector<double> mean, rstd, dx, dgamma, dbeta;
  auto xD = toDouble(x), gD = toDouble(gamma);
  auto y = ref::layerNorm(xD, gD, toDouble(beta), N, H, double(eps), &mean,
                          &rstd);
  ref::layerNormGrad(toDouble(dy), xD, gD, N, H, double(eps), dx, dgamma,
                     dbeta);
  EXPECT_TRUE(checkClose("layer_norm_fwd", "y", shape, fromBf16(dY.download()),
                         y, kBf16Rtol));
  EXPECT_TRUE(checkClose("layer_norm_fwd", "mean", shape, dMean.download(),
                         mean, kFp32Rtol));
  EXPECT_TRUE(checkClose("layer_norm_fwd", "rstd", shape, dRstd.download(),
                         rstd, kFp32Rtol));
  EXPECT_TRUE(checkClose("layer_norm_bwd", "dx", shape,
                         fromBf16(dDx.download()), dx, kBf16Rtol));
  EXPECT_TRUE(checkClose("layer_norm_bwd", "dgamma(+=)", shape,
                         dDgamma.download(), plus(dgamma0, dgamma),
                         kFp32Rtol));
  EXPECT_TRUE(checkClose("layer_norm_bwd", "dbeta(+=)", shape,
                         dDbeta.download(), plus(dbeta0, dbeta), kFp32Rtol));
}

// Widths from GPT-tiny to 8192, two not a multiple of 32; N = 70000 rows is
// more than one grid (65535 blocks) and, at H = 64, many row chunks in the
// parameter-gradient reduction.
INSTANTIATE_TEST_SUITE_P(Shapes, CudaLayerNorm,
                         ::testing::Values(RowsCase{37, 64}, RowsCase{37, 768},
                                           RowsCase{37, 1000},
                                           RowsCase{5, 1025},
                                           RowsCase{37, 8192},
                                           RowsCase{70000, 64}),
                         rowsCaseName);

//===----------------------------------------------------------------------===//
// RMS norm
//===----------------------------------------------------------------------===//

class CudaRmsNorm : public CudaTest,
                    public ::testing::WithParamInterface<RowsCase> {};

TEST_P(CudaRmsNorm, ForwardAndBackwardMatchReference) {
  const auto [N, H] = GetParam();
  const float eps = 1e-6f;
  const uint32_t seed = static_cast<uint32_t>(N * 137 + H);
  const std::string shape =
      "N=" + std::to_string(N) + ",H=" + std::to_string(H);
  auto x = randomBf16Values(N * H, seed, -3.0f, 3.0f);
  auto gamma = randomBf16Values(H, seed + 1, 0.5f, 1.5f);
  auto dy = randomBf16Values(N * H, seed + 2);
  auto dgamma0 = randomFloats(H, seed + 3);

  DeviceBuffer<bp_bf16_t> dX(toBf16(x)), dGamma(toBf16(gamma)), dDy(toBf16(dy)),
      dY(N * H), dDx(N * H);
  DeviceBuffer<float> dRstd(N), dDgamma(dgamma0);
  ASSERT_EQ(bp_cuda_rms_norm_fwd(dX.get(), dGamma.get(), dY.get(), dRstd.get(),
                                 N, H, eps, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_rms_norm_bwd(dDy.get(), dX.get(), dGamma.get(), dRstd.get(),
                                 dDx.get(), dDgamma.get(), N, H, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  std::vector<double> rstd, dx, dgamma;
  auto xD = toDouble(x), gD = toDouble(gamma);
  auto y = ref::rmsNorm(xD, gD, N, H, double(eps), &rstd);
  ref::rmsNormGrad(toDouble(dy), xD, gD, N, H, double(eps), dx, dgamma);
  EXPECT_TRUE(checkClose("rms_norm_fwd", "y", shape, fromBf16(dY.download()), y,
                         kBf16Rtol));
  EXPECT_TRUE(checkClose("rms_norm_fwd", "rstd", shape, dRstd.download(), rstd,
                         kFp32Rtol));
  EXPECT_TRUE(checkClose("rms_norm_bwd", "dx", shape, fromBf16(dDx.download()),
                         dx, kBf16Rtol));
  EXPECT_TRUE(checkClose("rms_norm_bwd", "dgamma(+=)", shape,
                         dDgamma.download(), plus(dgamma0, dgamma), kFp32Rtol));
}

// As the layer norm's: 16-byte packs where H is a multiple of 8 (all but
// 1025, which takes one element an access), one grid and more.
INSTANTIATE_TEST_SUITE_P(Shapes, CudaRmsNorm,
                         ::testing::Values(RowsCase{37, 64}, RowsCase{37, 768},
                                           RowsCase{5, 1025},
                                           RowsCase{37, 8192},
                                           RowsCase{70000, 64}),
                         rowsCaseName);

TEST_F(CudaKernels, LayerNormBackwardIsDeterministic) {
  // The parameter gradients are reduced in a fixed order: two runs, the
  // same bits.
  const int64_t N = 300, H = 96;
  auto x = randomBf16Values(N * H, 60), dy = randomBf16Values(N * H, 61);
  auto gamma = randomBf16Values(H, 62, 0.5f, 1.5f), beta = randomBf16Values(H, 63);
  DeviceBuffer<bp_bf16_t> dX(toBf16(x)), dDy(toBf16(dy)),
      dGamma(toBf16(gamma)), dBeta(toBf16(beta)), dY(N * H), dDx(N * H);
  DeviceBuffer<float> dMean(N), dRstd(N);
  ASSERT_EQ(bp_cuda_layer_norm_fwd(dX.get(), dGamma.get(), dBeta.get(),
                                   dY.get(), dMean.get(), dRstd.get(), N, H,
                                   1e-5f, stream()),
            BP_OK);
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; ++run) {
    DeviceBuffer<float> dDgamma(std::vector<float>(H, 0.0f)),
        dDbeta(std::vector<float>(H, 0.0f));
    ASSERT_EQ(bp_cuda_layer_norm_bwd(dDy.get(), dX.get(), dGamma.get(),
                                     dMean.get(), dRstd.get(), dDx.get(),
                                     dDgamma.get(), dDbeta.get(), N, H,
                                     stream()),
              BP_OK);
    runs.push_back(dDgamma.download());
  }
  EXPECT_EQ(runs[0], runs[1]);
}

//===----------------------------------------------------------------------===//
// GELU and add
//===----------------------------------------------------------------------===//

TEST_F(CudaKernels, GeluForwardAndBackwardMatchReference) {
  // Not a multiple of the block size; x spans both tails of the tanh.
  const int64_t n = 100003;
  const std::string shape = "n=" + std::to_string(n);
  auto x = randomBf16Values(n, 70, -6.0f, 6.0f);
  auto dy = randomBf16Values(n, 71);
  DeviceBuffer<bp_bf16_t> dX(toBf16(x)), dDy(toBf16(dy)), dY(n), dDx(n);
  ASSERT_EQ(bp_cuda_gelu_fwd(dX.get(), dY.get(), n, stream()), BP_OK);
  ASSERT_EQ(bp_cuda_gelu_bwd(dDy.get(), dX.get(), dDx.get(), n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  auto xD = toDouble(x);
  auto y = ref::gelu(xD);
  auto dx = ref::geluGrad(toDouble(dy), xD);
  EXPECT_TRUE(checkClose("gelu_fwd", "y", shape, fromBf16(dY.download()), y,
                         kBf16Rtol));
  EXPECT_TRUE(checkClose("gelu_bwd", "dx", shape, fromBf16(dDx.download()),
                         dx, kBf16Rtol));

  // In place, as runtime.h allows: y over x, dx over dy.
  ASSERT_EQ(bp_cuda_gelu_bwd(dDy.get(), dX.get(), dDy.get(), n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_gelu_fwd(dX.get(), dX.get(), n, stream()), BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose("gelu_fwd", "y(in-place)", shape,
                         fromBf16(dX.download()), y, kBf16Rtol));
  EXPECT_TRUE(checkClose("gelu_bwd", "dx(in-place)", shape,
                         fromBf16(dDy.download()), dx, kBf16Rtol));
}

// The start-up work (the index-error word, every attention kernel's shared
// memory allowance) succeeds, and a second call finds it done.
TEST_F(CudaKernels, PrepareSucceedsOnceAndAgain) {
  EXPECT_EQ(bp_cuda_prepare(), BP_OK);
  EXPECT_EQ(bp_cuda_prepare(), BP_OK);
}

TEST_F(CudaKernels, AddMatchesReferenceAndMayAlias) {
  // More elements than one grid covers (65535 blocks x 256 threads), so the
  // grid-stride loop runs twice for some threads.
  const int64_t n = 65535 * 256 + 1001;
  const std::string shape = "n=" + std::to_string(n);
  auto a = randomBf16Values(n, 72, -4.0f, 4.0f), b = randomBf16Values(n, 73);
  auto sum = ref::add(toDouble(a), toDouble(b));
  DeviceBuffer<bp_bf16_t> dA(toBf16(a)), dB(toBf16(b)), dOut(n);
  ASSERT_EQ(bp_cuda_add_fwd(dA.get(), dB.get(), dOut.get(), n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose("add", "out", shape, fromBf16(dOut.download()), sum,
                         kBf16Rtol));
  ASSERT_EQ(bp_cuda_add_fwd(dA.get(), dB.get(), dB.get(), n, stream()), BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose("add", "out(=b)", shape, fromBf16(dB.download()), sum,
                         kBf16Rtol));
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

struct EmbeddingCase {
  int64_t B, T, H, V;
};

void PrintTo(const EmbeddingCase &c, std::ostream *os) {
  *os << "B=" << c.B << " T=" << c.T << " H=" << c.H << " V=" << c.V;
}

std::string
embeddingCaseName(const ::testing::TestParamInfo<EmbeddingCase> &info) {
  const EmbeddingCase &c = info.param;
  return "B" + std::to_string(c.B) + "_T" + std::to_string(c.T) + "_H" +
         std::to_string(c.H) + "_V" + std::to_string(c.V);
}

class CudaEmbedding : public CudaTest,
                      public ::testing::WithParamInterface<EmbeddingCase> {};

/// Tokens that repeat within and across sequences (small ids), plus the
/// first and last id of the vocabulary.
std::vector<int32_t> repeatingTokens(int64_t n, int64_t V, uint32_t seed) {
  auto tokens = randomInts(n, seed, 0, 4);
  tokens[0] = static_cast<int32_t>(V - 1);
  tokens[n - 1] = 0;
  return tokens;
}

TEST_P(CudaEmbedding, ForwardAndBackwardMatchReference) {
  const auto [B, T, H, V] = GetParam();
  const int64_t P = T + 2; // Rows T..P-1 of wpe are not used.
  const uint32_t seed = static_cast<uint32_t>(B * 7 + T * 11 + H);
  const std::string shape = "B=" + std::to_string(B) + ",T=" +
                            std::to_string(T) + ",H=" + std::to_string(H) +
                            ",V=" + std::to_string(V);
  auto tokens = repeatingTokens(B * T, V, seed);
  auto wte = randomBf16Values(V * H, seed + 1), wpe = randomBf16Values(P * H, seed + 2);
  auto dout = randomBf16Values(B * T * H, seed + 3);
  auto dwte0 = randomFloats(V * H, seed + 4), dwpe0 = randomFloats(P * H, seed + 5);

  DeviceBuffer<int32_t> dTokens(tokens);
  DeviceBuffer<bp_bf16_t> dWte(toBf16(wte)), dWpe(toBf16(wpe)),
      dDout(toBf16(dout)), dOut(B * T * H);
  DeviceBuffer<float> dDwte(dwte0), dDwpe(dwpe0);
  ASSERT_EQ(bp_cuda_embedding_fwd(dTokens.get(), dWte.get(), dWpe.get(),
                                  dOut.get(), B, T, H, V, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_embedding_bwd(dTokens.get(), dDout.get(), dDwte.get(),
                                  dDwpe.get(), B, T, H, V, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  auto out = ref::embedding(tokens, toDouble(wte), toDouble(wpe), B, T, H);
  std::vector<double> dwte, dwpe;
  ref::embeddingGrad(tokens, toDouble(dout), B, T, H, V, dwte, dwpe);
  dwpe.resize(P * H, 0.0); // Unused positions: their accumulators untouched.
  EXPECT_TRUE(checkClose("embedding_fwd", "out", shape,
                         fromBf16(dOut.download()), out, kBf16Rtol));
  EXPECT_TRUE(checkClose("embedding_bwd", "dwte(+=)", shape, dDwte.download(),
                         plus(dwte0, dwte), kFp32Rtol));
  EXPECT_TRUE(checkClose("embedding_bwd", "dwpe(+=)", shape, dDwpe.download(),
                         plus(dwpe0, dwpe), kFp32Rtol));
}

// GPT-2's vocabulary at a small width; wider rows at a smaller vocabulary
// (the reference's dwte is V x H doubles on the host); H = 100 is not a
// multiple of a 16-byte pack of bf16, so its rows move one element an
// access.
INSTANTIATE_TEST_SUITE_P(Shapes, CudaEmbedding,
                         ::testing::Values(EmbeddingCase{3, 7, 64, 50304},
                                           EmbeddingCase{3, 7, 768, 1000},
                                           EmbeddingCase{2, 5, 1000, 301},
                                           EmbeddingCase{2, 5, 100, 301},
                                           EmbeddingCase{2, 3, 8192, 17}),
                         embeddingCaseName);

TEST_F(CudaKernels, EmbeddingReportsOutOfRangeTokens) {
  const int64_t B = 1, T = 4, H = 64, V = 10;
  std::vector<int32_t> tokens = {1, static_cast<int32_t>(V), 2, -1};
  auto wte = randomBf16Values(V * H, 80), wpe = randomBf16Values(T * H, 81);
  DeviceBuffer<int32_t> dTokens(tokens);
  DeviceBuffer<bp_bf16_t> dWte(toBf16(wte)), dWpe(toBf16(wpe)),
      dOut(B * T * H), dDout(toBf16(randomBf16Values(B * T * H, 82)));
  DeviceBuffer<float> dDwte(std::vector<float>(V * H, 0.0f)),
      dDwpe(std::vector<float>(T * H, 0.0f));

  // The launch succeeds; the id is only seen on the device.
  ASSERT_EQ(bp_cuda_embedding_fwd(dTokens.get(), dWte.get(), dWpe.get(),
                                  dOut.get(), B, T, H, V, stream()),
            BP_OK);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_OK) << "the record is cleared";
  auto out = fromBf16(dOut.download());
  for (int64_t c = 0; c < H; ++c) {
    EXPECT_TRUE(std::isnan(out[1 * H + c]));
    EXPECT_TRUE(std::isnan(out[3 * H + c]));
    EXPECT_FALSE(std::isnan(out[0 * H + c]));
  }

  ASSERT_EQ(bp_cuda_embedding_bwd(dTokens.get(), dDout.get(), dDwte.get(),
                                  dDwpe.get(), B, T, H, V, stream()),
            BP_OK);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_ERR_INVALID_ARGUMENT);
  // The valid rows still contributed; nothing outside dwte was written (the
  // test stream's later work would fault, or compute-sanitizer would say).
  auto dwte = dDwte.download();
  EXPECT_NE(dwte[1 * H], 0.0f);
  EXPECT_NE(dwte[2 * H], 0.0f);
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

struct CrossEntropyCase {
  int64_t N, V;
  float offset; // Added to every logit: large values test the max shift.
};

void PrintTo(const CrossEntropyCase &c, std::ostream *os) {
  *os << "N=" << c.N << " V=" << c.V << " offset=" << c.offset;
}

std::string
crossEntropyCaseName(const ::testing::TestParamInfo<CrossEntropyCase> &info) {
  return "N" + std::to_string(info.param.N) + "_V" +
         std::to_string(info.param.V) + "_offset" +
         std::to_string(static_cast<int>(info.param.offset));
}

class CudaCrossEntropy : public CudaTest,
                         public ::testing::WithParamInterface<CrossEntropyCase> {
};

TEST_P(CudaCrossEntropy, ForwardAndBackwardMatchReference) {
  const auto [N, V, offset] = GetParam();
  const float dloss = 0.25f; // E.g. 1 / micro-batches.
  const uint32_t seed = static_cast<uint32_t>(N * 13 + V);
  const std::string shape = "N=" + std::to_string(N) + ",V=" +
                            std::to_string(V) + ",offset=" +
                            std::to_string(static_cast<int>(offset));
  // exp(200) overflows fp32: the kernel must subtract the row max. (bf16
  // spacing at 200 is 1, so such logits are coarse, but the reference sees
  // the same values.)
  auto logits = randomBf16Values(N * V, seed, offset - 4.0f, offset + 4.0f);
  auto labels = randomInts(N, seed + 1, 0, static_cast<int32_t>(V - 1));
  labels[1] = BP_IGNORE_INDEX;
  labels[N - 1] = static_cast<int32_t>(V - 1);

  DeviceBuffer<bp_bf16_t> dLogits(toBf16(logits)), dDlogits(N * V);
  DeviceBuffer<int32_t> dLabels(labels);
  DeviceBuffer<float> dLoss(1), dRowMax(N), dLogSum(N);
  DeviceBuffer<float> dDloss(std::vector<float>{dloss});
  ASSERT_EQ(bp_cuda_cross_entropy_fwd(dLogits.get(), dLabels.get(), dLoss.get(),
                                      dRowMax.get(), dLogSum.get(), N, V,
                                      BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_cross_entropy_bwd(
                dLogits.get(), dLabels.get(), dDloss.get(), dRowMax.get(),
                dLogSum.get(), dDlogits.get(), N, V, BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  auto lD = toDouble(logits);
  const double loss = ref::crossEntropy(lD, labels, N, V, BP_IGNORE_INDEX);
  auto dlogits = ref::crossEntropyGrad(lD, labels, N, V, BP_IGNORE_INDEX,
                                       double(dloss));
  EXPECT_TRUE(checkClose("cross_entropy_fwd", "loss", shape, dLoss.download(),
                         {loss}, kFp32Rtol));
  EXPECT_TRUE(checkClose("cross_entropy_bwd", "dlogits", shape,
                         fromBf16(dDlogits.download()), dlogits, kBf16Rtol));

  // In place over the logits, as runtime.h allows.
  ASSERT_EQ(bp_cuda_cross_entropy_bwd(
                dLogits.get(), dLabels.get(), dDloss.get(), dRowMax.get(),
                dLogSum.get(), dLogits.get(), N, V, BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  EXPECT_TRUE(checkClose("cross_entropy_bwd", "dlogits(in-place)", shape,
                         fromBf16(dLogits.download()), dlogits, kBf16Rtol));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CudaCrossEntropy,
    ::testing::Values(CrossEntropyCase{9, 11, 0.0f},
                      CrossEntropyCase{6, 50304, 0.0f},
                      CrossEntropyCase{70, 1000, 0.0f},
                      CrossEntropyCase{5, 1000, 200.0f}),
    crossEntropyCaseName);

TEST_F(CudaKernels, CrossEntropyAllIgnoredGivesZeroLossAndGradients) {
  const int64_t N = 4, V = 100;
  DeviceBuffer<bp_bf16_t> dLogits(toBf16(randomBf16Values(N * V, 90))),
      dDlogits(N * V);
  DeviceBuffer<int32_t> dLabels(std::vector<int32_t>(N, BP_IGNORE_INDEX));
  DeviceBuffer<float> dLoss(1), dRowMax(N), dLogSum(N);
  DeviceBuffer<float> dUnit(std::vector<float>{1.0f});
  ASSERT_EQ(bp_cuda_cross_entropy_fwd(dLogits.get(), dLabels.get(), dLoss.get(),
                                      dRowMax.get(), dLogSum.get(), N, V,
                                      BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_cross_entropy_bwd(
                dLogits.get(), dLabels.get(), dUnit.get(), dRowMax.get(),
                dLogSum.get(), dDlogits.get(), N, V, BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  // Exactly zero (not NaN from 0/0): the expected values are all 0, so
  // checkClose demands equality.
  EXPECT_TRUE(checkClose("cross_entropy_fwd", "loss(all-ignored)", "N=4,V=100",
                         dLoss.download(), {0.0}, kFp32Rtol));
  EXPECT_TRUE(checkClose("cross_entropy_bwd", "dlogits(all-ignored)",
                         "N=4,V=100", fromBf16(dDlogits.download()),
                         std::vector<double>(N * V, 0.0), kBf16Rtol));
}

TEST_F(CudaKernels, CrossEntropyReportsOutOfRangeLabels) {
  const int64_t N = 3, V = 50;
  std::vector<int32_t> labels = {4, static_cast<int32_t>(V), BP_IGNORE_INDEX};
  DeviceBuffer<bp_bf16_t> dLogits(toBf16(randomBf16Values(N * V, 91))),
      dDlogits(N * V);
  DeviceBuffer<int32_t> dLabels(labels);
  DeviceBuffer<float> dLoss(1), dRowMax(N), dLogSum(N);
  DeviceBuffer<float> dUnit(std::vector<float>{1.0f});
  ASSERT_EQ(bp_cuda_cross_entropy_fwd(dLogits.get(), dLabels.get(), dLoss.get(),
                                      dRowMax.get(), dLogSum.get(), N, V,
                                      BP_IGNORE_INDEX, stream()),
            BP_OK);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_ERR_INVALID_ARGUMENT);
  EXPECT_TRUE(std::isnan(dLoss.download()[0]));
  ASSERT_EQ(bp_cuda_cross_entropy_bwd(
                dLogits.get(), dLabels.get(), dUnit.get(), dRowMax.get(),
                dLogSum.get(), dDlogits.get(), N, V, BP_IGNORE_INDEX, stream()),
            BP_OK);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_ERR_INVALID_ARGUMENT);
  auto d = fromBf16(dDlogits.download());
  EXPECT_FALSE(std::isnan(d[0]));
  EXPECT_TRUE(std::isnan(d[1 * V]));
  EXPECT_EQ(d[2 * V], 0.0f);
  EXPECT_EQ(bp_cuda_synchronize(stream()), BP_OK);
}

//===----------------------------------------------------------------------===//
// Argument checks: on the host, before anything is enqueued, so these run
// without a device too.
//===----------------------------------------------------------------------===//

TEST(CudaArguments, NullPointersAndNonPositiveSizesAreRejected) {
  // Never dereferenced: every call below is rejected first.
  bp_bf16_t *p = reinterpret_cast<bp_bf16_t *>(uintptr_t(256));
  float *f = reinterpret_cast<float *>(uintptr_t(256));
  int32_t *ids = reinterpret_cast<int32_t *>(uintptr_t(256));
  EXPECT_EQ(bp_cuda_add_fwd(p, p, p, 0, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_add_fwd(nullptr, p, p, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_gelu_fwd(p, nullptr, 4, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_gelu_bwd(p, p, p, -1, nullptr), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_layer_norm_fwd(p, p, p, p, f, f, 2, 4, -1.0f, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_layer_norm_fwd(p, p, p, p, f, nullptr, 2, 4, 1e-5f,
                                   nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_layer_norm_bwd(p, p, p, f, f, p, f, f, 0, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_embedding_fwd(ids, p, p, p, 1, 0, 4, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  // A null position-table gradient is a model without one (LLaMA); a null
  // token-table gradient is an error.
  EXPECT_EQ(bp_cuda_embedding_bwd(ids, p, nullptr, f, 1, 1, 4, 4, nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_cross_entropy_fwd(p, ids, f, f, f, 2, 0, BP_IGNORE_INDEX,
                                      nullptr),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_cuda_cross_entropy_bwd(p, nullptr, f, f, f, p, 2, 3,
                                      BP_IGNORE_INDEX, nullptr),
            BP_ERR_INVALID_ARGUMENT);
}

} // namespace
