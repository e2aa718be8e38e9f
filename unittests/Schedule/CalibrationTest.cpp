//===- CalibrationTest.cpp - Fitting the cost model to a run --------------===//
//
// A run whose trace the simulator itself wrote (known per-stage costs, known
// transfer times) must calibrate back to those costs, measure the
// simulator's makespan and bubbles, and predict itself with no error.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Calibration.h"

#include "bitpipe/Schedule/IdleTime.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/base/TraceFormat.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

using namespace bitpipe::sched;
namespace trace = bitpipe::trace;

namespace {

Schedule scheduleOf(const std::string &name, int devices, int microbatches) {
  ScheduleOptions request;
  request.schedule = name;
  request.devices = devices;
  request.microbatches = microbatches;
  Result<Schedule> s = generateSchedule(request);
  EXPECT_TRUE(s.ok()) << s.error;
  return *s;
}

std::string computeName(const Action &a) {
  char kind = a.kind == ActionKind::Forward    ? 'F'
              : a.kind == ActionKind::Backward ? 'B'
                                               : 'W';
  return kind + std::to_string(a.microbatch) + ".s" + std::to_string(a.stage);
}

/// `steps` copies of the simulated step, one after another, as a trace.
std::vector<RunEvent> traceOf(const SimResult &sim, int steps) {
  std::vector<RunEvent> events;
  for (int s = 0; s < steps; ++s) {
    double offset = s * (sim.makespan + 10);
    for (const TimelineEvent &e : sim.timeline)
      if (e.lane == Lane::Compute && e.kind == CommKind::Compute)
        events.push_back(
            {e.rank, computeName(e.action), offset + e.start, e.end - e.start});
  }
  return events;
}

TEST(Calibration, RecoversTheCostsOfASimulatedRun) {
  Schedule schedule = scheduleOf("1f1b", 4, 8);
  CostModel truth;
  truth.forward = {10, 20, 30, 15};
  truth.backward = {25, 35, 45, 20};
  Result<SimResult> sim = simulate(schedule, truth);
  ASSERT_TRUE(sim.ok()) << sim.error;

  std::vector<RunEvent> trace = traceOf(*sim, 3);
  Result<Calibration> fit = calibrate(schedule, trace, /*skip=*/1);
  ASSERT_TRUE(fit.ok()) << fit.error;
  for (int s = 0; s < 4; ++s) {
    EXPECT_DOUBLE_EQ(fit->cost.forward[s], truth.forward[s]) << "stage " << s;
    EXPECT_DOUBLE_EQ(fit->cost.backward[s], truth.backward[s]) << "stage " << s;
  }
  EXPECT_EQ(fit->computeSamples, 2 * 4 * 8 * 2); // 2 steps, 4 stages, F and B
  EXPECT_EQ(fit->transferSamples, 0);

  Result<MeasuredRun> run = measureRun(schedule, trace, 1);
  ASSERT_TRUE(run.ok()) << run.error;
  EXPECT_EQ(run->stepsUsed, 2);
  EXPECT_DOUBLE_EQ(run->stepTime, sim->makespan);
  EXPECT_NEAR(run->bubble, sim->bubbleRatio, 1e-12);

  Result<Prediction> self = predict(schedule, fit->cost, trace, 1);
  ASSERT_TRUE(self.ok()) << self.error;
  EXPECT_NEAR(self->stepError(), 0.0, 1e-12);
}

/// traceOf, with each rank's all-reduces as the runtime traces them: a post
/// ("allreduce bK", K its k-th all-reduce) when the rank's program reaches
/// it (as long as the simulator kept the rank posting:
/// CostModel::allReducePostTime), and after its last compute and post a wait
/// for each, in order, that ends when the simulated collective does.
std::vector<RunEvent> traceWithAllReduces(const Schedule &schedule,
                                          const SimResult &sim, int steps) {
  std::vector<RunEvent> events = traceOf(sim, steps);
  for (int r = 0; r < schedule.numRanks(); ++r) {
    // Compute ends by action index: where the program reaches each AR.
    std::vector<double> endOf(schedule.ranks[r].size(), 0);
    std::vector<std::pair<double, double>> posts; // By action index order.
    double lastWork = 0;
    for (const TimelineEvent &e : sim.timeline) {
      if (e.rank != r || e.lane != Lane::Compute)
        continue;
      if (e.kind == CommKind::Compute)
        endOf[e.actionIndex] = e.end;
      else
        posts.push_back({e.start, e.end});
      lastWork = std::max(lastWork, e.end);
    }
    std::sort(posts.begin(), posts.end());
    std::vector<std::pair<double, double>> issuedAndDone;
    for (const TimelineEvent &e : sim.timeline)
      if (e.rank == r && e.lane == Lane::AllReduce) {
        double issued = 0;
        for (int i = 0; i < e.actionIndex; ++i)
          issued = std::max(issued, endOf[i]);
        issuedAndDone.push_back({issued, e.end});
      }
    std::sort(issuedAndDone.begin(), issuedAndDone.end());
    for (int s = 0; s < steps; ++s) {
      double offset = s * (sim.makespan + 10), waitFrom = lastWork;
      for (size_t k = 0; k < issuedAndDone.size(); ++k) {
        auto [issued, done] = issuedAndDone[k];
        std::string bucket = " b" + std::to_string(k);
        auto [postStart, postEnd] =
            k < posts.size() ? posts[k] : std::make_pair(issued, issued);
        events.push_back(
            {r, "allreduce" + bucket, offset + postStart, postEnd - postStart});
        double waitTo = std::max(waitFrom, done);
        events.push_back({r, "allreduce.wait" + bucket, offset + waitFrom,
                          waitTo - waitFrom});
        waitFrom = waitTo;
      }
    }
  }
  return events;
}

/// Chimera at D=2: both stages on both ranks, so every all-reduce spans
/// ranks 0 and 1, and one is posted during the step; as MPI runs them,
/// both move only in the waits after the last compute, 7 us each.
CostModel chimeraWithMpiAllReduces() {
  CostModel cost;
  cost.forward = {10, 12};
  cost.backward = {20, 24};
  cost.allReduceLatency = 7;
  cost.allReduceAfterCompute = true;
  return cost;
}

TEST(Calibration, AllReduceTimeFromTheWaitsAfterTheCompute) {
  Schedule schedule = scheduleOf("chimera", 2, 4);
  CostModel truth = chimeraWithMpiAllReduces();
  Result<SimResult> sim = simulate(schedule, truth);
  ASSERT_TRUE(sim.ok()) << sim.error;
  ASSERT_GT(sim->allReduceTime, 0);

  std::vector<RunEvent> trace = traceWithAllReduces(schedule, *sim, 3);
  Result<Calibration> fit = calibrate(schedule, trace, /*skip=*/1);
  ASSERT_TRUE(fit.ok()) << fit.error;
  EXPECT_DOUBLE_EQ(fit->cost.allReduceLatency, 7);
  EXPECT_TRUE(fit->cost.allReduceAfterCompute);
  EXPECT_EQ(fit->allReduceSamples, 2); // one per measured step

  // The step ends when the sums are there, as the simulator's does.
  Result<MeasuredRun> run = measureRun(schedule, trace, 1);
  ASSERT_TRUE(run.ok()) << run.error;
  EXPECT_DOUBLE_EQ(run->stepTime, sim->makespan);
  Result<Prediction> self = predict(schedule, fit->cost, trace, 1);
  ASSERT_TRUE(self.ok()) << self.error;
  EXPECT_NEAR(self->stepError(), 0.0, 1e-12);
  // Free all-reduces predict the step short by the exposed one.
  CostModel free = fit->cost;
  free.allReduceLatency = 0;
  Result<Prediction> short_ = predict(schedule, free, trace, 1);
  ASSERT_TRUE(short_.ok()) << short_.error;
  EXPECT_LT(short_->simulatedStep, run->stepTime);
}

TEST(Calibration, AllReducePostsTakeTheRanksTime) {
  // As above, with each post keeping its rank 2 us (MPI's nonblocking
  // all-reduce starts on the caller's core): the simulator delays the
  // rank's next step by that, the fit recovers both numbers, and the fitted
  // model predicts the run exactly.
  Schedule schedule = scheduleOf("chimera", 2, 4);
  CostModel truth = chimeraWithMpiAllReduces();
  Result<SimResult> freePosts = simulate(schedule, truth);
  ASSERT_TRUE(freePosts.ok()) << freePosts.error;
  truth.allReducePostTime = 2;
  Result<SimResult> sim = simulate(schedule, truth);
  ASSERT_TRUE(sim.ok()) << sim.error;
  // Each rank posts two all-reduces; the first during its compute.
  EXPECT_GT(sim->makespan, freePosts->makespan);
  EXPECT_LE(sim->makespan, freePosts->makespan + 2 * 2);
  int posts = 0;
  for (const TimelineEvent &e : sim->timeline)
    if (e.lane == Lane::Compute && e.kind == CommKind::AllReduce) {
      ++posts;
      EXPECT_DOUBLE_EQ(e.end - e.start, 2);
    }
  EXPECT_EQ(posts, 4);
  // A post is no compute: the ranks' busy time is unchanged.
  for (int r = 0; r < 2; ++r)
    EXPECT_DOUBLE_EQ(sim->ranks[r].busy, freePosts->ranks[r].busy);

  std::vector<RunEvent> trace = traceWithAllReduces(schedule, *sim, 3);
  Result<Calibration> fit = calibrate(schedule, trace, /*skip=*/1);
  ASSERT_TRUE(fit.ok()) << fit.error;
  EXPECT_DOUBLE_EQ(fit->cost.allReducePostTime, 2);
  EXPECT_EQ(fit->allReducePostSamples, 2 * 2 * 2); // ranks x posts x steps
  EXPECT_DOUBLE_EQ(fit->cost.allReduceLatency, 7);
  Result<Prediction> self = predict(schedule, fit->cost, trace, 1);
  ASSERT_TRUE(self.ok()) << self.error;
  EXPECT_NEAR(self->stepError(), 0.0, 1e-12);
}

TEST(Calibration, ActionTimesReplaceTheStagesTimesStepByStep) {
  Schedule schedule = scheduleOf("1f1b", 2, 4);
  CostModel cost;
  cost.forward = {10, 10};
  cost.backward = {20, 20};
  Result<SimResult> means = simulate(schedule, cost);
  ASSERT_TRUE(means.ok()) << means.error;
  // The stages' own times, step by step: the same run.
  CostModel same = cost;
  same.actionTimes.assign(2, {});
  for (int r = 0; r < 2; ++r)
    for (const Action &a : schedule.ranks[r])
      same.actionTimes[r].push_back(a.kind == ActionKind::Forward ? 10 : 20);
  Result<SimResult> replay = simulate(schedule, same);
  ASSERT_TRUE(replay.ok()) << replay.error;
  EXPECT_DOUBLE_EQ(replay->makespan, means->makespan);
  // One backward of the last stage 5 longer, on the critical path (the
  // last rank's last step): the step is 5 longer.
  same.actionTimes[1].back() += 5;
  replay = simulate(schedule, same);
  ASSERT_TRUE(replay.ok()) << replay.error;
  EXPECT_DOUBLE_EQ(replay->makespan, means->makespan + 5);
}

TEST(Calibration, TheSpreadOfStageTimesCostsASchedulesWithoutSlack) {
  // BitPipe at D=2 hands work between its two ranks at every step: a rank
  // waits for the slower of its and its partner's calls. Stage times of 8
  // or 12 (mean 10) cost more on average than 10 every time; the same
  // samples all at 10 change nothing.
  Schedule schedule = scheduleOf("bitpipe", 2, 8);
  CostModel cost;
  cost.forward.assign(4, 10);
  cost.backward.assign(4, 20);
  Result<SimResult> sim = simulate(schedule, cost);
  ASSERT_TRUE(sim.ok()) << sim.error;
  std::vector<RunEvent> trace = traceOf(*sim, 2);

  StageSamples flat;
  flat.forward.assign(4, {10, 10});
  flat.backward.assign(4, {20, 20});
  Result<Prediction> exact = predict(schedule, cost, trace, 1);
  Result<Prediction> drawnFlat =
      predictWithSpread(schedule, cost, flat, trace, 1, 50);
  ASSERT_TRUE(exact.ok() && drawnFlat.ok());
  // (The mean of 50 equal makespans, summed as fiftieths.)
  EXPECT_NEAR(drawnFlat->simulatedStep, exact->simulatedStep, 1e-9);

  StageSamples spread;
  spread.forward.assign(4, {8, 12});
  spread.backward.assign(4, {16, 24});
  Result<Prediction> drawn =
      predictWithSpread(schedule, cost, spread, trace, 1, 200);
  ASSERT_TRUE(drawn.ok()) << drawn.error;
  EXPECT_GT(drawn->simulatedStep, exact->simulatedStep);
  EXPECT_GT(drawn->simulatedBubble, exact->simulatedBubble);
  // A fixed seed: the same draws give the same answer.
  Result<Prediction> again =
      predictWithSpread(schedule, cost, spread, trace, 1, 200);
  ASSERT_TRUE(again.ok());
  EXPECT_DOUBLE_EQ(again->simulatedStep, drawn->simulatedStep);

  Result<Prediction> none =
      predictWithSpread(schedule, cost, spread, trace, 1, 0);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error, "the spread needs at least one draw, got 0");
}

