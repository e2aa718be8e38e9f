//===- CudaUnalignedTest.cpp - Kernels off 16-byte boundaries -------------===//
//
// GELU and the residual add move 16 bytes a thread when every pointer is
// 16-byte aligned, and fall back to one element a thread otherwise. Pool
// blocks are always aligned, so the other tests only reach the first path;
// here the operands start 1 to 7 elements into their blocks (compiled code
// may pass views into a larger buffer), in both element types, at counts
// that are not multiples of a pack, and the elements just outside must keep
// their sentinels. The row kernels (norms, embedding, cross-entropy) take
// packs only when every row starts on a 16-byte boundary: the last test
// gives them rows that would (widths a multiple of a pack) in operands
// that start one element into their blocks. Tolerances as
// CudaKernelsTest.cpp (bf16) and CudaFp32KernelsTest.cpp (fp32).
//
// Skipped without a device; bench/gpu/check.sh runs them on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"
#include "Reference.h"

#include <cmath>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

struct UnalignedCase {
  int64_t n;
  int64_t shiftA, shiftB, shiftOut; // Elements into each operand's block.
};

void PrintTo(const UnalignedCase &c, std::ostream *os) {
  *os << "n=" << c.n << " shifts=" << c.shiftA << "," << c.shiftB << ","
      << c.shiftOut;
}

class CudaUnaligned : public CudaTest,
                      public ::testing::WithParamInterface<UnalignedCase> {};

using CudaUnalignedRows = CudaTest;

/// Host values at their shift in a block of shift + n + 1 elements, the rest
/// \p sentinel.
std::vector<float> placed(const std::vector<float> &v, int64_t shift,
                          float sentinel) {
  std::vector<float> out(shift + v.size() + 1, sentinel);
  std::copy(v.begin(), v.end(), out.begin() + shift);
  return out;
}

/// The n values at \p shift of a downloaded block; false (with a message)
/// if an element just outside lost its sentinel.
::testing::AssertionResult window(const std::vector<float> &block,
                                  int64_t shift, int64_t n, float sentinel,
                                  std::vector<float> &out) {
  out.assign(block.begin() + shift, block.begin() + shift + n);
  const float after = block[shift + n];
  const float before = shift > 0 ? block[shift - 1] : sentinel;
  if (!(after == sentinel && before == sentinel))
    return ::testing::AssertionFailure()
           << "written outside [" << shift << ", " << shift + n << ")";
  return ::testing::AssertionSuccess();
}

