//===- IdleTimeTest.cpp - What a run's ranks did when not computing -------===//
//
// A hand-written trace of 1F1B at D=2, N=2 whose every gap is known: the
// breakdown must give each cause its time, inside a step and between
// steps, add up to the measured bubble, and give nested spans nothing.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/IdleTime.h"

#include "bitpipe/Schedule/Registry.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace bitpipe::sched;

namespace {

TEST(IdleTime, CauseDropsTheTagOrBucket) {
  EXPECT_EQ(idleCause("recv r1 t5"), "recv r1");
  EXPECT_EQ(idleCause("send r0 t12"), "send r0");
  EXPECT_EQ(idleCause("allreduce b0"), "allreduce");
  EXPECT_EQ(idleCause("allreduce.wait b3"), "allreduce.wait");
  EXPECT_EQ(idleCause("optimizer"), "optimizer");
  EXPECT_EQ(idleCause("send r0 tx"), "send r0 tx");
  EXPECT_EQ(idleCause("a b"), "a b");
}

/// Three steps, 100 us apart, of 1F1B at D=2, N=2 (rank 0: F0 F1 B0 B1,
/// rank 1: F0 B0 F1 B1), every compute 1 us long; a step's window runs from
/// 0 to 60 after its offset: its last compute ends at 31, its last
/// all-reduce wait at 60.
std::vector<RunEvent> threeSteps() {
  std::vector<RunEvent> trace;
  auto span = [&](int rank, const char *name, double start, double end) {
    trace.push_back({rank, name, start, end - start});
  };
  for (int step = 0; step < 3; ++step) {
    double t = step * 100;
    span(0, "F0.s0", t + 0, t + 1);
    span(0, "F1.s0", t + 1, t + 2);
    span(0, "B0.s0", t + 20, t + 21);
    span(0, "B1.s0", t + 30, t + 31);
    span(1, "F0.s1", t + 10, t + 11);
    span(1, "B0.s1", t + 11, t + 12);
    span(1, "F1.s1", t + 12, t + 13);
    span(1, "B1.s1", t + 13, t + 14);
    // Rank 0, gap [2, 20): a wait (17), a send posted inside it (nothing),
    // 1 untraced. Gap [21, 30): a wait (8.5), 0.5 untraced. A send inside a
    // compute is no gap.
    span(0, "recv r1 t5", t + 2, t + 19);
    span(0, "send r1 t9", t + 3, t + 4);
    span(0, "recv r1 t7", t + 21, t + 29.5);
    span(0, "send r1 t4", t + 1, t + 1.1);
    // Rank 1, gap [0, 10): a wait (9.5) after 0.5 untraced. Gap [14, 60):
    // an all-reduce's post (1), its wait (10), 35 untraced.
    span(1, "recv r0 t4", t + 0.5, t + 10);
    span(1, "allreduce b0", t + 14, t + 15);
    // Each rank waits for the all-reduce after its last compute (rank 0
    // after 0.5 untraced), inside the step's window, then steps the
    // optimizer: between steps, rank 0 from 31 to 100, rank 1 from 14 to
    // 110.
    span(0, "allreduce.wait b0", t + 31.5, t + 60);
    span(0, "optimizer", t + 60, t + 90);
    span(1, "allreduce.wait b0", t + 40, t + 50);
    span(1, "optimizer", t + 60, t + 90);
  }
  return trace;
}

TEST(IdleTime, EveryGapGoesToTheSpanCoveringIt) {
  ScheduleOptions request;
  request.schedule = "1f1b";
  request.devices = 2;
  request.microbatches = 2;
  Result<Schedule> schedule = generateSchedule(request);
  ASSERT_TRUE(schedule.ok()) << schedule.error;

  Result<IdleBreakdown> idle = explainIdle(*schedule, threeSteps(), 1);
  ASSERT_TRUE(idle.ok()) << idle.error;
  EXPECT_EQ(idle->measured.stepsUsed, 2);
  EXPECT_DOUBLE_EQ(idle->measured.stepTime, 60);
  EXPECT_DOUBLE_EQ(idle->stepPeriod, 100);

  // Means per step over steps 1 and 2, which are alike.
  IdleByCause rank0 = {
      {"recv r1", 25.5}, {"allreduce.wait", 28.5}, {kUntraced, 2}};
  IdleByCause rank1 = {{"recv r0", 9.5},
                       {"allreduce", 1},
                       {"allreduce.wait", 10},
                       {kUntraced, 35.5}};
  ASSERT_EQ(idle->inStep.size(), 2u);
  for (const auto &[cause, time] : rank0)
    EXPECT_NEAR(idle->inStep[0].at(cause), time, 1e-9) << cause;
  for (const auto &[cause, time] : rank1)
    EXPECT_NEAR(idle->inStep[1].at(cause), time, 1e-9) << cause;
  EXPECT_EQ(idle->inStep[0].size(), rank0.size());
  EXPECT_EQ(idle->inStep[1].size(), rank1.size());
  // The causes add up to the calibration's bubble: 56 of 60 on each rank.
  EXPECT_NEAR(idle->measured.rankBubble[0] * idle->measured.stepTime, 56, 1e-9);
  EXPECT_NEAR(idle->measured.rankBubble[1] * idle->measured.stepTime, 56, 1e-9);

  // Between steps: only from step 1 to step 2 (the last measured step has
  // no next one), from the rank's own last compute to its next first one.
  // Rank 1's starts at 14, inside the step's window, so it holds the
  // all-reduce's start too, and the next step's first wait.
  IdleByCause between0 = {
      {"allreduce.wait", 28.5}, {"optimizer", 30}, {kUntraced, 10.5}};
  IdleByCause between1 = {{"allreduce", 1},
                          {"allreduce.wait", 10},
                          {"optimizer", 30},
                          {"recv r0", 9.5},
                          {kUntraced, 45.5}};
  for (const auto &[cause, time] : between0)
    EXPECT_NEAR(idle->betweenSteps[0].at(cause), time, 1e-9) << cause;
  for (const auto &[cause, time] : between1)
    EXPECT_NEAR(idle->betweenSteps[1].at(cause), time, 1e-9) << cause;
  EXPECT_EQ(idle->betweenSteps[0].size(), between0.size());
  EXPECT_EQ(idle->betweenSteps[1].size(), between1.size());

  // Rank 0's first gap of step 1 holds the wait alone: the send posted
  // inside it covers nothing the wait did not.
  const IdleGap &first = idle->gaps.front();
  EXPECT_EQ(first.rank, 0);
  EXPECT_EQ(first.step, 1);
  EXPECT_FALSE(first.betweenSteps);
  EXPECT_DOUBLE_EQ(first.start, 102);
  ASSERT_EQ(first.spans.size(), 1u);
  EXPECT_EQ(first.spans[0].first, "recv r1 t5");
  EXPECT_DOUBLE_EQ(first.untraced(), 1);
}

TEST(IdleTime, FailsAsTheMeasurementDoes) {
  ScheduleOptions request;
  request.schedule = "1f1b";
  request.devices = 2;
  request.microbatches = 2;
  Result<Schedule> schedule = generateSchedule(request);
  ASSERT_TRUE(schedule.ok()) << schedule.error;
  EXPECT_NE(explainIdle(*schedule, threeSteps(), 3)
                .error.find("the trace holds 3 complete step(s)"),
            std::string::npos);
}

} // namespace
