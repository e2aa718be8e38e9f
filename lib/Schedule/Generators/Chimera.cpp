//===- Chimera.cpp - Chimera's bidirectional pipelines --------------------===//
//
// Chimera (Li & Hoefler, SC'21) runs two pipelines over the same D stages in
// opposite directions, D/2 micro-batches each per unit of D. As in the
// paper, a unit is the merge of the two pipelines' 1F1B schedules: each
// pipeline's 1F1B is timed on its own (F=1, B=2), and every rank interleaves
// its two stages' actions by start time; where both want the same slot, the
// stage deeper in its pipeline goes first (it is on the longer remaining
// path). For D=4 this is the paper's figure and is optimal under F=1, B=2
// (16 slots; an exhaustive search finds no 15). Units are concatenated
// directly (the paper's "direct concatenation"): rank r starts unit j+1 when
// it has finished its part of unit j.
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Describe.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Simulator.h"

#include <algorithm>
#include <cassert>
#include <tuple>

namespace bitpipe::sched {

namespace {

/// 1F1B over `mbs` on a D-stage pipeline, simulated under F=1, B=2 with
/// free communication: per stage, the actions (with the given global
/// micro-batch numbers) and their start times.
void oneFOneBTimes(int D, const std::vector<int> &mbs,
                   std::vector<std::vector<std::pair<double, Action>>> &out) {
  int n = static_cast<int>(mbs.size());
  out.assign(D, {});
  if (n == 0)
    return;
  Result<Schedule> local = generateOneFOneB(D, n);
  Result<SimResult> sim = simulate(*local, CostModel());
  assert(sim && !sim->deadlocked && "1F1B always runs");
  // The timeline is sorted by rank, then start: each rank's list order.
  for (const TimelineEvent &e : sim->timeline) {
    if (e.lane != Lane::Compute)
      continue;
    Action a = e.action;
    a.microbatch = mbs[a.microbatch];
    out[e.rank].emplace_back(e.start, a);
  }
}

/// Appends one unit (its down and up micro-batches) to every rank.
void appendMergedUnit(Schedule &s, const std::vector<int> &unit) {
  int D = s.placement.numDevices;
  std::vector<int> down, up;
  for (int m : unit)
    (s.microbatchPipeline[m] == 0 ? down : up).push_back(m);
  std::vector<std::vector<std::pair<double, Action>>> dt, ut;
  oneFOneBTimes(D, down, dt);
  oneFOneBTimes(D, up, ut);
  for (int r = 0; r < D; ++r) {
    // (start time, -stage: deeper first, original position, action).
    std::vector<std::tuple<double, int, int, Action>> all;
    int i = 0;
    for (auto &[t, a] : dt[r])
      all.emplace_back(t, -a.stage, i++, a);
    for (auto &[t, a] : ut[D - 1 - r])
      all.emplace_back(t, -a.stage, i++, a);
    std::stable_sort(all.begin(), all.end(), [](const auto &x, const auto &y) {
      return std::make_tuple(std::get<0>(x), std::get<1>(x), std::get<2>(x)) <
             std::make_tuple(std::get<0>(y), std::get<1>(y), std::get<2>(y));
    });
    for (auto &e : all)
      s.ranks[r].push_back(std::get<3>(e));
  }
}

} // namespace

Result<Schedule> generateChimera(int devices, int microbatches) {
  const std::string name = "chimera";
  std::string err = detail::checkCounts(name, devices, microbatches);
  if (err.empty())
    err = detail::checkEvenDevices(name, devices);
  if (!err.empty())
    return Result<Schedule>::failure(err);
  Result<Placement> placement = bidirectionalPlacement(devices);
  if (!placement)
    return Result<Schedule>::failure(placement.error);

  const int D = devices, N = microbatches;
  Schedule s;
  s.name = name;
  s.placement = std::move(*placement);
  s.numMicrobatches = N;
  s.microbatchPipeline = detail::bidirectionalMicrobatchPipelines(D, N);
  s.ranks.resize(D);
  for (int first = 0; first < N; first += D) {
    std::vector<int> unit;
    for (int m = first; m < std::min(first + D, N); ++m)
      unit.push_back(m);
    appendMergedUnit(s, unit);
  }
  // Each rank holds one replica of stage r (down) and one of D-1-r (up); the
  // other replica of each is on rank D-1-r. Sync each as soon as its last
  // backward on this rank is done, in the order both replicas agree on.
  detail::insertAllReducesAfterLastBackward(s, [D](int r) {
    return std::vector<std::vector<int>>{{r}, {D - 1 - r}};
  });
  if (N % D != 0)
    s.note = "N=" + std::to_string(N) +
             " is not a multiple of D=" + std::to_string(D) +
             ": the last unit has " +
             quantity(N % D, "micro-batch", "micro-batches") + " (" +
             std::to_string((N % D + 1) / 2) + " down, " +
             std::to_string(N % D / 2) + " up)";
  return Result<Schedule>::success(std::move(s));
}

} // namespace bitpipe::sched
