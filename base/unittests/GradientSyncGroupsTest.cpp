//===- GradientSyncGroupsTest.cpp - Two-level gradient sync's groups ------===//

#include "bitpipe/base/GradientSyncGroups.h"

#include <gtest/gtest.h>

namespace bitpipe::base {
namespace {

TEST(GradientSyncGroupsTest, OnlyAGroupOfSeveralRanksWithCopiesHasTwoLevels) {
  EXPECT_TRUE(syncsInTwoLevels(BP_GRADIENT_SYNC_HIERARCHICAL, 2, 2));
  EXPECT_FALSE(syncsInTwoLevels(BP_GRADIENT_SYNC_FLAT, 2, 2));
  // One pipeline rank: the copies alone, one all-reduce.
  EXPECT_FALSE(syncsInTwoLevels(BP_GRADIENT_SYNC_HIERARCHICAL, 1, 8));
  // One copy: the pair alone, one all-reduce.
  EXPECT_FALSE(syncsInTwoLevels(BP_GRADIENT_SYNC_HIERARCHICAL, 2, 1));
}

TEST(GradientSyncGroupsTest, PartitionsTheGroupsWorldRanksTwice) {
  // BitPipe's mirror pair {1, 2} of a 4-rank pipeline, 3 copies.
  TwoLevelGroups g = twoLevelGroups({1, 2}, 4, 3);
  EXPECT_EQ(g.withinCopy,
            (std::vector<std::vector<int>>{{1, 2}, {5, 6}, {9, 10}}));
  EXPECT_EQ(g.acrossCopies,
            (std::vector<std::vector<int>>{{1, 5, 9}, {2, 6, 10}}));
}

TEST(GradientSyncGroupsTest, ShardsAreEqualWithATailBelowTheParts) {
  ShardLayout l = shardLayout(11, 2);
  EXPECT_EQ(l.shard, 5);
  EXPECT_EQ(l.tail, 1);
  EXPECT_EQ(l.offset(1), 5);
  EXPECT_EQ(l.sharded(), 10);
  // Fewer elements than parts: everything is tail.
  l = shardLayout(2, 3);
  EXPECT_EQ(l.shard, 0);
  EXPECT_EQ(l.tail, 2);
  l = shardLayout(12, 4);
  EXPECT_EQ(l.shard, 3);
  EXPECT_EQ(l.tail, 0);
}

} // namespace
} // namespace bitpipe::base
