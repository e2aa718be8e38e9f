//===- BitPipePeriodicTest.cpp - BitPipe's placement in one steady state --===//
//
// bitpipe-periodic (and its split form bitpipe-periodic-zb): a runnable
// order for every even D, its bubble falling with N as 1F1B's does, never
// above the reference order's peak of stashes, and measured against the
// exhaustive search (OptimalSchedule.h) where that search can run.
//
//===----------------------------------------------------------------------===//

#include "OptimalSchedule.h"
#include "TestUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace bitpipe::sched;
using bitpipe::sched::test::play;

namespace {

Schedule make(Result<Schedule> (*generate)(int, int), int D, int N) {
  Result<Schedule> s = generate(D, N);
  EXPECT_TRUE(s.ok()) << s.error;
  return s.ok() ? *s : Schedule{};
}

Schedule periodic(int D, int N) { return make(generateBitPipePeriodic, D, N); }

long makespan(const Schedule &s) { return play(s).makespan; }

/// 1F1B's makespan in the same slots: its stages are two of BitPipe's, so
/// F = 2, B = 4, and it runs N + D - 1 of them on its busiest rank.
long oneFOneBMakespan(int D, int N) { return 6L * (N + D - 1); }

/// Fails unless `s` runs under both transports' rules with every
/// replicated stage all-reduced.
void expectRunnable(const Schedule &s) {
  for (Transport t : {Transport::Nccl, Transport::Mpi}) {
    VerifyOptions options;
    options.requireAllReduce = true;
    options.transport = t;
    std::vector<Diagnostic> diags = verify(s, options);
    EXPECT_TRUE(diags.empty())
        << s.name << " D=" << s.numRanks() << " N=" << s.numMicrobatches << ": "
        << formatDiagnostics(diags);
  }
}

/// Fails unless no rank of `s` holds more stashes (F to B; F to W when
/// split) than the reference order's busiest rank, 2D from N = D on: the
/// memory a BitPipe job is sized for. (The reference's edge ranks hold
/// less, 3D/2 + 1 on ranks 0 and D-1; the periodic order's hold up to 2D
/// where 6 divides D.)
void expectWithinReferencePeak(const Schedule &s) {
  Schedule reference = make(generateBitPipe, s.numRanks(), s.numMicrobatches);
  int referencePeak = 0;
  for (const std::vector<Action> &rank : reference.ranks)
    referencePeak = std::max(referencePeak, peakStashes(rank, false));
  for (int r = 0; r < s.numRanks(); ++r)
    EXPECT_LE(peakStashes(s.ranks[r], s.splitBackward), referencePeak)
        << s.name << " D=" << s.numRanks() << " N=" << s.numMicrobatches
        << " rank " << r;
}

} // namespace

TEST(BitPipePeriodic, GoldenD4N4AllRanks) {
  // Pair 0 is micro-batches 0 (down) and 2 (up), pair 1 is 1 and 3; rank 0
  // and rank 3 run the same steps at the same times, mirrored.
  const char *golden =
      "P0: F0.s0 F2.s3 F1.s0 F2.s4 F3.s3 F0.s7 B0.s7 F3.s4 B2.s4 B2.s3 F1.s7 "
      "B1.s7 B0.s0 B3.s4 AR(4,7) B3.s3 B1.s0 AR(0,3)\n"
      "P1: F0.s1 F2.s2 F1.s1 F3.s2 F2.s5 F0.s6 B0.s6 B2.s5 F3.s5 F1.s6 B2.s2 "
      "B0.s1 B1.s6 B3.s5 AR(5,6) B3.s2 B1.s1 AR(1,2)\n"
      "P2: F2.s1 F0.s2 F3.s1 F1.s2 F0.s5 F2.s6 B2.s6 B0.s5 F1.s5 F3.s6 B0.s2 "
      "B2.s1 B3.s6 B1.s5 AR(5,6) B1.s2 B3.s1 AR(1,2)\n"
      "P3: F2.s0 F0.s3 F3.s0 F0.s4 F1.s3 F2.s7 B2.s7 F1.s4 B0.s4 B0.s3 F3.s7 "
      "B3.s7 B2.s0 B1.s4 AR(4,7) B1.s3 B3.s0 AR(0,3)\n";
  EXPECT_EQ(formatGrid(periodic(4, 4)), golden);
}

TEST(BitPipePeriodic, RunnableWithinTheReferencePeakForEveryEvenDUpTo64) {
  // Enough pairs that every two streams of a channel meet in the steady
  // state (a pair's steps span about 8D slots, 2D/3 periods), plus an odd
  // N whose last pair has no up micro-batch.
  for (int D = 2; D <= 64; D += 2)
    for (int N : {2 * D, 2 * D + 1}) {
      Schedule s = periodic(D, N);
      expectRunnable(s);
      expectWithinReferencePeak(s);
    }
}

