//===- SimulatorTest.cpp - Event simulation of hand-built schedules -------===//

#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Registry.h"

#include "TestSchedules.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

namespace {

SimResult run(const Schedule &s, const CostModel &cost = CostModel()) {
  Result<SimResult> r = simulate(s, cost);
  EXPECT_TRUE(r) << r.error;
  return r ? *r.value : SimResult();
}

/// The event of `lane` on `rank` whose name is `name` (Action::str for
/// compute and all-reduce, CommAction::str for p2p).
const TimelineEvent *find(const SimResult &sim, Lane lane, int rank,
                          const std::string &name) {
  for (const TimelineEvent &e : sim.timeline) {
    if (e.lane != lane || e.rank != rank)
      continue;
    std::string n = e.action.str();
    if (lane == Lane::P2P) {
      CommAction c;
      c.kind = e.kind;
      c.action = e.action;
      c.peer = e.peer;
      n = c.str();
    }
    if (n == name)
      return &e;
  }
  ADD_FAILURE() << "no event " << name << " on rank " << rank;
  return nullptr;
}

/// Two data-parallel replicas of a two-stage model: pipeline k keeps both
/// stages on device k. Each rank all-reduces stage 1 right after its
/// backward, then stage 0.
Schedule dataParallelWithAllReduce() {
  Placement p;
  // Not one of the library's layouts: the simulator reads only the map.
  p.kind = PlacementKind::Bidirectional;
  p.numDevices = 2;
  p.numStages = 2;
  p.pipelines = {Pipeline{{0, 0}}, Pipeline{{1, 1}}};
  Schedule s = emptySchedule("dp", p, 2);
  s.microbatchPipeline = {0, 1};
  s.ranks = gridRanks("P0: F0.s0 F0.s1 B0.s1 AR(1) B0.s0 AR(0)\n"
                      "P1: F1.s0 F1.s1 B1.s1 AR(1) B1.s0 AR(0)\n");
  return s;
}

} // namespace

TEST(Simulator, OneFOneBUnitCostsMatchClosedForms) {
  for (int d = 2; d <= 4; ++d) {
    for (int n : {d, 2 * d, 2 * d + 1}) {
      SCOPED_TRACE("D=" + std::to_string(d) + " N=" + std::to_string(n));
      SimResult sim = run(oneFOneB(d, n));
      EXPECT_FALSE(sim.deadlocked);
      EXPECT_DOUBLE_EQ(sim.makespan, 3.0 * (n + d - 1));
      EXPECT_DOUBLE_EQ(sim.bubbleRatio, double(d - 1) / (n + d - 1));
      ASSERT_EQ(sim.ranks.size(), size_t(d));
      for (int r = 0; r < d; ++r) {
        EXPECT_DOUBLE_EQ(sim.ranks[r].busy, 3.0 * n);
        EXPECT_DOUBLE_EQ(sim.ranks[r].idle, 3.0 * (d - 1));
        EXPECT_EQ(sim.ranks[r].peakInFlight, d - r) << "rank " << r;
      }
    }
  }
  EXPECT_DOUBLE_EQ(run(oneFOneB(4, 4)).makespan, 21.0);
}

TEST(Simulator, GPipeKeepsEveryMicrobatchInFlight) {
  SimResult sim = run(gpipe(4, 4));
  EXPECT_DOUBLE_EQ(sim.makespan, 21.0);
  EXPECT_DOUBLE_EQ(sim.bubbleRatio, 3.0 / 7.0);
  for (const RankStats &st : sim.ranks)
    EXPECT_EQ(st.peakInFlight, 4);
  // GPipe D=4, N=8 under F=1, B=2: same (N+D-1)(F+B) law.
  EXPECT_DOUBLE_EQ(run(gpipe(4, 8)).makespan, 33.0);
}

