//===- WithGradientSyncTest.cpp - The schedule with its all-reduces -------===//
//
// sched::withGradientSync gives a schedule whose generator places no
// all-reduce the ones bitpipe-insert-allreduce gives its program, so that a
// comparison at dp > 1 charges every schedule for summing its gradients
// (docs/planning.md, "The cost model").
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

namespace {

Schedule generate(const ScheduleOptions &options) {
  Result<Schedule> s = generateSchedule(options);
  EXPECT_TRUE(s) << s.error;
  return s ? *s.value : Schedule();
}

/// The rank's actions with the AR actions left out.
std::vector<Action> withoutAllReduces(const std::vector<Action> &actions) {
  std::vector<Action> out;
  for (const Action &a : actions)
    if (a.kind != ActionKind::AllReduce)
      out.push_back(a);
  return out;
}

int countAllReduces(const std::vector<Action> &actions) {
  int n = 0;
  for (const Action &a : actions)
    n += a.kind == ActionKind::AllReduce;
  return n;
}

} // namespace

TEST(WithGradientSync, OneFOneBGetsOneAllReducePerRankAfterItsLastBackward) {
  Schedule plain = generate({"1f1b", 4, 8});
  Schedule synced = withGradientSync(plain);
  ASSERT_EQ(synced.numRanks(), 4);
  for (int d = 0; d < 4; ++d) {
    const std::vector<Action> &a = synced.ranks[d];
    // Nothing else moves.
    EXPECT_EQ(withoutAllReduces(a), plain.ranks[d]) << "rank " << d;
    ASSERT_EQ(countAllReduces(a), 1) << "rank " << d;
    // 1F1B's last action is the last micro-batch's backward: the AR ends
    // the program, and names the rank's one stage.
    EXPECT_EQ(a.back(), Action::allReduce({d}));
    EXPECT_EQ(a[a.size() - 2], Action::backward(7, d));
  }
}

TEST(WithGradientSync, AllReducesStandAtTheSyncPoints) {
  for (const ScheduleOptions &options :
       {ScheduleOptions{"interleaved-1f1b", 2, 4, 2},
        ScheduleOptions{"zb-h1", 4, 8}, ScheduleOptions{"gpipe", 4, 4},
        ScheduleOptions{"zbv", 4, 8}}) {
    Schedule plain = generate(options);
    Schedule synced = withGradientSync(plain);
    for (int d = 0; d < plain.numRanks(); ++d) {
      std::vector<SyncPoint> points = gradientSyncPoints(plain, d);
      const std::vector<Action> &a = synced.ranks[d];
      ASSERT_EQ(countAllReduces(a), static_cast<int>(points.size()))
          << options.schedule << " rank " << d;
      // Point k's action moved k places on (the k ARs inserted before it),
      // and its AR follows it.
      for (size_t k = 0; k < points.size(); ++k) {
        size_t at = points[k].afterAction + k;
        EXPECT_EQ(a[at], plain.ranks[d][points[k].afterAction])
            << options.schedule << " rank " << d;
        EXPECT_EQ(a[at + 1], Action::allReduce(points[k].stages))
            << options.schedule << " rank " << d;
      }
    }
  }
}

TEST(WithGradientSync, SchedulesWithTheirOwnAllReducesAreLeftAsTheyAre) {
  for (const char *name : {"bitpipe", "chimera"}) {
    Schedule plain = generate({name, 4, 4});
    ASSERT_GT(countAllReduces(plain.ranks[0]), 0) << name;
    Schedule synced = withGradientSync(plain);
    for (int d = 0; d < plain.numRanks(); ++d)
      EXPECT_EQ(synced.ranks[d], plain.ranks[d]) << name << " rank " << d;
  }
}

TEST(WithGradientSync, DataParallelCopiesThenPayForTheirAllReduce) {
  // One node of 8 GPUs, 1F1B D=4 dp=2: each stage's 100 MB of gradients
  // is a ring over its two copies, 2 * (1 us + 1e8 / (2 * 1e11) s) = 1.002
  // ms, after the stage's last backward; without the ARs it is free.
  Cluster c;
  c.name = "1x8";
  c.nodes = 1;
  c.gpusPerNode = 8;
  c.gpuMemoryBytes = 1e9;
  c.peakBf16Flops = 1e12;
  c.intraNode = {1e-6, 1e11};
  CostModel cost;
  cost.unitForward = 1e-3;
  cost.unitBackward = 2e-3;
  cost.gradientBytes = std::vector<double>(4, 1e8);
  cost.deployment = Deployment{c, World{4, 2}, 0};

  Schedule plain = generate({"1f1b", 4, 8});
  Result<SimResult> bare = simulate(plain, cost);
  Result<SimResult> synced = simulate(withGradientSync(plain), cost);
  ASSERT_TRUE(bare) << bare.error;
  ASSERT_TRUE(synced) << synced.error;
  EXPECT_EQ(bare->allReduceTime, 0);
  EXPECT_NEAR(synced->allReduceTime, 4 * 1.002e-3, 1e-12);
  // Rank 0 finishes its compute last; its all-reduce follows, exposed.
  EXPECT_NEAR(synced->makespan, bare->makespan + 1.002e-3, 1e-12);
}