TEST(Calibration, AtTheRunsSpeedOnlyTheScheduleIsLeft) {
  // A held-out run whose kernels were all 10% slower: fitted times predict
  // it 10% short; scaled to the run's own compute time, exactly.
  Schedule schedule = scheduleOf("bitpipe", 2, 8);
  CostModel fitted;
  fitted.forward = {10, 12, 11, 9};
  fitted.backward = {20, 25, 22, 18};
  CostModel slower = fitted;
  for (double &t : slower.forward)
    t *= 1.1;
  for (double &t : slower.backward)
    t *= 1.1;
  Result<SimResult> sim = simulate(schedule, slower);
  ASSERT_TRUE(sim.ok()) << sim.error;
  std::vector<RunEvent> trace = traceOf(*sim, 2);

  Result<Prediction> plain = predict(schedule, fitted, trace, 1);
  Result<Prediction> atSpeed = predictAtRunSpeed(schedule, fitted, trace, 1);
  ASSERT_TRUE(plain.ok() && atSpeed.ok()) << plain.error << atSpeed.error;
  EXPECT_NEAR(plain->stepError(), 1 / 1.1 - 1, 1e-9);
  ASSERT_EQ(atSpeed->rankComputeScale.size(), 2u);
  EXPECT_NEAR(atSpeed->rankComputeScale[0], 1.1, 1e-9);
  EXPECT_NEAR(atSpeed->rankComputeScale[1], 1.1, 1e-9);
  EXPECT_NEAR(atSpeed->stepError(), 0.0, 1e-9);
}

