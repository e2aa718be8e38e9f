//===- OneFOneB.cpp - 1F1B (PipeDream-flush / DAPPLE) ---------------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

#include <algorithm>

namespace bitpipe::sched {

Result<Schedule> generateOneFOneB(int devices, int microbatches) {
  Result<Schedule> made =
      detail::emptyLoopSchedule("1f1b", devices, microbatches);
  if (!made)
    return made;
  Schedule &s = *made;
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
  return made;
}

} // namespace bitpipe::sched
