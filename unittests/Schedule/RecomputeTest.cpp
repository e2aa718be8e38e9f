//===- RecomputeTest.cpp - The recomputation modes' costing rule ----------===//

#include "bitpipe/Schedule/Recompute.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

namespace {

StageKeeping stage() {
  StageKeeping s;
  s.forwardFlops = 100;
  s.backwardFlops = 200;
  s.keptBytes = 1000;
  s.statisticBytes = 40;
  s.statisticFlops = 30;
  s.inputBytes = 64;
  return s;
}

TEST(Recompute, NamesRoundTrip) {
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    EXPECT_EQ(parseRecompute(recomputeName(r)), r);
  EXPECT_FALSE(parseRecompute("some"));
}

TEST(Recompute, NoneKeepsEverythingAndComputesNothingAgain) {
  RecomputedStage r = recomputedStage(Recompute::None, stage());
  EXPECT_DOUBLE_EQ(r.backwardFlops, 200);
  EXPECT_DOUBLE_EQ(r.keptBytes, 1000);
}

TEST(Recompute, SelectiveTradesTheStatisticsForTheirForwardWork) {
  RecomputedStage r = recomputedStage(Recompute::Selective, stage());
  EXPECT_DOUBLE_EQ(r.backwardFlops, 230);
  EXPECT_DOUBLE_EQ(r.keptBytes, 960);
}

TEST(Recompute, FullKeepsTheInputsAndRunsTheForwardAgain) {
  RecomputedStage r = recomputedStage(Recompute::Full, stage());
  EXPECT_DOUBLE_EQ(r.backwardFlops, 300);
  EXPECT_DOUBLE_EQ(r.keptBytes, 64);
}

} // namespace