TEST_P(CudaUnaligned, Fp32GeluAndAdd) {
  const auto [n, sa, sb, so] = GetParam();
  const std::string shape = "n=" + std::to_string(n) + ",fp32,unaligned";
  const float sentinel = 42.0f;
  auto x = randomFloats(n, 1, -5.0f, 5.0f), b = randomFloats(n, 2);
  DeviceBuffer<float> dX(placed(x, sa, sentinel)), dB(placed(b, sb, sentinel)),
      dY(placed(std::vector<float>(n, 0.0f), so, sentinel)),
      dDx(placed(std::vector<float>(n, 0.0f), so, sentinel)),
      dSum(placed(std::vector<float>(n, 0.0f), so, sentinel));
  ASSERT_EQ(bp_cuda_gelu_fwd_f32(dX.get() + sa, dY.get() + so, n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_gelu_bwd_f32(dB.get() + sb, dX.get() + sa, dDx.get() + so,
                                 n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_add_fwd_f32(dX.get() + sa, dB.get() + sb, dSum.get() + so,
                                n, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  std::vector<float> y, dx, sum;
  ASSERT_TRUE(window(dY.download(), so, n, sentinel, y));
  ASSERT_TRUE(window(dDx.download(), so, n, sentinel, dx));
  ASSERT_TRUE(window(dSum.download(), so, n, sentinel, sum));
  auto xD = toDouble(x), bD = toDouble(b);
  EXPECT_TRUE(checkClose("gelu_fwd_f32", "y", shape, y, ref::gelu(xD),
                         kFwdRtol));
  EXPECT_TRUE(checkClose("gelu_bwd_f32", "dx", shape, dx,
                         ref::geluGrad(bD, xD), kFwdRtol));
  EXPECT_TRUE(checkClose("add_f32", "out", shape, sum, ref::add(xD, bD),
                         kFwdRtol));
}

TEST_P(CudaUnaligned, Bf16GeluAndAdd) {
  const auto [n, sa, sb, so] = GetParam();
  const std::string shape = "n=" + std::to_string(n) + ",bf16,unaligned";
  const float sentinel = 42.0f; // A bf16 value.
  auto x = randomBf16Values(n, 3, -5.0f, 5.0f), b = randomBf16Values(n, 4);
  auto zeros = std::vector<float>(n, 0.0f);
  DeviceBuffer<bp_bf16_t> dX(toBf16(placed(x, sa, sentinel))),
      dB(toBf16(placed(b, sb, sentinel))),
      dY(toBf16(placed(zeros, so, sentinel))),
      dDx(toBf16(placed(zeros, so, sentinel))),
      dSum(toBf16(placed(zeros, so, sentinel)));
  ASSERT_EQ(bp_cuda_gelu_fwd(dX.get() + sa, dY.get() + so, n, stream()), BP_OK);
  ASSERT_EQ(bp_cuda_gelu_bwd(dB.get() + sb, dX.get() + sa, dDx.get() + so, n,
                             stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_add_fwd(dX.get() + sa, dB.get() + sb, dSum.get() + so, n,
                            stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  std::vector<float> y, dx, sum;
  ASSERT_TRUE(window(fromBf16(dY.download()), so, n, sentinel, y));
  ASSERT_TRUE(window(fromBf16(dDx.download()), so, n, sentinel, dx));
  ASSERT_TRUE(window(fromBf16(dSum.download()), so, n, sentinel, sum));
  auto xD = toDouble(x), bD = toDouble(b);
  EXPECT_TRUE(checkClose("gelu_fwd", "y", shape, y, ref::gelu(xD), kBf16Rtol));
  EXPECT_TRUE(checkClose("gelu_bwd", "dx", shape, dx, ref::geluGrad(bD, xD),
                         kBf16Rtol));
  EXPECT_TRUE(checkClose("add", "out", shape, sum, ref::add(xD, bD),
                         kBf16Rtol));
}

// One operand off (the rest aligned), all off alike, all off differently;
// n below, at and above a pack.
INSTANTIATE_TEST_SUITE_P(Cases, CudaUnaligned,
                         ::testing::Values(UnalignedCase{1, 1, 0, 0},
                                           UnalignedCase{9, 0, 0, 3},
                                           UnalignedCase{1003, 0, 5, 0},
                                           UnalignedCase{1003, 1, 1, 1},
                                           UnalignedCase{4099, 7, 2, 3},
                                           UnalignedCase{100003, 0, 0, 0}),
                         [](const auto &info) {
                           const UnalignedCase &c = info.param;
                           return "n" + std::to_string(c.n) + "_shifts" +
                                  std::to_string(c.shiftA) +
                                  std::to_string(c.shiftB) +
                                  std::to_string(c.shiftOut);
                         });

/// The row kernels at H = 768 and V = 1000 (multiples of a bf16 pack), every
/// operand one element into its block: the one-element path, against the
/// references, sentinels kept.
TEST_F(CudaUnalignedRows, Bf16RowKernelsOffBoundary) {
  const int64_t N = 6, H = 768, V = 1000, B = 2, T = 3;
  const std::string shape = "N=6,H=768,V=1000,bf16,shifted by 1";
  const float sentinel = 42.0f;
  const int64_t sh = 1;
  auto x = randomBf16Values(N * H, 11, -3.0f, 3.0f);
  auto gamma = randomBf16Values(H, 12, 0.5f, 1.5f);
  auto beta = randomBf16Values(H, 13);
  auto dy = randomBf16Values(N * H, 14);
  auto zeros = std::vector<float>(N * H, 0.0f);
  auto blockOf = [&](const std::vector<float> &v) {
    return DeviceBuffer<bp_bf16_t>(toBf16(placed(v, sh, sentinel)));
  };
  auto dX = blockOf(x), dGamma = blockOf(gamma), dBeta = blockOf(beta),
       dDy = blockOf(dy), dY = blockOf(zeros), dDx = blockOf(zeros),
       dRmsY = blockOf(zeros), dRmsDx = blockOf(zeros);
  DeviceBuffer<float> dMean(N), dRstd(N), dRmsRstd(N),
      dDgamma(placed(std::vector<float>(H, 0.0f), sh, sentinel)),
      dDbeta(placed(std::vector<float>(H, 0.0f), sh, sentinel)),
      dRmsDgamma(placed(std::vector<float>(H, 0.0f), sh, sentinel));
  ASSERT_EQ(bp_cuda_layer_norm_fwd(dX.get() + sh, dGamma.get() + sh,
                                   dBeta.get() + sh, dY.get() + sh, dMean.get(),
                                   dRstd.get(), N, H, 1e-5f, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_layer_norm_bwd(dDy.get() + sh, dX.get() + sh,
                                   dGamma.get() + sh, dMean.get(), dRstd.get(),
                                   dDx.get() + sh, dDgamma.get() + sh,
                                   dDbeta.get() + sh, N, H, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_rms_norm_fwd(dX.get() + sh, dGamma.get() + sh,
                                 dRmsY.get() + sh, dRmsRstd.get(), N, H, 1e-6f,
                                 stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_rms_norm_bwd(dDy.get() + sh, dX.get() + sh,
                                 dGamma.get() + sh, dRmsRstd.get(),
                                 dRmsDx.get() + sh, dRmsDgamma.get() + sh, N, H,
                                 stream()),
            BP_OK);

  // Embedding: a table of V rows and the output, both shifted.
  auto wte = randomBf16Values(V * H, 15);
  std::vector<int32_t> tokens = {0, 7, 7, 999, 3, 0};
  auto dWte = blockOf(wte);
  auto dEmb = blockOf(zeros);
  DeviceBuffer<int32_t> dTokens(tokens);
  DeviceBuffer<float> dDwte(
      placed(std::vector<float>(V * H, 0.0f), sh, sentinel));
  ASSERT_EQ(bp_cuda_embedding_fwd(dTokens.get(), dWte.get() + sh, nullptr,
                                  dEmb.get() + sh, B, T, H, V, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_embedding_bwd(dTokens.get(), dDy.get() + sh,
                                  dDwte.get() + sh, nullptr, B, T, H, V,
                                  stream()),
            BP_OK);

  // Cross-entropy over N rows of V logits, shifted.
  auto logits = randomBf16Values(N * V, 16, -4.0f, 4.0f);
  std::vector<int32_t> labels = {3, BP_IGNORE_INDEX, 999, 0, 500, 7};
  auto dLogits = blockOf(logits);
  auto dDlogits = blockOf(std::vector<float>(N * V, 0.0f));
  DeviceBuffer<int32_t> dLabels(labels);
  DeviceBuffer<float> dLoss(1), dRowMax(N), dLogSum(N),
      dDloss(std::vector<float>{1.0f});
  ASSERT_EQ(bp_cuda_cross_entropy_fwd(dLogits.get() + sh, dLabels.get(),
                                      dLoss.get(), dRowMax.get(), dLogSum.get(),
                                      N, V, BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_cross_entropy_bwd(dLogits.get() + sh, dLabels.get(),
                                      dDloss.get(), dRowMax.get(),
                                      dLogSum.get(), dDlogits.get() + sh, N, V,
                                      BP_IGNORE_INDEX, stream()),
            BP_OK);
  ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);

  auto xD = toDouble(x), gD = toDouble(gamma), dyD = toDouble(dy);
  std::vector<double> mean, rstd, dx, dgamma, dbeta, rmsRstd, rmsDx, rmsDg;
  auto y = ref::layerNorm(xD, gD, toDouble(beta), N, H, 1e-5, &mean, &rstd);
  ref::layerNormGrad(dyD, xD, gD, N, H, 1e-5, dx, dgamma, dbeta);
  auto rmsY = ref::rmsNorm(xD, gD, N, H, 1e-6, &rmsRstd);
  ref::rmsNormGrad(dyD, xD, gD, N, H, 1e-6, rmsDx, rmsDg);
  std::vector<double> dwte, dwpe;
  ref::embeddingGrad(tokens, dyD, B, T, H, V, dwte, dwpe);
  auto lD = toDouble(logits);
  const double loss = ref::crossEntropy(lD, labels, N, V, BP_IGNORE_INDEX);
  auto dlogits = ref::crossEntropyGrad(lD, labels, N, V, BP_IGNORE_INDEX, 1.0);

  std::vector<float> got;
  auto bf16Window = [&](DeviceBuffer<bp_bf16_t> &b, int64_t n) {
    return window(fromBf16(b.download()), sh, n, sentinel, got);
  };
  auto fp32Window = [&](DeviceBuffer<float> &b, int64_t n) {
    return window(b.download(), sh, n, sentinel, got);
  };
  ASSERT_TRUE(bf16Window(dY, N * H));
  EXPECT_TRUE(checkClose("layer_norm_fwd", "y", shape, got, y, kBf16Rtol));
  ASSERT_TRUE(bf16Window(dDx, N * H));
  EXPECT_TRUE(checkClose("layer_norm_bwd", "dx", shape, got, dx, kBf16Rtol));
  ASSERT_TRUE(fp32Window(dDgamma, H));
  EXPECT_TRUE(
      checkClose("layer_norm_bwd", "dgamma", shape, got, dgamma, kFp32Rtol));
  ASSERT_TRUE(fp32Window(dDbeta, H));
  EXPECT_TRUE(
      checkClose("layer_norm_bwd", "dbeta", shape, got, dbeta, kFp32Rtol));
  ASSERT_TRUE(bf16Window(dRmsY, N * H));
  EXPECT_TRUE(checkClose("rms_norm_fwd", "y", shape, got, rmsY, kBf16Rtol));
  ASSERT_TRUE(bf16Window(dRmsDx, N * H));
  EXPECT_TRUE(checkClose("rms_norm_bwd", "dx", shape, got, rmsDx, kBf16Rtol));
  ASSERT_TRUE(fp32Window(dRmsDgamma, H));
  EXPECT_TRUE(
      checkClose("rms_norm_bwd", "dgamma", shape, got, rmsDg, kFp32Rtol));
  ASSERT_TRUE(bf16Window(dEmb, N * H));
  EXPECT_TRUE(checkClose(
      "embedding_fwd", "out", shape, got,
      ref::embedding(tokens, toDouble(wte), std::vector<double>(), B, T, H),
      kBf16Rtol));
  ASSERT_TRUE(fp32Window(dDwte, V * H));
  EXPECT_TRUE(checkClose("embedding_bwd", "dwte", shape, got, dwte, kFp32Rtol));
  EXPECT_TRUE(checkClose("cross_entropy_fwd", "loss", shape, dLoss.download(),
                         {loss}, kFp32Rtol));
  ASSERT_TRUE(bf16Window(dDlogits, N * V));
  EXPECT_TRUE(checkClose("cross_entropy_bwd", "dlogits", shape, got, dlogits,
                         kBf16Rtol));
}

} // namespace
