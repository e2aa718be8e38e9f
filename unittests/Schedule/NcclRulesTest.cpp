//===- NcclRulesTest.cpp - Transfers under NCCL's rules ---------------------===//
//
// CostModel::transport = Nccl: each batch of a lowered program is one NCCL
// group, issued at its last transfer and launched once the group before it
// on its stream has completed; a transfer moves once both ends' groups are
// launched; a compute step waits for the whole group of the receive it
// reads (docs/nccl-transfers.md). With one stream per channel (the
// compiler's choice) every schedule runs at every size; with one stream
// per rank (streams=shared) some deadlock, and the report
// names the cycle.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"

#include "TestSchedules.h"

#include <gtest/gtest.h>

#include <set>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

namespace {

/// F = 1, B = 2, every transfer 0.5.
CostModel slowLinks(Transport transport) {
  CostModel cost;
  cost.p2pLatency = 0.5;
  cost.transport = transport;
  return cost;
}

CommProgram lowered(const Schedule &s, TransferStreams streams) {
  Result<CommProgram> p = lowerComms(s, streams);
  EXPECT_TRUE(p) << p.error;
  return p ? *p.value : CommProgram();
}

SimResult run(const Schedule &s, const CostModel &cost,
              TransferStreams streams = TransferStreams::Channel) {
  Result<SimResult> r = simulate(s, lowered(s, streams), cost);
  EXPECT_TRUE(r) << r.error;
  return r ? *r.value : SimResult();
}

/// `program` run with unit costs under NCCL's rules.
Result<SimResult> simulateStrictly(const Schedule &s,
                                   const CommProgram &program) {
  CostModel strict;
  strict.transport = Transport::Nccl;
  return simulate(s, program, strict);
}

double computeStart(const SimResult &sim, int rank, const Action &a) {
  for (const TimelineEvent &e : sim.timeline)
    if (e.lane == Lane::Compute && e.rank == rank && e.action == a)
      return e.start;
  ADD_FAILURE() << "no " << a.str() << " on rank " << rank;
  return -1;
}

double transferStart(const SimResult &sim, int src, const Action &producer) {
  for (const TimelineEvent &e : sim.timeline)
    if (e.lane == Lane::P2P && e.rank == src && e.action == producer &&
        (e.kind == CommKind::SendF || e.kind == CommKind::SendB))
      return e.start;
  ADD_FAILURE() << "no send of " << producer.str() << " on rank " << src;
  return -1;
}

Result<Schedule> registered(const std::string &name, int devices,
                            int microbatches) {
  ScheduleOptions options;
  options.schedule = name;
  options.devices = devices;
  options.microbatches = microbatches;
  Result<ScheduleOptions> request = validate(options);
  if (!request) {
    Result<Schedule> none;
    none.error = request.error;
    return none;
  }
  return generateSchedule(*request);
}

} // namespace

