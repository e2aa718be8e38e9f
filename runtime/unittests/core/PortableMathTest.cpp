//===- PortableMathTest.cpp - Host and device draw the same bits ----------===//
//
// What makes a device-drawn weight equal to a host-drawn one
// (core/PortableMath.h): the functions do not depend on FMA contraction
// (this file is compiled with none, PortableMathContracted.cpp with every
// one; nvcc contracts by default), and they are accurate.
//
//===----------------------------------------------------------------------===//

#include "PortableMathContracted.h"

#include "core/Random.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

using namespace bitpipe::runtime;

namespace {

uint64_t bitsOf(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

/// Distance in units in the last place (same sign, finite).
int64_t ulps(double a, double b) {
  int64_t d = static_cast<int64_t>(bitsOf(a)) - static_cast<int64_t>(bitsOf(b));
  return d < 0 ? -d : d;
}

bool cpuHasFma() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

TEST(PortableMathTest, LogIsWithinTwoUlpsOfLibm) {
  // Every binade the generator reaches (1 - u >= 2^-53), densely.
  int64_t worst = 0;
  for (uint64_t i = 0; i < 400000; ++i) {
    double x = 1.0 - randomUniform(1, 2, i);
    if (x == 1.0) {
      EXPECT_EQ(portable::log(x), 0.0);
      continue;
    }
    worst = std::max(worst, ulps(portable::log(x), std::log(x)));
  }
  for (int e = -53; e <= 0; ++e)
    for (double m : {1.0, 1.1, 1.4142135623730951, 1.4142135623730954, 1.9999})
      worst = std::max(worst, ulps(portable::log(std::ldexp(m, e)),
                                   std::log(std::ldexp(m, e))));
  EXPECT_LE(worst, 2);
}

/// cos(2 pi u) in long double: the reference must not round 2 pi u to a
/// double first (that alone errs by up to 4.4e-16 near u = 1).
double referenceCos2Pi(double u) {
  return static_cast<double>(
      std::cos(6.28318530717958647692528676655900577L * u));
}

TEST(PortableMathTest, Cos2PiIsAccurateOverTheTurn) {
  // Absolute error: near the zeros of cos a relative one means nothing.
  double worst = 0;
  for (uint64_t i = 0; i < 400000; ++i) {
    double u = randomUniform(3, 4, i);
    worst =
        std::max(worst, std::fabs(portable::cos2Pi(u) - referenceCos2Pi(u)));
  }
  for (double u : {0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875})
    worst =
        std::max(worst, std::fabs(portable::cos2Pi(u) - referenceCos2Pi(u)));
  EXPECT_LT(worst, 3e-16);
  EXPECT_EQ(portable::cos2Pi(0.0), 1.0);
  EXPECT_EQ(portable::cos2Pi(0.5), -1.0);
}

TEST(PortableMathTest, ContractionChangesNoBit) {
  if (!cpuHasFma())
    GTEST_SKIP() << "this CPU has no FMA instructions";
  for (uint64_t i = 0; i < 200000; ++i) {
    double x = 1.0 - randomUniform(5, 6, i);
    double u = randomUniform(7, 8, i);
    ASSERT_EQ(bitsOf(portable::log(x)), bitsOf(contracted::log(x))) << x;
    ASSERT_EQ(bitsOf(portable::cos2Pi(u)), bitsOf(contracted::cos2Pi(u))) << u;
  }
}

TEST(PortableMathTest, InitialWeightsAreTheSameBitsWithOrWithoutContraction) {
  if (!cpuHasFma())
    GTEST_SKIP() << "this CPU has no FMA instructions";
  const uint64_t stream = hashName("layers.3.mlp.fc.weight");
  for (uint64_t i = 0; i < 1000000; ++i) {
    float mine = static_cast<float>(0.02 * randomNormal(1234, stream, i));
    float fused = contracted::initialWeight(0.02, 1234, stream, i);
    uint32_t a, b;
    std::memcpy(&a, &mine, sizeof a);
    std::memcpy(&b, &fused, sizeof b);
    ASSERT_EQ(a, b) << "counter " << i;
  }
}

} // namespace
