//===- Calibration.cpp - The cost model fitted to a real run --------------===//

#include "bitpipe/Schedule/Calibration.h"

#include "RunSteps.h"

#include "bitpipe/Schedule/Comms.h"
#include "bitpipe/base/JsonTree.h"
#include "bitpipe/base/TraceFormat.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <tuple>

namespace bitpipe::sched {

using namespace detail;

namespace {

/// A failure of whichever Result the function returns.
struct Failure {
  std::string message;
  template <class T> operator Result<T>() const {
    return Result<T>::failure(message);
  }
};
Failure Error(std::string message) { return {std::move(message)}; }

Result<MeasuredRun> measure(const Schedule &schedule, const Steps &steps,
                            int skip) {
  if (std::string why = skipError(steps, skip); !why.empty())
    return Error(why);
  const int ranks = schedule.numRanks();
  MeasuredRun run;
  run.stepsUsed = steps.complete - skip;
  run.rankBubble.assign(ranks, 0);
  for (int s = skip; s < steps.complete; ++s) {
    auto [begin, end] = steps.window(s);
    std::vector<double> busy(ranks, 0);
    for (int r = 0; r < ranks; ++r)
      for (const Compute *c = steps.begin(r, s); c != steps.end(r, s); ++c)
        busy[r] += c->end - c->start;
    double window = end - begin;
    run.stepTime += window / run.stepsUsed;
    for (int r = 0; r < ranks; ++r)
      run.rankBubble[r] +=
          (window > 0 ? 1 - busy[r] / window : 0) / run.stepsUsed;
  }
  for (double b : run.rankBubble)
    run.bubble += b / ranks;
  return Result<MeasuredRun>::success(std::move(run));
}

/// The middle of `samples` (reordered), or `none` when there are none.
double median(std::vector<double> &samples, double none) {
  if (samples.empty())
    return none;
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2,
                   samples.end());
  return samples[samples.size() / 2];
}

/// The sorted ranks all-reduce `a` spans: every holder of its stages
/// (`holders`: Placement::replicaGroups).
std::vector<int>
allReduceMembers(const Action &a,
                 const std::vector<std::vector<int>> &holders) {
  std::set<int> members;
  for (int s : a.stages)
    if (s >= 0 && s < static_cast<int>(holders.size()))
      members.insert(holders[s].begin(), holders[s].end());
  return {members.begin(), members.end()};
}

/// The one group of ranks every all-reduce of the schedule spans, or an
/// empty one when there are none or several.
std::vector<int> onlyAllReduceGroup(const Schedule &schedule) {
  std::vector<std::vector<int>> holders = schedule.placement.replicaGroups();
  std::vector<int> only;
  for (const std::vector<Action> &actions : schedule.ranks)
    for (const Action &a : actions) {
      if (a.kind != ActionKind::AllReduce)
        continue;
      std::vector<int> group = allReduceMembers(a, holders);
      if (!only.empty() && group != only)
        return {};
      only = group;
    }
  return only;
}

/// The all-reduce times a run measures. Under MPI without a progress
/// thread a collective moves only inside its members' MPI calls: in
/// practice in the waits after the last compute, one after another
/// (CostModel::allReduceAfterCompute). So each step gives one sample: from
/// the members' last compute (or gradient sum, or all-reduce post: posts
/// are fitted on their own) to their last all-reduce wait's end, over the
/// collectives each member posted. That needs every all-reduce of the
/// schedule over one group.
std::vector<double> allReduceSamples(const Schedule &schedule,
                                     const Steps &steps, int skip) {
  std::vector<int> group = onlyAllReduceGroup(schedule);
  std::vector<double> samples;
  if (group.empty())
    return samples;
  for (int s = skip; s < steps.complete; ++s) {
    double computeEnd = -1e300, sumEnd = -1e300;
    size_t collectives = SIZE_MAX;
    for (int r : group) {
      computeEnd = std::max(computeEnd, steps.workEnd(r, s));
      for (const BucketSpan &p : steps.inStep(steps.allReducePosts[r], s))
        computeEnd = std::max(computeEnd, p.end);
      for (const BucketSpan &w : steps.inStep(steps.allReduceWaits[r], s))
        sumEnd = std::max(sumEnd, w.end);
      collectives = std::min(collectives,
                             steps.inStep(steps.allReducePosts[r], s).size());
    }
    if (collectives > 0 && collectives != SIZE_MAX && sumEnd > computeEnd)
      samples.push_back((sumEnd - computeEnd) / collectives);
  }
  return samples;
}

/// The all-reduce times a GPU run measures: NCCL runs a collective on its
/// stream once every member has launched it, beside compute, so each
/// collective gives one sample, from its last member's start to its last
/// member's end. A rank's collectives are on its all-reduce stream in its
/// program's order; the k-th of a rank with replica group G meets the k-th
/// of every other member of G, as the simulator matches them. A rank whose
/// step holds another number of collectives than its program is left out.
std::vector<double> deviceAllReduceSamples(const Schedule &schedule,
                                           const Steps &steps, int skip) {
  const std::vector<std::vector<int>> holders =
      schedule.placement.replicaGroups();
  std::vector<std::vector<std::vector<int>>> groupOf(schedule.numRanks());
  for (int r = 0; r < schedule.numRanks(); ++r)
    for (const Action &a : schedule.ranks[r])
      if (a.kind == ActionKind::AllReduce)
        groupOf[r].push_back(allReduceMembers(a, holders));
  std::vector<double> samples;
  for (int s = skip; s < steps.complete; ++s) {
    struct Meeting {
      double lastStart = -1e300, lastEnd = -1e300;
      size_t members = 0;
    };
    std::map<std::pair<std::vector<int>, int>, Meeting> meetings;
    for (int r = 0; r < schedule.numRanks(); ++r) {
      std::vector<BucketSpan> spans = steps.inStep(steps.allReduceWaits[r], s);
      if (spans.size() != groupOf[r].size())
        continue;
      std::map<std::vector<int>, int> seen;
      for (size_t i = 0; i < spans.size(); ++i) {
        const std::vector<int> &group = groupOf[r][i];
        Meeting &m = meetings[{group, seen[group]++}];
        m.lastStart = std::max(m.lastStart, spans[i].start);
        m.lastEnd = std::max(m.lastEnd, spans[i].end);
        ++m.members;
      }
    }
    for (const auto &[key, m] : meetings)
      if (key.first.size() > 1 && m.members == key.first.size())
        samples.push_back(m.lastEnd - m.lastStart);
  }
  return samples;
}

/// Calibration::rankComputeScale from each (kind, stage)'s per-rank sums
/// and counts: a rank's times in the stages it shared with another rank,
/// over what those stages' means (unweighted over the ranks, so that a rank
/// that ran a stage more often does not set its cost) would have given,
/// normalised to a mean of 1 over the ranks measured. Ranks that shared no
/// stage keep 1.
std::vector<double>
rankComputeScale(const std::map<std::pair<ActionKind, int>,
                                std::map<int, std::pair<double, int>>> &byRank,
                 int ranks) {
  std::vector<double> actual(ranks, 0), expected(ranks, 0);
  for (const auto &[stage, perRank] : byRank) {
    if (perRank.size() < 2)
      continue;
    double mean = 0;
    for (const auto &[rank, sumCount] : perRank)
      mean += sumCount.first / sumCount.second / perRank.size();
    for (const auto &[rank, sumCount] : perRank) {
      actual[rank] += sumCount.first;
      expected[rank] += sumCount.second * mean;
    }
  }
  std::vector<double> scale(ranks, 1);
  double sum = 0;
  int measured = 0;
  for (int r = 0; r < ranks; ++r)
    if (expected[r] > 0) {
      scale[r] = actual[r] / expected[r];
      sum += scale[r];
      ++measured;
    }
  if (measured == 0)
    return {};
  for (int r = 0; r < ranks; ++r)
    if (expected[r] > 0)
      scale[r] *= measured / sum;
  return scale;
}

} // namespace