TEST(NcclRules, BatchesFollowTheStreams) {
  // 1F1B, D = 2, N = 2. Rank 1: RECV_F0 | F0.s1 B0.s1 | SEND_B0 RECV_F1 |
  // F1.s1 B1.s1 | SEND_B1. One stream per channel: every hand-off its own
  // batch; one per rank: the transfers between two compute steps.
  Schedule s = oneFOneB(2, 2);
  CommProgram channel = lowered(s, TransferStreams::Channel);
  CommProgram shared = lowered(s, TransferStreams::Shared);
  EXPECT_EQ(channel.streams, TransferStreams::Channel);
  EXPECT_EQ(shared.streams, TransferStreams::Shared);
  std::vector<int> channelBatches, sharedBatches;
  for (const CommAction &c : channel.ranks[1])
    if (c.isSendOrRecv())
      channelBatches.push_back(c.batch);
  for (const CommAction &c : shared.ranks[1])
    if (c.isSendOrRecv())
      sharedBatches.push_back(c.batch);
  EXPECT_EQ(channelBatches, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(sharedBatches, (std::vector<int>{0, 1, 1, 2}));
  for (const CommAction &c : channel.ranks[1]) {
    if (!c.isSendOrRecv()) {
      EXPECT_EQ(c.batch, -1) << c.str();
    }
  }
}

TEST(NcclRules, ASendWaitsUntilItsReceiveIsPosted) {
  // Rank 1 posts the receive of F1's activation only after B0.s1, at
  // 1.5 + 1 + 2 = 4.5.
  Schedule s = oneFOneB(2, 2);
  SimResult buffered = run(s, slowLinks(Transport::Mpi));
  SimResult nccl = run(s, slowLinks(Transport::Nccl));
  ASSERT_FALSE(nccl.deadlocked) << nccl.deadlockReport();
  // Buffered: rank 0 sends F1's activation when F1.s0 ends, at 2; it waits
  // at rank 1 from 2.5. Makespan: B1.s0 ends at 10.
  EXPECT_DOUBLE_EQ(transferStart(buffered, 0, Action::forward(1, 0)), 2.0);
  EXPECT_DOUBLE_EQ(computeStart(buffered, 1, Action::forward(1, 1)), 4.5);
  EXPECT_DOUBLE_EQ(buffered.makespan, 10.0);
  // NCCL: the send waits for the receive, posted at 4.5, and F1.s1 starts
  // when it arrives, at 5. B1.s1 ends at 8; its gradient arrives at 8.5
  // and B1.s0 ends at 10.5.
  EXPECT_DOUBLE_EQ(transferStart(nccl, 0, Action::forward(1, 0)), 4.5);
  EXPECT_DOUBLE_EQ(computeStart(nccl, 1, Action::forward(1, 1)), 5.0);
  EXPECT_DOUBLE_EQ(computeStart(nccl, 0, Action::backward(1, 0)), 8.5);
  EXPECT_DOUBLE_EQ(nccl.makespan, 10.5);
  EXPECT_DOUBLE_EQ(nccl.totalBytesSent, buffered.totalBytesSent);
  // The same on one stream per rank: no batch of this order waits behind
  // another.
  SimResult shared = run(s, slowLinks(Transport::Nccl), TransferStreams::Shared);
  EXPECT_DOUBLE_EQ(shared.makespan, 10.5);
}

TEST(NcclRules, OnOneStreamPerRankBatchesMatchAcrossAChain) {
  // Three ranks, GPipe's order on the first two, 1F1B's on the last:
  //   P0: F0.s0 F1.s0 B0.s0 B1.s0
  //   P1: F0.s1 F1.s1 B0.s1 B1.s1
  //   P2: F0.s2 B0.s2 F1.s2 B1.s2
  // Rank 1's batches: (RECV_F0) (SEND_F0 RECV_F1) (SEND_F1 RECV_B0) ...
  // With every transfer 0.5: F0.s0 [0,1]; F0 to rank 1 [1,1.5]; F0.s1
  // [1.5,2.5]; rank 1's second batch launches at 2.5: F0 to rank 2
  // [2.5,3], and F1 from rank 0, whose batch (SEND_F1 RECV_B0) waited
  // since 2, [2.5,3]; F1.s1 [3,4]; rank 2: F0.s2 [3,4], B0.s2 [4,6], then
  // its batch (SEND_B0 RECV_F1) at 6. Rank 1's third batch launches at 4,
  // but F1 to rank 2 waits for that receive: [6,6.5], as does B0's
  // gradient [6,6.5]. F1.s2 [6.5,7.5].
  Schedule s = emptySchedule("hand", loop(3), 2);
  s.ranks = gridRanks("P0: F0.s0 F1.s0 B0.s0 B1.s0\n"
                      "P1: F0.s1 F1.s1 B0.s1 B1.s1\n"
                      "P2: F0.s2 B0.s2 F1.s2 B1.s2\n");
  SimResult sim =
      run(s, slowLinks(Transport::Nccl), TransferStreams::Shared);
  ASSERT_FALSE(sim.deadlocked) << sim.deadlockReport();
  EXPECT_DOUBLE_EQ(transferStart(sim, 1, Action::forward(0, 1)), 2.5);
  EXPECT_DOUBLE_EQ(transferStart(sim, 0, Action::forward(1, 0)), 2.5);
  EXPECT_DOUBLE_EQ(transferStart(sim, 1, Action::forward(1, 1)), 6.0);
  EXPECT_DOUBLE_EQ(computeStart(sim, 2, Action::forward(1, 2)), 6.5);
  // Rank 0's B0.s0 reads a receive that shares its batch with the send of
  // F1's activation: it waits for the whole batch. The gradient leaves
  // rank 1 at 8.5 (B0.s1 [6.5,8.5]) and arrives at 9.
  EXPECT_DOUBLE_EQ(computeStart(sim, 0, Action::backward(0, 0)), 9.0);
  // Buffered, F1's activation leaves rank 1 when F1.s1 ends and waits
  // there: F1.s2 starts when B0.s2 ends, at 6.
  SimResult buffered = run(s, slowLinks(Transport::Mpi));
  EXPECT_DOUBLE_EQ(computeStart(buffered, 2, Action::forward(1, 2)), 6.0);
}

TEST(NcclRules, ChannelStreamsNeverWaitLongerThanOneStreamPerRank) {
  // A stream per channel only removes waits: a batch does not queue
  // behind another channel's, and a receive's event covers no send. Where
  // one stream per rank runs at all, it is never faster.
  for (const ScheduleInfo &info : schedules()) {
    for (auto [d, n] : {std::pair{2, 4}, std::pair{4, 8}}) {
      Result<Schedule> s = registered(info.name, d, n);
      ASSERT_TRUE(s) << info.name << ": " << s.error;
      CostModel cost = slowLinks(Transport::Nccl);
      SimResult shared = run(*s, cost, TransferStreams::Shared);
      SimResult channel = run(*s, cost, TransferStreams::Channel);
      ASSERT_FALSE(channel.deadlocked) << info.name;
      if (!shared.deadlocked) {
        EXPECT_LE(channel.makespan, shared.makespan + 1e-9)
            << info.name << " D=" << d << " N=" << n;
      }
    }
  }
}

TEST(NcclRules, EveryScheduleRunsWithOneStreamPerChannel) {
  // Every registered schedule, D in {2, 4, 6, 8, 16}, N
  // in {D, 2D, 4D} and one N that is not a multiple of D, as lowerComms
  // lowers it (one stream per channel): no deadlock under NCCL's rules,
  // the verifier (which checks under them) finds nothing, and waiting for
  // the receiver only ever delays. Data parallelism does not change a
  // pipeline copy's programs, and the split backward is the zero-bubble
  // schedules' own.
  int ran = 0;
  for (const ScheduleInfo &info : schedules()) {
    for (int d : {2, 4, 6, 8, 16}) {
      for (int n : {d, 2 * d, 4 * d, d + 1}) {
        Result<Schedule> s = registered(info.name, d, n);
        if (!s)
          continue; // no schedule of this shape (the registry says why)
        ++ran;
        CostModel nccl;
        nccl.p2pLatency = 0.1;
        nccl.transport = Transport::Nccl;
        CostModel mpi = nccl;
        mpi.transport = Transport::Mpi;
        std::string what = std::string(info.name) + " D=" + std::to_string(d) +
                           " N=" + std::to_string(n);
        SimResult strict = run(*s, nccl), buffered = run(*s, mpi);
        ASSERT_FALSE(strict.deadlocked) << what << "\n"
                                        << strict.deadlockReport();
        EXPECT_GE(strict.makespan, buffered.makespan - 1e-9) << what;
        std::vector<Diagnostic> problems = verify(*s);
        EXPECT_TRUE(problems.empty())
            << what << "\n"
            << formatDiagnostics(problems);
      }
    }
  }
  // Every schedule has shapes at every D here (N = 2D at least).
  EXPECT_GE(ran, static_cast<int>(schedules().size()) * 5 * 3);
}

TEST(NcclRules, OnOneStreamPerRankSomeSchedulesDeadlock) {
  // Under the strict reading, the lowered programs of some schedules wait
  // in a cycle when all of a rank's transfers share one stream: each
  // rank's next batch needs a receive its neighbour posts only after a
  // batch that waits in turn. NCCL's buffering of messages under
  // NCCL_BUFFSIZE is what such programs would rely on. Pinned here so that
  // a change of either side is seen; docs/nccl-transfers.md lists them.
  const std::set<std::string> cycle = {"interleaved-1f1b", "chimera",
                                       "bitpipe-zb", "bitpipe-periodic-zb"};
  for (const ScheduleInfo &info : schedules()) {
    Result<Schedule> s = registered(info.name, 4, 8);
    ASSERT_TRUE(s) << info.name << ": " << s.error;
    CostModel buffered;
    buffered.p2pLatency = 0.1;
    CostModel strict = buffered;
    strict.transport = Transport::Nccl;
    SimResult a = run(*s, buffered, TransferStreams::Shared);
    SimResult b = run(*s, strict, TransferStreams::Shared);
    ASSERT_FALSE(a.deadlocked) << info.name;
    EXPECT_EQ(b.deadlocked, cycle.count(info.name) == 1)
        << info.name << "\n"
        << b.deadlockReport();
    if (b.deadlocked) {
      // The report names a cycle, and the cycle closes: every wait is on
      // a rank or batch that the next line is about.
      ASSERT_FALSE(b.cycle.empty()) << info.name;
      EXPECT_NE(b.deadlockReport().find("a cycle of"), std::string::npos);
    } else {
      EXPECT_GE(b.makespan, a.makespan - 1e-9) << info.name;
    }
    // The verifier refuses the same programs, with the cycle's steps
    // marked in the grid.
    Result<CommProgram> program = lowerComms(*s, TransferStreams::Shared);
    ASSERT_TRUE(program) << program.error;
    std::vector<Diagnostic> problems = verify(*s, *program);
    bool deadlock = false;
    for (const Diagnostic &d : problems)
      deadlock |= d.kind == DiagKind::Deadlock;
    EXPECT_EQ(deadlock, cycle.count(info.name) == 1) << info.name;
    // MPI's rules accept them.
    VerifyOptions mpi;
    mpi.transport = Transport::Mpi;
    EXPECT_TRUE(verify(*s, *program, mpi).empty()) << info.name;
  }
}

TEST(NcclRules, ACycleNamesEachWaitInTurn) {
  // Chimera, D = 2, N = 2, on one stream per rank: each rank sends the
  // gradient of its stage 1 to the other and then receives the other's.
  // Both sends are launched; each needs a receive that waits on its
  // rank's stream behind that rank's own send: two batches that wait on
  // each other, the classic crossed rendezvous.
  Result<Schedule> s = registered("chimera", 2, 2);
  ASSERT_TRUE(s) << s.error;
  Result<CommProgram> program = lowerComms(*s, TransferStreams::Shared);
  ASSERT_TRUE(program) << program.error;
  Result<SimResult> sim = simulateStrictly(*s, *program);
  ASSERT_TRUE(sim) << sim.error;
  ASSERT_TRUE(sim->deadlocked);
  ASSERT_EQ(sim->cycle.size(), 2u) << sim->deadlockReport();
  EXPECT_EQ(sim->cycle[0].rank, 0);
  EXPECT_EQ(sim->cycle[0].reason,
            "rank 0's batch 1 (SEND_B1.s1->P1) cannot complete: its send to "
            "rank 1 needs the matching receive in rank 1's batch 2 "
            "(RECV_B1.s1<-P0), which waits on its stream (rank 1's only "
            "one) for batch 1 (SEND_B0.s1->P0) to complete");
  EXPECT_EQ(sim->cycle[1].rank, 1);
  EXPECT_EQ(sim->cycle[1].reason,
            "rank 1's batch 1 (SEND_B0.s1->P0) cannot complete: its send to "
            "rank 0 needs the matching receive in rank 0's batch 2 "
            "(RECV_B0.s1<-P1), which waits on its stream (rank 0's only "
            "one) for batch 1 (SEND_B1.s1->P1) to complete");
  // The verifier marks the steps the cycle is about in the grid.
  std::vector<Diagnostic> problems = verify(*s, *program);
  ASSERT_EQ(problems.size(), 1u) << formatDiagnostics(problems);
  EXPECT_EQ(problems[0].kind, DiagKind::Deadlock);
  EXPECT_NE(problems[0].grid.find("P0: F0.s0 F1.s1 >>B1.s1<<"),
            std::string::npos)
      << problems[0].grid;
  // On one stream per channel the same order runs.
  Result<CommProgram> channel = lowerComms(*s, TransferStreams::Channel);
  ASSERT_TRUE(channel);
  Result<SimResult> fine = simulateStrictly(*s, *channel);
  ASSERT_TRUE(fine);
  EXPECT_FALSE(fine->deadlocked) << fine->deadlockReport();
}

TEST(NcclRules, ACycleIsToldFromABlockedRank) {
  // Interleaved 1F1B, D = 4, N = 8, on one stream per rank: a cycle
  // through all four ranks, each stuck at a forward whose receive shares
  // a batch with a send its neighbour cannot take yet.
  Result<Schedule> s = registered("interleaved-1f1b", 4, 8);
  ASSERT_TRUE(s) << s.error;
  Result<CommProgram> program = lowerComms(*s, TransferStreams::Shared);
  ASSERT_TRUE(program);
  Result<SimResult> sim = simulateStrictly(*s, *program);
  ASSERT_TRUE(sim);
  ASSERT_TRUE(sim->deadlocked);
  ASSERT_FALSE(sim->cycle.empty());
  EXPECT_EQ(sim->cycle.front().reason.rfind("rank ", 0), 0u);
  EXPECT_NE(sim->cycle.front().reason.find(" at step "), std::string::npos)
      << sim->cycle.front().reason;
  std::set<int> ranks;
  for (const BlockedRank &b : sim->cycle)
    ranks.insert(b.rank);
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3})) << sim->deadlockReport();
}