TEST(Simulator, BitPipeD4N4TakesTwentyEightSlots) {
  SimResult sim = run(bitpipeD4N4());
  EXPECT_FALSE(sim.deadlocked) << sim.deadlockReport();
  EXPECT_DOUBLE_EQ(sim.makespan, 28.0);
  // (D-2)/(3N+D-2) = 2/14.
  EXPECT_DOUBLE_EQ(sim.bubbleRatio, 2.0 / 14.0);
  std::vector<int> peaks = {7, 8, 8, 7};
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(sim.ranks[r].busy, 24.0);
    EXPECT_EQ(sim.ranks[r].peakInFlight, peaks[r]) << "rank " << r;
  }
  // Two all-reduces per rank, each with its replica partner, free here.
  int arEvents = 0;
  for (const TimelineEvent &e : sim.timeline)
    arEvents += e.lane == Lane::AllReduce;
  EXPECT_EQ(arEvents, 8);
  EXPECT_DOUBLE_EQ(sim.allReduceTime, 0.0);
}

TEST(Simulator, BytesSentAndActivationBytes) {
  CostModel cost;
  cost.boundaryBytes = {1, 10, 100};
  cost.stashBytes = {5, 6, 7, 8};
  SimResult sim = run(oneFOneB(4, 4), cost);
  // Rank r sends N activations over boundary r and N gradients over r-1.
  std::vector<double> sent = {4, 4 * 10 + 4 * 1, 4 * 100 + 4 * 10, 4 * 100};
  for (int r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(sim.ranks[r].bytesSent, sent[r]) << "rank " << r;
    EXPECT_DOUBLE_EQ(sim.ranks[r].peakInFlightBytes, (4 - r) * (5.0 + r));
  }
  EXPECT_DOUBLE_EQ(sim.totalBytesSent, 888.0);
  // Free links: sizes do not change the timing.
  EXPECT_DOUBLE_EQ(sim.makespan, 21.0);

  CostModel uniform;
  uniform.boundaryBytes.assign(7, 10.0);
  SimResult bp = run(bitpipeD4N4(), uniform);
  // 48 of BitPipe's 56 hand-offs cross a link; the V bottom is local.
  std::vector<double> bpSent = {80, 160, 160, 80};
  for (int r = 0; r < 4; ++r)
    EXPECT_DOUBLE_EQ(bp.ranks[r].bytesSent, bpSent[r]) << "rank " << r;
  EXPECT_DOUBLE_EQ(bp.totalBytesSent, 480.0);
}

TEST(Simulator, PointToPointTimeDelaysTheConsumer) {
  CostModel cost;
  cost.boundaryBytes = {2};
  cost.p2pLatency = 0.5;
  cost.p2pBandwidth = 4; // 0.5 + 2/4 = 1 per transfer.
  SimResult sim = run(oneFOneB(2, 1), cost);
  // F(1) + send(1) + F(1) + B(2) + send(1) + B(2).
  EXPECT_DOUBLE_EQ(sim.makespan, 8.0);
  const TimelineEvent *send = find(sim, Lane::P2P, 0, "SEND_F0.s0->P1");
  const TimelineEvent *recv = find(sim, Lane::P2P, 1, "RECV_F0.s0<-P0");
  ASSERT_TRUE(send && recv);
  EXPECT_DOUBLE_EQ(send->start, 1.0);
  EXPECT_DOUBLE_EQ(send->end, 2.0);
  EXPECT_DOUBLE_EQ(recv->start, 1.0);
  EXPECT_DOUBLE_EQ(recv->end, 2.0);
  EXPECT_DOUBLE_EQ(send->bytes, 2.0);
  const TimelineEvent *f = find(sim, Lane::Compute, 1, "F0.s1");
  ASSERT_TRUE(f);
  EXPECT_DOUBLE_EQ(f->start, 2.0);
}