std::string UnusedEvents::describe(size_t events) const {
  std::string text = std::to_string(notSpans + unknownNames) + " of " +
                     std::to_string(events) + " events unused: ";
  if (notSpans)
    text += std::to_string(notSpans) + " not complete spans (first \"ph\" \"" +
            firstNotSpan + "\")";
  if (notSpans && unknownNames)
    text += ", ";
  if (unknownNames)
    text += std::to_string(unknownNames) + " span" +
            (unknownNames == 1 ? "" : "s") +
            " with a name no bitpipe trace writes (first '" + firstUnknownName +
            "')";
  return text;
}

/// A span name of a run's trace or of the simulator's.
static bool isKnownSpanName(const std::string &name) {
  return trace::isRunSpanName(name) || isCommActionName(name);
}

Result<ChromeTrace> readChromeTrace(const std::string &text) {
  json::JsonValue root;
  json::JsonError error;
  if (!json::readJson(text, root, error)) {
    auto [line, column] = json::lineAndColumn(text, error.offset);
    return Error("not JSON at line " + std::to_string(line) + ", column " +
                 std::to_string(column) + ": " + error.what);
  }
  const json::JsonValue *list = &root;
  if (root.kind == json::JsonValue::Kind::Object)
    list = root.get("traceEvents");
  if (!list || list->kind != json::JsonValue::Kind::Array)
    return Error("expected a Chrome trace: an object with a \"traceEvents\" "
                 "array, or that array");
  ChromeTrace trace;
  trace.totalEvents = list->array.size();
  UnusedEvents &unused = trace.unused;
  for (const json::JsonValue &v : list->array) {
    const json::JsonValue *ph = v.get("ph");
    bool isString = ph && ph->kind == json::JsonValue::Kind::String;
    if (isString && ph->string == "M")
      continue;
    if (!isString || ph->string != "X") {
      if (!unused.notSpans++)
        unused.firstNotSpan = ph ? (isString ? ph->string : ph->str()) : "";
      continue;
    }
    const json::JsonValue *name = v.get("name"), *pid = v.get("pid"),
                          *ts = v.get("ts"), *dur = v.get("dur");
    if (!name || name->kind != json::JsonValue::Kind::String || !pid ||
        !pid->isInteger || !ts || ts->kind != json::JsonValue::Kind::Number ||
        !dur || dur->kind != json::JsonValue::Kind::Number)
      return Error("trace event " + v.str() +
                   " lacks a string \"name\", an integer \"pid\" or numbers "
                   "\"ts\" and \"dur\"");
    // Times a machine can have (microseconds): a duration up to about 28
    // hours, a timestamp within 3,000 years of the trace's epoch. Beyond
    // them the sums of the fit overflow into inf and NaN predictions.
    constexpr double kMaxDurationUs = 1e11, kMaxTimestampUs = 1e17;
    if (!(dur->number >= 0 && dur->number <= kMaxDurationUs))
      return Error("trace event '" + name->string + "' has \"dur\" " +
                   dur->str() +
                   "; expected a duration from 0 to 1e+11 microseconds");
    if (!(std::fabs(ts->number) <= kMaxTimestampUs))
      return Error("trace event '" + name->string + "' has \"ts\" " +
                   ts->str() +
                   "; expected a timestamp from -1e+17 to 1e+17 "
                   "microseconds");
    // The row: absent (one row per rank) is the host's.
    const json::JsonValue *tid = v.get("tid");
    if (tid && !tid->isInteger)
      return Error("trace event '" + name->string + "' has a \"tid\" " +
                   tid->str() + "; expected an integer (its row)");
    if (!isKnownSpanName(name->string) && !unused.unknownNames++)
      unused.firstUnknownName = name->string;
    trace.events.push_back({static_cast<int>(pid->integer), name->string,
                            ts->number, dur->number,
                            tid ? static_cast<int>(tid->integer) : 0});
  }
  return Result<ChromeTrace>::success(std::move(trace));
}

