//===- PartitionTest.cpp - Balanced contiguous partitions -----------------===//

#include "bitpipe/Schedule/Partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

using namespace bitpipe::sched;

namespace {

using Starts = std::vector<int64_t>;

double chunkMax(const std::vector<double> &costs, const Starts &starts) {
  double worst = 0;
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t end = k + 1 < starts.size() ? starts[k + 1] : costs.size();
    double sum = 0;
    for (size_t i = starts[k]; i < end; ++i)
      sum += costs[i];
    worst = std::max(worst, sum);
  }
  return worst;
}

/// The chunk costs of `starts`, largest first.
std::vector<double> sortedCosts(const std::vector<double> &costs,
                                const Starts &starts) {
  std::vector<double> out;
  for (size_t k = 0; k < starts.size(); ++k) {
    size_t end = k + 1 < starts.size() ? starts[k + 1] : costs.size();
    double sum = 0;
    for (size_t i = starts[k]; i < end; ++i)
      sum += costs[i];
    out.push_back(sum);
  }
  std::sort(out.begin(), out.end(), std::greater<double>());
  return out;
}

/// Every way to cut, in lexicographic order of `starts`; the first one whose
/// sorted chunk costs (largest first) are lexicographically smallest is the
/// one balancePartition promises. Its first cost is the smallest maximum.
Starts bruteForce(const std::vector<double> &costs, int64_t K) {
  const int64_t L = costs.size();
  Starts best, current = {0};
  std::vector<double> bestCosts;
  auto recurse = [&](auto &&self, int64_t next) -> void {
    if (static_cast<int64_t>(current.size()) == K) {
      std::vector<double> sorted = sortedCosts(costs, current);
      if (best.empty() || sorted < bestCosts) {
        bestCosts = std::move(sorted);
        best = current;
      }
      return;
    }
    int64_t left = K - current.size(); // chunks still to start
    for (int64_t s = next; s <= L - left; ++s) {
      current.push_back(s);
      self(self, s + 1);
      current.pop_back();
    }
  };
  recurse(recurse, 1);
  return best;
}

/// Independent reference for the optimum: the O(K * L^2) dynamic programme.
double quadraticOptimum(const std::vector<double> &costs, int64_t K) {
  const int64_t L = costs.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> D(K + 1, std::vector<double>(L + 1, inf));
  D[0][0] = 0;
  for (int64_t k = 1; k <= K; ++k)
    for (int64_t i = k; i <= L; ++i) {
      double last = 0;
      for (int64_t j = i - 1; j >= k - 1; --j) {
        last += costs[j];
        D[k][i] = std::min(D[k][i], std::max(D[k - 1][j], last));
      }
    }
  return D[K][L];
}

void expectWellFormed(const Partition &p, const std::vector<double> &costs,
                      int64_t K) {
  ASSERT_EQ(p.numChunks(), K);
  EXPECT_EQ(p.numLayers, static_cast<int64_t>(costs.size()));
  EXPECT_EQ(p.starts.front(), 0);
  for (int64_t k = 1; k < K; ++k)
    EXPECT_LT(p.starts[k - 1], p.starts[k]);
  EXPECT_LT(p.starts.back(), p.numLayers);
  double total = std::accumulate(costs.begin(), costs.end(), 0.0);
  EXPECT_DOUBLE_EQ(
      std::accumulate(p.chunkCosts.begin(), p.chunkCosts.end(), 0.0), total);
  EXPECT_DOUBLE_EQ(
      *std::max_element(p.chunkCosts.begin(), p.chunkCosts.end()), p.maxCost);
}

TEST(Partition, MatchesBruteForceOnRandomSmallInputs) {
  std::mt19937 rng(20241024);
  for (int trial = 0; trial < 3000; ++trial) {
    int64_t L = 1 + rng() % 9;
    int64_t K = 1 + rng() % L;
    // Small integers, zeros included, so that ties are frequent and every
    // sum is exact.
    int range = trial % 3 == 0 ? 3 : 30;
    std::vector<double> costs(L);
    for (double &c : costs)
      c = rng() % (range + 1);
    Result<Partition> p = balancePartition(costs, K);
    ASSERT_TRUE(p.ok()) << p.error;
    expectWellFormed(*p, costs, K);
    Starts expected = bruteForce(costs, K);
    EXPECT_EQ(p->starts, expected) << "trial " << trial << " L=" << L
                                   << " K=" << K;
    EXPECT_EQ(p->maxCost, chunkMax(costs, expected));
  }
}

