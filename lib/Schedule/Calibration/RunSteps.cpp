//===- RunSteps.cpp - A traced run's compute cut into steps ---------------===//

#include "RunSteps.h"

#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/base/TraceFormat.h"

#include <algorithm>
#include <limits>

namespace bitpipe::sched::detail {

bool parseCompute(const std::string &name, ActionKind &kind, int &stage) {
  Result<Action> action = parseAction(name);
  if (!action || action->kind == ActionKind::AllReduce)
    return false;
  kind = action->kind;
  stage = action->stage;
  return true;
}

bool isDeviceTrace(const std::vector<RunEvent> &events) {
  ActionKind kind;
  int stage;
  return std::any_of(events.begin(), events.end(), [&](const RunEvent &e) {
    return e.row == trace::kComputeStreamRow &&
           parseCompute(e.name, kind, stage);
  });
}

double Steps::start(int step) const {
  double first = std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < perRank.size(); ++r)
    if ((step + 1) * perStep[r] <= perRank[r].size() && perStep[r] > 0)
      first = std::min(first, begin(r, step)->start);
  return first;
}

std::vector<BucketSpan> Steps::inStep(const std::vector<BucketSpan> &all,
                                      int step) const {
  double from = start(step), to = start(step + 1);
  std::vector<BucketSpan> out;
  for (const BucketSpan &s : all)
    if (s.start >= from && s.start < to)
      out.push_back(s);
  return out;
}

double Steps::workEnd(int rank, int step) const {
  double last = -1e300;
  for (const Compute *c = begin(rank, step); c != end(rank, step); ++c)
    last = std::max(last, c->end);
  return last;
}

std::pair<double, double> Steps::window(int step) const {
  double last = -1e300;
  for (size_t r = 0; r < perRank.size(); ++r) {
    last = std::max(last, workEnd(r, step));
    for (const BucketSpan &wait : inStep(allReduceWaits[r], step))
      last = std::max(last, wait.end);
  }
  return {start(step), last};
}

Result<Steps> cutSteps(const Schedule &schedule,
                       const std::vector<RunEvent> &events) {
  Steps steps;
  const int ranks = schedule.numRanks();
  steps.perRank.resize(ranks);
  steps.allReducePosts.resize(ranks);
  steps.allReduceWaits.resize(ranks);
  steps.device = isDeviceTrace(events);
  // The rows each kind of span is read from (TraceFormat.h): on a GPU, the
  // device's streams; the host's spans of the same work only enqueued it.
  const int computeRow =
      steps.device ? trace::kComputeStreamRow : trace::kHostRow;
  for (const RunEvent &e : events) {
    Compute c;
    int bucket;
    bool post = false, wait = false, compute = false;
    if (steps.device) {
      // A collective on the all-reduce stream: its end is when the sum is
      // there, as a CPU run's wait's is.
      wait = e.row == trace::kAllReduceStreamRow &&
             trace::parseSpan(e.name, trace::kAllReducePostFormat, bucket);
    } else if (e.row == trace::kHostRow) {
      post = trace::parseSpan(e.name, trace::kAllReducePostFormat, bucket);
      wait = !post &&
             trace::parseSpan(e.name, trace::kAllReduceWaitFormat, bucket);
    }
    compute = !post && !wait && e.row == computeRow &&
              parseCompute(e.name, c.kind, c.stage);
    if (!post && !wait && !compute)
      continue;
    if (e.rank < 0 || e.rank >= ranks)
      return Result<Steps>::failure(
          "trace event '" + e.name + "' on rank " + std::to_string(e.rank) +
          ", outside the schedule's " + std::to_string(ranks) + " ranks");
    if (post || wait) {
      (post ? steps.allReducePosts : steps.allReduceWaits)[e.rank].push_back(
          {bucket, e.start, e.end()});
      continue;
    }
    if (c.stage >= schedule.placement.numStages)
      return Result<Steps>::failure(
          "trace event '" + e.name + "' names stage " +
          std::to_string(c.stage) + ", but the schedule has " +
          std::to_string(schedule.placement.numStages));
    c.start = e.start;
    c.end = e.end();
    steps.perRank[e.rank].push_back(c);
  }
  auto byStart = [](const BucketSpan &a, const BucketSpan &b) {
    return a.start < b.start;
  };
  for (int r = 0; r < ranks; ++r) {
    std::stable_sort(steps.allReducePosts[r].begin(),
                     steps.allReducePosts[r].end(), byStart);
    std::stable_sort(steps.allReduceWaits[r].begin(),
                     steps.allReduceWaits[r].end(), byStart);
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

std::string skipError(const Steps &steps, int skip) {
  if (skip < 0)
    return "steps to skip must not be negative, got " + std::to_string(skip);
  if (steps.complete <= skip)
    return "the trace holds " + std::to_string(steps.complete) +
           " complete step(s) of this schedule; need more than the " +
           std::to_string(skip) + " skipped";
  return "";
}

} // namespace bitpipe::sched::detail