Result<MeasuredRun> measureRun(const Schedule &schedule,
                               const std::vector<RunEvent> &events, int skip) {
  Result<Steps> steps = cutSteps(schedule, events);
  if (!steps)
    return Error(steps.error);
  return measure(schedule, *steps, skip);
}

Result<Calibration> calibrate(const Schedule &schedule,
                              const std::vector<RunEvent> &events, int skip) {
  Result<Steps> cut = cutSteps(schedule, events);
  if (!cut)
    return Error(cut.error);
  Result<MeasuredRun> run = measure(schedule, *cut, skip);
  if (!run)
    return Error(run.error);
  const Steps &steps = *cut;
  const int stages = schedule.placement.numStages;

  // Compute: each stage's mean time per kind over the measured steps, with
  // the gradient sums the call left (traced after it, before the rank's
  // next call).
  Calibration out;
  std::map<std::pair<ActionKind, int>, std::vector<double>> times;
  std::map<std::pair<ActionKind, int>, std::vector<int>> stepOf;
  // (kind, stage) -> rank -> the sum and count of its times there.
  std::map<std::pair<ActionKind, int>, std::map<int, std::pair<double, int>>>
      byRank;
  double measuredFrom = 1e300;
  for (size_t r = 0; r < steps.perRank.size(); ++r)
    for (size_t i = skip * steps.perStep[r];
         i < steps.complete * steps.perStep[r]; ++i) {
      const Compute &c = steps.perRank[r][i];
      double time = c.end - c.start;
      times[{c.kind, c.stage}].push_back(time);
      auto &[sum, count] = byRank[{c.kind, c.stage}][static_cast<int>(r)];
      sum += time;
      ++count;
      stepOf[{c.kind, c.stage}].push_back(
          static_cast<int>(i / steps.perStep[r]));
      ++out.computeSamples;
      measuredFrom = std::min(measuredFrom, c.start);
    }
  CostModel &cost = out.cost;
  cost.forward.assign(stages, 0);
  cost.backward.assign(stages, 0);
  cost.weightGrad.assign(stages, 0);
  StageSamples &spread = out.samples;
  spread.forward.assign(stages, {});
  spread.backward.assign(stages, {});
  spread.weightGrad.assign(stages, {});
  spread.forwardStep.assign(stages, {});
  spread.backwardStep.assign(stages, {});
  spread.weightGradStep.assign(stages, {});
  for (auto &[key, measured] : times) {
    bool f = key.first == ActionKind::Forward;
    bool b = key.first == ActionKind::Backward;
    std::vector<double> &mean = f   ? cost.forward
                                : b ? cost.backward
                                    : cost.weightGrad;
    double sum = 0;
    for (double t : measured)
      sum += t;
    mean[key.second] = sum / static_cast<double>(measured.size());
    (f   ? spread.forward
     : b ? spread.backward
         : spread.weightGrad)[key.second] = std::move(measured);
    (f   ? spread.forwardStep
     : b ? spread.backwardStep
         : spread.weightGradStep)[key.second] = std::move(stepOf[key]);
  }

  out.rankComputeScale = rankComputeScale(byRank, schedule.numRanks());

  // Transfers: the k-th send from a to b with a tag meets b's k-th
  // receive of that tag.
  //  - CPU (the host's spans): when the receiver was already waiting at the
  //    post, its wait ends when the data is there, so that end minus the
  //    post is the transfer's time; when it began waiting later, the data
  //    may have come any time before, and the pair only bounds it.
  //  - GPU (the NCCL kernels on the point-to-point stream's row): a
  //    transfer moves once both ends are launched, and both kernels run
  //    until it has: every pair gives the later start to the receive's end.
  const int transferRow =
      steps.device ? trace::kPointToPointStreamRow : trace::kHostRow;
  using Span = std::pair<double, double>;
  std::map<std::tuple<int, int, int>, std::vector<Span>> sends, receives;
  for (const RunEvent &e : events) {
    int peer, tag;
    if (e.start < measuredFrom || e.row != transferRow)
      continue;
    if (trace::parseSpan(e.name, trace::kSendFormat, peer, tag))
      sends[{e.rank, peer, tag}].push_back({e.start, e.end()});
    else if (trace::parseSpan(e.name, trace::kRecvFormat, peer, tag))
      receives[{peer, e.rank, tag}].push_back({e.start, e.end()});
  }
  std::vector<double> samples;
  for (auto &[key, sent] : sends) {
    auto it = receives.find(key);
    if (it == receives.end())
      continue;
    std::vector<Span> &got = it->second;
    std::sort(sent.begin(), sent.end());
    std::sort(got.begin(), got.end());
    for (size_t k = 0; k < std::min(sent.size(), got.size()); ++k) {
      double posted = sent[k].first;
      if (steps.device)
        samples.push_back(got[k].second - std::max(posted, got[k].first));
      else if (got[k].first <= posted && got[k].second >= posted)
        samples.push_back(got[k].second - posted);
    }
  }
  out.transferSamples = static_cast<int>(samples.size());
  cost.p2pLatency = median(samples, cost.p2pLatency);

  if (steps.device) {
    // NCCL: transfers in groups on their channels' streams, all-reduces on
    // their groups' streams beside compute, posts that cost the rank
    // nothing measurable.
    out.fromDevice = true;
    cost.transport = Transport::Nccl;
    std::vector<double> collectives =
        deviceAllReduceSamples(schedule, steps, skip);
    out.allReduceSamples = static_cast<int>(collectives.size());
    cost.allReduceLatency = median(collectives, cost.allReduceLatency);
    return Result<Calibration>::success(std::move(out));
  }
  std::vector<double> collectives = allReduceSamples(schedule, steps, skip);
  out.allReduceSamples = static_cast<int>(collectives.size());
  cost.allReduceLatency = median(collectives, cost.allReduceLatency);
  std::vector<double> postTimes;
  for (int r = 0; r < schedule.numRanks(); ++r)
    for (int s = skip; s < steps.complete; ++s)
      for (const BucketSpan &p : steps.inStep(steps.allReducePosts[r], s))
        postTimes.push_back(p.end - p.start);
  out.allReducePostSamples = static_cast<int>(postTimes.size());
  cost.allReducePostTime = median(postTimes, cost.allReducePostTime);
  cost.allReduceAfterCompute = true; // the runs are MPI's
  return Result<Calibration>::success(std::move(out));
}

