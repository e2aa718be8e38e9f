//===- CommunicationCostTest.cpp - Link-aware costs in the simulator ------===//
//
// A CostModel with a deployment charges each transfer by the link between
// its two ranks' GPUs and each all-reduce by the ring over its group in
// every data-parallel copy (docs/clusters.md). Without one, nothing changes:
// every other simulator test runs without one.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Simulator.h"

#include "TestClusters.h"
#include "TestSchedules.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

namespace {

/// F = 1 ms, B = 2 ms; 1 MB crosses each stage boundary.
CostModel seconds(const Cluster &c, World world, int copy = 0) {
  CostModel cost;
  cost.unitForward = 1e-3;
  cost.unitBackward = 2e-3;
  cost.boundaryBytes = {1e6};
  cost.deployment = Deployment{c, world, copy};
  return cost;
}

SimResult run(const Schedule &s, const CostModel &cost) {
  Result<SimResult> r = simulate(s, cost);
  EXPECT_TRUE(r) << r.error;
  return r ? *r.value : SimResult();
}

const TimelineEvent *allReduceOn(const SimResult &sim, int rank) {
  for (const TimelineEvent &e : sim.timeline)
    if (e.lane == Lane::AllReduce && e.rank == rank)
      return &e;
  ADD_FAILURE() << "no all-reduce on rank " << rank;
  return nullptr;
}

} // namespace

TEST(CommunicationCost, WithoutADeploymentTheFlatNumbersApply) {
  CostModel cost;
  cost.p2pLatency = 1;
  cost.p2pBandwidth = 10;
  cost.allReduceLatency = 2;
  cost.allReduceBandwidth = 4;
  EXPECT_EQ(cost.p2pTime(30, 0, 7), cost.p2pTime(30));
  EXPECT_EQ(cost.p2pTime(30, 0, 7), 4);
  EXPECT_EQ(cost.allReduceGroup({1, 3}), (std::vector<int>{1, 3}));
  // 2 + 2(2-1)/2 * 8 / 4 = 4.
  EXPECT_EQ(cost.allReduceTime(8, std::vector<int>{1, 3}), 4);
  EXPECT_EQ(cost.allReduceTime(8, std::vector<int>{1}), 0);
}

TEST(CommunicationCost, ADeploymentChargesTheLinkBetweenTheRanks) {
  // D=2, K=2 on 2 nodes x 2 GPUs: copy 1 is world ranks 2 and 3, node 1.
  CostModel cost = seconds(cluster(2, 2), World{2, 2}, /*copy=*/1);
  // 1 us + 1e6 / 1e11 s = 11 us.
  EXPECT_DOUBLE_EQ(cost.p2pTime(1e6, 0, 1), 11e-6);
  // Pipeline rank 0's group in both copies: world {0, 2}, across nodes.
  EXPECT_EQ(cost.allReduceGroup({0}), (std::vector<int>{0, 2}));
  // 2(2-1) * (5 us + 4e6 / (2 * 1e10) s) = 2 * 205 us = 410 us.
  EXPECT_DOUBLE_EQ(cost.allReduceTime(4e6, std::vector<int>{0}), 410e-6);
  // Both pipeline ranks in both copies: 4 ranks on 2 nodes,
  // 2*3 * (5 us + 4e6 / (4 * 1e10) s) = 6 * 105 us = 630 us.
  EXPECT_DOUBLE_EQ(cost.allReduceTime(4e6, std::vector<int>{0, 1}), 630e-6);
}

TEST(CommunicationCost, ADeepPipelineCrossesNodesBetweenRanks7And8) {
  Result<Cluster> a100 = readCluster(std::string(BITPIPE_SOURCE_DIR) +
                                     "/examples/clusters/a100-4x8.json");
  ASSERT_TRUE(a100) << a100.error;
  // D=8, copy 2: world ranks 16..23, all on node 2: 3 us + 1e6 / 300e9 s.
  CostModel d8;
  d8.deployment = Deployment{*a100, World{8, 4}, 2};
  EXPECT_DOUBLE_EQ(d8.p2pTime(1e6, 3, 4), 3e-6 + 1e6 / 300e9);
  EXPECT_DOUBLE_EQ(d8.p2pTime(1e6, 7, 0), 3e-6 + 1e6 / 300e9);
  // D=16, copy 1: world ranks 16..31 on nodes 2 and 3. Pipeline ranks 7
  // and 8 are world 23 and 24: 6 us + 1e6 / 12.5e9 s = 86 us.
  CostModel d16;
  d16.deployment = Deployment{*a100, World{16, 2}, 1};
  EXPECT_DOUBLE_EQ(d16.p2pTime(1e6, 6, 7), 3e-6 + 1e6 / 300e9);
  EXPECT_DOUBLE_EQ(d16.p2pTime(1e6, 7, 8), 86e-6);
  EXPECT_DOUBLE_EQ(d16.p2pTime(1e6, 8, 7), 86e-6);
}

