//===- DropoutTest.cpp - The dropout kernel against its definition --------===//
//
// bp_dropout against docs/training-semantics.md, "Dropout": a pattern
// computed from that page alone by a few lines of Python (below), the drop
// rate, the independence of sites, sample groups and seeds, and the
// properties Kernels.h promises (p == 0 copies, in place is out of place,
// the backward is the same map). The limits are written out from the page
// (sites below 2^24, elements below 2^40), not taken from core/Dropout.h.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "bitpipe/runtime.h"

#include <array>
#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <limits>

using namespace bitpipe::runtime::test;

namespace {

/// A micro-batch's random key for (seed, sample group g): the words
/// [seed low, seed high, g low, g high] (KernelRoles.h's RNG_KEY).
std::array<int32_t, 4> keyOf(uint64_t seed, uint64_t g) {
  return {static_cast<int32_t>(static_cast<uint32_t>(seed)),
          static_cast<int32_t>(static_cast<uint32_t>(seed >> 32)),
          static_cast<int32_t>(static_cast<uint32_t>(g)),
          static_cast<int32_t>(static_cast<uint32_t>(g >> 32))};
}

/// Which elements bp_dropout kept: y[e] != 0 for inputs that are never 0.
std::vector<bool> keptOf(const std::vector<float> &y) {
  std::vector<bool> kept(y.size());
  for (size_t e = 0; e < y.size(); ++e)
    kept[e] = y[e] != 0.0f;
  return kept;
}

/// Inputs in [0.5, 1.5): none is 0, so a 0 output is a dropped element.
std::vector<float> nonZeroInputs(int64_t n, uint32_t seed) {
  return randomFloats(n, seed, 0.5f, 1.5f);
}

std::vector<bool> maskOf(uint64_t seed, uint64_t g, int32_t site, float p,
                         int64_t n) {
  const auto key = keyOf(seed, g);
  const auto x = nonZeroInputs(n, 11);
  std::vector<float> y(n);
  EXPECT_EQ(bp_dropout(x.data(), y.data(), key.data(), site, p, n), BP_OK);
  return keptOf(y);
}

int64_t differences(const std::vector<bool> &a, const std::vector<bool> &b) {
  int64_t d = 0;
  for (size_t e = 0; e < a.size(); ++e)
    d += a[e] != b[e];
  return d;
}

// Seed 1234, sample group 7, site 5, p = 0.25, elements 0..63: bit e is set
// when element e is kept. Computed with Python from docs/training-
// semantics.md alone, the rule "kept when uniform(seed, D ^ mix64(g),
// site * 2^40 + e) >= p" with that page's mix64, bits and uniform:
//   M = 2**64 - 1
//   def mix64(z):
//       z = (z + 0x9E3779B97F4A7C15) & M
//       z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
//       z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
//       return z ^ (z >> 31)
//   bits = lambda s, st, c: mix64(mix64(mix64(s) ^ st) ^ c)
//   D = 0x64726F706F757421  # "dropout!"
//   hex(sum(1 << e for e in range(64)
//       if (bits(1234, D ^ mix64(7), 5 * 2**40 + e) >> 11) / 2**53 >= 0.25))
// (53 of the 64 kept.)
constexpr uint64_t kKnownPattern = 0xfffb39dbdfff6effULL;

TEST(Dropout, KnownPatternFromTheDefinition) {
  const int64_t n = 64;
  const float p = 0.25f;
  const std::array<int32_t, 4> key = {1234, 0, 7, 0};
  EXPECT_EQ(keyOf(1234, 7), key);
  const auto x = nonZeroInputs(n, 1);
  std::vector<float> y(n, 42.0f);
  ASSERT_EQ(bp_dropout(x.data(), y.data(), key.data(), 5, p, n), BP_OK);
  const float scale = 1.0f / (1.0f - p);
  for (int64_t e = 0; e < n; ++e) {
    const bool kept = (kKnownPattern >> e) & 1;
    EXPECT_EQ(y[e], kept ? x[e] * scale : 0.0f) << "element " << e;
  }
}

TEST(Dropout, DropsAFractionPWithinFiveSigma) {
  const int64_t n = 1000000;
  const auto key = keyOf(99, 3);
  const auto x = nonZeroInputs(n, 2);
  std::vector<float> y(n);
  for (float p : {0.1f, 0.5f, 0.9f}) {
    ASSERT_EQ(bp_dropout(x.data(), y.data(), key.data(), 1, p, n), BP_OK);
    const float scale = 1.0f / (1.0f - p);
    int64_t dropped = 0, wrong = 0;
    for (int64_t e = 0; e < n; ++e) {
      if (y[e] == 0.0f)
        ++dropped;
      else if (y[e] != x[e] * scale)
        ++wrong;
    }
    EXPECT_EQ(wrong, 0) << "kept elements are x * scale, p = " << p;
    const double mean = n * double(p);
    const double sigma = std::sqrt(n * double(p) * (1.0 - double(p)));
    EXPECT_LE(std::abs(double(dropped) - mean), 5.0 * sigma)
        << "dropped " << dropped << " of " << n << " at p = " << p;
  }
}

TEST(Dropout, SitesGroupsAndSeedsDrawIndependentMasks) {
  // Two independent masks at p = 0.5 differ in half the elements (+-16 at
  // one sigma over 1024): a quarter is far outside chance.
  const int64_t n = 1024;
  const auto base = maskOf(1234, 7, 5, 0.5f, n);
  EXPECT_EQ(maskOf(1234, 7, 5, 0.5f, n), base) << "the same key, the same mask";
  EXPECT_GT(differences(base, maskOf(1234, 7, 6, 0.5f, n)), n / 4) << "site";
  EXPECT_GT(differences(base, maskOf(1234, 8, 5, 0.5f, n)), n / 4)
      << "sample group";
  EXPECT_GT(differences(base, maskOf(1235, 7, 5, 0.5f, n)), n / 4) << "seed";
  // The high words of the key count too.
  EXPECT_GT(
      differences(base, maskOf(1234 + (uint64_t{1} << 32), 7, 5, 0.5f, n)),
      n / 4)
      << "seed's high word";
  EXPECT_GT(
      differences(base, maskOf(1234, 7 + (uint64_t{1} << 32), 5, 0.5f, n)),
      n / 4)
      << "sample group's high word";
  // The last site is valid and has a mask of its own.
  EXPECT_GT(differences(base, maskOf(1234, 7, (1 << 24) - 1, 0.5f, n)), n / 4)
      << "site 2^24 - 1";
}

TEST(Dropout, ZeroProbabilityIsTheIdentity) {
  const int64_t n = 257;
  auto x = randomFloats(n, 3);
  x[0] = -0.0f;
  x[1] = std::numeric_limits<float>::quiet_NaN();
  const auto key = keyOf(5, 6);
  std::vector<float> y(n, 42.0f);
  ASSERT_EQ(bp_dropout(x.data(), y.data(), key.data(), 2, 0.0f, n), BP_OK);
  EXPECT_EQ(std::memcmp(x.data(), y.data(), n * sizeof(float)), 0);
  auto z = x;
  ASSERT_EQ(bp_dropout(z.data(), z.data(), key.data(), 2, 0.0f, n), BP_OK);
  EXPECT_EQ(std::memcmp(x.data(), z.data(), n * sizeof(float)), 0);
}

TEST(Dropout, InPlaceEqualsOutOfPlace) {
  const int64_t n = 1001;
  const auto x = randomFloats(n, 4);
  const auto key = keyOf(77, 12);
  std::vector<float> y(n);
  ASSERT_EQ(bp_dropout(x.data(), y.data(), key.data(), 9, 0.3f, n), BP_OK);
  auto z = x;
  ASSERT_EQ(bp_dropout(z.data(), z.data(), key.data(), 9, 0.3f, n), BP_OK);
  EXPECT_EQ(std::memcmp(y.data(), z.data(), n * sizeof(float)), 0);
}

TEST(Dropout, BackwardIsTheSameMap) {
  // y = D x with D diagonal (0 or scale), so for a loss sum(w * y) the
  // gradient of x is D w: the kernel applied to w. Checked as the adjoint
  // identity <D x, w> = <x, D w>, in double over the fp32 outputs.
  const int64_t n = 513;
  const auto x = randomFloats(n, 5), w = randomFloats(n, 6);
  const auto key = keyOf(8, 9);
  std::vector<float> y(n), dx(n);
  ASSERT_EQ(bp_dropout(x.data(), y.data(), key.data(), 4, 0.4f, n), BP_OK);
  ASSERT_EQ(bp_dropout(w.data(), dx.data(), key.data(), 4, 0.4f, n), BP_OK);
  EXPECT_EQ(keptOf(y), keptOf(dx)) << "one mask for both directions";
  double forward = 0.0, backward = 0.0, scale = 0.0;
  for (int64_t e = 0; e < n; ++e) {
    forward += double(y[e]) * w[e];
    backward += double(x[e]) * dx[e];
    scale += std::abs(double(y[e]) * w[e]);
  }
  EXPECT_NEAR(forward, backward, 1e-6 * scale);
}

TEST(Dropout, RejectsBadArguments) {
  const int64_t n = 4;
  const auto key = keyOf(1, 2);
  std::vector<float> x(n, 1.0f), y(n, 42.0f);
  for (float p : {1.0f, -0.1f, 1.5f, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::infinity()})
    EXPECT_EQ(bp_dropout(x.data(), y.data(), key.data(), 0, p, n),
              BP_ERR_INVALID_ARGUMENT)
        << "p = " << p;
  for (int32_t site : {-1, 1 << 24, std::numeric_limits<int32_t>::max()})
    EXPECT_EQ(bp_dropout(x.data(), y.data(), key.data(), site, 0.5f, n),
              BP_ERR_INVALID_ARGUMENT)
        << "site " << site;
  EXPECT_EQ(bp_dropout(nullptr, y.data(), key.data(), 0, 0.5f, n),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_dropout(x.data(), nullptr, key.data(), 0, 0.5f, n),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_dropout(x.data(), y.data(), nullptr, 0, 0.5f, n),
            BP_ERR_INVALID_ARGUMENT);
  for (int64_t size : {int64_t{0}, int64_t{-1}, (int64_t{1} << 40) + 1})
    EXPECT_EQ(bp_dropout(x.data(), y.data(), key.data(), 0, 0.5f, size),
              BP_ERR_INVALID_ARGUMENT)
        << "n = " << size;
  // Checked before anything is written.
  for (float v : y)
    EXPECT_EQ(v, 42.0f);
}

} // namespace
