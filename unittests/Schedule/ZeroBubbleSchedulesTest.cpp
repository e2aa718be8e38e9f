//===- ZeroBubbleSchedulesTest.cpp - bitpipe-zb and zbv -------------------===//
//
// The zero-bubble schedules of docs/zero-bubble.md, against the unit-cost
// player of TestUtil.h (F = B = W = 1 when the backward is split, B = 2
// when whole) and against BitPipe itself: bitpipe-zb keeps BitPipe's
// order, reaches the lower bound of its placement, and holds no more
// stashes than BitPipe; zbv stays within 1F1B's memory.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace bitpipe::sched;
using bitpipe::sched::test::peakInFlight;
using bitpipe::sched::test::play;

namespace {

Schedule make(const std::string &name, int D, int N) {
  Result<Schedule> s = generateSchedule({name, D, N});
  EXPECT_TRUE(s.ok()) << name << " D=" << D << " N=" << N << ": " << s.error;
  return s.ok() ? *s : Schedule{};
}

/// Peak of stashes held from F to W: the weight half reads the forward's
/// saved activations (docs/runtime-abi.md, bp_rt_weight_grad), so a split
/// backward frees them at W, not at B.
int peakUntilW(const std::vector<Action> &actions) {
  int live = 0, peak = 0;
  for (const Action &a : actions) {
    if (a.kind == ActionKind::Forward)
      peak = std::max(peak, ++live);
    else if (a.kind == ActionKind::WeightGrad)
      --live;
  }
  return peak;
}

/// The rank's list without W and AR: its F/B order.
std::vector<Action> forwardsAndBackwards(const std::vector<Action> &actions) {
  std::vector<Action> out;
  for (const Action &a : actions)
    if (a.kind == ActionKind::Forward || a.kind == ActionKind::Backward)
      out.push_back(a);
  return out;
}

/// The least makespan of any schedule on the bidirectional-V placement
/// under F = B = W = 1: every rank computes 2N chunks x (F + B + W) = 6N
/// slots, and the two middle ranks (fromEdge = D/2 - 1) hold no first
/// stage, so their first input arrives D/2 - 1 slots after the start.
long bidirectionalVBound(int D, int N) { return 6L * N + D / 2 - 1; }

} // namespace

TEST(ZeroBubbleSchedules, BitPipeZbKeepsBitPipesOrder) {
  for (int D : {2, 4, 8})
    for (int N : {D, 2 * D, D + 1}) {
      Schedule zb = make("bitpipe-zb", D, N);
      Schedule bp = make("bitpipe", D, N);
      ASSERT_EQ(zb.numRanks(), D);
      EXPECT_TRUE(zb.splitBackward);
      EXPECT_TRUE(zb.placement == bp.placement);
      EXPECT_EQ(zb.microbatchPipeline, bp.microbatchPipeline);
      for (int r = 0; r < D; ++r)
        EXPECT_EQ(forwardsAndBackwards(zb.ranks[r]),
                  forwardsAndBackwards(bp.ranks[r]))
            << "D=" << D << " N=" << N << " r=" << r;
    }
}

TEST(ZeroBubbleSchedules, BitPipeZbVerifiesWithEagerAllReduces) {
  for (int D : {2, 4, 6, 8, 16})
    for (int N : {1, D / 2 + 1, D, 2 * D, 4 * D}) {
      Schedule s = make("bitpipe-zb", D, N);
      VerifyOptions options;
      options.requireAllReduce = true;
      std::vector<Diagnostic> diags = verify(s, options);
      EXPECT_TRUE(diags.empty()) << "D=" << D << " N=" << N << ":\n"
                                 << formatDiagnostics(diags);
      // BitPipe's two all-reduces per rank, second halves first; each right
      // after the rank's last W of its stages.
      for (int r = 0; r < D; ++r) {
        std::vector<std::vector<int>> ars;
        std::vector<int> lastW(2 * D, -1);
        const std::vector<Action> &list = s.ranks[r];
        for (int i = 0; i < static_cast<int>(list.size()); ++i) {
          if (list[i].kind == ActionKind::WeightGrad)
            lastW[list[i].stage] = i;
          if (list[i].kind != ActionKind::AllReduce)
            continue;
          ars.push_back(list[i].stages);
          for (int st : list[i].stages)
            EXPECT_GT(i, lastW[st]) << "D=" << D << " N=" << N << " r=" << r;
        }
        std::vector<std::vector<int>> expected = {
            {std::min(2 * D - 1 - r, D + r), std::max(2 * D - 1 - r, D + r)},
            {std::min(r, D - 1 - r), std::max(r, D - 1 - r)}};
        if (N >= D) { // A tiny N may finish the first halves first.
          EXPECT_EQ(ars, expected) << "D=" << D << " N=" << N << " r=" << r;
        }
      }
    }
}