/// A GPU run's trace as the CUDA target writes it
/// (bitpipe/base/TraceFormat.h), `steps` copies of the simulated step:
/// each stage call twice, on the host row as the short span that enqueued
/// it and on the compute stream's row as the device ran it; each transfer
/// on both ends' point-to-point rows ("send r<peer> t<tag>", "recv r<peer>
/// t<tag>"); each collective on its members' all-reduce rows, "allreduce
/// bK" for the rank's K-th.
std::vector<RunEvent> gpuTraceOf(const SimResult &sim, int numStages,
                                 int steps) {
  std::vector<RunEvent> events;
  for (int s = 0; s < steps; ++s) {
    double offset = s * (sim.makespan + 10);
    std::map<int, int> allReduces; // per rank, so far
    for (const TimelineEvent &e : sim.timeline) {
      double start = offset + e.start, duration = e.end - e.start;
      if (e.lane == Lane::Compute && e.kind == CommKind::Compute) {
        std::string name = computeName(e.action);
        events.push_back({e.rank, name, start, 0.01, trace::kHostRow});
        events.push_back(
            {e.rank, name, start, duration, trace::kComputeStreamRow});
      } else if (e.lane == Lane::P2P) {
        bool send = e.kind == CommKind::SendF || e.kind == CommKind::SendB;
        bool gradient = e.kind == CommKind::SendB || e.kind == CommKind::RecvB;
        int tag = 2 * (e.action.microbatch * numStages + e.action.stage) +
                  (gradient ? 1 : 0);
        char name[64];
        std::snprintf(name, sizeof name,
                      send ? trace::kSendFormat : trace::kRecvFormat, e.peer,
                      tag);
        events.push_back(
            {e.rank, name, start, duration, trace::kPointToPointStreamRow});
      } else if (e.lane == Lane::AllReduce) {
        char name[64];
        std::snprintf(name, sizeof name, trace::kAllReducePostFormat,
                      allReduces[e.rank]++);
        events.push_back(
            {e.rank, name, start, duration, trace::kAllReduceStreamRow});
      }
    }
  }
  return events;
}