TEST(NcclRules, ABatchInterruptedByAStepIsRefused) {
  // Batches are contiguous: the runtime issues one at its last transfer.
  Schedule s = oneFOneB(2, 2);
  CommProgram p = lowered(s, TransferStreams::Shared);
  // Give rank 1's last send the batch of its first receive.
  int first = -1;
  for (CommAction &c : p.ranks[1])
    if (c.isSendOrRecv()) {
      if (first < 0)
        first = c.batch;
      else if (c.isSend())
        c.batch = first;
    }
  Result<SimResult> sim = simulateStrictly(s, p);
  ASSERT_FALSE(sim);
  EXPECT_NE(sim.error.find("interrupts"), std::string::npos) << sim.error;
}

TEST(NcclRules, AnAllReduceInsideABatchEndsItsGroup) {
  // bitpipe-insert-allreduce starts a sync step's all-reduces after its
  // sends, inside the batch they share with the next step's receives. The
  // runtime ends the open group at the collective and issues the batch's
  // further transfers as a group of their own; so does the simulator.
  Schedule s = emptySchedule("hand", loop(2), 2);
  s.ranks = gridRanks("P0: F0.s0 F1.s0 B0.s0 B1.s0\n"
                      "P1: F0.s1 B0.s1 AR(1) F1.s1 B1.s1\n");
  CommProgram p = lowered(s, TransferStreams::Shared);
  // Rank 1: RECV_F0 | F0.s1 B0.s1 | SEND_B0 | AR(1) | RECV_F1 | ...: give
  // the receive the send's batch, as the IR numbers them.
  int sendBatch = -1;
  for (CommAction &c : p.ranks[1]) {
    if (c.kind == CommKind::SendB && sendBatch < 0)
      sendBatch = c.batch;
    else if (c.kind == CommKind::RecvF && sendBatch >= 0)
      c.batch = sendBatch;
  }
  ASSERT_GE(sendBatch, 0);
  CostModel cost = slowLinks(Transport::Nccl);
  Result<SimResult> split = simulate(s, p, cost);
  ASSERT_TRUE(split) << split.error;
  ASSERT_FALSE(split->deadlocked) << split->deadlockReport();
  // The same as two batches.
  SimResult apart = run(s, cost, TransferStreams::Shared);
  EXPECT_DOUBLE_EQ(split->makespan, apart.makespan);
}

