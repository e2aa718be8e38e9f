//===- TwoLevelSyncTest.cpp - A mirror pair's sum in two levels -----------===//
//
// CostModel::gradientSync = Hierarchical (docs/data-parallel.md, "Two
// levels"): a group of several pipeline ranks reduce-scatters among its
// members of one copy, all-reduces each member's shard across the copies
// and all-gathers in the copy. The numbers are worked by hand on
// TestClusters.h's round link figures.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/CostModel.h"

#include "TestClusters.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

namespace {

/// A pipeline of 4 ranks in 2 copies on 2 nodes of 4 GPUs: copy c is node
/// c, so a mirror pair {0, 3} shares a node and its copies do not.
CostModel pairOnANode(GradientSync sync) {
  CostModel cost;
  cost.deployment = Deployment{cluster(2, 4), World{4, 2}, 0};
  cost.gradientSync = sync;
  return cost;
}

const std::vector<int> kPair{0, 3};
const std::vector<int> kAlone{1};

} // namespace

TEST(TwoLevelSync, FlatIsOneRingOverEveryHolder) {
  CostModel cost = pairOnANode(GradientSync::Flat);
  EXPECT_FALSE(cost.syncsInTwoLevels(kPair));
  // World ranks {0, 3, 4, 7} span the nodes: 2 * 3 * (5 us + 1 MB / (4 *
  // 10 GB/s)) = 180 us; each rank sends 2 * 3/4 MB, all of it at the
  // inter-node rate.
  EXPECT_NEAR(cost.allReduceTime(1e6, kPair), 180e-6, 1e-12);
  EXPECT_DOUBLE_EQ(cost.allReduceBytesPerRank(1e6, kPair), 1.5e6);
  EXPECT_DOUBLE_EQ(cost.allReduceInterNodeBytesPerRank(1e6, kPair), 1.5e6);
}

TEST(TwoLevelSync, APairReduceScattersOnItsNodeAndSendsItsHalfAcross) {
  CostModel cost = pairOnANode(GradientSync::Hierarchical);
  EXPECT_TRUE(cost.syncsInTwoLevels(kPair));
  // Reduce-scatter and all-gather over {0, 3} on NVLink: one ring
  // all-reduce's 2 * (1 us + 1 MB / (2 * 100 GB/s)) = 12 us. Then each
  // half (0.5 MB) over its copies {0, 4} or {3, 7}: 2 * (5 us + 0.5 MB /
  // (2 * 10 GB/s)) = 60 us (the tree's 110 us loses).
  EXPECT_NEAR(cost.allReduceTime(1e6, kPair), 72e-6, 1e-12);
  EXPECT_EQ(cost.allReduceAlgorithmFor(1e6, kPair), AllReduceAlgorithm::Ring);
  // 1 MB in the pair's ring, 0.5 MB across: what a 1F1B rank holding one
  // of the two stages (0.5 MB) sends over its copies.
  EXPECT_DOUBLE_EQ(cost.allReduceBytesPerRank(1e6, kPair), 1.5e6);
  EXPECT_DOUBLE_EQ(cost.allReduceInterNodeBytesPerRank(1e6, kPair), 0.5e6);
  CostModel oneFOneB = pairOnANode(GradientSync::Flat);
  EXPECT_DOUBLE_EQ(oneFOneB.allReduceInterNodeBytesPerRank(0.5e6, kAlone),
                   0.5e6);
}

TEST(TwoLevelSync, OnlyGroupsOfSeveralRanksWithCopiesHaveTwoLevels) {
  CostModel cost = pairOnANode(GradientSync::Hierarchical);
  CostModel flat = pairOnANode(GradientSync::Flat);
  // One pipeline rank: its copies alone, as flat.
  EXPECT_FALSE(cost.syncsInTwoLevels(kAlone));
  EXPECT_DOUBLE_EQ(cost.allReduceTime(1e6, kAlone),
                   flat.allReduceTime(1e6, kAlone));
  // One copy: the pair alone, as flat.
  cost.deployment->world.dataParallel = 1;
  EXPECT_FALSE(cost.syncsInTwoLevels(kPair));
  // No deployment: the flat numbers, which know no copies.
  CostModel bare;
  bare.gradientSync = GradientSync::Hierarchical;
  bare.allReduceBandwidth = 1e9;
  EXPECT_FALSE(bare.syncsInTwoLevels(kPair));
  EXPECT_DOUBLE_EQ(bare.allReduceTime(1e6, kPair), 1e-3);
  EXPECT_EQ(bare.allReduceInterNodeBytesPerRank(1e6, kPair), 0.0);
}

TEST(TwoLevelSync, APairAcrossNodesPaysItsRingThere) {
  // 4 nodes of 2 GPUs, a pipeline of 4: the pair {0, 3} spans nodes 0 and
  // 1, so its reduce-scatter and all-gather cross too.
  CostModel cost;
  cost.deployment = Deployment{cluster(4, 2), World{4, 2}, 0};
  cost.gradientSync = GradientSync::Hierarchical;
  EXPECT_DOUBLE_EQ(cost.allReduceInterNodeBytesPerRank(1e6, kPair), 1.5e6);
}

TEST(TwoLevelSync, NamesAreTheManifestsWords) {
  EXPECT_STREQ(gradientSyncName(GradientSync::Flat), "flat");
  EXPECT_STREQ(gradientSyncName(GradientSync::Hierarchical), "hierarchical");
  EXPECT_EQ(parseGradientSync("hierarchical"), GradientSync::Hierarchical);
  EXPECT_EQ(parseGradientSync("ring"), std::nullopt);
  EXPECT_EQ(gradientSyncChoices(), "'flat' or 'hierarchical'");
}
