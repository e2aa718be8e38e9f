//===- Chimera.cpp - Chimera's bidirectional pipelines --------------------===//
//
// Chimera (Li & Hoefler, SC'21) runs two pipelines over the same D stages in
// opposite directions. Micro-batches come in units of D: D/2 go down, D/2 go
// up (bidirectionalMicrobatchPipelines).
//
// Rank r runs down stage r and up stage D-1-r. Of its actions, the down
// forwards and the up backwards take their input from rank r-1 and pass
// their output to rank r+1 (the "rightward" stream); the down backwards and
// the up forwards go the other way (the "leftward" stream). Each channel
// (r, r+1) is a FIFO carrying one stream, so every rank must run a stream's
// actions in the SAME order: a schedule is one rightward sequence, one
// leftward sequence, and on each rank an interleaving of the two. Merging
// two independently timed 1F1B pipelines breaks this as soon as they
// overlap (1F1B's first stage sends warm-up forwards that the next stage
// consumes late, and the other direction's gradients overtake them).
//
// Two orders (ChimeraOrder; docs/bitpipe-order.md, "Chimera, the baseline"):
//
// Alternating. The rightward sequence starts with the first D/2 down
// forwards, then alternates an up backward and a down forward; the
// leftward one is its mirror image. Any N works (a short last unit only
// makes some slots wait). On rank r, rightward actions take the slots
// t = r (mod 2) and leftward ones the others, each at the first such slot
// at which its inputs are done (F=B=1, free communication). When all
// inputs are there, rank r runs rightward action i at 2i + r and leftward
// action j at 2j + D-1-r: both streams move one rank per slot and never
// collide. The returning pass of a micro-batch sits at least D/2 places
// after its forward in the other stream, the round trip, so for N a
// multiple of D the inputs are always there:
//   F=B=1:   makespan 2N + D - 2, bubble (D-2)/(2N+D-2), Chimera's closed
//            form, for every such N: units overlap, the next unit's forwards
//            fill the previous unit's drain;
//   F=1,B=2: makespan 4N + D - 4. The streams alternate slot by slot, which
//            is perfect for F=B and stalls a stream behind every 2-slot
//            backward otherwise, so the bubble tends to 1/4 as N grows.
//            The exhaustive search of unittests/Schedule/OptimalSchedule.h
//            finds 4N + D - 4 for N = D (D = 4, 6): optimal for one unit.
// For N = D this is the paper's basic unit: for D=4 its figure exactly (16
// slots under F=1, B=2); for larger D the same makespans as the former
// per-unit merge of two 1F1B pipelines, in a slightly different order.
// At most D chunks in flight on any rank, one unit's worth, as the paper
// bounds it; for N = D, D on the middle ranks and D/2+1 on the edges.
//
// Critical path (CriticalPathOrder.h). List scheduling under F=1, B=2 with
// the channels kept in order and at most D micro-batches of each direction
// in flight (up to 2D chunks per rank, the memory of the paper's forward
// doubling). For N >= 2D it meets the lower bound 3(N + D/2 - 1), so it is
// optimal, wherever BaselineSchedulesTest looks but at D=16, N=64 (215
// against 213); e.g. 27 at D=4, N=8 against the alternating order's 32.
// Its bubble is then (D-2)/(2N+D-2), Chimera's closed form, with B = 2F.
// For N = D it is slower.
//
// Best, the registered order, takes the critical-path order where it is
// strictly faster under F=1, B=2, so chimera is never slower than the
// alternating order was; BaselineSchedulesTest holds the numbers.
//
//===----------------------------------------------------------------------===//

#include "CriticalPathOrder.h"
#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Dependencies.h"
#include "bitpipe/Schedule/Describe.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Simulator.h"

#include <limits>
#include <optional>