TEST(Simulator, SendsOverlapComputeAndShareTheirChannel) {
  CostModel cost;
  cost.p2pLatency = 1.5;
  SimResult sim = run(oneFOneB(2, 2), cost);
  // Rank 0 does not wait for its own send of F0.s0's output.
  const TimelineEvent *f1 = find(sim, Lane::Compute, 0, "F1.s0");
  ASSERT_TRUE(f1);
  EXPECT_DOUBLE_EQ(f1->start, 1.0);
  // The second send queues behind the first on the 0->1 channel.
  const TimelineEvent *s0 = find(sim, Lane::P2P, 0, "SEND_F0.s0->P1");
  const TimelineEvent *s1 = find(sim, Lane::P2P, 0, "SEND_F1.s0->P1");
  ASSERT_TRUE(s0 && s1);
  EXPECT_DOUBLE_EQ(s0->end, 2.5);
  EXPECT_DOUBLE_EQ(s1->start, 2.5);
  EXPECT_DOUBLE_EQ(s1->end, 4.0);
  // Rank 1: F0.s1 [2.5,3.5], B0.s1 [3.5,5.5], F1.s1 [5.5,6.5],
  // B1.s1 [6.5,8.5]; gradients reach rank 0 at 7 and 10; B1.s0 ends at 12.
  EXPECT_DOUBLE_EQ(sim.makespan, 12.0);
}

TEST(Simulator, AllReduceHiddenBehindTheLastBackward) {
  CostModel cost;
  cost.gradientBytes = {2, 2};
  cost.allReduceBandwidth = 1; // 2(n-1)/n * 2 = 2 bytes per rank: 2 units.
  SimResult sim = run(dataParallelWithAllReduce(), cost);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport();
  // Compute ends at 6 on both ranks. AR(1) runs [4,6] under B0.s0; AR(0)
  // runs [6,8] with nothing left to hide behind.
  const TimelineEvent *ar1 = find(sim, Lane::AllReduce, 0, "AR(1)");
  const TimelineEvent *ar0 = find(sim, Lane::AllReduce, 1, "AR(0)");
  ASSERT_TRUE(ar1 && ar0);
  EXPECT_DOUBLE_EQ(ar1->start, 4.0);
  EXPECT_DOUBLE_EQ(ar1->end, 6.0);
  EXPECT_DOUBLE_EQ(ar0->start, 6.0);
  EXPECT_DOUBLE_EQ(ar0->end, 8.0);
  EXPECT_DOUBLE_EQ(sim.makespan, 8.0);
  EXPECT_DOUBLE_EQ(sim.allReduceTime, 4.0);
  EXPECT_DOUBLE_EQ(sim.allReduceOverlap, 0.5);
  for (const RankStats &st : sim.ranks) {
    EXPECT_DOUBLE_EQ(st.allReduceTime, 4.0);
    EXPECT_DOUBLE_EQ(st.allReduceHidden, 2.0);
    EXPECT_DOUBLE_EQ(st.allReduceBytesSent, 4.0);
    EXPECT_DOUBLE_EQ(st.computeEnd, 6.0);
  }
  // The exposed tail counts as idle: 2 of 8 on each rank.
  EXPECT_DOUBLE_EQ(sim.bubbleRatio, 0.25);

  // With latency the second all-reduce waits for the channel: AR(1) runs
  // [4,6.5], AR(0) [6.5,9]; hidden 2 of 5.
  cost.allReduceLatency = 0.5;
  SimResult slow = run(dataParallelWithAllReduce(), cost);
  EXPECT_DOUBLE_EQ(slow.makespan, 9.0);
  EXPECT_DOUBLE_EQ(slow.allReduceOverlap, 0.4);
  const TimelineEvent *late = find(slow, Lane::AllReduce, 0, "AR(0)");
  ASSERT_TRUE(late);
  EXPECT_DOUBLE_EQ(late->start, 6.5);
}

