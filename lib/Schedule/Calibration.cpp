//===- Calibration.cpp - The cost model fitted to a real run --------------===//

#include "bitpipe/Schedule/Calibration.h"

#include "bitpipe/Schedule/GridText.h"

#include "core/JsonTree.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

namespace bitpipe::sched {

namespace {

/// A failure of whichever Result the function returns.
struct Failure {
  std::string message;
  template <class T> operator Result<T>() const {
    return Result<T>::failure(message);
  }
};
Failure Error(std::string message) { return {std::move(message)}; }

/// A compute event's name, "F3.s2", as the text grid spells actions
/// (GridText.h); false for anything else (transfers, all-reduces, ...).
bool parseCompute(const std::string &name, ActionKind &kind, int &stage) {
  Result<Action> action = parseAction(name);
  if (!action || action->kind == ActionKind::AllReduce)
    return false;
  kind = action->kind;
  stage = action->stage;
  return true;
}

/// "send r1 t5" / "recv r1 t5" -> peer, tag.
bool parseTransfer(const std::string &name, const char *verb, int &peer,
                   int &tag) {
  char tail = 0;
  std::string format = std::string(verb) + " r%d t%d%c";
  return std::sscanf(name.c_str(), format.c_str(), &peer, &tag, &tail) == 2;
}

struct Compute {
  ActionKind kind;
  int stage;
  double start, end;
};

/// Each rank's compute events in time order, cut into steps.
struct Steps {
  std::vector<std::vector<Compute>> perRank;
  std::vector<size_t> perStep; ///< Compute actions per step, per rank.
  int complete = 0;            ///< Complete steps in the trace.
};

Result<Steps> cutSteps(const Schedule &schedule,
                       const std::vector<RunEvent> &events) {
  Steps steps;
  const int ranks = schedule.numRanks();
  steps.perRank.resize(ranks);
  for (const RunEvent &e : events) {
    Compute c;
    if (!parseCompute(e.name, c.kind, c.stage))
      continue;
    if (e.rank < 0 || e.rank >= ranks)
      return Error("trace event '" + e.name + "' on rank " +
                   std::to_string(e.rank) + ", outside the schedule's " +
                   std::to_string(ranks) + " ranks");
    if (c.stage >= schedule.placement.numStages)
      return Error("trace event '" + e.name + "' names stage " +
                   std::to_string(c.stage) + ", but the schedule has " +
                   std::to_string(schedule.placement.numStages));
    c.start = e.start;
    c.end = e.end();
    steps.perRank[e.rank].push_back(c);
  }
  steps.complete = -1;
  for (int r = 0; r < ranks; ++r) {
    std::stable_sort(
        steps.perRank[r].begin(), steps.perRank[r].end(),
        [](const Compute &a, const Compute &b) { return a.start < b.start; });
    size_t n = std::count_if(
        schedule.ranks[r].begin(), schedule.ranks[r].end(),
        [](const Action &a) { return a.kind != ActionKind::AllReduce; });
    steps.perStep.push_back(n);
    int here = n ? static_cast<int>(steps.perRank[r].size() / n) : 0;
    steps.complete = steps.complete < 0 ? here : std::min(steps.complete, here);
  }
  steps.complete = std::max(steps.complete, 0);
  return Result<Steps>::success(std::move(steps));
}

Result<MeasuredRun> measure(const Schedule &schedule, const Steps &steps,
                            int skip) {
  if (skip < 0)
    return Error("steps to skip must not be negative, got " +
                 std::to_string(skip));
  if (steps.complete <= skip)
    return Error("the trace holds " + std::to_string(steps.complete) +
                 " complete step(s) of this schedule; need more than the " +
                 std::to_string(skip) + " skipped");
  const int ranks = schedule.numRanks();
  MeasuredRun run;
  run.stepsUsed = steps.complete - skip;
  run.rankBubble.assign(ranks, 0);
  for (int s = skip; s < steps.complete; ++s) {
    double begin = 1e300, end = -1e300;
    std::vector<double> busy(ranks, 0);
    for (int r = 0; r < ranks; ++r)
      for (size_t i = s * steps.perStep[r]; i < (s + 1) * steps.perStep[r];
           ++i) {
        const Compute &c = steps.perRank[r][i];
        begin = std::min(begin, c.start);
        end = std::max(end, c.end);
        busy[r] += c.end - c.start;
      }
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

} // namespace

Result<std::vector<RunEvent>> readChromeTrace(const std::string &text) {
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
  std::vector<RunEvent> events;
  for (const json::JsonValue &v : list->array) {
    const json::JsonValue *ph = v.get("ph");
    if (!ph || ph->kind != json::JsonValue::Kind::String || ph->string != "X")
      continue;
    const json::JsonValue *name = v.get("name"), *pid = v.get("pid"),
                          *ts = v.get("ts"), *dur = v.get("dur");
    if (!name || name->kind != json::JsonValue::Kind::String || !pid ||
        !pid->isInteger || !ts || ts->kind != json::JsonValue::Kind::Number ||
        !dur || dur->kind != json::JsonValue::Kind::Number)
      return Error("trace event " + v.str() +
                   " lacks a string \"name\", an integer \"pid\" or numbers "
                   "\"ts\" and \"dur\"");
    if (dur->number < 0)
      return Error("trace event '" + name->string +
                   "' has a negative "
                   "duration " +
                   dur->str());
    events.push_back({static_cast<int>(pid->integer), name->string, ts->number,
                      dur->number});
  }
  return Result<std::vector<RunEvent>>::success(std::move(events));
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

  // Compute: each stage's mean time per kind over the measured steps.
  Calibration out;
  std::map<std::pair<ActionKind, int>, std::pair<double, int>> sums;
  double measuredFrom = 1e300;
  for (size_t r = 0; r < steps.perRank.size(); ++r)
    for (size_t i = skip * steps.perStep[r];
         i < steps.complete * steps.perStep[r]; ++i) {
      const Compute &c = steps.perRank[r][i];
      auto &[sum, count] = sums[{c.kind, c.stage}];
      sum += c.end - c.start;
      ++count;
      ++out.computeSamples;
      measuredFrom = std::min(measuredFrom, c.start);
    }
  CostModel &cost = out.cost;
  cost.forward.assign(stages, 0);
  cost.backward.assign(stages, 0);
  cost.weightGrad.assign(stages, 0);
  for (const auto &[key, value] : sums) {
    std::vector<double> &lane = key.first == ActionKind::Forward ? cost.forward
                                : key.first == ActionKind::Backward
                                    ? cost.backward
                                    : cost.weightGrad;
    lane[key.second] = value.first / value.second;
  }

  // Transfers: the k-th send from a to b with a tag meets the k-th wait on
  // b for that tag. When the receiver was already waiting at the post, the
  // wait ends when the data is there: that difference is the transfer's
  // time. Otherwise the data may have come any time before the wait.
  std::map<std::tuple<int, int, int>, std::vector<double>> posts;
  std::map<std::tuple<int, int, int>, std::vector<std::pair<double, double>>>
      waits;
  for (const RunEvent &e : events) {
    int peer, tag;
    if (e.start < measuredFrom)
      continue;
    if (parseTransfer(e.name, "send", peer, tag))
      posts[{e.rank, peer, tag}].push_back(e.start);
    else if (parseTransfer(e.name, "recv", peer, tag))
      waits[{peer, e.rank, tag}].push_back({e.start, e.end()});
  }
  std::vector<double> samples;
  for (auto &[key, sent] : posts) {
    auto it = waits.find(key);
    if (it == waits.end())
      continue;
    std::vector<std::pair<double, double>> &got = it->second;
    std::sort(sent.begin(), sent.end());
    std::sort(got.begin(), got.end());
    for (size_t k = 0; k < std::min(sent.size(), got.size()); ++k)
      if (got[k].first <= sent[k] && got[k].second >= sent[k])
        samples.push_back(got[k].second - sent[k]);
  }
  out.transferSamples = static_cast<int>(samples.size());
  if (!samples.empty()) {
    std::nth_element(samples.begin(), samples.begin() + samples.size() / 2,
                     samples.end());
    cost.p2pLatency = samples[samples.size() / 2];
  }
  return Result<Calibration>::success(std::move(out));
}

Result<Prediction> predict(const Schedule &schedule, const CostModel &cost,
                           const std::vector<RunEvent> &events, int skip) {
  Result<MeasuredRun> run = measureRun(schedule, events, skip);
  if (!run)
    return Error(run.error);
  Result<SimResult> sim = simulate(schedule, cost);
  if (!sim)
    return Error(sim.error);
  if (sim->deadlocked)
    return Error(sim->deadlockReport());
  Prediction p;
  p.measured = *run;
  p.simulatedStep = sim->makespan;
  p.simulatedBubble = sim->bubbleRatio;
  return Result<Prediction>::success(std::move(p));
}

} // namespace bitpipe::sched
