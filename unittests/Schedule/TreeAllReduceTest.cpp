//===- TreeAllReduceTest.cpp - NCCL's tree beside its ring ----------------===//
//
// With a deployment an all-reduce costs NCCL's ring or tree, whichever is
// faster for the message and the group, as NCCL's tuner picks
// (docs/clusters.md, "All-reduce"). The numbers are worked by hand on a
// cluster of round link figures.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/CostModel.h"
#include "bitpipe/Schedule/Simulator.h"

#include "TestClusters.h"
#include "TestSchedules.h"

#include <gtest/gtest.h>

#include <numeric>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

namespace {

std::vector<int> ranks(int n) {
  std::vector<int> r(n);
  std::iota(r.begin(), r.end(), 0);
  return r;
}

/// A deployment of one pipeline rank in `dp` copies: the simulated rank 0's
/// groups span world ranks 0 .. dp-1.
CostModel dataParallel(const Cluster &c, int dp) {
  CostModel cost;
  cost.unitForward = 1e-3;
  cost.unitBackward = 2e-3;
  cost.deployment = Deployment{c, World{1, dp}, 0};
  return cost;
}

/// Simulated rank 0, as a group (a braced {0} would pick the overloads that
/// take a rank count).
const std::vector<int> kRank0{0};

} // namespace

TEST(TreeAllReduce, ChainInsideNodesAndABinaryTreeAcross) {
  // 32 ranks on 4 nodes of 8: depth 7 intra hops + log2(4) = 2 inter hops.
  // 1 MB: 2 * (7 * 1 us + 2 * 5 us + 1e6 / 1e10 s) = 234 us.
  EXPECT_NEAR(treeAllReduceTime(cluster(4, 8), 1e6, ranks(32)), 234e-6, 1e-12);
  // 5 nodes: ceil(log2 5) = 3 inter hops.
  EXPECT_NEAR(treeAllReduceTime(cluster(5, 8), 0, ranks(40)),
              2 * (7e-6 + 3 * 5e-6), 1e-12);
  // One node: a chain over NVLink, 2 * (3 * 1 us + 1e6 / 1e11 s) = 26 us.
  EXPECT_NEAR(treeAllReduceTime(cluster(1, 8), 1e6, ranks(4)), 26e-6, 1e-12);
  // Ranks 0 and 8 of 2 nodes of 8: one member a node, one inter hop.
  EXPECT_NEAR(treeAllReduceTime(cluster(2, 8), 0, {0, 8}), 10e-6, 1e-12);
  EXPECT_EQ(treeAllReduceTime(cluster(4, 8), 1e6, {3}), 0.0);
}

TEST(TreeAllReduce, TheTreeWinsSmallMessagesOverManyRanks) {
  CostModel cost = dataParallel(cluster(4, 8), 32);
  // Ring: 2 * 31 * (5 us + 1e6 / (32 * 1e10) s) = 503.75 us; tree 234 us.
  EXPECT_NEAR(ringAllReduceTime(cost.deployment->cluster, 1e6, ranks(32)),
              503.75e-6, 1e-12);
  EXPECT_EQ(cost.allReduceAlgorithmFor(1e6, kRank0), AllReduceAlgorithm::Tree);
  EXPECT_NEAR(cost.allReduceTime(1e6, kRank0), 234e-6, 1e-12);
  // Each rank sends the whole message up and down: 2 MB, not the ring's
  // 2 * 31/32 MB.
  EXPECT_DOUBLE_EQ(cost.allReduceBytesPerRank(1e6, kRank0), 2e6);
}

TEST(TreeAllReduce, TheRingWinsLargeMessages) {
  CostModel cost = dataParallel(cluster(4, 8), 32);
  // 1 GB: ring 2 * 31 * (5 us + 3.125 ms) = 194.06 ms; tree
  // 2 * (17 us + 100 ms) = 200.034 ms.
  EXPECT_EQ(cost.allReduceAlgorithmFor(1e9, kRank0), AllReduceAlgorithm::Ring);
  EXPECT_NEAR(cost.allReduceTime(1e9, kRank0), 62 * (5e-6 + 3.125e-3), 1e-12);
  EXPECT_DOUBLE_EQ(cost.allReduceBytesPerRank(1e9, kRank0), 2 * 31e9 / 32);
}

