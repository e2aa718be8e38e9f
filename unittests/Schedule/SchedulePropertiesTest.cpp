//===- SchedulePropertiesTest.cpp - Invariants of every generator ---------===//
//
// For every schedule, D = 2..16 and several N (multiples of D and others):
// each (micro-batch, stage) runs F and B (and W when split) exactly once, on
// the device its pipeline places it; ranks only touch their own stages; the
// lists run to the end under the unit-cost player; AR markers follow the
// rank's last backward of their stages, and only replicated schedules have
// them; the library's verifier accepts every schedule; the members of a
// replica group issue their all-reduces in the same order.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "bitpipe/Schedule/Describe.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Verifier.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <tuple>

using namespace bitpipe::sched;

namespace {

struct Case {
  std::string schedule;
  int D, N;
};

std::string describe(const Case &c) {
  return c.schedule + " D=" + std::to_string(c.D) + " N=" +
         std::to_string(c.N);
}

std::vector<Case> allCases() {
  std::vector<Case> cases;
  for (const std::string &name : scheduleNames()) {
    bool needsEven = findSchedule(name)->evenDevices;
    for (int D = 2; D <= 16; ++D) {
      if (needsEven && D % 2)
        continue;
      std::set<int> Ns = {D, 2 * D, 3 * D, D + 1, 1, D / 2 + 1, 2 * D + 3};
      for (int N : Ns)
        cases.push_back({name, D, N});
    }
  }
  return cases;
}

/// The bidirectional placements hold every stage twice.
bool replicated(const std::string &name) {
  return pipelineCount(findSchedule(name)->placement) > 1;
}

void checkSchedule(const Case &c, const Schedule &s) {
  const std::string what = describe(c);
  const Placement &pl = s.placement;
  ASSERT_EQ(s.numRanks(), c.D) << what;
  ASSERT_EQ(s.numMicrobatches, c.N) << what;
  ASSERT_EQ(static_cast<int>(s.microbatchPipeline.size()), c.N) << what;
  ASSERT_EQ(pl.numDevices, c.D) << what;

  // Exactly once, on the right device.
  std::map<std::tuple<int, int, int>, int> count; // (kind, mb, stage)
  for (int r = 0; r < c.D; ++r)
    for (const Action &a : s.ranks[r]) {
      if (a.kind == ActionKind::AllReduce)
        continue;
      ASSERT_GE(a.microbatch, 0) << what;
      ASSERT_LT(a.microbatch, c.N) << what;
      ASSERT_GE(a.stage, 0) << what;
      ASSERT_LT(a.stage, pl.numStages) << what;
      int p = s.microbatchPipeline[a.microbatch];
      EXPECT_EQ(pl.device(p, a.stage), r)
          << what << ": " << a.str() << " on rank " << r;
      ++count[{static_cast<int>(a.kind), a.microbatch, a.stage}];
    }
  std::vector<ActionKind> kinds = {ActionKind::Forward, ActionKind::Backward};
  if (s.splitBackward)
    kinds.push_back(ActionKind::WeightGrad);
  for (int m = 0; m < c.N; ++m)
    for (int st = 0; st < pl.numStages; ++st)
      for (ActionKind k : kinds)
        EXPECT_EQ((count[{static_cast<int>(k), m, st}]), 1)
            << what << ": kind " << static_cast<int>(k) << " m=" << m
            << " s=" << st;
  size_t expectedTotal = static_cast<size_t>(c.N) * pl.numStages * kinds.size();
  size_t total = 0;
  for (auto &[key, n] : count)
    total += n;
  EXPECT_EQ(total, expectedTotal) << what;
  if (!s.splitBackward) {
    EXPECT_EQ(count.count({static_cast<int>(ActionKind::WeightGrad), 0, 0}),
              0u);
  }

  // Every micro-batch uses a pipeline that exists; bidirectional schedules
  // balance the directions within one micro-batch.
  int down = 0;
  for (int p : s.microbatchPipeline) {
    EXPECT_GE(p, 0);
    EXPECT_LT(p, static_cast<int>(pl.pipelines.size()));
    down += p == 0;
  }
  if (pl.pipelines.size() == 2) {
    EXPECT_LE(std::abs(down - (c.N - down)), 1) << what;
  }

  // Runs to the end.
  test::PlayResult r = test::play(s);
  EXPECT_TRUE(r.finished) << what << ": " << r.stuck;

  // The verifier agrees (channels in order on both ends, all-reduces that
  // meet, every replicated stage reduced once on each holder).
  VerifyOptions options;
  options.requireAllReduce = replicated(c.schedule);
  std::vector<Diagnostic> diags = verify(s, options);
  EXPECT_TRUE(diags.empty()) << what << ":\n" << formatDiagnostics(diags);

  // AR markers: only on replicated schedules; every stage the placement
  // puts on a rank is synced there exactly once (even if no micro-batch ran
  // it there: the replica still needs the partner's gradient), after the
  // rank's last B/W of it, and no other stage is.
  std::vector<std::vector<int>> groups = pl.replicaGroups();
  for (int rank = 0; rank < c.D; ++rank) {
    const std::vector<Action> &list = s.ranks[rank];
    std::map<int, int> lastBackward, arPos, arCount;
    std::set<int> held;
    for (const Pipeline &pipe : pl.pipelines)
      for (int st = 0; st < pl.numStages; ++st)
        if (pipe.stageDevice[st] == rank)
          held.insert(st);
    for (int i = 0; i < static_cast<int>(list.size()); ++i) {
      const Action &a = list[i];
      if (a.kind == ActionKind::Backward || a.kind == ActionKind::WeightGrad)
        lastBackward[a.stage] = i;
      if (a.kind != ActionKind::AllReduce)
        continue;
      EXPECT_TRUE(replicated(c.schedule)) << what << ": " << a.str();
      EXPECT_FALSE(a.stages.empty());
      for (int st : a.stages) {
        arPos[st] = i;
        ++arCount[st];
      }
    }
    if (!replicated(c.schedule))
      continue;
    for (int st : held) {
      EXPECT_EQ(arCount[st], 1) << what << " rank " << rank << " s" << st;
      if (lastBackward.count(st)) {
        EXPECT_GT(arPos[st], lastBackward[st])
            << what << " rank " << rank << " s" << st;
      }
      EXPECT_EQ(groups[st].size(), 2u) << what;
    }
    for (auto &[st, n] : arCount)
      EXPECT_TRUE(held.count(st)) << what << ": AR of s" << st
                                  << " that rank " << rank << " lacks";
  }
}

} // namespace