TEST(Calibration, AGpuTraceIsReadFromItsDeviceRows) {
  // BitPipe at D=2 as NCCL runs it: transfers in groups (0.5 each), the
  // mirror ranks' all-reduces (3 each) on their own stream beside compute.
  // Read from the device rows, the fit recovers every number, and the
  // host's enqueue spans of the stage calls are left out.
  Schedule schedule = scheduleOf("bitpipe", 2, 8);
  CostModel truth;
  truth.forward = {10, 12, 11, 9};
  truth.backward = {20, 25, 22, 18};
  truth.transport = Transport::Nccl;
  truth.p2pLatency = 0.5;
  truth.gradientBytes.assign(4, 1);
  truth.allReduceLatency = 3;
  Result<SimResult> sim = simulate(schedule, truth);
  ASSERT_TRUE(sim.ok()) << sim.error;
  std::vector<RunEvent> trace = gpuTraceOf(*sim, 4, 3);

  Result<Calibration> fit = calibrate(schedule, trace, 1);
  ASSERT_TRUE(fit.ok()) << fit.error;
  EXPECT_EQ(fit->computeSamples, 2 * 2 * 2 * 8 * 2); // 2 steps, 2 ranks
  for (int s = 0; s < 4; ++s) {
    EXPECT_NEAR(fit->cost.forward[s], truth.forward[s], 1e-9);
    EXPECT_NEAR(fit->cost.backward[s], truth.backward[s], 1e-9);
  }
  EXPECT_GT(fit->transferSamples, 0);
  EXPECT_NEAR(fit->cost.p2pLatency, 0.5, 1e-9);
  EXPECT_GT(fit->allReduceSamples, 0);
  EXPECT_NEAR(fit->cost.allReduceLatency, 3, 1e-9);
  EXPECT_TRUE(fit->fromDevice);
  EXPECT_EQ(fit->cost.transport, Transport::Nccl);
  EXPECT_FALSE(fit->cost.allReduceAfterCompute);
  EXPECT_EQ(fit->cost.allReducePostTime, 0);

  Result<Prediction> self = predict(schedule, fit->cost, trace, 1);
  ASSERT_TRUE(self.ok()) << self.error;
  EXPECT_NEAR(self->measured.stepTime, sim->makespan, 1e-9);
  EXPECT_NEAR(self->stepError(), 0.0, 1e-12);

  // What the ranks' compute streams waited for, from their other streams.
  Result<IdleBreakdown> idle = explainIdle(schedule, trace, 1);
  ASSERT_TRUE(idle.ok()) << idle.error;
  for (const IdleByCause &causes : idle->inStep)
    for (const auto &[cause, ms] : causes)
      EXPECT_TRUE(cause == "recv r0" || cause == "recv r1" ||
                  cause == "send r0" || cause == "send r1" ||
                  cause == "allreduce" || cause == kUntraced)
          << cause;
}