namespace {

/// The simulation a prediction compares a run with: whether and how long
/// the schedule runs, so no timeline; a deadlock is an error.
Result<SimResult> simulateForPrediction(const Schedule &schedule,
                                        const CostModel &cost) {
  SimulateOptions options;
  options.recordTimeline = false;
  Result<SimResult> sim = simulate(schedule, cost, options);
  if (sim && sim->deadlocked)
    return Error(sim->deadlockReport());
  return sim;
}

/// A run measured from its trace, and its simulation under a cost model.
struct RunAndSimulation {
  MeasuredRun run;
  SimResult sim;
};
Result<RunAndSimulation> measureAndSimulate(const Schedule &schedule,
                                            const CostModel &cost,
                                            const std::vector<RunEvent> &events,
                                            int skip) {
  Result<MeasuredRun> run = measureRun(schedule, events, skip);
  if (!run)
    return Error(run.error);
  Result<SimResult> sim = simulateForPrediction(schedule, cost);
  if (!sim)
    return Error(sim.error);
  return Result<RunAndSimulation>::success({std::move(*run), std::move(*sim)});
}

/// `run` against the simulated step `sim`.
Prediction compare(const MeasuredRun &run, const SimResult &sim) {
  Prediction p;
  p.measured = run;
  p.simulatedStep = sim.makespan;
  p.simulatedBubble = sim.bubbleRatio;
  return p;
}

/// One kind's samples, by stage and, for SpreadDraws::ByStep, by training
/// step.
struct KindSamples {
  const std::vector<std::vector<double>> *times = nullptr;
  /// [stage] -> training step -> that step's times, in trace order.
  std::vector<std::map<int, std::vector<double>>> byStep;
};

} // namespace

