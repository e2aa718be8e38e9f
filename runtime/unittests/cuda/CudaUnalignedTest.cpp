//===- CudaUnalignedTest.cpp - Kernels off 16-byte boundaries -------------===//
//
// GELU and the residual add move 16 bytes a thread when every pointer is
// 16-byte aligned, and fall back to one element a thread otherwise. Pool
// blocks are always aligned, so the other tests only reach the first path;
// here the operands start 1 to 7 elements into their blocks (compiled code
// may pass views into a larger buffer), in both element types, at counts
// that are not multiples of a pack, and the elements just outside must keep
// their sentinels. Tolerances as CudaKernelsTest.cpp (bf16) and
// CudaFp32KernelsTest.cpp (fp32).
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

} // namespace