TEST(Calibration, ARankSlowerThanItsPartnerIsFoundAndScaledOut) {
  // BitPipe at D=2 runs every stage on both ranks; in this run rank 0's
  // core was 20% slower than rank 1's (0.9 and 1.1 of the stages' times
  // below, whose mean they keep). The fit says so, and its per-stage means
  // (over both ranks) predict the run short: rank 1 waits for rank 0 where
  // the model sees no wait. Scaled to each rank's own compute, exactly.
  Schedule schedule = scheduleOf("bitpipe", 2, 8);
  CostModel even;
  even.forward = {10, 12, 11, 9};
  even.backward = {20, 25, 22, 18};
  CostModel run = even;
  run.rankComputeScale = {1.1, 0.9};
  Result<SimResult> sim = simulate(schedule, run);
  ASSERT_TRUE(sim.ok()) << sim.error;
  std::vector<RunEvent> trace = traceOf(*sim, 3);

  Result<Calibration> fit = calibrate(schedule, trace, 1);
  ASSERT_TRUE(fit.ok()) << fit.error;
  ASSERT_EQ(fit->rankComputeScale.size(), 2u);
  EXPECT_NEAR(fit->rankComputeScale[0], 1.1, 1e-9);
  EXPECT_NEAR(fit->rankComputeScale[1], 0.9, 1e-9);
  for (int s = 0; s < 4; ++s) {
    EXPECT_NEAR(fit->cost.forward[s], even.forward[s], 1e-9);
    EXPECT_NEAR(fit->cost.backward[s], even.backward[s], 1e-9);
  }
  EXPECT_TRUE(fit->cost.rankComputeScale.empty());

  Result<Prediction> plain = predict(schedule, fit->cost, trace, 1);
  Result<Prediction> atSpeed = predictAtRunSpeed(schedule, fit->cost, trace, 1);
  ASSERT_TRUE(plain.ok() && atSpeed.ok()) << plain.error << atSpeed.error;
  EXPECT_LT(plain->stepError(), -0.05);
  ASSERT_EQ(atSpeed->rankComputeScale.size(), 2u);
  EXPECT_NEAR(atSpeed->rankComputeScale[0], 1.1, 1e-9);
  EXPECT_NEAR(atSpeed->rankComputeScale[1], 0.9, 1e-9);
  EXPECT_NEAR(atSpeed->stepError(), 0.0, 1e-9);

  // 1F1B holds each stage on one rank: a rank's speed and its stage's cost
  // are one number there.
  Result<SimResult> oneRankEach = simulate(scheduleOf("1f1b", 2, 8), run);
  ASSERT_TRUE(oneRankEach.ok()) << oneRankEach.error;
  Result<Calibration> unseparable =
      calibrate(scheduleOf("1f1b", 2, 8), traceOf(*oneRankEach, 3), 1);
  ASSERT_TRUE(unseparable.ok()) << unseparable.error;
  EXPECT_TRUE(unseparable->rankComputeScale.empty());
  EXPECT_NEAR(unseparable->cost.forward[1], 12 * 0.9, 1e-9);
}