TEST(TreeAllReduce, InsideOneNodeTheRingIsNeverSlower) {
  // A chain has the ring's latency and more bytes: ties go to the ring.
  CostModel cost = dataParallel(cluster(1, 8), 8);
  for (double bytes : {0.0, 1e3, 1e6, 1e9}) {
    EXPECT_EQ(cost.allReduceAlgorithmFor(bytes, kRank0),
              AllReduceAlgorithm::Ring)
        << bytes;
    EXPECT_LE(cost.allReduceTime(bytes, kRank0),
              treeAllReduceTime(cost.deployment->cluster, bytes, ranks(8)));
  }
}

TEST(TreeAllReduce, CheapestIsTheFasterOfTheTwoAtEverySize) {
  CostModel cost = dataParallel(cluster(16, 8), 128);
  for (double bytes = 1; bytes < 1e11; bytes *= 3.7) {
    CostModel ring = cost, tree = cost;
    ring.allReduceAlgorithm = AllReduceAlgorithm::Ring;
    tree.allReduceAlgorithm = AllReduceAlgorithm::Tree;
    EXPECT_DOUBLE_EQ(cost.allReduceTime(bytes, kRank0),
                     std::min(ring.allReduceTime(bytes, kRank0),
                              tree.allReduceTime(bytes, kRank0)))
        << bytes;
  }
  // Forcing one is obeyed even where the other is faster.
  cost.allReduceAlgorithm = AllReduceAlgorithm::Ring;
  EXPECT_EQ(cost.allReduceAlgorithmFor(1e3, kRank0), AllReduceAlgorithm::Ring);
  cost.allReduceAlgorithm = AllReduceAlgorithm::Tree;
  EXPECT_EQ(cost.allReduceAlgorithmFor(1e10, kRank0), AllReduceAlgorithm::Tree);
}

TEST(TreeAllReduce, WithoutADeploymentTheFlatRingApplies) {
  CostModel cost;
  cost.allReduceLatency = 1;
  cost.allReduceBandwidth = 10;
  const std::vector<int> pair{0, 1};
  EXPECT_EQ(cost.allReduceAlgorithmFor(100, pair), AllReduceAlgorithm::Ring);
  // 1 + 2(2-1)/2 * 100 / 10.
  EXPECT_DOUBLE_EQ(cost.allReduceTime(100, pair), 11);
  EXPECT_DOUBLE_EQ(cost.allReduceBytesPerRank(100, pair), 100);
}

TEST(TreeAllReduce, TheSimulatorChargesTheChosenAlgorithm) {
  // One stage on one rank, 32 data-parallel copies on 4 nodes of 8: the
  // AR of 1 MB after B0 (at 3 ms) takes the tree's 234 us.
  Schedule s = emptySchedule("loop", *loopPlacement(1), 1);
  s.ranks = gridRanks("P0: F0.s0 B0.s0 AR(0)\n");
  CostModel cost = dataParallel(cluster(4, 8), 32);
  cost.gradientBytes = {1e6};
  Result<SimResult> sim = simulate(s, cost);
  ASSERT_TRUE(sim) << sim.error;
  EXPECT_NEAR(sim->makespan, 3e-3 + 234e-6, 1e-12);
  EXPECT_NEAR(sim->allReduceTime, 234e-6, 1e-12);
  EXPECT_DOUBLE_EQ(sim->ranks[0].allReduceBytesSent, 2e6);

  cost.allReduceAlgorithm = AllReduceAlgorithm::Ring;
  sim = simulate(s, cost);
  ASSERT_TRUE(sim) << sim.error;
  EXPECT_NEAR(sim->allReduceTime, 503.75e-6, 1e-12);
  EXPECT_DOUBLE_EQ(sim->ranks[0].allReduceBytesSent, 2 * 31e6 / 32);
}