Result<Prediction> predictWithSpread(const Schedule &schedule,
                                     const CostModel &cost,
                                     const StageSamples &samples,
                                     const std::vector<RunEvent> &events,
                                     int skip, int draws, unsigned seed,
                                     SpreadDraws how) {
  if (draws < 1)
    return Error("the spread needs at least one draw, got " +
                 std::to_string(draws));
  Result<MeasuredRun> run = measureRun(schedule, events, skip);
  if (!run)
    return Error(run.error);
  // Forward, backward, weight gradient.
  KindSamples kinds[3] = {{&samples.forward, {}},
                          {&samples.backward, {}},
                          {&samples.weightGrad, {}}};
  const std::vector<std::vector<int>> *stepsOf[3] = {
      &samples.forwardStep, &samples.backwardStep, &samples.weightGradStep};
  std::vector<int> measuredSteps; // every step some stage was measured in
  if (how == SpreadDraws::ByStep) {
    for (int k = 0; k < 3; ++k) {
      const std::vector<std::vector<double>> &times = *kinds[k].times;
      const std::vector<std::vector<int>> &stepOf = *stepsOf[k];
      kinds[k].byStep.resize(times.size());
      for (size_t stage = 0; stage < times.size(); ++stage) {
        if (stage >= stepOf.size() ||
            stepOf[stage].size() != times[stage].size())
          return Error("drawing by training step needs the step of every "
                       "measured time; stage " +
                       std::to_string(stage) + " has none");
        for (size_t i = 0; i < times[stage].size(); ++i) {
          kinds[k].byStep[stage][stepOf[stage][i]].push_back(times[stage][i]);
          measuredSteps.push_back(stepOf[stage][i]);
        }
      }
    }
    std::sort(measuredSteps.begin(), measuredSteps.end());
    measuredSteps.erase(std::unique(measuredSteps.begin(), measuredSteps.end()),
                        measuredSteps.end());
  }
  std::mt19937_64 random(seed);
  auto anyOf = [&](const std::vector<double> &times) {
    return times[std::uniform_int_distribution<size_t>(0, times.size() -
                                                              1)(random)];
  };
  CostModel drawn = cost;
  Prediction p;
  p.measured = *run;
  for (int d = 0; d < draws; ++d) {
    // ByStep: the replayed training step, and how many calls of each kind
    // and stage have taken one of its times.
    int step = measuredSteps.empty()
                   ? -1
                   : measuredSteps[std::uniform_int_distribution<size_t>(
                         0, measuredSteps.size() - 1)(random)];
    std::map<std::pair<int, int>, size_t> calls;
    // A measured time of stage `stage`'s kind `k`: the next of the
    // replayed step's, or (by call, or a stage that step lacks) any.
    auto measuredTime = [&](int k, int stage) {
      if (step >= 0) {
        auto it = kinds[k].byStep[stage].find(step);
        if (it != kinds[k].byStep[stage].end())
          return it->second[calls[{k, stage}]++ % it->second.size()];
      }
      return anyOf((*kinds[k].times)[stage]);
    };
    drawn.actionTimes.assign(schedule.numRanks(), {});
    for (int r = 0; r < schedule.numRanks(); ++r)
      for (const Action &a : schedule.ranks[r]) {
        int k = a.kind == ActionKind::Forward      ? 0
                : a.kind == ActionKind::Backward   ? 1
                : a.kind == ActionKind::WeightGrad ? 2
                                                   : -1;
        double time = 0; // unread for an all-reduce (allReducePostTime)
        if (k >= 0) {
          const std::vector<std::vector<double>> &times = *kinds[k].times;
          if (a.stage >= 0 && static_cast<size_t>(a.stage) < times.size() &&
              !times[a.stage].empty())
            time = measuredTime(k, a.stage);
          else
            time = k == 0   ? cost.forwardTime(a.stage)
                   : k == 1 ? cost.backwardTime(a.stage)
                            : cost.weightGradTime(a.stage);
        }
        drawn.actionTimes[r].push_back(time);
      }
    Result<SimResult> sim = simulateForPrediction(schedule, drawn);
    if (!sim)
      return Error(sim.error);
    p.simulatedStep += sim->makespan / draws;
    p.simulatedBubble += sim->bubbleRatio / draws;
  }
  return Result<Prediction>::success(std::move(p));
}