TEST(Simulator, BitPipeEagerAllReduceOverlapsTheCooldown) {
  CostModel cost;
  cost.gradientBytes.assign(8, 1.0);
  cost.allReduceBandwidth = 1; // Each AR of two stages: 2 units.
  SimResult sim = run(bitpipeD4N4(), cost);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport();
  // Each collective starts when the later of its two members reaches it.
  for (int r : {0, 3}) {
    const TimelineEvent *ar = find(sim, Lane::AllReduce, r, "AR(4,7)");
    const TimelineEvent *b0 = find(sim, Lane::Compute, 0, "B0.s0");
    const TimelineEvent *b2 = find(sim, Lane::Compute, 3, "B2.s0");
    ASSERT_TRUE(ar && b0 && b2);
    EXPECT_DOUBLE_EQ(ar->start, std::max(b0->end, b2->end));
    EXPECT_DOUBLE_EQ(ar->end - ar->start, 2.0);
  }
  // The outer ranks issue AR(4,7) before their last backward B1.s0 /
  // B3.s0, and it ends before that backward does: its 2 units are hidden on
  // ranks 0 and 3. Every other all-reduce (AR(0,3) there, both on ranks 1
  // and 2) is issued after the rank's last compute: exposed. Hidden: 2 + 2
  // of 4 ranks x 2 all-reduces x 2 units.
  for (int r : {0, 3}) {
    EXPECT_DOUBLE_EQ(sim.ranks[r].allReduceHidden, 2.0) << "rank " << r;
    EXPECT_DOUBLE_EQ(sim.ranks[r].computeEnd, 28.0) << "rank " << r;
  }
  for (int r : {1, 2})
    EXPECT_DOUBLE_EQ(sim.ranks[r].allReduceHidden, 0.0) << "rank " << r;
  EXPECT_DOUBLE_EQ(sim.allReduceOverlap, 4.0 / 16.0);
  // All-reduces never delay compute, so compute still ends at the 28 slots
  // of the unit-cost order; the last all-reduces end 2 later.
  EXPECT_DOUBLE_EQ(sim.makespan, 30.0);
  EXPECT_DOUBLE_EQ(sim.allReduceTime, 8.0); // 4 collectives x 2 units.
}

TEST(Simulator, WithoutATimelineTheResultsAreTheSame) {
  // bitpipe-verify asks only whether programs run: it skips the timeline,
  // and must get the same makespan, statistics and deadlock report.
  CostModel cost;
  cost.gradientBytes.assign(8, 1.0);
  cost.allReduceBandwidth = 1;
  cost.allReducePostTime = 0.25;
  cost.p2pLatency = 0.5;
  SimulateOptions noTimeline;
  noTimeline.recordTimeline = false;
  for (const Schedule &s : {bitpipeD4N4(), crossedReceives()}) {
    Result<SimResult> full = simulate(s, cost);
    Result<SimResult> bare = simulate(s, cost, noTimeline);
    ASSERT_TRUE(full && bare) << full.error << bare.error;
    EXPECT_TRUE(bare.value->timeline.empty());
    EXPECT_EQ(full.value->timeline.empty(), s.name == "crossed");
    EXPECT_DOUBLE_EQ(bare.value->makespan, full.value->makespan);
    EXPECT_DOUBLE_EQ(bare.value->bubbleRatio, full.value->bubbleRatio);
    EXPECT_DOUBLE_EQ(bare.value->allReduceOverlap,
                     full.value->allReduceOverlap);
    ASSERT_EQ(bare.value->ranks.size(), full.value->ranks.size());
    for (size_t r = 0; r < full.value->ranks.size(); ++r) {
      EXPECT_DOUBLE_EQ(bare.value->ranks[r].idle, full.value->ranks[r].idle);
      EXPECT_DOUBLE_EQ(bare.value->ranks[r].allReduceHidden,
                       full.value->ranks[r].allReduceHidden);
    }
    EXPECT_EQ(bare.value->deadlockReport(), full.value->deadlockReport());
  }
}

