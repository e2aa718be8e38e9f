//===- BitPipeScheduleTest.cpp - BitPipe's reference order ----------------===//
//
// The golden grids are the reference implementation's order as
// docs/bitpipe-order.md works it; everything else is checked by playing the
// schedule under unit costs.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/GridText.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;
using bitpipe::sched::test::peakInFlight;
using bitpipe::sched::test::play;

namespace {

Schedule makeBitPipe(int D, int N) {
  Result<Schedule> s = generateBitPipe(D, N);
  EXPECT_TRUE(s.ok()) << s.error;
  return s.ok() ? *s : Schedule{};
}

} // namespace

TEST(BitPipeSchedule, GoldenD4N4AllRanks) {
  const char *expected =
      "P0: F0.s0 F1.s0 F2.s3 F2.s4 F3.s3 F3.s4 F0.s7 B0.s7 F1.s7 B1.s7 B2.s4 "
      "B2.s3 B3.s4 B3.s3 B0.s0 AR(4,7) B1.s0 AR(0,3)\n"
      "P1: F0.s1 F2.s2 F1.s1 F3.s2 F2.s5 F0.s6 F3.s5 F1.s6 B0.s6 B2.s5 B1.s6 "
      "B3.s5 B2.s2 B0.s1 B3.s2 B1.s1 AR(5,6) AR(1,2)\n"
      "P2: F2.s1 F0.s2 F3.s1 F1.s2 F0.s5 F2.s6 F1.s5 F3.s6 B2.s6 B0.s5 B3.s6 "
      "B1.s5 B0.s2 B2.s1 B1.s2 B3.s1 AR(5,6) AR(1,2)\n"
      "P3: F2.s0 F3.s0 F0.s3 F0.s4 F1.s3 F1.s4 F2.s7 B2.s7 F3.s7 B3.s7 B0.s4 "
      "B0.s3 B1.s4 B1.s3 B2.s0 AR(4,7) B3.s0 AR(0,3)\n";
  EXPECT_EQ(formatGrid(makeBitPipe(4, 4)), expected);
}

TEST(BitPipeSchedule, GoldenD4N8Rank0) {
  const char *expected =
      "P0: F0.s0 F1.s0 F2.s3 F2.s4 F3.s3 F3.s4 F0.s7 B0.s7 F1.s7 B1.s7 B2.s4 "
      "B2.s3 B3.s4 B3.s3 B0.s0 F4.s0 B1.s0 F5.s0 F6.s3 F6.s4 F7.s3 F7.s4 "
      "F4.s7 B4.s7 F5.s7 B5.s7 B6.s4 B6.s3 B7.s4 B7.s3 B4.s0 AR(4,7) B5.s0 "
      "AR(0,3)";
  Schedule s = makeBitPipe(4, 8);
  ASSERT_EQ(s.numRanks(), 4);
  EXPECT_EQ(formatRank(0, s.ranks[0]), expected);
}

TEST(BitPipeSchedule, GoldenParsesBackToTheSameActions) {
  Schedule s = makeBitPipe(4, 8);
  Result<RankPrograms> parsed = parseGrid(formatGrid(s));
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(*parsed, s.ranks);
}

TEST(BitPipeSchedule, UnitCostMakespans) {
  struct Case {
    int D, N;
    long makespan;
  };
  // docs/bitpipe-order.md, "The result".
  for (Case c : {Case{4, 4, 28}, Case{4, 8, 54}, Case{8, 8, 60},
                 Case{8, 16, 114}}) {
    test::PlayResult r = play(makeBitPipe(c.D, c.N));
    ASSERT_TRUE(r.finished) << r.stuck;
    EXPECT_EQ(r.makespan, c.makespan) << "D=" << c.D << " N=" << c.N;
  }
}

TEST(BitPipeSchedule, BubbleRatioForNEqualsD) {
  for (int D : {4, 8}) {
    test::PlayResult r = play(makeBitPipe(D, D));
    ASSERT_TRUE(r.finished) << r.stuck;
    // Each rank computes 2N chunk forwards and backwards: 2N * 3.
    EXPECT_EQ(r.busy, static_cast<long>(D) * 6 * D);
    EXPECT_DOUBLE_EQ(r.bubbleRatio(),
                     static_cast<double>(D - 2) / (3 * D + D - 2))
        << "D=" << D;
  }
}

