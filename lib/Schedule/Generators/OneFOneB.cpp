//===- OneFOneB.cpp - 1F1B (PipeDream-flush / DAPPLE) ---------------------===//
//
// The textbook order, and the memory-saving variant under a cap on the
// micro-batches in flight (max-in-flight; docs/schedules.md, "Fewer
// micro-batches in flight").
//
//===----------------------------------------------------------------------===//

#include "CriticalPathOrder.h"
#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

#include <algorithm>
#include <string>

namespace bitpipe::sched {

namespace {

/// 1F1B's warm-up rule: rank r holds D - r (fewer with fewer micro-batches).
void textbookOrder(Schedule &s) {
  const int devices = s.placement.numDevices, microbatches = s.numMicrobatches;
  for (int r = 0; r < devices; ++r) {
    // Rank r must have D-1-r forwards in flight before micro-batch 0's
    // backward can come back to it; fewer if there are fewer micro-batches.
    // This bounds its live activations by D - r micro-batches.
    int warmup = std::min(devices - 1 - r, microbatches);
    std::vector<Action> &out = s.ranks[r];
    for (int m = 0; m < warmup; ++m)
      out.push_back(Action::forward(m, r));
    for (int i = 0; i < microbatches - warmup; ++i) {
      out.push_back(Action::forward(warmup + i, r));
      out.push_back(Action::backward(i, r));
    }
    for (int m = microbatches - warmup; m < microbatches; ++m)
      out.push_back(Action::backward(m, r));
  }
}

} // namespace

Result<Schedule> generateOneFOneB(int devices, int microbatches,
                                  std::optional<int> maxInFlight) {
  Result<Schedule> made = detail::emptySchedule(
      "1f1b", devices, microbatches, /*chunksPerDevice=*/1, maxInFlight);
  if (!made)
    return made;
  Schedule &s = *made;
  // A cap of D caps nothing: rank 0, the one that holds most, holds D.
  const int cap = maxInFlight.value_or(devices);
  if (cap >= devices) {
    textbookOrder(s);
    return made;
  }
  // Under a cap k < D, 1F1B's own rule (k-1 warm-up forwards, then one
  // forward, one backward) ties each rank's next backward to a forward that
  // must first reach the ranks below it, and the makespan grows with D / k
  // times more than the cap costs (docs/schedules.md). A micro-batch takes
  // 3 (D - r) slots from its forward on rank r back to its backward there,
  // so k in flight on rank 0 allow one micro-batch per 3D / k slots: the
  // list order runs at that pace, each rank r holding at most
  // min(k, D - r) (1F1B's own, where that is lower).
  std::vector<int> rankCaps(devices);
  for (int r = 0; r < devices; ++r)
    rankCaps[r] = std::min(cap, devices - r);
  s.ranks = detail::criticalPathOrder(s, cap, rankCaps);
  if (s.ranks.empty())
    return Result<Schedule>::failure(
        "1f1b with max-in-flight=" + std::to_string(cap) + " on " +
        std::to_string(devices) + " devices and " +
        std::to_string(microbatches) +
        " micro-batches: the list order stopped with work left "
        "(internal error; docs/schedules.md, \"Fewer micro-batches in "
        "flight\")");
  s.note = "at most " + std::to_string(cap) +
           " micro-batches in flight per rank (max-in-flight=" +
           std::to_string(cap) + "; 1F1B holds D - r on rank r)";
  return made;
}

} // namespace bitpipe::sched
