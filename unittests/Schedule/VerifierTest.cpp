//===- VerifierTest.cpp - Diagnostics for broken schedules ----------------===//

#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Verifier.h"

#include "TestSchedules.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

namespace {

/// The diagnostics of `kind`.
std::vector<Diagnostic> ofKind(const std::vector<Diagnostic> &diags,
                               DiagKind kind) {
  std::vector<Diagnostic> out;
  for (const Diagnostic &d : diags)
    if (d.kind == kind)
      out.push_back(d);
  return out;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

/// The line of `grid` for rank r.
std::string gridLine(const std::string &grid, int r) {
  std::string head = "P" + std::to_string(r) + ":";
  size_t at = grid.find(head);
  if (at == std::string::npos)
    return "";
  return grid.substr(at, grid.find('\n', at) - at);
}

} // namespace

TEST(Verifier, AcceptsValidSchedules) {
  VerifyOptions strict;
  strict.requireAllReduce = true;
  for (int d = 2; d <= 4; ++d)
    for (int n : {d, 2 * d + 1}) {
      EXPECT_TRUE(verify(oneFOneB(d, n), strict).empty()) << d << " " << n;
      EXPECT_TRUE(verify(gpipe(d, n), strict).empty()) << d << " " << n;
    }
  std::vector<Diagnostic> diags = verify(bitpipeD4N4(), strict);
  EXPECT_TRUE(diags.empty()) << formatDiagnostics(diags);
}

TEST(Verifier, GridRoundTripsTheDesignNotation) {
  EXPECT_EQ(formatGrid(bitpipeD4N4()), kBitPipeD4N4);
  Schedule s = oneFOneB(2, 2);
  EXPECT_EQ(formatGrid(s, {{1, 2}}), "P0: F0.s0 F1.s0 B0.s0 B1.s0\n"
                                     "P1: F0.s1 B0.s1 >>F1.s1<< B1.s1\n");
}

TEST(Verifier, BackwardBeforeItsForward) {
  Schedule s = oneFOneB(3, 4);
  int f = indexOf(s, 2, Action::forward(3, 2));
  int b = indexOf(s, 2, Action::backward(3, 2));
  ASSERT_EQ(b, f + 1);
  std::swap(s.ranks[2][f], s.ranks[2][b]);
  std::vector<Diagnostic> diags = verify(s);
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  const Diagnostic &d = diags[0];
  EXPECT_EQ(d.kind, DiagKind::BackwardBeforeForward);
  EXPECT_EQ(d.rank, 2);
  EXPECT_EQ(d.actionIndex, f);
  EXPECT_EQ(d.message,
            "rank 2: backward of stage 2 for micro-batch 3 runs before its "
            "forward");
  EXPECT_EQ(gridLine(d.grid, 2),
            "P2: F0.s2 B0.s2 F1.s2 B1.s2 F2.s2 B2.s2 >>B3.s2<< >>F3.s2<<");
  // The whole grid is there, unmarked elsewhere.
  EXPECT_EQ(gridLine(d.grid, 0), "P0: F0.s0 F1.s0 F2.s0 B0.s0 F3.s0 B1.s0 "
                                 "B2.s0 B3.s0");
  EXPECT_TRUE(contains(d.str(), d.message + "\nP0: "));
}

TEST(Verifier, MissingMicrobatch) {
  Schedule s = oneFOneB(2, 3);
  for (std::vector<Action> &rank : s.ranks)
    rank.erase(
        std::remove_if(rank.begin(), rank.end(),
                       [](const Action &a) { return a.microbatch == 2; }),
        rank.end());
  std::vector<Diagnostic> diags = verify(s);
  std::vector<Diagnostic> missing = ofKind(diags, DiagKind::Missing);
  ASSERT_EQ(missing.size(), 4u) << formatDiagnostics(diags);
  EXPECT_EQ(diags.size(), 4u);
  EXPECT_EQ(missing[0].message,
            "forward of stage 0 for micro-batch 2 runs on no rank (the "
            "placement puts it on rank 0)");
  EXPECT_EQ(missing[3].message,
            "backward of stage 1 for micro-batch 2 runs on no rank (the "
            "placement puts it on rank 1)");
  EXPECT_EQ(missing[0].rank, -1);
  EXPECT_FALSE(contains(missing[0].grid, ">>"));
}

TEST(Verifier, ActionOnTheWrongDevice) {
  Schedule s = gpipe(3, 2);
  // Move F0.s1 from rank 1 to the front of rank 2.
  s.ranks[1].erase(s.ranks[1].begin());
  s.ranks[2].insert(s.ranks[2].begin(), Action::forward(0, 1));
  std::vector<Diagnostic> diags = verify(s);
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(diags[0].kind, DiagKind::WrongDevice);
  EXPECT_EQ(diags[0].message,
            "rank 2: forward of stage 1 for micro-batch 0 runs on rank 2, but "
            "micro-batch 0 travels pipeline 0, which places stage 1 on rank 1");
  EXPECT_EQ(gridLine(diags[0].grid, 2),
            "P2: >>F0.s1<< F0.s2 F1.s2 B0.s2 B1.s2");
}

TEST(Verifier, DuplicateAction) {
  Schedule s = gpipe(2, 2);
  s.ranks[0].insert(s.ranks[0].begin() + 2, Action::forward(1, 0));
  std::vector<Diagnostic> diags = verify(s);
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(diags[0].kind, DiagKind::Duplicate);
  EXPECT_EQ(diags[0].message, "rank 0: forward of stage 0 for micro-batch 1 "
                              "runs twice (first at step 1 of rank 0)");
  EXPECT_EQ(gridLine(diags[0].grid, 0),
            "P0: F0.s0 >>F1.s0<< >>F1.s0<< B0.s0 B1.s0");
}

TEST(Verifier, MismatchedAllReduces) {
  // Rank 3 swaps its two all-reduces with rank 0.
  Schedule s = bitpipeD4N4();
  std::vector<Action> &r3 = s.ranks[3];
  int first = indexOf(s, 3, Action::allReduce({4, 7}));
  int second = indexOf(s, 3, Action::allReduce({0, 3}));
  std::swap(r3[first], r3[second]);
  std::vector<Diagnostic> diags = verify(s);
  std::vector<Diagnostic> mm = ofKind(diags, DiagKind::AllReduceMismatch);
  ASSERT_EQ(mm.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(mm[0].rank, 3);
  EXPECT_EQ(mm[0].actionIndex, first);
  EXPECT_EQ(mm[0].message, "rank 3: its 1st all-reduce with group {0,3} is "
                           "AR(0,3), but rank 0's is AR(4,7)");
  EXPECT_TRUE(contains(gridLine(mm[0].grid, 3), "B2.s0 >>AR(0,3)<< B3.s0"));
  EXPECT_TRUE(contains(gridLine(mm[0].grid, 0), "B0.s0 >>AR(4,7)<< B1.s0"));
  // AR(0,3) now also precedes rank 3's last backward of stage 0.
  std::vector<Diagnostic> early =
      ofKind(diags, DiagKind::AllReduceBeforeGradients);
  ASSERT_EQ(early.size(), 1u);
  EXPECT_EQ(early[0].message,
            "rank 3: AR(0,3) (all-reduce of stages 0,3) starts before the "
            "backward of stage 0 for micro-batch 3, which rank 3 runs later");
}

TEST(Verifier, ReplicasThatOrderTheirAllReducesDifferently) {
  // What chimera generated for D=2, N=1 before its ARs were ordered per
  // replica group: stages 0 and 1 share the group {0,1}, and the two
  // members issue their two ARs in opposite orders. A runtime would pair
  // rank 0's AR(0) with rank 1's AR(1) and sum unrelated gradients.
  Schedule s = emptySchedule("chimera", *bidirectionalPlacement(2), 1);
  s.ranks = gridRanks("P0: F0.s0 B0.s0 AR(0) AR(1)\n"
                      "P1: F0.s1 B0.s1 AR(1) AR(0)\n");
  std::vector<Diagnostic> diags = verify(s);
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(diags[0].kind, DiagKind::AllReduceMismatch);
  EXPECT_EQ(diags[0].rank, 1);
  EXPECT_EQ(diags[0].actionIndex, 2);
  EXPECT_EQ(diags[0].message, "rank 1: its 1st all-reduce with group {0,1} "
                              "is AR(1), but rank 0's is AR(0)");
  EXPECT_EQ(diags[0].grid, "P0: F0.s0 B0.s0 >>AR(0)<< AR(1)\n"
                           "P1: F0.s1 B0.s1 >>AR(1)<< AR(0)\n");

  // The generator now issues them in the same order on both.
  Result<Schedule> fixed = generateChimera(2, 1);
  ASSERT_TRUE(fixed.ok()) << fixed.error;
  EXPECT_EQ(formatGrid(*fixed), "P0: F0.s0 B0.s0 AR(1) AR(0)\n"
                                "P1: F0.s1 B0.s1 AR(1) AR(0)\n");
  VerifyOptions strict;
  strict.requireAllReduce = true;
  diags = verify(*fixed, strict);
  EXPECT_TRUE(diags.empty()) << formatDiagnostics(diags);
}

TEST(Verifier, AllReduceWithoutPartner) {
  Schedule s = bitpipeD4N4();
  s.ranks[3].pop_back(); // Rank 3 drops AR(0,3).
  std::vector<Diagnostic> diags = verify(s);
  std::vector<Diagnostic> mm = ofKind(diags, DiagKind::AllReduceMismatch);
  ASSERT_EQ(mm.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(mm[0].message,
            "rank 0 runs 2 all-reduces with group {0,3}, rank 3 runs 1: rank "
            "0's AR(0,3) has no partner on rank 3");
  EXPECT_EQ(mm[0].rank, 0);
  EXPECT_EQ(mm[0].actionIndex, 17);
  // Run, it hangs: the simulator says so too.
  std::vector<Diagnostic> dl = ofKind(diags, DiagKind::Deadlock);
  ASSERT_EQ(dl.size(), 1u);
  EXPECT_TRUE(contains(dl[0].message, "rank 3 has no matching all-reduce"))
      << dl[0].message;

  // Asked to, the verifier also notices stage 0 and 3 are never reduced on
  // rank 3.
  VerifyOptions strict;
  strict.requireAllReduce = true;
  std::vector<Diagnostic> missing =
      ofKind(verify(s, strict), DiagKind::AllReduceMissing);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0].message, "rank 3 never all-reduces stage 0, which is "
                                "replicated on ranks {0,3}");
}

TEST(Verifier, AllReduceOfAForeignOrMixedStage) {
  Schedule s = bitpipeD4N4();
  s.ranks[1].push_back(Action::allReduce({0}));
  std::vector<Diagnostic> diags = verify(s);
  std::vector<Diagnostic> foreign =
      ofKind(diags, DiagKind::AllReduceForeignStage);
  ASSERT_EQ(foreign.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(foreign[0].message, "rank 1: AR(0) all-reduces stage 0, which "
                                "rank 1 does not hold (replica group {0,3})");
  EXPECT_EQ(foreign[0].actionIndex, 18);

  // Stage 0 lives only on device 0, stage 1 on both: one AR cannot carry
  // both, its members would differ.
  Placement p;
  p.numDevices = 2;
  p.numStages = 2;
  p.pipelines = {Pipeline{{0, 0}}, Pipeline{{0, 1}}};
  Schedule m = emptySchedule("mixed", p, 2);
  m.microbatchPipeline = {0, 1};
  m.ranks = gridRanks("P0: F0.s0 F0.s1 B0.s1 B0.s0 F1.s0 B1.s0 AR(0,1)\n"
                      "P1: F1.s1 B1.s1 AR(1)\n");
  diags = verify(m);
  std::vector<Diagnostic> mixed = ofKind(diags, DiagKind::AllReduceMixedGroups);
  ASSERT_EQ(mixed.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(mixed[0].message,
            "rank 0: AR(0,1) mixes stages with different replica groups: "
            "stage 0 {0}, stage 1 {0,1}");
}

TEST(Verifier, ChannelsOrderedDifferentlyOnBothEnds) {
  Schedule s = emptySchedule("swapped", loop(2), 2);
  s.ranks = gridRanks("P0: F0.s0 F1.s0 B0.s0 B1.s0\n"
                      "P1: F1.s1 B1.s1 F0.s1 B0.s1\n");
  std::vector<Diagnostic> diags = verify(s);
  std::vector<Diagnostic> ch = ofKind(diags, DiagKind::ChannelOrder);
  ASSERT_EQ(ch.size(), 2u) << formatDiagnostics(diags);
  EXPECT_EQ(ch[0].message,
            "channel rank 0 -> rank 1: rank 0's 1st send carries the "
            "activation of F0.s0, but rank 1's 1st receive expects the "
            "activation of F1.s0 (the two ranks order this channel "
            "differently)");
  EXPECT_EQ(ch[0].rank, 1);
  EXPECT_EQ(gridLine(ch[0].grid, 1), "P1: >>F1.s1<< B1.s1 F0.s1 B0.s1");
  EXPECT_EQ(gridLine(ch[0].grid, 0), "P0: >>F0.s0<< F1.s0 B0.s0 B1.s0");
  // Under NCCL's rules each end runs the channel's batches in its own
  // order, so the two orders also wait on each other; with MPI's tags the
  // programs would run, and no deadlock is claimed.
  EXPECT_EQ(ofKind(diags, DiagKind::Deadlock).size(), 1u);
  VerifyOptions mpi;
  mpi.transport = Transport::Mpi;
  std::vector<Diagnostic> tagged = verify(s, mpi);
  EXPECT_EQ(ofKind(tagged, DiagKind::ChannelOrder).size(), 2u);
  EXPECT_TRUE(ofKind(tagged, DiagKind::Deadlock).empty());
}

TEST(Verifier, DeadlockOfTwoRanksThatBothReceiveFirst) {
  std::vector<Diagnostic> diags = verify(crossedReceives());
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  const Diagnostic &d = diags[0];
  EXPECT_EQ(d.kind, DiagKind::Deadlock);
  EXPECT_TRUE(contains(d.message, "deadlock: no rank can make progress"));
  EXPECT_TRUE(contains(d.message,
                       "rank 0: F1.s1 (forward of stage 1 for micro-batch 1) "
                       "waits for the activation of F1.s0 from rank 1"))
      << d.message;
  EXPECT_TRUE(contains(d.message,
                       "rank 1: F0.s1 (forward of stage 1 for micro-batch 0) "
                       "waits for the activation of F0.s0 from rank 0"))
      << d.message;
  EXPECT_EQ(d.grid, "P0: >>F1.s1<< F0.s0 B1.s1 B0.s0\n"
                    "P1: >>F0.s1<< F1.s0 B0.s1 B1.s0\n");
}

TEST(Verifier, ChecksAGivenLoweredProgram) {
  Schedule s = oneFOneB(2, 2);
  Result<CommProgram> p = lowerComms(s);
  ASSERT_TRUE(p);
  EXPECT_TRUE(verify(s, *p.value).empty());
  std::vector<CommAction> &r0 = p.value->ranks[0];
  ASSERT_EQ(r0[3].str(), "SEND_F1.s0->P1");
  r0.erase(r0.begin() + 3);
  std::vector<Diagnostic> diags = verify(s, *p.value);
  std::vector<Diagnostic> ch = ofKind(diags, DiagKind::ChannelOrder);
  ASSERT_EQ(ch.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(ch[0].message,
            "channel rank 0 -> rank 1: rank 1's 2nd receive expects the "
            "activation of F1.s0, but rank 0 sends nothing more");
  ASSERT_EQ(ofKind(diags, DiagKind::Deadlock).size(), 1u);
}

TEST(Verifier, SmallerStructuralChecks) {
  Schedule w = oneFOneB(2, 1);
  w.ranks[0].push_back(Action::weightGrad(0, 0));
  std::vector<Diagnostic> diags = verify(w);
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(diags[0].message, "rank 0: weight gradient of stage 0 for "
                              "micro-batch 0 in a schedule whose backward is "
                              "not split");

  Schedule split = oneFOneB(2, 1);
  split.splitBackward = true;
  split.ranks[1].insert(split.ranks[1].begin() + 1, Action::weightGrad(0, 1));
  split.ranks[0].push_back(Action::weightGrad(0, 0));
  diags = verify(split);
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(diags[0].kind, DiagKind::WeightGradBeforeBackward);
  EXPECT_EQ(diags[0].message, "rank 1: weight gradient of stage 1 for "
                              "micro-batch 0 runs before its backward");

  Schedule range = oneFOneB(2, 1);
  range.ranks[1].push_back(Action::backward(0, 5));
  diags = verify(range);
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(diags[0].kind, DiagKind::OutOfRange);

  Schedule shape = oneFOneB(2, 1);
  shape.ranks.pop_back();
  diags = verify(shape);
  ASSERT_EQ(diags.size(), 1u) << formatDiagnostics(diags);
  EXPECT_EQ(diags[0].message,
            "the schedule has 1 rank but the placement 2 devices");
  EXPECT_EQ(diags[0].grid, "P0: F0.s0 B0.s0\n");
}
