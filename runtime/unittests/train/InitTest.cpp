//===- InitTest.cpp - Deterministic, placement-independent init -----------===//

#include "train/Init.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace bitpipe::runtime;

namespace {

TEST(InitTest, SameSeedAndNameGiveTheSameValues) {
  std::vector<float> a(1000), b(1000);
  initNormal(a.data(), 1000, 0.02, 1234, "h.3.attn.c_attn.weight");
  initNormal(b.data(), 1000, 0.02, 1234, "h.3.attn.c_attn.weight");
  EXPECT_EQ(a, b);
}

TEST(InitTest, ValuesDependOnNameAndSeed) {
  std::vector<float> a(64), b(64), c(64);
  initNormal(a.data(), 64, 0.02, 1, "h.0.mlp.c_fc.weight");
  initNormal(b.data(), 64, 0.02, 1, "h.1.mlp.c_fc.weight");
  initNormal(c.data(), 64, 0.02, 2, "h.0.mlp.c_fc.weight");
  int sameB = 0, sameC = 0;
  for (int i = 0; i < 64; ++i) {
    sameB += a[i] == b[i];
    sameC += a[i] == c[i];
  }
  EXPECT_EQ(sameB, 0);
  EXPECT_EQ(sameC, 0);
}

TEST(InitTest, ASliceEqualsTheSameElementsOfTheWhole) {
  // What a rank holding part of a parameter (or initialising it in pieces)
  // computes must match the whole tensor.
  std::vector<float> whole(300), part(100);
  initNormal(whole.data(), 300, 0.5, 7, "wte");
  initNormal(part.data(), 100, 0.5, 7, "wte", 150);
  for (int i = 0; i < 100; ++i)
    EXPECT_EQ(part[i], whole[150 + i]);
}

TEST(InitTest, NormalHasTheRequestedMomentsAndIsNotTrivial) {
  const int n = 200000;
  std::vector<float> x(n);
  initNormal(x.data(), n, 0.02, 42, "wpe");
  double sum = 0, sq = 0, kurt = 0;
  for (float v : x) {
    sum += v;
    sq += double(v) * v;
  }
  double mean = sum / n, var = sq / n - mean * mean;
  for (float v : x)
    kurt += std::pow((v - mean), 4);
  kurt /= n * var * var;
  EXPECT_NEAR(mean, 0.0, 0.02 * 5 / std::sqrt(double(n)));
  EXPECT_NEAR(std::sqrt(var), 0.02, 0.0003);
  EXPECT_NEAR(kurt, 3.0, 0.1); // normal, not uniform (1.8)
}

TEST(InitTest, ZerosAndOnes) {
  std::vector<float> z(5, 3.f), o(5, 3.f);
  initZeros(z.data(), 5);
  initOnes(o.data(), 5);
  EXPECT_EQ(z, std::vector<float>(5, 0.f));
  EXPECT_EQ(o, std::vector<float>(5, 1.f));
}

} // namespace
