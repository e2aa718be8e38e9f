//===- CriticalPathOrder.h - List scheduling over FIFO channels -*- C++ -*-===//
//
// Private to lib/Schedule. A per-rank order for the forwards and (unsplit)
// backwards of a schedule's micro-batches, built by playing them under the
// library's unit costs (F=1, B=2, free communication): whenever a rank is
// idle it starts the ready action that ranks first by (backward before
// forward, earliest time its inputs were done, longest chain of work after
// it, lowest micro-batch, stage).
//
// Unlike appendListSchedule (GeneratorUtil.h) it honours the project's
// channel rule (Comms.h: each (src, dst) link delivers in the order it
// sends), so an action whose input crosses ranks is ready only when that
// input is the oldest transfer its channel has not yet delivered; and it
// bounds memory by letting at most `injectionCap` micro-batches of each
// pipeline be in flight (first forward run, first-stage backward not yet)
// and, when `rankCaps` is given, at most rankCaps[r] (stage, micro-batch)
// pairs on rank r (forward run there, backward not yet): a forward waits
// while its rank is full. Why Chimera uses it: docs/bitpipe-order.md,
// "Chimera"; why 1f1b's max-in-flight does: docs/schedules.md, "Fewer
// micro-batches in flight".
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_SCHEDULE_GENERATORS_CRITICALPATHORDER_H
#define BITPIPE_LIB_SCHEDULE_GENERATORS_CRITICALPATHORDER_H

#include "bitpipe/Schedule/Schedule.h"

#include <vector>

namespace bitpipe::sched::detail {

/// The ranks' orders for all micro-batches of `shape` (its placement and
/// microbatchPipeline), or an empty vector if the play stops with work
/// left (then the caller has no order from it and says so).
std::vector<std::vector<Action>>
criticalPathOrder(const Schedule &shape, int injectionCap,
                  const std::vector<int> &rankCaps = {});

} // namespace bitpipe::sched::detail

#endif // BITPIPE_LIB_SCHEDULE_GENERATORS_CRITICALPATHORDER_H