TEST(Calibration, ByStepDrawsReplayOneMeasuredStepOnEveryRank) {
  // A slowdown both ranks shared: every call of the second measured step
  // ran 3x slower. Drawn by step, each simulation replays one of the two
  // steps on both ranks; drawn call by call, fast and slow calls meet in
  // one simulation, and BitPipe, with no slack at D=2, waits for the slow.
  Schedule schedule = scheduleOf("bitpipe", 2, 8);
  CostModel fast, slow;
  fast.forward.assign(4, 10);
  fast.backward.assign(4, 20);
  slow.forward.assign(4, 30);
  slow.backward.assign(4, 60);
  Result<SimResult> a = simulate(schedule, fast), b = simulate(schedule, slow);
  ASSERT_TRUE(a.ok() && b.ok());
  std::vector<RunEvent> trace = traceOf(*a, 2); // step 0 is skipped
  for (RunEvent e : traceOf(*b, 1)) {
    e.start += 2 * (a->makespan + 10);
    trace.push_back(e);
  }
  Result<Calibration> fit = calibrate(schedule, trace, /*skip=*/1);
  ASSERT_TRUE(fit.ok()) << fit.error;
  EXPECT_EQ(fit->samples.forwardStep[0].size(), fit->samples.forward[0].size());

  const int draws = 100;
  Result<Prediction> byStep =
      predictWithSpread(schedule, fit->cost, fit->samples, trace, 1, draws,
                        /*seed=*/1, SpreadDraws::ByStep);
  ASSERT_TRUE(byStep.ok()) << byStep.error;
  double slowDraws = (byStep->simulatedStep - a->makespan) /
                     (b->makespan - a->makespan) * draws;
  EXPECT_NEAR(slowDraws, std::round(slowDraws), 1e-6);
  EXPECT_GT(slowDraws, 0);
  EXPECT_LT(slowDraws, draws);

  Result<Prediction> byCall = predictWithSpread(
      schedule, fit->cost, fit->samples, trace, 1, draws, /*seed=*/1);
  ASSERT_TRUE(byCall.ok()) << byCall.error;
  EXPECT_GT(byCall->simulatedStep, (a->makespan + b->makespan) / 2);

  StageSamples handMade;
  handMade.forward.assign(4, {10, 30});
  handMade.backward.assign(4, {20, 60});
  Result<Prediction> noSteps =
      predictWithSpread(schedule, fit->cost, handMade, trace, 1, draws,
                        /*seed=*/1, SpreadDraws::ByStep);
  ASSERT_FALSE(noSteps.ok());
  EXPECT_EQ(noSteps.error, "drawing by training step needs the step of "
                           "every measured time; stage 0 has none");
}