// The target: makespan <= 0.85 x BitPipe's at D = 8, N = 16 with F =
// B = W = 1 (BitPipe's whole backward B + W = 2), with no more activation
// memory. BitPipe takes 114 slots there (docs/bitpipe-order.md), so the
// target is 96.9, but no schedule on this placement can go below
// bidirectionalVBound(8, 16) = 96 + 3 = 99: the target is out of reach,
// and bitpipe-zb reaches the bound, 99 / 114 = 0.868 of BitPipe. It does
// so at every D and N below: the cool-down's idle slots and the warm-up's
// gaps (after the first B) are all filled by W's, and the only idle time
// left is the middle ranks' wait for their first input.
TEST(ZeroBubbleSchedules, BitPipeZbReachesThePlacementsBound) {
  EXPECT_EQ(play(make("bitpipe", 8, 16)).makespan, 114);
  EXPECT_GT(bidirectionalVBound(8, 16), 0.85 * 114);
  test::PlayResult target = play(make("bitpipe-zb", 8, 16));
  ASSERT_TRUE(target.finished) << target.stuck;
  EXPECT_EQ(target.makespan, 99);
  EXPECT_LE(target.makespan, 0.87 * 114);

  for (int D : {2, 4, 8, 16})
    for (int N : {D, 2 * D, 4 * D}) {
      Schedule s = make("bitpipe-zb", D, N);
      test::PlayResult zb = play(s);
      ASSERT_TRUE(zb.finished) << zb.stuck;
      EXPECT_EQ(zb.makespan, bidirectionalVBound(D, N))
          << "D=" << D << " N=" << N;
      // At D = 2 BitPipe has no bubble to fill already.
      if (D > 2) {
        EXPECT_LT(zb.makespan, play(make("bitpipe", D, N)).makespan);
      }
      // The library's simulator agrees with the independent player.
      CostModel unit;
      unit.unitBackward = 1;
      Result<SimResult> sim = simulate(s, unit);
      ASSERT_TRUE(sim.ok()) << sim.error;
      EXPECT_FALSE(sim->deadlocked) << sim->deadlockReport();
      EXPECT_EQ(sim->makespan, zb.makespan) << "D=" << D << " N=" << N;
    }
}

TEST(ZeroBubbleSchedules, BitPipeZbHoldsNoMoreThanBitPipe) {
  for (int D : {2, 4, 6, 8, 16})
    for (int N : {D, 2 * D, 4 * D, D + 1}) {
      Schedule zb = make("bitpipe-zb", D, N);
      Schedule bp = make("bitpipe", D, N);
      CostModel unit;
      unit.unitBackward = 1;
      Result<SimResult> simZb = simulate(zb, unit);
      Result<SimResult> simBp = simulate(bp, CostModel());
      ASSERT_TRUE(simZb.ok() && simBp.ok());
      for (int r = 0; r < D; ++r) {
        const int bitpipePeak = peakInFlight(bp.ranks[r]);
        // Counted to W, the stricter measure: never above BitPipe's.
        EXPECT_LE(peakUntilW(zb.ranks[r]), bitpipePeak)
            << "D=" << D << " N=" << N << " r=" << r;
        // The simulator's measure (F to B) is BitPipe's exactly: same
        // F/B order.
        EXPECT_EQ(simZb->ranks[r].peakInFlight, simBp->ranks[r].peakInFlight)
            << "D=" << D << " N=" << N << " r=" << r;
      }
    }
}

TEST(ZeroBubbleSchedules, ZbvIsAVWithinOneFOneBsMemory) {
  for (int D : {1, 2, 3, 4, 5, 8, 16})
    for (int N : {1, D, 2 * D, 4 * D, D + 3}) {
      Schedule s = make("zbv", D, N);
      EXPECT_EQ(s.placement.kind, PlacementKind::V);
      EXPECT_EQ(s.placement.numStages, 2 * D);
      EXPECT_TRUE(s.splitBackward);
      EXPECT_TRUE(s.note.empty()) << s.note;
      std::vector<Diagnostic> diags = verify(s);
      EXPECT_TRUE(diags.empty()) << "D=" << D << " N=" << N << ":\n"
                                 << formatDiagnostics(diags);
      test::PlayResult r = play(s);
      EXPECT_TRUE(r.finished) << r.stuck;
      // 1F1B's first rank holds D micro-batches of a whole device's layers;
      // a V chunk is half of them.
      for (int rank = 0; rank < D; ++rank)
        EXPECT_LE(peakUntilW(s.ranks[rank]), 2 * D)
            << "D=" << D << " N=" << N << " r=" << rank;
      // No all-reduce markers: one replica of each stage.
      for (const std::vector<Action> &list : s.ranks)
        for (const Action &a : list)
          EXPECT_NE(a.kind, ActionKind::AllReduce);
    }
}

// The V's bound is 6N + D - 1: rank D-1's first input arrives D-1 slots
// after the start. torch's ZBV order reaches it, but its ranks order the
// activations and gradients of one channel differently at the two ends
// (rank r sends 2D-r-1 activations before its first gradient, rank r+1
// consumes 2D-r-2), which the library's lowering, one FIFO per pair of
// ranks, refuses. The list scheduler of docs/zero-bubble.md respects the
// channels and stays within a few slots of the bound at N >= 2D (its
// steady state has no bubble; the warm-up and cool-down cost D/2 to D-1
// slots more than the bound). These are its makespans.
TEST(ZeroBubbleSchedules, ZbvMakespans) {
  struct Case {
    int D, N;
    long makespan;
  };
  for (Case c : {Case{4, 4, 27}, Case{4, 8, 54}, Case{4, 16, 102},
                 Case{8, 8, 55}, Case{8, 16, 109}, Case{8, 32, 204},
                 Case{16, 16, 111}, Case{16, 32, 215}, Case{16, 64, 409}}) {
    test::PlayResult r = play(make("zbv", c.D, c.N));
    ASSERT_TRUE(r.finished) << r.stuck;
    EXPECT_EQ(r.makespan, c.makespan) << "D=" << c.D << " N=" << c.N;
    EXPECT_GE(r.makespan, 6L * c.N + c.D - 1);
    EXPECT_LE(r.makespan, 6L * c.N + 2 * c.D) << "D=" << c.D << " N=" << c.N;
  }
}

TEST(ZeroBubbleSchedules, RefusedLikeTheRegistry) {
  EXPECT_EQ(generateBitPipeZeroBubble(3, 6).error,
            validate({"bitpipe-zb", 3, 6}).error);
  EXPECT_EQ(generateZeroBubbleV(4, 0).error, validate({"zbv", 4, 0}).error);
  EXPECT_FALSE(generateZeroBubbleV(0, 4).ok());
}
