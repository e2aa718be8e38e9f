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

TEST(GradientSyncGroupsTest, BucketsArePaddedToAMultipleOfTheShards) {
  EXPECT_EQ(optimizerShards(2, 3), 6);
  EXPECT_EQ(optimizerShards(1, 2), 2);
  EXPECT_EQ(padForShards(11, 4), 12);
  EXPECT_EQ(padForShards(12, 4), 12);
  EXPECT_EQ(padForShards(0, 4), 0);
  EXPECT_EQ(padForShards(5, 1), 5);
}

/// Which shard index each (member, copy) of 2 members in 3 copies holds of
/// a bucket of 24 elements (shards of 4).
std::vector<int64_t> shardOffsets(bool twoLevels) {
  std::vector<int64_t> offsets;
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 2; ++i) {
      OptimizerShard s = optimizerShard(24, 2, 3, i, c, twoLevels);
      EXPECT_EQ(s.count, 4);
      offsets.push_back(s.offset);
    }
  return offsets;
}

TEST(GradientSyncGroupsTest, FlatShardsFollowTheWorldRanks) {
  // World ranks in increasing order (copy-major): position c * 2 + i.
  EXPECT_EQ(shardOffsets(false), (std::vector<int64_t>{0, 4, 8, 12, 16, 20}));
}

TEST(GradientSyncGroupsTest, TwoLevelShardsCutTheMembersShardAcrossCopies) {
  // Member i's shard of the copy is [12 i, 12 i + 12); copy c holds
  // [12 i + 4 c, + 4) of it.
  EXPECT_EQ(shardOffsets(true), (std::vector<int64_t>{0, 12, 4, 16, 8, 20}));
}

} // namespace
} // namespace bitpipe::base
