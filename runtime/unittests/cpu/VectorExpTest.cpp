//===- VectorExpTest.cpp - exp(x) that loops vectorize --------------------===//
//
// kernels/VectorExp.h against exp in double: within 2 float ulps over the
// range it is exact on, clamped outside it, and NaN in gives NaN out (the
// GELU kernels pass NaN through to the non-finite checks).
//
//===----------------------------------------------------------------------===//

#include "kernels/VectorExp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using bitpipe::runtime::cpu::vectorExp;

namespace {

/// |got - want| in units of the float ulp at want.
double ulps(float got, double want) {
  const float w = static_cast<float>(want);
  const double ulp =
      std::nextafter(std::fabs(w), std::numeric_limits<float>::infinity()) -
      std::fabs(w);
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

TEST(VectorExp, WithinTwoUlpsOverItsRange) {
  double worst = 0;
  float worstAt = 0;
  // Every 257th float of [-87, 88] (by bit pattern, both signs: small
  // magnitudes are most of the floats), about 8 million.
  for (float limit : {-87.0f, 88.0f}) {
    uint32_t top;
    std::memcpy(&top, &limit, sizeof top);
    const uint32_t sign = top & 0x80000000u;
    for (uint32_t bits = sign; bits <= top; bits += 257) {
      float x;
      std::memcpy(&x, &bits, sizeof x);
      const double u = ulps(vectorExp(x), std::exp(static_cast<double>(x)));
      if (u > worst) {
        worst = u;
        worstAt = x;
      }
    }
  }
  EXPECT_LE(worst, 2.0) << "at x = " << worstAt;
  EXPECT_EQ(vectorExp(0.0f), 1.0f);
}

TEST(VectorExp, ClampsOutsideTheNormalRange) {
  EXPECT_EQ(vectorExp(-1000.0f), vectorExp(-87.0f));
  EXPECT_EQ(vectorExp(1000.0f), vectorExp(88.0f));
  EXPECT_GT(vectorExp(-1000.0f), 0.0f);
  EXPECT_TRUE(std::isfinite(vectorExp(std::numeric_limits<float>::infinity())));
  EXPECT_TRUE(std::isnan(vectorExp(std::numeric_limits<float>::quiet_NaN())));
}

} // namespace
