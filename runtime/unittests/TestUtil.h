//===- TestUtil.h - Random data, comparisons, finite differences -*- C++ -*-=//
//
// Test-only helpers shared by KernelsTest and GradCheckTest.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_TESTUTIL_H
#define BITPIPE_RUNTIME_UNITTESTS_TESTUTIL_H

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace bitpipe::runtime::test {

/// Uniform floats in [lo, hi) from a fixed seed, so failures reproduce.
inline std::vector<float> randomFloats(int64_t n, uint32_t seed,
                                       float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

inline std::vector<int32_t> randomInts(int64_t n, uint32_t seed, int32_t lo,
                                       int32_t hiInclusive) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hiInclusive);
  std::vector<int32_t> v(n);
  for (int32_t &x : v)
    x = dist(gen);
  return v;
}

/// Exact: every float is a double.
inline std::vector<double> toDouble(const std::vector<float> &v) {
  return std::vector<double>(v.begin(), v.end());
}

inline double maxAbs(const std::vector<double> &v) {
  double m = 0.0;
  for (double x : v)
    m = std::max(m, std::fabs(x));
  return m;
}

/// Checks |actual - expected| <= rtol * (|expected| + floor * max|expected|)
/// element-wise: relative for entries near the tensor's scale, and an
/// absolute floor of rtol * floor * scale for entries that cancel to ~0
/// (where an fp32 result cannot be relatively accurate).
/// \p actual may be float (a kernel's output) or double (a reference checked
/// against finite differences).
template <typename A>
::testing::AssertionResult allClose(const std::vector<A> &actual,
                                    const std::vector<double> &expected,
                                    double rtol, double floor = 0.1) {
  if (actual.size() != expected.size())
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != " << expected.size();
  const double scale = maxAbs(expected);
  size_t bad = 0, firstBad = 0;
  double worst = 0.0;
  for (size_t i = 0; i < actual.size(); ++i) {
    double err = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    double tol = rtol * (std::fabs(expected[i]) + floor * scale);
    if (!(err <= tol)) { // Also catches NaN.
      if (!bad)
        firstBad = i;
      ++bad;
    }
    if (scale > 0)
      worst = std::max(worst, err / scale);
  }
  if (!bad)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.size() << " elements differ; first at "
         << firstBad << ": " << actual[firstBad] << " vs " << expected[firstBad]
         << " (scale " << scale << ", worst err/scale " << worst << ")";
}

/// allClose's criterion as one number, for reports: the largest
/// |actual - expected| / (|expected| + floor * max|expected|), so that
/// allClose(actual, expected, rtol, floor) passes exactly when this is <=
/// rtol. Infinite for a NaN, or for any error where the bound is 0.
template <typename A>
double maxNormalizedError(const std::vector<A> &actual,
                          const std::vector<double> &expected,
                          double floor = 0.1) {
  const double scale = maxAbs(expected);
  double worst = 0.0;
  for (size_t i = 0; i < actual.size() && i < expected.size(); ++i) {
    double err = std::fabs(static_cast<double>(actual[i]) - expected[i]);
    double bound = std::fabs(expected[i]) + floor * scale;
    if (!(err <= 0.0))
      worst = std::max(worst, err < INFINITY && bound > 0.0 ? err / bound
                                                            : INFINITY);
  }
  return worst;
}

/// Central finite differences of a scalar function of \p x, in double:
/// (f(x + h e_i) - f(x - h e_i)) / 2h. With h = 1e-5 the truncation error
/// (~h^2) and the rounding error (~1e-16 / h) are both far below the 1e-3
/// tolerance the fp32 kernels are held to.
inline std::vector<double> finiteDifferences(std::vector<double> &x,
                                             const std::function<double()> &f,
                                             double h = 1e-5) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double fp = f();
    x[i] = saved - h;
    const double fm = f();
    x[i] = saved;
    g[i] = (fp - fm) / (2.0 * h);
  }
  return g;
}

/// sum_i w[i] * y[i]: turns a tensor output into a scalar loss whose gradient
/// with respect to y is w, so a kernel backward fed dy = w is checkable
/// against finite differences of this loss.
inline double weightedSum(const std::vector<double> &y,
                          const std::vector<double> &w) {
  double s = 0.0;
  for (size_t i = 0; i < y.size(); ++i)
    s += y[i] * w[i];
  return s;
}

/// The kernels' gradients must match finite differences to this relative
/// tolerance (see allClose): the kernels compute in fp32.
inline constexpr double kGradRtol = 1e-3;
/// The kernels' forwards must match the double reference to this.
inline constexpr double kFwdRtol = 1e-5;

/// A gradient check is meaningless if the expected gradient is ~0: then a
/// kernel writing zeros would pass. Require a non-trivial gradient.
template <typename A>
::testing::AssertionResult gradMatches(const std::vector<A> &kernel,
                                       const std::vector<double> &fd) {
  if (!(maxAbs(fd) > 1e-3))
    return ::testing::AssertionFailure()
           << "finite-difference gradient is ~0 (max " << maxAbs(fd)
           << "); the check would be vacuous";
  return allClose(kernel, fd, kGradRtol);
}

/// One attention shape and tiling, for parameterised tests.
struct AttentionCase {
  int64_t B, T, H, nh, blockQ, blockK;
  bool causal;
};

/// Readable names for ctest, e.g. Causal_T10_nh2_bq4_bk3.
inline std::string
attentionCaseName(const ::testing::TestParamInfo<AttentionCase> &info) {
  const AttentionCase &c = info.param;
  return std::string(c.causal ? "Causal" : "Bidir") + "_B" +
         std::to_string(c.B) + "_T" + std::to_string(c.T) + "_H" +
         std::to_string(c.H) + "_nh" + std::to_string(c.nh) + "_bq" +
         std::to_string(c.blockQ) + "_bk" + std::to_string(c.blockK);
}

/// Keeps gtest from printing the parameter as raw bytes in test names.
inline void PrintTo(const AttentionCase &c, std::ostream *os) {
  *os << (c.causal ? "causal" : "bidirectional") << " B=" << c.B << " T=" << c.T
      << " H=" << c.H << " nh=" << c.nh << " blocks=" << c.blockQ << "x"
      << c.blockK;
}

} // namespace bitpipe::runtime::test

#endif // BITPIPE_RUNTIME_UNITTESTS_TESTUTIL_H