TEST(Calibration, TheFitKeepsEveryMeasuredTime) {
  Schedule schedule = scheduleOf("1f1b", 2, 4);
  std::vector<RunEvent> trace;
  // Two steps; in the measured one, s0's forwards take 1, 2, 3 and 6.
  for (int step = 0; step < 2; ++step) {
    double t = step * 1000;
    double f[] = {1, 2, 3, 6};
    for (int m = 0; m < 4; ++m) {
      trace.push_back({0, "F" + std::to_string(m) + ".s0", t + 10 * m, f[m]});
      std::string mb = std::to_string(m);
      trace.push_back({1, "F" + mb + ".s1", t + 100 + 10 * m, 1});
      trace.push_back({1, "B" + mb + ".s1", t + 105 + 10 * m, 2});
      trace.push_back({0, "B" + mb + ".s0", t + 200 + 10 * m, 2});
    }
  }
  Result<Calibration> fit = calibrate(schedule, trace, /*skip=*/1);
  ASSERT_TRUE(fit.ok()) << fit.error;
  std::vector<double> s0 = fit->samples.forward[0];
  std::sort(s0.begin(), s0.end());
  EXPECT_EQ(s0, (std::vector<double>{1, 2, 3, 6}));
  EXPECT_DOUBLE_EQ(fit->cost.forward[0], 3);
  EXPECT_EQ(fit->samples.backward[1].size(), 4u);
}

TEST(Calibration, TransferTimeFromPostsTheReceiverWaitedFor) {
  Schedule schedule = scheduleOf("1f1b", 2, 2);
  std::vector<RunEvent> trace;
  // One step per rank: F0 F1 B0 B1 on rank 0, F0 B0 F1 B1 on rank 1.
  auto compute = [&](int rank, const char *name, double start) {
    trace.push_back({rank, name, start, 1.0});
  };
  for (int step = 0; step < 2; ++step) {
    double t = step * 100;
    compute(0, "F0.s0", t + 0);
    compute(0, "F1.s0", t + 1);
    compute(0, "B0.s0", t + 20);
    compute(0, "B1.s0", t + 30);
    compute(1, "F0.s1", t + 10);
    compute(1, "B0.s1", t + 11);
    compute(1, "F1.s1", t + 12);
    compute(1, "B1.s1", t + 13);
    // Rank 1 waits from before the post: the wait's end - the post = 7.
    trace.push_back({0, "send r1 t4", t + 1, 0.1});
    trace.push_back({1, "recv r0 t4", t + 0.5, 7.5});
    // Rank 1 starts waiting after the post: only a bound, not a sample.
    trace.push_back({0, "send r1 t6", t + 2, 0.1});
    trace.push_back({1, "recv r0 t6", t + 11.5, 0.2});
  }
  // The k-th send of a tag meets the k-th wait: the second step's pair
  // gives 7 again.
  Result<Calibration> fit = calibrate(schedule, trace, 0);
  ASSERT_TRUE(fit.ok()) << fit.error;
  EXPECT_EQ(fit->transferSamples, 2);
  EXPECT_DOUBLE_EQ(fit->cost.p2pLatency, 7.0);
  EXPECT_DOUBLE_EQ(fit->cost.forward[0], 1.0);
}

TEST(Calibration, ReadsTheRuntimesChromeTrace) {
  Result<ChromeTrace> trace = readChromeTrace(
      R"({"displayTimeUnit":"ms","traceEvents":[)"
      R"({"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"rank 0"}},)"
      R"({"name":"F0.s0","cat":"forward","ph":"X","ts":1.5,"dur":2,"pid":0,"tid":0},)"
      R"({"name":"recv r0 t1","cat":"recv","ph":"X","ts":4,"dur":0.5,"pid":1,"tid":0}]})");
  ASSERT_TRUE(trace.ok()) << trace.error;
  const std::vector<RunEvent> &events = trace->events;
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].name, "F0.s0");
  EXPECT_DOUBLE_EQ(events[0].end(), 3.5);
  EXPECT_EQ(events[1].rank, 1);
  // Metadata is no data left out; every name is one a trace writes.
  EXPECT_EQ(trace->totalEvents, 3u);
  EXPECT_TRUE(trace->unused.empty());
}