TEST(CommunicationCost, ACrossNodeHandOffLengthensTheStep) {
  // 1F1B, D=2, N=1: F0.s0 on rank 0, its activation to rank 1, F0.s1,
  // B0.s1, the gradient back to rank 0, B0.s0. Nothing overlaps, so
  //   makespan = F + t + F + B + t + B = 6 ms + 2t
  // where t is one 1 MB hand-off.
  Schedule s = oneFOneB(2, 1);
  // One node of 2 GPUs: t = 1 us + 1e6 / 1e11 s = 11 us; 6.022 ms.
  SimResult inside = run(s, seconds(cluster(1, 2), World{2, 1}));
  EXPECT_NEAR(inside.makespan, 6.022e-3, 1e-12);
  // Two nodes of 1 GPU: t = 5 us + 1e6 / 1e10 s = 105 us; 6.21 ms.
  SimResult across = run(s, seconds(cluster(2, 1), World{2, 1}));
  EXPECT_NEAR(across.makespan, 6.21e-3, 1e-12);
  // The same schedule without a deployment: communication is free.
  CostModel free = seconds(cluster(1, 2), World{2, 1});
  free.deployment.reset();
  EXPECT_NEAR(run(s, free).makespan, 6e-3, 1e-12);
}

TEST(CommunicationCost, AnAllReduceSpansEveryDataParallelCopy) {
  // Two stages on two ranks; each all-reduces its stage after its backward.
  Schedule s = emptySchedule("loop", *loopPlacement(2), 1);
  s.ranks = gridRanks("P0: F0.s0 B0.s0 AR(0)\n"
                      "P1: F0.s1 B0.s1 AR(1)\n");
  CostModel cost = seconds(cluster(2, 2), World{2, 2});
  cost.gradientBytes = {0, 4e6};
  SimResult sim = run(s, cost);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport();
  // Rank 1 (world 1 and, in copy 1, world 3: two nodes) issues AR(1) when
  // B0.s1 ends, at F + t + F + B = 4 ms + 11 us; the ring takes
  // 2 * (5 us + 4e6 / (2 * 1e10) s) = 410 us.
  const TimelineEvent *ar1 = allReduceOn(sim, 1);
  ASSERT_TRUE(ar1);
  EXPECT_NEAR(ar1->start, 4.011e-3, 1e-12);
  EXPECT_NEAR(ar1->end - ar1->start, 410e-6, 1e-12);
  // Each of the 2 ranks sends 2(2-1)/2 of the 4 MB.
  EXPECT_DOUBLE_EQ(sim.ranks[1].allReduceBytesSent, 4e6);
  // Rank 0's stage has no gradient bytes: its ring costs 2 latencies.
  const TimelineEvent *ar0 = allReduceOn(sim, 0);
  ASSERT_TRUE(ar0);
  EXPECT_NEAR(ar0->end - ar0->start, 10e-6, 1e-12);
  // B0.s0 ends at 4 ms + 11 us + 11 us + 2 ms; then 10 us of all-reduce.
  EXPECT_NEAR(sim.makespan, 6.032e-3, 1e-12);

  // On one node of 4 GPUs the same ring runs over NVLink-class links:
  // 2 * (1 us + 4e6 / (2 * 1e11) s) = 42 us.
  SimResult oneNode = run(s, [&] {
    CostModel c = cost;
    c.deployment->cluster = cluster(1, 4);
    return c;
  }());
  EXPECT_NEAR(allReduceOn(oneNode, 1)->end - allReduceOn(oneNode, 1)->start,
              42e-6, 1e-12);
}

TEST(CommunicationCost, TheSimulatorRejectsADeploymentThatDoesNotFit) {
  CostModel cost = seconds(cluster(1, 2), World{2, 2});
  Result<SimResult> r = simulate(oneFOneB(2, 1), cost);
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, "cost model: the world has 4 ranks, but cluster 1x2 has "
                     "2 GPUs (1 node x 2)");
}
