//===- PlacementTest.cpp - Placement factories ----------------------------===//

#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Registry.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

TEST(Placement, LoopPutsStageOnDeviceModD) {
  Result<Placement> p = loopPlacement(4, 2);
  ASSERT_TRUE(p.ok()) << p.error;
  EXPECT_EQ(p->kind, PlacementKind::Loop);
  EXPECT_EQ(p->numDevices, 4);
  EXPECT_EQ(p->numStages, 8);
  ASSERT_EQ(p->pipelines.size(), 1u);
  EXPECT_EQ(p->pipelines[0].stageDevice,
            (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  // One replica per stage.
  for (const std::vector<int> &g : p->replicaGroups())
    EXPECT_EQ(g.size(), 1u);
}

TEST(Placement, LoopWithOneChunkIsPlain) {
  Result<Placement> p = loopPlacement(3);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->pipelines[0].stageDevice, (std::vector<int>{0, 1, 2}));
}

TEST(Placement, VGoesDownAndBack) {
  Result<Placement> p = vPlacement(4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->kind, PlacementKind::V);
  EXPECT_EQ(p->numStages, 8);
  EXPECT_EQ(p->pipelines[0].stageDevice,
            (std::vector<int>{0, 1, 2, 3, 3, 2, 1, 0}));
}

TEST(Placement, BidirectionalMirrors) {
  Result<Placement> p = bidirectionalPlacement(4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->numStages, 4);
  ASSERT_EQ(p->pipelines.size(), 2u);
  EXPECT_EQ(p->pipelines[0].stageDevice, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(p->pipelines[1].stageDevice, (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(p->replicaGroups(),
            (std::vector<std::vector<int>>{{0, 3}, {1, 2}, {1, 2}, {0, 3}}));
}

TEST(Placement, BidirectionalVMatchesDesignTable) {
  for (int D = 2; D <= 16; D += 2) {
    Result<Placement> p = bidirectionalVPlacement(D);
    ASSERT_TRUE(p.ok()) << p.error;
    EXPECT_EQ(p->numStages, 2 * D);
    ASSERT_EQ(p->pipelines.size(), 2u);
    for (int r = 0; r < D; ++r) {
      // docs/bitpipe-order.md: c0 = s(r) down, c1 = s(D-1-r) up, c2 = s(2D-1-r) down,
      // c3 = s(D+r) up.
      EXPECT_EQ(p->device(0, r), r) << "D=" << D;
      EXPECT_EQ(p->device(1, D - 1 - r), r) << "D=" << D;
      EXPECT_EQ(p->device(0, 2 * D - 1 - r), r) << "D=" << D;
      EXPECT_EQ(p->device(1, D + r), r) << "D=" << D;
    }
    // Every stage is held by r and D-1-r; every device holds 4 stages.
    std::vector<std::vector<int>> groups = p->replicaGroups();
    for (int s = 0; s < 2 * D; ++s) {
      int d = p->device(0, s);
      std::vector<int> expected = {std::min(d, D - 1 - d),
                                   std::max(d, D - 1 - d)};
      EXPECT_EQ(groups[s], expected) << "D=" << D << " s=" << s;
    }
    std::vector<int> perDevice(D, 0);
    for (const Pipeline &pipe : p->pipelines)
      for (int d : pipe.stageDevice)
        ++perDevice[d];
    for (int n : perDevice)
      EXPECT_EQ(n, 4);
  }
}

TEST(Placement, BidirectionalVTiesEmbeddingAndHeadOnDeviceZero) {
  Result<Placement> p = bidirectionalVPlacement(8);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->device(0, 0), 0);
  EXPECT_EQ(p->device(0, 15), 0);
  // The V bottom: the two middle stages of the down pipeline share a device.
  EXPECT_EQ(p->device(0, 7), p->device(0, 8));
}

TEST(Placement, RejectsBadArguments) {
  EXPECT_FALSE(loopPlacement(0).ok());
  EXPECT_FALSE(loopPlacement(4, 0).ok());
  EXPECT_FALSE(vPlacement(-1).ok());
  EXPECT_FALSE(bidirectionalPlacement(0).ok());
  Result<Placement> odd = bidirectionalVPlacement(3);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error.find("even"), std::string::npos) << odd.error;
  EXPECT_NE(odd.error.find("3"), std::string::npos) << odd.error;
  EXPECT_FALSE(bidirectionalPlacement(5).ok());
}

TEST(Placement, ParsesKindsAndRoundTripsNames) {
  for (PlacementKind k :
       {PlacementKind::Loop, PlacementKind::V, PlacementKind::Bidirectional,
        PlacementKind::BidirectionalV}) {
    Result<PlacementKind> parsed = parsePlacementKind(placementKindName(k));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, k);
    Result<Placement> p = makePlacement(k, 4, 2);
    ASSERT_TRUE(p.ok()) << p.error;
    EXPECT_EQ(p->kind, k);
    EXPECT_EQ(static_cast<int>(p->pipelines.size()), pipelineCount(k));
  }
  Result<PlacementKind> bad = parsePlacementKind("zigzag");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("zigzag"), std::string::npos);
}

// bitpipe-schedule compares a module's placement with schedulePlacement()
// before generating; the two must never disagree with the generators.
TEST(Placement, SchedulePlacementIsWhatTheGeneratorUses) {
  for (const std::string &name : scheduleNames()) {
    for (int devices : {2, 4}) {
      ScheduleOptions o{name, devices, /*microbatches=*/2 * devices};
      Result<Schedule> s = generateSchedule(o);
      ASSERT_TRUE(s.ok()) << name << ": " << s.error;
      Result<Placement> p = schedulePlacement(o);
      ASSERT_TRUE(p.ok()) << name << ": " << p.error;
      EXPECT_EQ(p->kind, s->placement.kind) << name;
      EXPECT_EQ(p->numDevices, s->placement.numDevices) << name;
      EXPECT_EQ(p->numStages, s->placement.numStages) << name;
      ASSERT_EQ(p->pipelines.size(), s->placement.pipelines.size()) << name;
      for (size_t i = 0; i < p->pipelines.size(); ++i)
        EXPECT_EQ(p->pipelines[i].stageDevice,
                  s->placement.pipelines[i].stageDevice)
            << name;
    }
  }
  Result<Placement> unknown = schedulePlacement({"zigzag", 4, 4});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error.find("unknown schedule 'zigzag'"), std::string::npos)
      << unknown.error;
}
