//===- StepGraphPolicyTest.cpp - When a step is captured or replayed ------===//
//
// The decisions behind the CUDA backend's --cuda-graphs, without a device
// (cuda/backend/StepGraphPolicy.h, GraphFootprint.h): which runs cannot use
// graphs and why; the warm-up before the first capture, waiting for a
// steady step and giving up after too many; replays while the graph's
// memory holds, and a stale graph dropped, re-captured, and given up after
// the last capture; ranks that agree on the worst verdict deciding alike;
// and the footprint's check of a pool's blocks (kept blocks still held by
// their hand-out, scratch blocks held by no one, nothing given back). The
// CUDA side runs in runtime/unittests/cuda/CudaBackendTest.cpp (GPU).
//
//===----------------------------------------------------------------------===//

#include "StepGraphPolicy.h"
#include "GraphFootprint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

using namespace bitpipe::runtime;

namespace {

StepGraphRunFacts usableFacts() {
  StepGraphRunFacts f;
  f.cudaDriverVersion = 13000;
  f.ncclHeaderVersion = 22809;
  f.ncclLibraryVersion = 22809;
  return f;
}

TEST(StepGraphPolicy, RunsThatCannotUseGraphsSayWhy) {
  EXPECT_EQ(stepGraphsUnusableReason(usableFacts()), "");
  StepGraphRunFacts f = usableFacts();
  f.trace = true;
  EXPECT_NE(stepGraphsUnusableReason(f).find("--trace records every "
                                             "transfer's"),
            std::string::npos);
  f = usableFacts();
  f.syncEachCall = true;
  EXPECT_NE(stepGraphsUnusableReason(f).find("BITPIPE_CUDA_SYNC=1"),
            std::string::npos);
  f = usableFacts();
  f.cudaDriverVersion = 11020;
  EXPECT_EQ(stepGraphsUnusableReason(f),
            "the CUDA driver is 11.2; graphs of NCCL operations need 11.3");
  // NCCL matters only where ranks communicate, and both of its versions
  // do: the headers built with and the library loaded.
  f = usableFacts();
  f.ncclLibraryVersion = 2810; // NCCL_VERSION(2, 8, 10), before 2.9's codes
  EXPECT_EQ(stepGraphsUnusableReason(f), "");
  f.usesNccl = true;
  EXPECT_EQ(stepGraphsUnusableReason(f),
            "NCCL 2.8.10 (headers 2.28.9, library 2.8.10) cannot capture its "
            "operations; 2.9.6 can");
  f.ncclLibraryVersion = 20906;
  EXPECT_EQ(stepGraphsUnusableReason(f), "");
}

StepGraphFacts steady() {
  StepGraphFacts f;
  f.lastStepSteady = true;
  return f;
}

/// Decides one step from this rank's own verdict (one rank).
StepGraphPolicy::Decision step(StepGraphPolicy &p, const StepGraphFacts &f,
                               int64_t s) {
  return p.decide(p.verdict(f), s);
}

TEST(StepGraphPolicy, WarmsUpCapturesAStepThenReplaysIt) {
  StepGraphPolicy p;
  EXPECT_TRUE(p.active());
  // Steady or not, the first two training steps run eagerly.
  EXPECT_EQ(step(p, StepGraphFacts(), 1).mode, StepMode::Eager);
  EXPECT_EQ(step(p, steady(), 2).mode, StepMode::Eager);
  EXPECT_FALSE(p.holdsGraph());
  StepGraphPolicy::Decision d = step(p, steady(), 3);
  EXPECT_EQ(d.mode, StepMode::Capture);
  EXPECT_FALSE(d.dropGraph);
  EXPECT_EQ(d.change, "");
  EXPECT_TRUE(p.holdsGraph());
  EXPECT_EQ(p.captures(), 1);
  for (int64_t s = 4; s < 10; ++s) {
    d = step(p, StepGraphFacts(), s); // a graph held: only the footprint
    EXPECT_EQ(d.mode, StepMode::Replay) << s;
    EXPECT_FALSE(d.dropGraph);
  }
  EXPECT_EQ(p.captures(), 1);
}

TEST(StepGraphPolicy, CapturesOnlyAfterASteadyStepAndGivesUpWaiting) {
  StepGraphSettings settings;
  settings.eagerSteps = 2;
  settings.maxEagerSteps = 4;
  StepGraphPolicy p(settings);
  StepGraphFacts unsteady;
  EXPECT_EQ(p.verdict(unsteady), GraphVerdict::Unsteady);
  for (int64_t s = 1; s <= 4; ++s)
    EXPECT_EQ(step(p, unsteady, s).mode, StepMode::Eager) << s;
  StepGraphPolicy::Decision d = step(p, unsteady, 5);
  EXPECT_EQ(d.mode, StepMode::Eager);
  EXPECT_FALSE(p.active());
  EXPECT_EQ(d.change, "still not steady after 4 eager steps; every step "
                      "runs eagerly from now on");
  // Off for good: nothing more to decide.
  d = step(p, steady(), 6);
  EXPECT_EQ(d.mode, StepMode::Eager);
  EXPECT_EQ(d.change, "");

  StepGraphPolicy q(settings);
  EXPECT_EQ(step(q, unsteady, 1).mode, StepMode::Eager);
  EXPECT_EQ(step(q, unsteady, 2).mode, StepMode::Eager);
  EXPECT_EQ(step(q, unsteady, 3).mode, StepMode::Eager);
  EXPECT_EQ(step(q, steady(), 4).mode, StepMode::Capture);
}

TEST(StepGraphPolicy, AStaleGraphIsDroppedAndCapturedAgainThenGivenUp) {
  StepGraphSettings settings;
  settings.maxCaptures = 2;
  StepGraphPolicy p(settings);
  step(p, steady(), 1);
  step(p, steady(), 2);
  ASSERT_EQ(step(p, steady(), 3).mode, StepMode::Capture);
  StepGraphFacts stale;
  stale.mismatch = "a scratch block ... is held by another owner now";
  EXPECT_EQ(p.verdict(stale), GraphVerdict::Stale);
  StepGraphPolicy::Decision d = step(p, stale, 4);
  EXPECT_EQ(d.mode, StepMode::Eager);
  EXPECT_TRUE(d.dropGraph);
  EXPECT_EQ(d.change,
            "step 4 runs eagerly and the next steady step is captured again");
  EXPECT_FALSE(p.holdsGraph());
  // One eager step, then the next steady one is captured.
  d = step(p, steady(), 5);
  EXPECT_EQ(d.mode, StepMode::Capture);
  EXPECT_FALSE(d.dropGraph);
  EXPECT_EQ(p.captures(), 2);
  EXPECT_EQ(step(p, StepGraphFacts(), 6).mode, StepMode::Replay);
  // Stale again after the last capture: off.
  d = step(p, stale, 7);
  EXPECT_EQ(d.mode, StepMode::Eager);
  EXPECT_TRUE(d.dropGraph);
  EXPECT_EQ(d.change, "2 captures made; every step runs eagerly from now on");
  EXPECT_FALSE(p.active());
}

TEST(StepGraphPolicy, AnUnusableRankTurnsGraphsOffWhereverThePolicyIs) {
  StepGraphFacts unusable;
  unusable.unusable = "--trace records ...";
  unusable.lastStepSteady = true;
  StepGraphPolicy warming;
  EXPECT_EQ(warming.verdict(unusable), GraphVerdict::Unusable);
  StepGraphPolicy::Decision d = step(warming, unusable, 1);
  EXPECT_EQ(d.mode, StepMode::Eager);
  EXPECT_FALSE(d.dropGraph);
  EXPECT_EQ(d.change, "every step runs eagerly from now on");
  EXPECT_FALSE(warming.active());

  StepGraphPolicy holding;
  step(holding, steady(), 1);
  step(holding, steady(), 2);
  ASSERT_EQ(step(holding, steady(), 3).mode, StepMode::Capture);
  // A capture that the step could not stand for (device work after the
  // optimizer step): the graph goes, and so do graphs.
  d = step(holding, unusable, 4);
  EXPECT_EQ(d.mode, StepMode::Eager);
  EXPECT_TRUE(d.dropGraph);
  EXPECT_FALSE(holding.active());
}

// Ranks decide from the verdict they agreed on, the worst of theirs: one
// rank's stale footprint makes every rank drop its graph at the same step.
TEST(StepGraphPolicy, RanksThatAgreeOnTheWorstVerdictDecideAlike) {
  std::vector<StepGraphPolicy> ranks(4);
  auto agreeAndDecide = [&](const std::vector<StepGraphFacts> &facts,
                            int64_t s) {
    GraphVerdict worst = GraphVerdict::Ready;
    for (size_t r = 0; r < ranks.size(); ++r)
      worst = std::max(worst, ranks[r].verdict(facts[r]));
    std::vector<StepGraphPolicy::Decision> out;
    for (StepGraphPolicy &p : ranks)
      out.push_back(p.decide(worst, s));
    for (const StepGraphPolicy::Decision &d : out) {
      EXPECT_EQ(d.mode, out[0].mode) << "step " << s;
      EXPECT_EQ(d.dropGraph, out[0].dropGraph) << "step " << s;
    }
    return out[0];
  };
  std::vector<StepGraphFacts> allSteady(4, steady());
  agreeAndDecide(allSteady, 1);
  agreeAndDecide(allSteady, 2);
  // Rank 2's pool grew in step 2: nobody captures yet.
  std::vector<StepGraphFacts> oneUnsteady = allSteady;
  oneUnsteady[2].lastStepSteady = false;
  EXPECT_EQ(agreeAndDecide(oneUnsteady, 3).mode, StepMode::Eager);
  EXPECT_EQ(agreeAndDecide(allSteady, 4).mode, StepMode::Capture);
  std::vector<StepGraphFacts> holding(4);
  EXPECT_EQ(agreeAndDecide(holding, 5).mode, StepMode::Replay);
  std::vector<StepGraphFacts> oneStale = holding;
  oneStale[1].mismatch = "a kept block ... went back to CUDA";
  StepGraphPolicy::Decision d = agreeAndDecide(oneStale, 6);
  EXPECT_EQ(d.mode, StepMode::Eager);
  EXPECT_TRUE(d.dropGraph);
}

/// A pool whose blocks the test places; a range's state is that of the
/// block placed at its start (BlockPoolTest checks the real ranges).
class FakePool final : public PoolView {
public:
  struct Entry {
    PoolRangeState state;
    uint64_t serial;
  };
  std::map<uintptr_t, Entry> blocks;

