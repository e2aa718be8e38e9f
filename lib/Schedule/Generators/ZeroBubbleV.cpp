//===- ZeroBubbleV.cpp - ZB-V: the zero-bubble V-shape schedule -----------===//
//
// zbv (Qi et al., "Pipeline Parallelism with Controllable Memory", the
// schedule torch.distributed.pipelining calls ScheduleZBVZeroBubble and
// DualPipeV builds on): one pipeline on the V placement, two chunks per
// device (s(r) and s(2D-1-r), so the first and the last stage share device
// 0), backward split into B and W. The order is list-scheduled under unit
// costs F = B = W = 1 (docs/zero-bubble.md): a free rank runs a ready B,
// else a ready F while it holds fewer than 2D stashes (1F1B's peak: D
// micro-batches of a whole device's layers, here in half-size chunks),
// else its oldest waiting W.
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"
#include "ZeroBubbleFill.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

namespace bitpipe::sched {

Result<Schedule> generateZeroBubbleV(int devices, int microbatches) {
  Result<Schedule> made = detail::emptySchedule("zbv", devices, microbatches,
                                                /*chunksPerDevice=*/0);
  if (!made)
    return made;
  Schedule &s = *made;
  s.splitBackward = true;
  bool capExceeded = false;
  s.ranks = detail::listScheduleSplit(s, 2 * devices, capExceeded);
  if (capExceeded)
    s.note = "a rank holds more than 2D = " + std::to_string(2 * devices) +
             " stashes: the list scheduler found no order within the cap";
  return Result<Schedule>::success(std::move(s));
}

} // namespace bitpipe::sched