TEST(Simulator, AStragglerHoldsUpAScheduleWithoutSlack) {
  // Rank 1 computes 1.5x as long as its stages' times say
  // (CostModel::rankComputeScale); rank 0 is unchanged. BitPipe at D=2
  // leaves no slack: rank 0 waits for it, so the step grows by about as
  // much as rank 1's work did. 1F1B's bubble absorbs part of it.
  CostModel straggler;
  straggler.rankComputeScale = {1.0, 1.5};
  ScheduleOptions bitpipe;
  bitpipe.schedule = "bitpipe";
  bitpipe.devices = 2;
  bitpipe.microbatches = 8;
  Result<Schedule> bitpipeD2 = generateSchedule(bitpipe);
  ASSERT_TRUE(bitpipeD2) << bitpipeD2.error;
  for (const Schedule &s : {*bitpipeD2.value, oneFOneB(2, 8)}) {
    SCOPED_TRACE(s.name);
    SimResult even = run(s), slow = run(s, straggler);
    ASSERT_EQ(slow.ranks.size(), 2u);
    EXPECT_DOUBLE_EQ(slow.ranks[0].busy, even.ranks[0].busy);
    EXPECT_DOUBLE_EQ(slow.ranks[1].busy, 1.5 * even.ranks[1].busy);
    for (const TimelineEvent &e : slow.timeline)
      if (e.lane == Lane::Compute && e.rank == 1) {
        EXPECT_DOUBLE_EQ(e.end - e.start,
                         1.5 * (e.action.kind == ActionKind::Forward ? 1 : 2));
      }
    EXPECT_GT(slow.makespan, even.makespan);
    EXPECT_LE(slow.makespan, even.makespan + 0.5 * even.ranks[1].busy);
  }
  // Ranks past the list run at their stages' times.
  CostModel shortList;
  shortList.rankComputeScale = {1.0};
  EXPECT_DOUBLE_EQ(run(oneFOneB(2, 8), shortList).makespan,
                   run(oneFOneB(2, 8)).makespan);
}

TEST(Simulator, AllReduceAfterComputeRunsInTheWaits) {
  // The same run as MPI without a progress thread runs it: AR(4,7), which
  // the outer ranks reach before their last backward, moves only once both
  // members have ended their programs, and their AR(0,3) after it.
  CostModel cost;
  cost.gradientBytes.assign(8, 1.0);
  cost.allReduceBandwidth = 1;
  cost.allReduceAfterCompute = true;
  SimResult sim = run(bitpipeD4N4(), cost);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport();
  for (int r : {0, 3}) {
    const TimelineEvent *ar = find(sim, Lane::AllReduce, r, "AR(4,7)");
    ASSERT_TRUE(ar);
    EXPECT_DOUBLE_EQ(ar->start, 28.0);
    EXPECT_DOUBLE_EQ(sim.ranks[r].allReduceHidden, 0.0) << "rank " << r;
  }
  EXPECT_DOUBLE_EQ(sim.allReduceOverlap, 0.0);
  // Compute ends at 28 as before; two all-reduces of 2 units each follow.
  EXPECT_DOUBLE_EQ(sim.makespan, 32.0);
}

TEST(Simulator, DeadlockIsReportedNotHung) {
  SimResult sim = run(crossedReceives());
  ASSERT_TRUE(sim.deadlocked);
  ASSERT_EQ(sim.blocked.size(), 2u);
  EXPECT_EQ(sim.blocked[0].rank, 0);
  EXPECT_EQ(sim.blocked[0].actionIndex, 0);
  EXPECT_EQ(sim.blocked[0].reason,
            "rank 0: F1.s1 (forward of stage 1 for micro-batch 1) waits for "
            "the activation of F1.s0 from rank 1, which has not run (rank 1 "
            "is itself blocked at F0.s1)");
  EXPECT_EQ(sim.blocked[1].rank, 1);
  EXPECT_NE(sim.blocked[1].reason.find("waits for the activation of F0.s0 "
                                       "from rank 0"),
            std::string::npos);
  std::string report = sim.deadlockReport();
  EXPECT_EQ(report.rfind("deadlock: no rank can make progress\n", 0), 0u);
  EXPECT_NE(report.find("rank 1: F0.s1"), std::string::npos) << report;
  // Nothing ran.
  EXPECT_DOUBLE_EQ(sim.makespan, 0.0);
}

TEST(Simulator, AllReduceWithoutPartnerIsADeadlock) {
  Schedule s = dataParallelWithAllReduce();
  s.ranks[1].pop_back(); // Rank 1 never all-reduces stage 0.
  SimResult sim = run(s);
  ASSERT_TRUE(sim.deadlocked);
  ASSERT_EQ(sim.blocked.size(), 1u);
  EXPECT_EQ(sim.blocked[0].rank, 0);
  EXPECT_EQ(sim.blocked[0].actionIndex, 5);
  EXPECT_EQ(sim.blocked[0].reason,
            "rank 0: AR(0) (all-reduce of stage 0) waits for its group "
            "{0,1}: rank 1 has no matching all-reduce");
}