TEST(BitPipeSchedule, PeakInFlightIsWarmupPlusOne) {
  for (int D = 2; D <= 16; D += 2)
    for (int units : {1, 2, 3}) {
      Schedule s = makeBitPipe(D, units * D);
      for (int r = 0; r < D; ++r) {
        int W = D + D / 2 + std::min(r, D - 1 - r);
        EXPECT_EQ(peakInFlight(s.ranks[r]), W + 1)
            << "D=" << D << " N=" << units * D << " r=" << r;
      }
    }
}

TEST(BitPipeSchedule, DirectionsSplitByUnit) {
  Schedule s = makeBitPipe(8, 16);
  ASSERT_EQ(s.microbatchPipeline.size(), 16u);
  for (int m = 0; m < 16; ++m)
    EXPECT_EQ(s.microbatchPipeline[m], (m % 8) < 4 ? 0 : 1) << "m=" << m;
  EXPECT_EQ(s.placement.kind, PlacementKind::BidirectionalV);
  EXPECT_TRUE(s.note.empty());
}

TEST(BitPipeSchedule, AllReducePairsReplicaChunks) {
  for (int D = 2; D <= 12; D += 2) {
    Schedule s = makeBitPipe(D, 2 * D);
    for (int r = 0; r < D; ++r) {
      std::vector<std::vector<int>> ars;
      for (const Action &a : s.ranks[r])
        if (a.kind == ActionKind::AllReduce)
          ars.push_back(a.stages);
      std::vector<std::vector<int>> expected = {
          {std::min(2 * D - 1 - r, D + r), std::max(2 * D - 1 - r, D + r)},
          {std::min(r, D - 1 - r), std::max(r, D - 1 - r)}};
      EXPECT_EQ(ars, expected) << "D=" << D << " r=" << r;
      // The replica partner all-reduces the same stages.
      std::vector<std::vector<int>> partner;
      for (const Action &a : s.ranks[D - 1 - r])
        if (a.kind == ActionKind::AllReduce)
          partner.push_back(a.stages);
      EXPECT_EQ(ars, partner);
    }
  }
}

TEST(BitPipeSchedule, PartialUnitIsBuiltAndExplained) {
  for (auto [D, N] : {std::pair{4, 6}, {4, 2}, {4, 3}, {6, 9}, {8, 12}}) {
    Result<Schedule> s = generateBitPipe(D, N);
    ASSERT_TRUE(s.ok()) << s.error;
    EXPECT_NE(s->note.find("not a multiple"), std::string::npos) << s->note;
    test::PlayResult r = play(*s);
    EXPECT_TRUE(r.finished) << "D=" << D << " N=" << N << ": " << r.stuck;
    // The full units keep the reference order: the first unit's warm-up of
    // rank 0 is unchanged.
    if (N >= D) {
      Schedule full = makeBitPipe(D, D);
      for (int k = 0; k < D; ++k)
        EXPECT_EQ(s->ranks[0][k], full.ranks[0][k]) << "D=" << D << " k=" << k;
    }
  }
}

TEST(BitPipeSchedule, NoteCountsMicrobatchesInWords) {
  Result<Schedule> one = generateBitPipe(4, 1);
  ASSERT_TRUE(one.ok()) << one.error;
  EXPECT_EQ(one->note,
            "N=1 is not a multiple of D=4: the reference order needs whole "
            "units, so the order of 1 micro-batch (1 down, 0 up) is built by "
            "greedy list scheduling (backward first) on the bidirectional-v "
            "placement");
  Result<Schedule> five = generateBitPipe(4, 5);
  ASSERT_TRUE(five.ok()) << five.error;
  EXPECT_NE(five->note.find("then a partial unit of 1 micro-batch (1 down, "
                            "0 up) is appended"),
            std::string::npos)
      << five->note;
}

TEST(BitPipeSchedule, RejectsOddDevicesAndEmptyInputs) {
  Result<Schedule> odd = generateBitPipe(3, 6);
  ASSERT_FALSE(odd.ok());
  EXPECT_EQ(odd.error, "devices must be even: bitpipe needs an even number of "
                       "devices (its two pipelines pair device r with device "
                       "D-1-r), got 3");
  EXPECT_FALSE(generateBitPipe(0, 4).ok());
  EXPECT_FALSE(generateBitPipe(4, 0).ok());
}
