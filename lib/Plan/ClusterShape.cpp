//===- ClusterShape.cpp - A cluster file's machine at another size --------===//

#include "bitpipe/Plan/ClusterShape.h"

#include <string>

namespace bitpipe::plan {

sched::Result<sched::Cluster> resizeCluster(const sched::Cluster &base,
                                            std::optional<int> nodes,
                                            std::optional<int> gpusPerNode,
                                            const char *prefix) {
  using R = sched::Result<sched::Cluster>;
  // The file format's own bounds (Cluster.h), so that a size the planner
  // takes is one a cluster file could have said.
  auto outOfRange = [&](const char *flag, int value, int most) {
    return R::failure(std::string(prefix) + flag +
                      " must be an integer from 1 to " + std::to_string(most) +
                      ", got " + std::to_string(value));
  };
  if (nodes && (*nodes < 1 || *nodes > sched::kMaxNodes))
    return outOfRange("nodes", *nodes, sched::kMaxNodes);
  if (gpusPerNode &&
      (*gpusPerNode < 1 || *gpusPerNode > sched::kMaxGpusPerNode))
    return outOfRange("gpus-per-node", *gpusPerNode, sched::kMaxGpusPerNode);

  sched::Cluster c = base;
  c.nodes = nodes.value_or(base.nodes);
  c.gpusPerNode = gpusPerNode.value_or(base.gpusPerNode);
  // A one-node file has no network to describe (the format refuses one);
  // joining several of its nodes would need numbers nobody gave.
  if (c.nodes > 1 && base.nodes == 1)
    return R::failure(std::string(prefix) + "nodes " + std::to_string(c.nodes) +
                      ": cluster '" + base.name +
                      "' describes a single node, with no links.inter_node "
                      "to join " +
                      std::to_string(c.nodes) +
                      " of them (expected a cluster file of several nodes, "
                      "docs/clusters.md)");
  return R::success(std::move(c));
}

} // namespace bitpipe::plan