TEST(NcclRules, OnChannelStreamsABatchHoldsOneChannel) {
  Schedule s = oneFOneB(2, 2);
  CommProgram p = lowered(s, TransferStreams::Shared);
  p.streams = TransferStreams::Channel; // batches of two channels
  Result<SimResult> sim = simulateStrictly(s, p);
  ASSERT_FALSE(sim);
  EXPECT_NE(sim.error.find("one channel's"), std::string::npos) << sim.error;
}

TEST(NcclRules, AllReducesOfDifferentGroupsDoNotQueueUnderNccl) {
  // Rank 0 holds stage 0 of micro-batch 0's pipeline and stage 1 of micro-
  // batch 1's: it all-reduces stage 1 with rank 1 and stage 0 with rank 2.
  //   F0.s0 [0,1] F1.s1 [1,2] B1.s1 [2,4] AR(1) with rank 1 from 4;
  //   B0.s0 [4,6] AR(0) with rank 2 from 6; every collective takes 10.
  // MPI progresses a rank's collectives one after another: AR(0) [14,24].
  // NCCL runs each group on its own communicator and stream: [6,16].
  Placement p;
  p.kind = PlacementKind::Bidirectional;
  p.numDevices = 3;
  p.numStages = 2;
  p.pipelines = {Pipeline{{0, 1}}, Pipeline{{2, 0}}};
  Schedule s = emptySchedule("two-groups", p, 2);
  s.microbatchPipeline = {0, 1};
  s.ranks = gridRanks("P0: F0.s0 F1.s1 B1.s1 AR(1) B0.s0 AR(0)\n"
                      "P1: F0.s1 B0.s1 AR(1)\n"
                      "P2: F1.s0 B1.s0 AR(0)\n");
  CostModel cost;
  cost.gradientBytes = {1, 1};
  cost.allReduceLatency = 10;
  SimResult mpi = run(s, cost);
  ASSERT_FALSE(mpi.deadlocked) << mpi.deadlockReport();
  EXPECT_DOUBLE_EQ(mpi.makespan, 24);
  cost.transport = Transport::Nccl;
  SimResult nccl = run(s, cost);
  ASSERT_FALSE(nccl.deadlocked) << nccl.deadlockReport();
  EXPECT_DOUBLE_EQ(nccl.makespan, 16);
}
