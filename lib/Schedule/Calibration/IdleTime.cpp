//===- IdleTime.cpp - What a real run's ranks did when not computing ------===//

#include "bitpipe/Schedule/IdleTime.h"

#include "RunSteps.h"

#include "bitpipe/base/TraceFormat.h"

#include <algorithm>
#include <cctype>

namespace bitpipe::sched {

using namespace detail;

std::string idleCause(const std::string &spanName) {
  // The runtime names a tensor "t<tag>" and a bucket "b<index>", last.
  size_t space = spanName.rfind(' ');
  if (space == std::string::npos || space + 2 >= spanName.size() ||
      (spanName[space + 1] != 't' && spanName[space + 1] != 'b'))
    return spanName;
  for (size_t i = space + 2; i < spanName.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(spanName[i])))
      return spanName;
  return spanName.substr(0, space);
}

double IdleGap::untraced() const {
  double covered = 0;
  for (const auto &[name, time] : spans)
    covered += time;
  return length() - covered;
}

namespace {

/// Collects the gaps of one run and sums them by cause.
class GapCollector {
public:
  /// `device`: the gaps are the compute stream's (a GPU trace), explained
  /// by what the rank's other streams did; else the host's, by its spans.
  GapCollector(const std::vector<RunEvent> &events, int ranks, bool device,
               IdleBreakdown &out)
      : others_(ranks), out_(out) {
    ActionKind kind;
    int stage;
    for (const RunEvent &e : events)
      if (e.rank >= 0 && e.rank < ranks &&
          (e.row == trace::kHostRow) != device &&
          !parseCompute(e.name, kind, stage))
        others_[e.rank].push_back(&e);
    for (std::vector<const RunEvent *> &spans : others_)
      std::stable_sort(spans.begin(), spans.end(),
                       [](const RunEvent *a, const RunEvent *b) {
                         return a->start < b->start;
                       });
  }

  /// Rank `rank` did not compute in [start, end); `weight` turns the gap
  /// into its share of a per-step mean.
  void add(int rank, int step, double stepStart, bool between, double start,
           double end, double weight) {
    if (end <= start)
      return;
    IdleGap gap;
    gap.rank = rank;
    gap.step = step;
    gap.stepStart = stepStart;
    gap.betweenSteps = between;
    gap.start = start;
    gap.end = end;
    // Each instant goes to the first span covering it: a span nested in
    // another (a receive completed inside a send's post) adds nothing.
    double cursor = start;
    for (const RunEvent *e : others_[rank]) {
      if (e->start >= end)
        break;
      double from = std::max(e->start, cursor), to = std::min(e->end(), end);
      if (to <= from)
        continue;
      gap.spans.push_back({e->name, to - from});
      cursor = to;
    }
    IdleByCause &sums = between ? out_.betweenSteps[rank] : out_.inStep[rank];
    for (const auto &[name, time] : gap.spans)
      sums[idleCause(name)] += time * weight;
    if (double rest = gap.untraced(); rest > 0)
      sums[kUntraced] += rest * weight;
    out_.gaps.push_back(std::move(gap));
  }

private:
  std::vector<std::vector<const RunEvent *>> others_;
  IdleBreakdown &out_;
};

} // namespace

Result<IdleBreakdown> explainIdle(const Schedule &schedule,
                                  const std::vector<RunEvent> &events,
                                  int skip) {
  Result<MeasuredRun> measured = measureRun(schedule, events, skip);
  if (!measured)
    return Result<IdleBreakdown>::failure(measured.error);
  Result<Steps> cut = cutSteps(schedule, events);
  const Steps &steps = *cut; // measureRun cut the same events
  const int ranks = schedule.numRanks();

  IdleBreakdown out;
  out.measured = std::move(*measured);
  out.inStep.resize(ranks);
  out.betweenSteps.resize(ranks);
  GapCollector gaps(events, ranks, steps.device, out);
  const int used = steps.complete - skip;
  for (int s = skip; s < steps.complete; ++s) {
    auto [first, last] = steps.window(s);
    for (int r = 0; r < ranks; ++r) {
      double free = first;
      for (const Compute *c = steps.begin(r, s); c != steps.end(r, s); ++c) {
        gaps.add(r, s, first, false, free, c->start, 1.0 / used);
        free = std::max(free, c->end);
      }
      gaps.add(r, s, first, false, free, last, 1.0 / used);
    }
    if (s + 1 == steps.complete)
      continue;
    out.stepPeriod += (steps.window(s + 1).first - first) / (used - 1);
    for (int r = 0; r < ranks; ++r) {
      if (steps.perStep[r] == 0)
        continue;
      double lastEnd = -1e300;
      for (const Compute *c = steps.begin(r, s); c != steps.end(r, s); ++c)
        lastEnd = std::max(lastEnd, c->end);
      gaps.add(r, s, first, true, lastEnd, steps.begin(r, s + 1)->start,
               1.0 / (used - 1));
    }
  }
  std::stable_sort(
      out.gaps.begin(), out.gaps.end(),
      [](const IdleGap &a, const IdleGap &b) { return a.rank < b.rank; });
  return Result<IdleBreakdown>::success(std::move(out));
}

} // namespace bitpipe::sched
