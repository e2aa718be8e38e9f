//===- ClusterShape.h - A cluster file's machine resized --------*- C++ -*-===//
//
// A cluster file describes one machine: its GPUs, their memory and rate,
// and its links. Its size (nodes x GPUs per node) is the part that changes
// from one plan to the next, so the planner takes the size on its command
// line (--nodes, --gpus-per-node) over a file that describes the nodes,
// instead of needing a file per size (docs/planning.md).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_PLAN_CLUSTERSHAPE_H
#define BITPIPE_PLAN_CLUSTERSHAPE_H

#include "bitpipe/Schedule/Cluster.h"
#include "bitpipe/Schedule/Error.h"

#include <optional>

namespace bitpipe::plan {

/// `base` with `nodes` nodes of `gpusPerNode` GPUs each (unset: the
/// file's). Fails, naming the flag (`flagPrefix` + "nodes" or
/// "gpus-per-node"), for a size the file format would refuse, and for
/// several nodes of a file that describes one: it has no inter_node link
/// to join them with.
sched::Result<sched::Cluster> resizeCluster(const sched::Cluster &base,
                                            std::optional<int> nodes,
                                            std::optional<int> gpusPerNode,
                                            const char *flagPrefix = "");

} // namespace bitpipe::plan

#endif // BITPIPE_PLAN_CLUSTERSHAPE_H
