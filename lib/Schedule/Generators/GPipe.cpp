//===- GPipe.cpp - GPipe: all forwards, then all backwards ----------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

namespace bitpipe::sched {

Result<Schedule> generateGPipe(int devices, int microbatches) {
  Result<Schedule> made = detail::emptySchedule("gpipe", devices, microbatches,
                                                /*chunksPerDevice=*/1);
  if (!made)
    return made;
  Schedule &s = *made;
  // Backwards run in the forward order: micro-batch 0's gradient reaches
  // the last stage first, so no rank waits on a later micro-batch.
  for (int r = 0; r < devices; ++r) {
    for (int m = 0; m < microbatches; ++m)
      s.ranks[r].push_back(Action::forward(m, r));
    for (int m = 0; m < microbatches; ++m)
      s.ranks[r].push_back(Action::backward(m, r));
  }
  return made;
}

} // namespace bitpipe::sched