namespace bitpipe::sched {

namespace {

/// One stream: `first` are the micro-batches that enter it (its forwards),
/// `second` those that come back through it (their backwards). The first
/// D/2 of `first`, then one of `second` and one of `first` in turn, then
/// whatever is left. Each entry: (micro-batch, comes back).
std::vector<std::pair<int, bool>> streamOrder(const std::vector<int> &first,
                                              const std::vector<int> &second,
                                              int D) {
  std::vector<std::pair<int, bool>> order;
  size_t i = 0, j = 0;
  for (; i < first.size() && i < static_cast<size_t>(D / 2); ++i)
    order.emplace_back(first[i], false);
  while (i < first.size() && j < second.size()) {
    order.emplace_back(second[j++], true);
    order.emplace_back(first[i++], false);
  }
  for (; j < second.size(); ++j)
    order.emplace_back(second[j], true);
  for (; i < first.size(); ++i)
    order.emplace_back(first[i], false);
  return order;
}

/// Fills the ranks of `s` from the two streams; false if they cannot run
/// (never for the streams above, but the placement loop would otherwise
/// spin forever).
bool placeStreams(Schedule &s) {
  const int D = s.placement.numDevices, N = s.numMicrobatches;
  std::vector<int> down, up;
  for (int m = 0; m < N; ++m)
    (s.microbatchPipeline[m] == 0 ? down : up).push_back(m);
  // [0]: rightward (down F, up B); [1]: leftward (up F, down B).
  const std::vector<std::pair<int, bool>> streams[2] = {
      streamOrder(down, up, D), streamOrder(up, down, D)};
  // finish[(m * D + stage) * 2 + backward]: end slot, -1 while not run.
  std::vector<int> finish(static_cast<size_t>(N) * D * 2, -1);
  auto fin = [&](const Action &a) -> int & {
    return finish[(static_cast<size_t>(a.microbatch) * D + a.stage) * 2 +
                  (a.kind == ActionKind::Backward)];
  };
  std::vector<size_t> next[2] = {std::vector<size_t>(D, 0),
                                 std::vector<size_t>(D, 0)};
  size_t left = (streams[0].size() + streams[1].size()) * D;
  for (int t = 0, lastPlaced = 0; left > 0; ++t) {
    if (t - lastPlaced > 2)
      return false; // Nothing ran for two slots: nothing ever will.
    for (int r = 0; r < D; ++r) {
      const int stream = (t - r) % 2 == 0 ? 0 : 1;
      if (next[stream][r] >= streams[stream].size())
        continue;
      auto [m, back] = streams[stream][next[stream][r]];
      // Rightward: down stage r forward, up stage D-1-r backward; leftward:
      // up stage D-1-r forward, down stage r backward.
      const bool isDown = s.microbatchPipeline[m] == 0;
      const int stage = isDown ? r : D - 1 - r;
      Action a = back ? Action::backward(m, stage) : Action::forward(m, stage);
      ActionInputs inputs = inputsOf(a, D);
      bool ready = true;
      for (const std::optional<Action> &input :
           {inputs.sameStage, inputs.crossStage})
        if (input && (fin(*input) < 0 || fin(*input) > t))
          ready = false;
      if (!ready)
        continue;
      fin(a) = t + 1;
      s.ranks[r].push_back(a);
      ++next[stream][r];
      --left;
      lastPlaced = t;
    }
  }
  return true;
}

/// The makespan of `s` (forwards and backwards only) under the library's
/// unit costs (F=1, B=2, free communication); infinite if it cannot run.
double makespanAtUnitCosts(const Schedule &s) {
  Result<SimResult> sim = simulate(s, CostModel());
  if (!sim || sim->deadlocked)
    return std::numeric_limits<double>::infinity();
  return sim->makespan;
}

} // namespace

Result<Schedule> generateChimera(int devices, int microbatches,
                                 ChimeraOrder order) {
  Result<Schedule> made = detail::emptySchedule(
      "chimera", devices, microbatches, /*chunksPerDevice=*/0);
  if (!made)
    return made;
  Schedule &s = *made;
  const int D = devices, N = microbatches;
  const std::string sizes =
      "D=" + std::to_string(D) + ", N=" + std::to_string(N);
  if (order != ChimeraOrder::CriticalPath && !placeStreams(s))
    return Result<Schedule>::failure(
        "chimera: internal error: the alternating streams for " + sizes +
        " cannot run");
  if (order != ChimeraOrder::Alternating) {
    // At most D micro-batches of each direction in flight: twice the
    // alternating order's memory, as Chimera's forward doubling
    // (docs/bitpipe-order.md, "Chimera").
    Schedule critical = s;
    critical.ranks = detail::criticalPathOrder(s, /*injectionCap=*/D);
    if (critical.ranks.empty())
      return Result<Schedule>::failure(
          "chimera: internal error: the critical-path order for " + sizes +
          " stops with work left");
    // Best keeps the alternating order unless the other is strictly faster,
    // so chimera is never slower than the alternating order.
    if (order == ChimeraOrder::CriticalPath ||
        makespanAtUnitCosts(critical) < makespanAtUnitCosts(s))
      s.ranks = std::move(critical.ranks);
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