Result<Prediction> predictAtRunSpeed(const Schedule &schedule,
                                     const CostModel &cost,
                                     const std::vector<RunEvent> &events,
                                     int skip) {
  Result<RunAndSimulation> base =
      measureAndSimulate(schedule, cost, events, skip);
  if (!base)
    return Error(base.error);
  const MeasuredRun &run = base->run;
  // Each rank's compute per step: measured (the step less the rank's
  // bubble) over simulated.
  CostModel scaled = cost;
  scaled.rankComputeScale.assign(schedule.numRanks(), 1);
  for (int r = 0; r < schedule.numRanks(); ++r) {
    double measured = run.stepTime * (1 - run.rankBubble[r]);
    double simulated = base->sim.ranks[r].busy;
    if (measured <= 0 || simulated <= 0)
      return Error("rank " + std::to_string(r) +
                   " computes nothing in the run or its simulation: no "
                   "speed to scale to");
    scaled.rankComputeScale[r] = cost.computeScale(r) * measured / simulated;
  }
  Result<SimResult> scaledSim = simulateForPrediction(schedule, scaled);
  if (!scaledSim)
    return Error(scaledSim.error);
  Prediction p = compare(run, *scaledSim);
  p.rankComputeScale = scaled.rankComputeScale;
  return Result<Prediction>::success(std::move(p));
}

Result<Prediction> predict(const Schedule &schedule, const CostModel &cost,
                           const std::vector<RunEvent> &events, int skip) {
  Result<RunAndSimulation> base =
      measureAndSimulate(schedule, cost, events, skip);
  if (!base)
    return Error(base.error);
  return Result<Prediction>::success(compare(base->run, base->sim));
}

} // namespace bitpipe::sched