TEST(Partition, MatchesQuadraticDynamicProgrammeOnLargeInputs) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    int64_t L = 50 + rng() % 150;
    int64_t K = 1 + rng() % 40;
    std::vector<double> costs(L);
    for (double &c : costs)
      c = 1 + rng() % 1000;
    costs.front() = 5000 * (trial % 2); // sometimes a heavy embedding
    costs.back() = 20000;               // a heavy head
    Result<Partition> p = balancePartition(costs, K);
    ASSERT_TRUE(p.ok()) << p.error;
    expectWellFormed(*p, costs, K);
    EXPECT_EQ(p->maxCost, quadraticOptimum(costs, K)) << "trial " << trial;
  }
}

TEST(Partition, HeavyEmbeddingAndHeadGetFewerLayers) {
  // 10 | 3 3 3 3 | 12: the lower bound is the head alone (12), and the
  // embedding cannot take a 3 (13 > 12), so the four light layers share.
  Result<Partition> p = balancePartition({10, 3, 3, 3, 3, 12}, 3);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p->starts, (Starts{0, 1, 5}));
  EXPECT_EQ(p->chunkCosts, (std::vector<double>{10, 12, 12}));
  EXPECT_EQ(p->maxCost, 12);
  EXPECT_EQ(p->firstLayer(1), 1);
  EXPECT_EQ(p->lastLayer(1), 4);
  EXPECT_EQ(p->lastLayer(2), 5);
  EXPECT_DOUBLE_EQ(p->imbalance(), 12.0 / (34.0 / 3.0));
}

TEST(Partition, CheapEmbeddingJoinsTheFirstLayers) {
  // 1 | 4 4 4 4 | 9 into two: prefix 1 5 9 13 | 17 26 -> cut at 4 gives
  // 13 and 13; every other cut leaves more than 13 on one side.
  Result<Partition> p = balancePartition({1, 4, 4, 4, 4, 9}, 2);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p->starts, (Starts{0, 4}));
  EXPECT_EQ(p->chunkCosts, (std::vector<double>{13, 13}));
  EXPECT_DOUBLE_EQ(p->imbalance(), 1.0);
}

TEST(Partition, TiesPreferTheEarliestCut) {
  // Cutting after 2 or after 3 layers both give costs {3, 2}.
  Result<Partition> p = balancePartition({1, 1, 1, 1, 1}, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->starts, (Starts{0, 2}));
  // Zero-cost layers could go anywhere: every cut costs {5, 0, 0}, so the
  // first chunks stay as short as possible.
  p = balancePartition({0, 0, 5, 0, 0}, 3);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->starts, (Starts{0, 1, 2}));
  EXPECT_EQ(p->maxCost, 5);
}

TEST(Partition, SpreadsTheSlackAmongOptimalCuts) {
  // The lit test's toy: {0} {1-3} {4} and {0-1} {2-3} {4} both reach 6912;
  // the second has the smaller second-largest chunk (4736 < 6336).
  Result<Partition> p = balancePartition({192, 1600, 3136, 1600, 6912}, 3);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->starts, (Starts{0, 2, 4}));
  EXPECT_EQ(p->chunkCosts, (std::vector<double>{1792, 4736, 6912}));

  // GPT-96's shape: a cheap embedding, 96 equal layers, a head worth 1.291
  // layers, in 16 chunks. The optimum is 7 layers. The earliest cut reaching
  // it gave the embedding and then one layer chunks of their own (starts
  // 0, 1, 2, 8, 15, ...); the leximax cut has one chunk of 7 layers, the
  // head with 5, and 6 layers everywhere else (the embedding with the first
  // six). The 7-layer chunk could be any middle one: earliest starts put it
  // last.
  std::vector<double> costs(98, 1000);
  costs.front() = 1;
  costs.back() = 1291;
  p = balancePartition(costs, 16);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->maxCost, 7000);
  Starts expected = {0};
  for (int64_t s = 7; s <= 85; s += 6)
    expected.push_back(s);
  expected.push_back(92);
  EXPECT_EQ(p->starts, expected);
  std::vector<double> sorted = sortedCosts(costs, p->starts);
  EXPECT_EQ(sorted[0], 7000);
  EXPECT_EQ(sorted[1], 6291);
  EXPECT_EQ(sorted[2], 6001);
  EXPECT_EQ(sorted.back(), 6000);
}