TEST(Simulator, MissingSendInALoweredProgramIsADeadlock) {
  Schedule s = oneFOneB(2, 1);
  Result<CommProgram> p = lowerComms(s);
  ASSERT_TRUE(p);
  std::vector<CommAction> &r0 = p.value->ranks[0];
  ASSERT_EQ(r0[1].kind, CommKind::SendF);
  r0.erase(r0.begin() + 1);
  Result<SimResult> sim = simulate(s, *p.value, CostModel());
  ASSERT_TRUE(sim) << sim.error;
  ASSERT_TRUE(sim.value->deadlocked);
  EXPECT_NE(sim.value->deadlockReport().find(
                "waits for the activation of F0.s0 from rank 0, which was "
                "never sent"),
            std::string::npos)
      << sim.value->deadlockReport();
}

TEST(Simulator, RefusesSchedulesItCannotRun) {
  Schedule foreign = oneFOneB(2, 1);
  foreign.ranks[0].push_back(Action::allReduce({1}));
  Result<SimResult> r = simulate(foreign, CostModel());
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, "rank 0: AR(1) all-reduces stage 1, which rank 0 does "
                     "not hold");

  // A replica on a device the schedule has no rank for.
  Schedule ghost = dataParallelWithAllReduce();
  ghost.placement.pipelines.push_back(Pipeline{{2, 2}});
  r = simulate(ghost, CostModel());
  EXPECT_FALSE(r);
  EXPECT_EQ(r.error, "pipeline 2 places stage 0 on device 2, but the "
                     "schedule has 2 ranks");

  Schedule missing = oneFOneB(2, 2);
  missing.ranks[0].erase(missing.ranks[0].begin()); // No F0.s0.
  r = simulate(missing, CostModel());
  EXPECT_FALSE(r);
  EXPECT_NE(r.error.find("needs the forward of stage 0 for micro-batch 0"),
            std::string::npos)
      << r.error;
}

TEST(Simulator, RingAllReduceCostGrowsWithTheGroup) {
  CostModel cost;
  cost.allReduceLatency = 0.25;
  cost.allReduceBandwidth = 2;
  EXPECT_DOUBLE_EQ(cost.allReduceTime(8, 1), 0.0); // Nothing to exchange.
  EXPECT_DOUBLE_EQ(cost.allReduceTime(8, 2), 0.25 + 8.0 / 2);
  EXPECT_DOUBLE_EQ(cost.allReduceTime(8, 4), 0.25 + 1.5 * 8 / 2);
  EXPECT_DOUBLE_EQ(CostModel::allReduceBytesPerRank(8, 4), 12.0);

  // Four data-parallel replicas of a one-stage model.
  Placement p;
  p.numDevices = 4;
  p.numStages = 1;
  for (int d = 0; d < 4; ++d)
    p.pipelines.push_back(Pipeline{{d}});
  Schedule s = emptySchedule("dp4", p, 4);
  s.microbatchPipeline = {0, 1, 2, 3};
  s.ranks = gridRanks("P0: F0.s0 B0.s0 AR(0)\nP1: F1.s0 B1.s0 AR(0)\n"
                      "P2: F2.s0 B2.s0 AR(0)\nP3: F3.s0 B3.s0 AR(0)\n");
  cost.gradientBytes = {8};
  cost.allReduceBandwidth = 1;
  SimResult sim = run(s, cost);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport();
  // 3 slots of compute, then 0.25 + 2*3/4*8 = 12.25, fully exposed.
  EXPECT_DOUBLE_EQ(sim.makespan, 15.25);
  EXPECT_DOUBLE_EQ(sim.allReduceTime, 12.25); // One collective.
  EXPECT_DOUBLE_EQ(sim.allReduceOverlap, 0.0);
  for (const RankStats &st : sim.ranks)
    EXPECT_DOUBLE_EQ(st.allReduceBytesSent, 12.0);
}