TEST(ScheduleProperties, EveryGeneratorEverySize) {
  int generated = 0, refused = 0;
  for (const Case &c : allCases()) {
    Result<Schedule> s = generateSchedule({c.schedule, c.D, c.N});
    if (!s.ok()) {
      // Only interleaved 1F1B may refuse, and only outside its textbook
      // form, saying what it needs.
      EXPECT_EQ(c.schedule, "interleaved-1f1b") << describe(c) << ": " << s.error;
      EXPECT_NE(c.N % c.D, 0) << describe(c) << ": " << s.error;
      EXPECT_NE(s.error.find("multiple of D"), std::string::npos) << s.error;
      ++refused;
      continue;
    }
    ++generated;
    SCOPED_TRACE(describe(c));
    checkSchedule(c, *s);
    // A note exactly when the textbook form was left.
    bool textbook = c.N % c.D == 0;
    if (c.schedule == "bitpipe" || c.schedule == "bitpipe-zb" ||
        c.schedule == "chimera" ||
        c.schedule == "interleaved-1f1b")
      EXPECT_EQ(s->note.empty(), textbook) << describe(c) << ": " << s->note;
    else
      EXPECT_TRUE(s->note.empty()) << describe(c);
  }
  EXPECT_GT(generated, 400);
  RecordProperty("refused", refused);
}

TEST(ScheduleProperties, InterleavedWithMoreChunks) {
  for (int v : {3, 4})
    for (int D = 2; D <= 8; ++D)
      for (int N : {D, 2 * D}) {
        Result<Schedule> s = generateInterleaved1F1B(D, N, v);
        ASSERT_TRUE(s.ok()) << s.error;
        SCOPED_TRACE("v=" + std::to_string(v));
        checkSchedule({"interleaved-1f1b", D, N}, *s);
      }
}

TEST(ScheduleProperties, OddDevicesRefusedWhereNeeded) {
  for (const char *name : {"chimera", "bitpipe", "bitpipe-zb"})
    for (int D : {1, 3, 5, 7}) {
      Result<Schedule> s = generateSchedule({name, D, 2 * D});
      ASSERT_FALSE(s.ok()) << name << " D=" << D;
      EXPECT_NE(s.error.find("even number of devices"), std::string::npos);
    }
  for (const char *name : {"gpipe", "1f1b", "zb-h1", "zbv"})
    EXPECT_TRUE(generateSchedule({name, 3, 6}).ok()) << name;
}

/// For every replica group, each member's sequence of AR stage-sets with
/// that group, in program order.
static std::map<std::vector<int>, std::map<int, std::vector<std::vector<int>>>>
allReduceSequences(const Schedule &s) {
  std::vector<std::vector<int>> groups = s.placement.replicaGroups();
  std::map<std::vector<int>, std::map<int, std::vector<std::vector<int>>>> out;
  for (int r = 0; r < s.numRanks(); ++r)
    for (const Action &a : s.ranks[r])
      if (a.kind == ActionKind::AllReduce && !a.stages.empty())
        out[groups[a.stages.front()]][r].push_back(a.stages);
  return out;
}

TEST(ScheduleProperties, ReplicasIssueAllReducesInTheSameOrder) {
  // Collectives are matched in issue order: members of a replica group must
  // issue the same stage-sets in the same order, also when a rank ran no
  // backward in one direction (tiny N).
  int checked = 0;
  for (const std::string &name : scheduleNames())
    for (int D = 2; D <= 16; ++D)
      for (int N : std::set<int>{1, 2, D / 2 + 1, D, 2 * D + 3}) {
        Result<Schedule> s = generateSchedule({name, D, N});
        if (!s.ok())
          continue;
        auto sequences = allReduceSequences(*s);
        if (sequences.empty())
          continue;
        ++checked;
        for (const auto &[group, perRank] : sequences) {
          ASSERT_EQ(perRank.size(), group.size())
              << name << " D=" << D << " N=" << N << ": a member of "
              << formatSet(group) << " issues no all-reduce";
          const std::vector<std::vector<int>> &first = perRank.begin()->second;
          for (const auto &[rank, seq] : perRank)
            EXPECT_EQ(seq, first)
                << name << " D=" << D << " N=" << N << ": rank " << rank
                << " and rank " << perRank.begin()->first
                << " order their all-reduces with " << formatSet(group)
                << " differently";
        }
      }
  // chimera and bitpipe, D = 2, 4, ..., 16, up to five N each.
  EXPECT_GE(checked, 2 * 8 * 3);
}
