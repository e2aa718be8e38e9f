//===- VectorErfTest.cpp - erf(x) that loops vectorize --------------------===//
//
// kernels/VectorErf.h against erf in double: within 1.5e-7 absolute over
// every 97th float of [-6, 6] (by bit pattern, so small magnitudes, where
// the relative error matters, are most of them), within 1.8e-7 relative
// below 1 (for normal floats), odd, saturated beyond 4, and NaN in gives
// NaN out.
//
//===----------------------------------------------------------------------===//

#include "kernels/VectorErf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

using bitpipe::runtime::cpu::vectorErf;

namespace {

TEST(VectorErf, CloseToErfOverTheWholeRange) {
  double worstAbs = 0, worstRel = 0;
  float worstAbsAt = 0, worstRelAt = 0;
  const float limit = 6.0f;
  uint32_t top;
  std::memcpy(&top, &limit, sizeof top);
  for (uint32_t bits = 0; bits <= top; bits += 97) {
    float x;
    std::memcpy(&x, &bits, sizeof x);
    for (float v : {x, -x}) {
      const double want = std::erf(static_cast<double>(v));
      const double err = std::fabs(static_cast<double>(vectorErf(v)) - want);
      if (err > worstAbs) {
        worstAbs = err;
        worstAbsAt = v;
      }
      // Relative error only where erf(x) is a normal float: a subnormal
      // result has too few bits to carry any relative precision.
      if (std::fabs(v) < 1.0f &&
          std::fabs(v) >= std::numeric_limits<float>::min() &&
          err / std::fabs(want) > worstRel) {
        worstRel = err / std::fabs(want);
        worstRelAt = v;
      }
    }
  }
  EXPECT_LT(worstAbs, 1.5e-7) << "at " << worstAbsAt;
  EXPECT_LT(worstRel, 1.8e-7) << "at " << worstRelAt;
}

TEST(VectorErf, OddSaturatedAndNaN) {
  for (float x : {0.0f, 0.3f, 1.0f, 2.5f, 3.99f})
    EXPECT_EQ(vectorErf(-x), -vectorErf(x)) << x;
  EXPECT_EQ(vectorErf(0.0f), 0.0f);
  EXPECT_EQ(vectorErf(4.0f), 1.0f);
  EXPECT_EQ(vectorErf(50.0f), 1.0f);
  EXPECT_EQ(vectorErf(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(vectorErf(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(vectorErf(std::nanf(""))));
}

} // namespace