TEST(BitPipePeriodic, EachPairAddsExactlyItsWork) {
  // Every rank does 12 slots of work per (down, up) pair. In one steady
  // state a further pair adds just that to the step: the fill and the drain
  // are paid once, so the bubble falls as 1/N, as 1F1B's does. The
  // reference order adds a unit's junction per D micro-batches instead.
  for (int D : {4, 6, 8, 10, 12, 16, 32})
    for (int N = 2 * D; N <= 6 * D; N += 2)
      EXPECT_EQ(makespan(periodic(D, N + 2)) - makespan(periodic(D, N)), 12)
          << "D=" << D << " N=" << N;
  EXPECT_EQ(makespan(make(generateBitPipe, 8, 16)) -
                makespan(make(generateBitPipe, 8, 8)),
            54); // 48 slots of work and a 6-slot junction.
}

TEST(BitPipePeriodic, BubbleNoHigherThan1F1BAtEightMicrobatchesPerDevice) {
  // D = 8, N = 64 with F = 1, B = 2: 420 slots against 1F1B's 426 and the
  // reference's 438 (docs/bitpipe-order.md, "The periodic order").
  EXPECT_EQ(makespan(periodic(8, 64)), 420);
  EXPECT_EQ(makespan(make(generateBitPipe, 8, 64)), 438);
  for (int D = 4; D <= 32; D += 2) {
    const int N = 8 * D;
    long own = makespan(periodic(D, N));
    EXPECT_LE(own, oneFOneBMakespan(D, N)) << "D=" << D;
    // Below it where 6 does not divide D; equal where it does, the one
    // case that needs a wait in the backward chain.
    if (D % 6 != 0)
      EXPECT_LT(own, oneFOneBMakespan(D, N)) << "D=" << D;
  }
}

TEST(BitPipePeriodic, SimulatorAgreesWithThePlayer) {
  for (auto [D, N] : {std::pair{4, 16}, {6, 13}, {8, 64}}) {
    Schedule s = periodic(D, N);
    Result<SimResult> sim = simulate(s, CostModel());
    ASSERT_TRUE(sim.ok()) << sim.error;
    EXPECT_EQ(sim.value->makespan, makespan(s)) << "D=" << D << " N=" << N;
  }
}

TEST(BitPipePeriodic, AgainstTheExhaustiveSearch) {
  // The best order of any kind (every per-rank order with channels in
  // order, no cap on stashes) against the periodic one. At D = 2 the
  // periodic order has no bubble: it is optimal. At D = 4 the optimum also
  // grows by exactly 12 slots a pair (6N + 3), so the periodic order (6N +
  // 14) keeps a constant gap, the price of its fixed pattern's fill and
  // drain; the reference's grows by a junction per unit (54 at N = 8, 80
  // at N = 12).
  auto search = [](const Schedule &shape) {
    test::SearchProblem p;
    p.numRanks = shape.numRanks();
    for (const Pipeline &pipeline : shape.placement.pipelines)
      p.stageRank.push_back(pipeline.stageDevice);
    p.microbatchPipeline = shape.microbatchPipeline;
    p.channelsInOrder = true;
    return test::OptimalScheduleSearch(p);
  };
  for (int N = 2; N <= 8; N += 2) {
    Schedule s = periodic(2, N);
    EXPECT_EQ(search(s).makespanOf(s.ranks), 6L * N);
    EXPECT_EQ(search(s).solve().makespan, 6L * N);
  }
  for (int N : {8, 10, 12}) {
    Schedule s = periodic(4, N);
    EXPECT_EQ(search(s).makespanOf(s.ranks), 6L * N + 14) << "N=" << N;
    EXPECT_EQ(search(s).solve().makespan, 6L * N + 3) << "N=" << N;
  }
}

TEST(BitPipePeriodic, ZeroBubbleFormRunnableWithinTheReferencePeak) {
  for (int D = 2; D <= 16; D += 2)
    for (int N : {D, 4 * D + 1}) {
      Schedule s = make(generateBitPipePeriodicZeroBubble, D, N);
      EXPECT_TRUE(s.splitBackward);
      expectRunnable(s);
      expectWithinReferencePeak(s);
    }
}

TEST(BitPipePeriodic, ZeroBubbleFormKeepsOneSteadyState) {
  // Split, a pair brings each rank four F, four B and four W (the cost
  // model's 1, 2 and 1 slots), and each further pair adds just those.
  const CostModel cost;
  const double pairWork =
      4 * (cost.unitForward + cost.unitBackward + cost.unitWeightGrad);
  for (int D : {4, 8})
    for (int N = 4 * D; N <= 6 * D; N += 2) {
      Schedule a = make(generateBitPipePeriodicZeroBubble, D, N);
      Schedule b = make(generateBitPipePeriodicZeroBubble, D, N + 2);
      Result<SimResult> x = simulate(a, CostModel());
      Result<SimResult> y = simulate(b, CostModel());
      ASSERT_TRUE(x.ok() && y.ok());
      EXPECT_EQ(y.value->makespan - x.value->makespan, pairWork)
          << "D=" << D << " N=" << N;
    }
}

TEST(BitPipePeriodic, RejectsOddDevices) {
  Result<Schedule> odd = generateBitPipePeriodic(3, 6);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.error.find("even"), std::string::npos) << odd.error;
}