// What a fit cannot read is counted, so that the tools say it: spans that
// are not complete ("B"/"E" pairs, instants) and names no bitpipe trace
// writes (another tool's, or a renamed stage call).
TEST(Calibration, CountsTheEventsItLeavesOut) {
  Result<ChromeTrace> trace = readChromeTrace(
      R"([{"name":"F0.s0","ph":"B","pid":0,"ts":0},)"
      R"({"name":"F0.s0","ph":"E","pid":0,"ts":1},)"
      R"({"name":"fwd0.s0","ph":"X","pid":0,"ts":1,"dur":1},)"
      R"j({"name":"AR(0,1)","ph":"X","pid":0,"tid":1,"ts":2,"dur":1},)j"
      R"({"name":"allreduce.wait b0","ph":"X","pid":0,"ts":2,"dur":1},)"
      R"({"name":"send r1 t0","ph":"X","pid":0,"ts":3,"dur":1},)"
      R"j({"name":"RECV_B2.s1<-P1","ph":"X","pid":0,"ts":3,"dur":1},)j"
      R"({"name":"COPY_F2.s1","ph":"X","pid":0,"ts":3,"dur":1},)"
      R"({"name":"optimizer","ph":"X","pid":0,"ts":4,"dur":1},)"
      R"({"name":"W2.s1x","ph":"X","pid":0,"ts":5,"dur":1}])");
  ASSERT_TRUE(trace.ok()) << trace.error;
  EXPECT_EQ(trace->events.size(), 8u);
  EXPECT_EQ(trace->unused.notSpans, 2u);
  EXPECT_EQ(trace->unused.unknownNames, 2u);
  EXPECT_EQ(trace->unused.describe(trace->totalEvents),
            "4 of 10 events unused: 2 not complete spans (first \"ph\" "
            "\"B\"), 2 spans with a name no bitpipe trace writes (first "
            "'fwd0.s0')");
}

TEST(Calibration, RefusesWhatIsNotARunOfTheSchedule) {
  EXPECT_NE(readChromeTrace("{").error.find("not JSON at line 1"),
            std::string::npos);
  EXPECT_NE(readChromeTrace(R"({"events":[]})").error.find("traceEvents"),
            std::string::npos);
  EXPECT_NE(readChromeTrace(R"([{"ph":"X","name":"F0.s0","pid":"zero",)"
                            R"("ts":1,"dur":1}])")
                .error.find("an integer \"pid\""),
            std::string::npos);
  // Durations and timestamps a machine can have; beyond them the fit's
  // sums would overflow into inf and NaN predictions.
  EXPECT_EQ(readChromeTrace(R"([{"ph":"X","name":"F0.s0","pid":0,)"
                            R"("ts":1,"dur":1e308}])")
                .error,
            "trace event 'F0.s0' has \"dur\" 1e+308; expected a duration "
            "from 0 to 1e+11 microseconds");
  EXPECT_EQ(readChromeTrace(R"([{"ph":"X","name":"F0.s0","pid":0,)"
                            R"("ts":1,"dur":-2}])")
                .error,
            "trace event 'F0.s0' has \"dur\" -2; expected a duration from 0 "
            "to 1e+11 microseconds");
  EXPECT_EQ(readChromeTrace(R"([{"ph":"X","name":"F0.s0","pid":0,)"
                            R"("ts":-1e300,"dur":1}])")
                .error,
            "trace event 'F0.s0' has \"ts\" -1e+300; expected a timestamp "
            "from -1e+17 to 1e+17 microseconds");

  Schedule schedule = scheduleOf("1f1b", 2, 2);
  std::vector<RunEvent> wrongRank = {{5, "F0.s0", 0, 1}};
  EXPECT_NE(measureRun(schedule, wrongRank, 0).error.find("rank 5"),
            std::string::npos);
  std::vector<RunEvent> wrongStage = {{0, "F0.s9", 0, 1}};
  EXPECT_NE(measureRun(schedule, wrongStage, 0).error.find("stage 9"),
            std::string::npos);
  std::vector<RunEvent> tooShort = {{0, "F0.s0", 0, 1}};
  EXPECT_NE(measureRun(schedule, tooShort, 0).error.find("0 complete step"),
            std::string::npos);
}

} // namespace
