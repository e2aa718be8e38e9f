//===- GPipe.cpp - GPipe: all forwards, then all backwards ----------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

namespace bitpipe::sched {

Result<Schedule> generateGPipe(int devices, int microbatches) {
  std::string err = detail::checkCounts("gpipe", devices, microbatches);
  if (!err.empty())
    return Result<Schedule>::failure(err);
  Result<Placement> placement = loopPlacement(devices, 1);
  if (!placement)
    return Result<Schedule>::failure(placement.error);

  Schedule s;
  s.name = "gpipe";
  s.placement = std::move(*placement);
  s.numMicrobatches = microbatches;
  s.microbatchPipeline.assign(microbatches, 0);
  s.ranks.resize(devices);
  // Backwards run in the forward order: micro-batch 0's gradient reaches
  // the last stage first, so no rank waits on a later micro-batch.
  for (int r = 0; r < devices; ++r) {
    for (int m = 0; m < microbatches; ++m)
      s.ranks[r].push_back(Action::forward(m, r));
    for (int m = 0; m < microbatches; ++m)
      s.ranks[r].push_back(Action::backward(m, r));
  }
  return Result<Schedule>::success(std::move(s));
}

} // namespace bitpipe::sched