  PoolRangeState state(uintptr_t address, int64_t,
                       uint64_t *serial) const override {
    auto it = blocks.find(address);
    if (it == blocks.end())
      return PoolRangeState::Absent;
    if (it->second.state == PoolRangeState::Held)
      *serial = it->second.serial;
    return it->second.state;
  }
};

/// A capture that began with the workspace (0x1000, hand-out 7) held,
/// handed out an activation (0x2000, 20) and a scratch block twice (0x3000,
/// 21 then 23), and an input (0x4000, 22), and ended holding the workspace
/// and a value kept for later (0x5000, 24).
GraphFootprint captured() {
  return GraphFootprint(
      {{0x1000, 1 << 25, 7}},
      {{0x2000, 512, 20},
       {0x3000, 512, 21},
       {0x4000, 512, 22},
       {0x3000, 512, 23},
       {0x5000, 4096, 24}},
      {{0x1000, 1 << 25, 7}, {0x5000, 4096, 24}, {0x9000, 512, 25}});
}

/// The pool right after that step: the kept blocks held, the rest cached.
FakePool afterTheCapture() {
  FakePool pool;
  pool.blocks = {{0x1000, {PoolRangeState::Held, 7}},
                 {0x2000, {PoolRangeState::Free, 0}},
                 {0x3000, {PoolRangeState::Free, 0}},
                 {0x4000, {PoolRangeState::Free, 0}},
                 {0x5000, {PoolRangeState::Held, 24}},
                 {0x9000, {PoolRangeState::Held, 25}}};
  return pool;
}

TEST(GraphFootprint, KeptBlocksAreTheHandOutsThatLiveOnTheRestScratch) {
  GraphFootprint f = captured();
  EXPECT_EQ(f.numKept(), 2u);    // the workspace, the value kept
  EXPECT_EQ(f.numScratch(), 3u); // 0x3000 once, however often handed out
  EXPECT_FALSE(f.empty());
  EXPECT_TRUE(GraphFootprint().empty());
  // A block held by someone the capture never saw (0x9000, handed out
  // after it) is none of the graph's business.
  EXPECT_EQ(f.check(afterTheCapture()), "");
}

TEST(GraphFootprint, AnotherOwnerOfAGraphsBlockIsAMismatch) {
  const GraphFootprint f = captured();
  FakePool pool = afterTheCapture();
  // An eager step between replays took a scratch block and kept it.
  pool.blocks[0x3000] = {PoolRangeState::Held, 40};
  EXPECT_EQ(f.check(pool), "a scratch block of 512 bytes at 0x3000 is held "
                           "by another owner now");
  pool = afterTheCapture();
  // Used and given back between replays: fine.
  pool.blocks[0x2000] = {PoolRangeState::Free, 0};
  EXPECT_EQ(f.check(pool), "");
  // The kept value freed by its owner...
  pool.blocks[0x5000] = {PoolRangeState::Free, 0};
  EXPECT_EQ(f.check(pool), "a kept block of 4096 bytes at 0x5000 was freed "
                           "by its owner");
  // ...and handed out again.
  pool.blocks[0x5000] = {PoolRangeState::Held, 41};
  EXPECT_EQ(f.check(pool), "a kept block of 4096 bytes at 0x5000 was freed "
                           "and is held by another owner now");
}

TEST(GraphFootprint, ABlockGivenBackToCudaIsAMismatch) {
  const GraphFootprint f = captured();
  FakePool pool = afterTheCapture();
  pool.blocks.erase(0x4000); // an out-of-memory gave the cache back
  EXPECT_EQ(f.check(pool),
            "a scratch block of 512 bytes at 0x4000 went back to CUDA");
  pool = afterTheCapture();
  pool.blocks.erase(0x1000);
  EXPECT_EQ(f.check(pool),
            "a kept block of 33554432 bytes at 0x1000 went back to CUDA");
}

} // namespace
