//===- GradientSyncTest.cpp - Replica groups, sync points, buckets --------===//

#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Registry.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

namespace {
using Ranks = std::vector<int>;
constexpr int64_t MiB = 1 << 20;
} // namespace

TEST(GradientSync, BitPipePartnersAndDataParallelCopiesFormOneGroup) {
  Placement p = *bidirectionalVPlacement(4);
  World world{4, 2};
  // Stage 0: device 0 (down) and device 3 (up); copies add 4.
  EXPECT_EQ(stageReplicaRanks(p, 0, world), (Ranks{0, 3, 4, 7}));
  // Stages 1 and 6 live on devices 1 and 2.
  EXPECT_EQ(stageReplicaRanks(p, 1, world), (Ranks{1, 2, 5, 6}));
  EXPECT_EQ(stageReplicaRanks(p, 6, world), (Ranks{1, 2, 5, 6}));
  EXPECT_EQ(stageReplicaRanks(p, 6, World{4, 1}), (Ranks{1, 2}));
}

TEST(GradientSync, LoopPlacementHasOnlyDataParallelReplicas) {
  Placement p = *loopPlacement(4, 2);
  EXPECT_EQ(stageReplicaRanks(p, 5, World{4, 1}), (Ranks{1}));
  EXPECT_EQ(stageReplicaRanks(p, 5, World{4, 3}), (Ranks{1, 5, 9}));
}

TEST(GradientSync, WorldGroupsAreNamedByPipelineRanks) {
  World world{4, 3};
  EXPECT_EQ(worldGroup({0, 3}, world), (Ranks{0, 3, 4, 7, 8, 11}));
  EXPECT_EQ(worldGroup({2}, world), (Ranks{2, 6, 10}));
  EXPECT_EQ(pipelineGroup(worldGroup({0, 3}, world), world), (Ranks{0, 3}));
  EXPECT_EQ(worldGroup({1, 2}, World{4, 1}), (Ranks{1, 2}));
  // A stage's replicas are its holders in every copy.
  Placement p = *bidirectionalVPlacement(4);
  EXPECT_EQ(stageReplicaRanks(p, 6, world),
            worldGroup(pipelineGroup(stageReplicaRanks(p, 6, world), world),
                       world));
}

TEST(GradientSync, BitPipeSyncPointsAreTheReferenceMarkers) {
  Schedule s = *generateBitPipe(4, 4);
  // P0: ... B0.s0 AR(4,7) B1.s0 AR(0,3)
  std::vector<SyncPoint> points = gradientSyncPoints(s, 0);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].stages, (Ranks{4, 7}));
  EXPECT_EQ(points[0].afterAction, 15);
  EXPECT_EQ(points[1].stages, (Ranks{0, 3}));
  EXPECT_EQ(points[1].afterAction, 17);
}

TEST(GradientSync, WithoutMarkersEachStageSyncsAfterItsLastBackward) {
  Schedule s = *generateSchedule({"interleaved-1f1b", 2, 4, 2});
  // Device 0 holds stages 0 and 2; the later stage's backwards finish first.
  std::vector<SyncPoint> points = gradientSyncPoints(s, 0);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].stages, (Ranks{2}));
  EXPECT_EQ(points[1].stages, (Ranks{0}));
  const std::vector<Action> &a = s.ranks[0];
  for (const SyncPoint &p : points) {
    EXPECT_EQ(a[p.afterAction].kind, ActionKind::Backward);
    EXPECT_EQ(a[p.afterAction].stage, p.stages[0]);
    for (size_t i = p.afterAction + 1; i < a.size(); ++i)
      EXPECT_FALSE(a[i].kind == ActionKind::Backward &&
                   a[i].stage == p.stages[0]);
  }
}