TEST(Partition, OneChunkHoldsEverything) {
  Result<Partition> p = balancePartition({2, 7, 1}, 1);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->starts, (Starts{0}));
  EXPECT_EQ(p->chunkCosts, (std::vector<double>{10}));
  EXPECT_EQ(p->lastLayer(0), 2);
  EXPECT_DOUBLE_EQ(p->imbalance(), 1.0);
}

TEST(Partition, AsManyChunksAsLayersGivesOneLayerEach) {
  Result<Partition> p = balancePartition({2, 7, 1, 0}, 4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->starts, (Starts{0, 1, 2, 3}));
  EXPECT_EQ(p->chunkCosts, (std::vector<double>{2, 7, 1, 0}));
  for (int64_t layer = 0; layer < 4; ++layer)
    EXPECT_EQ(p->chunkOf(layer), layer);
}

TEST(Partition, AllZeroCostsAreBalanced) {
  Result<Partition> p = balancePartition({0, 0, 0}, 2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->starts, (Starts{0, 1}));
  EXPECT_DOUBLE_EQ(p->imbalance(), 1.0);
}

TEST(Partition, RejectsMoreChunksThanLayers) {
  Result<Partition> p = balancePartition({1, 1, 1, 1, 1, 1}, 8);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error, "cannot cut 6 layers into 8 chunks: every chunk needs at "
                     "least one layer");
}

TEST(Partition, RejectsBadArguments) {
  Result<Partition> p = balancePartition({1, 2}, 0);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error, "the number of chunks must be at least 1, got 0");

  p = balancePartition({}, 1);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error, "cannot partition a model with no layers");

  p = balancePartition({1, -2, 3}, 2);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error, "layer 1 has cost -2.000000: layer costs must be finite "
                     "and non-negative");

  p = partitionAt({1, std::nan(""), 3}, {1});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error.find("layer 1 has cost"), std::string::npos) << p.error;
}

TEST(Partition, ExplicitBoundaries) {
  Result<Partition> p = partitionAt({1, 2, 3, 4, 5, 6}, {2, 4});
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p->starts, (Starts{0, 2, 4}));
  EXPECT_EQ(p->chunkCosts, (std::vector<double>{3, 7, 11}));
  EXPECT_EQ(p->maxCost, 11);
  EXPECT_EQ(p->chunkOf(3), 1);
  EXPECT_EQ(p->chunkOf(5), 2);

  p = partitionAt({1, 2, 3}, {});
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->starts, (Starts{0}));
  EXPECT_EQ(p->chunkCosts, (std::vector<double>{6}));

  // The balanced cut, given back as boundaries, is the same partition.
  std::vector<double> costs = {10, 3, 3, 3, 3, 12};
  Result<Partition> balanced = balancePartition(costs, 3);
  ASSERT_TRUE(balanced.ok());
  Result<Partition> again = partitionAt(
      costs, Starts(balanced->starts.begin() + 1, balanced->starts.end()));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->chunkCosts, balanced->chunkCosts);
}

TEST(Partition, RejectsBadBoundaries) {
  std::vector<double> costs(6, 1.0);
  Result<Partition> p = partitionAt(costs, {0, 3});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error, "boundary 0 is out of range: a chunk can start only at "
                     "layers 1..5 (layer 0 always starts the first chunk)");

  p = partitionAt(costs, {2, 6});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error, "boundary 6 is out of range: a chunk can start only at "
                     "layers 1..5 (layer 0 always starts the first chunk)");

  p = partitionAt(costs, {2, 4, 4});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error, "boundaries must be strictly increasing: 4 follows 4");

  p = partitionAt(costs, {4, 2});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error, "boundaries must be strictly increasing: 2 follows 4");

  p = partitionAt({1}, {1});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error,
            "boundary 1 is out of range: a model of one layer cannot be cut");
}

} // namespace

TEST(PartitionUnits, NamesRoundTrip) {
  for (PartitionUnits units : {PartitionUnits::Layers, PartitionUnits::Halves})
    EXPECT_EQ(parsePartitionUnits(partitionUnitsName(units)), units);
  EXPECT_STREQ(partitionUnitsName(PartitionUnits::Halves), "halves");
  EXPECT_FALSE(parsePartitionUnits("thirds"));
  EXPECT_FALSE(parsePartitionUnits(""));
}