TEST(GradientSync, SplitBackwardSyncsAfterTheLastWeightGradient) {
  Schedule s = *generateSchedule({"zb-h1", 4, 8});
  std::vector<SyncPoint> points = gradientSyncPoints(s, 2);
  ASSERT_EQ(points.size(), 1u);
  EXPECT_EQ(s.ranks[2][points[0].afterAction],
            Action::weightGrad(7, 2));
  // The last one: rank 2 runs only stage 2, and no B or W follows.
  for (size_t i = points[0].afterAction + 1; i < s.ranks[2].size(); ++i)
    EXPECT_TRUE(s.ranks[2][i].kind != ActionKind::Backward &&
                s.ranks[2][i].kind != ActionKind::WeightGrad)
        << s.ranks[2][i].str();
}

TEST(GradientSync, BucketsFollowCompletionOrderAndTheCap) {
  Placement p = *bidirectionalVPlacement(2);
  World world{2, 1};
  // Device 0 holds stages 0, 1, 2, 3 (D = 2: every stage on both devices).
  std::vector<SyncPoint> points = {{10, {2, 3}}, {12, {0, 1}}};
  std::vector<GradientTensor> grads = {
      {"s3.a", 3, 10 * MiB}, {"s3.b", 3, 10 * MiB}, {"s2.a", 2, 10 * MiB},
      {"s2.big", 2, 40 * MiB}, {"s1.a", 1, 1 * MiB}, {"s0.a", 0, 2 * MiB}};
  Result<std::vector<GradientBucket>> buckets =
      planGradientBuckets(grads, points, p, world, 0, 25 * MiB);
  ASSERT_TRUE(buckets.ok()) << buckets.error;
  ASSERT_EQ(buckets->size(), 4u);
  EXPECT_EQ((*buckets)[0].tensors, (Ranks{0, 1}));  // 20 MiB, then full
  EXPECT_EQ((*buckets)[1].tensors, (Ranks{2}));     // 10 + 40 > 25
  EXPECT_EQ((*buckets)[2].tensors, (Ranks{3}));     // larger than the cap
  EXPECT_EQ((*buckets)[2].bytes, 40 * MiB);
  EXPECT_EQ((*buckets)[3].tensors, (Ranks{4, 5}));  // the later sync point
  EXPECT_EQ((*buckets)[3].syncPoint, 1);
  for (const GradientBucket &b : *buckets)
    EXPECT_EQ(b.ranks, (Ranks{0, 1}));
}

TEST(GradientSync, UnreplicatedStagesNeedNoBucket) {
  Placement p = *loopPlacement(2, 1);
  std::vector<SyncPoint> points = {{3, {0}}};
  Result<std::vector<GradientBucket>> buckets = planGradientBuckets(
      {{"w", 0, 100}}, points, p, World{2, 1}, 0, 25 * MiB);
  ASSERT_TRUE(buckets.ok());
  EXPECT_TRUE(buckets->empty());
  buckets = planGradientBuckets({{"w", 0, 100}}, points, p, World{2, 2}, 0,
                                25 * MiB);
  ASSERT_TRUE(buckets.ok());
  ASSERT_EQ(buckets->size(), 1u);
  EXPECT_EQ((*buckets)[0].ranks, (Ranks{0, 2}));
}

TEST(GradientSync, Errors) {
  Placement p = *loopPlacement(2, 1);
  World world{2, 2};
  EXPECT_EQ(planGradientBuckets({{"w", 0, 1}}, {{1, {0}}}, p, world, 0, 0)
                .error,
            "bucket size must be positive, got 0 bytes");
  EXPECT_EQ(planGradientBuckets({{"w", 5, 1}}, {{1, {0}}}, p, world, 0, 10)
                .error,
            "gradient 'w' names stage 5, but the placement has 2 stages");
  EXPECT_EQ(planGradientBuckets({{"w", 1, 1}}, {{1, {0}}}, p, world, 0, 10)
                .error,
            "gradient 'w' of stage 1 has no sync point on rank 0");
  EXPECT_EQ(planGradientBuckets({{"w", 1, 1}}, {{1, {1}}}, p, world, 0, 10)
                .error,
            "rank 0 does not hold stage 1 of gradient 'w'");
}
