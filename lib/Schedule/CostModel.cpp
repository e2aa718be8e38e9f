//===- CostModel.cpp - Times and sizes the simulator charges --------------===//

#include "bitpipe/Schedule/CostModel.h"

#include "bitpipe/base/GradientSyncGroups.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace bitpipe::sched {

const char *allReduceAlgorithmName(AllReduceAlgorithm algorithm) {
  switch (algorithm) {
  case AllReduceAlgorithm::Ring:
    return "ring";
  case AllReduceAlgorithm::Tree:
    return "tree";
  case AllReduceAlgorithm::Cheapest:
    return "cheapest";
  }
  return "?";
}

double treeAllReduceTime(const Cluster &cluster, double bytes,
                         const std::vector<int> &worldRanks) {
  if (worldRanks.size() <= 1)
    return 0.0;
  std::map<int, int> membersOfNode;
  for (int r : worldRanks)
    ++membersOfNode[cluster.nodeOf(r)];
  int k = static_cast<int>(membersOfNode.size()), m = 0;
  for (auto [node, members] : membersOfNode)
    m = std::max(m, members);
  // The tree's depth: the chain inside a node, then the inter-node tree.
  double hops = (m - 1) * cluster.intraNode.latency;
  if (k > 1)
    hops += std::ceil(std::log2(k)) * cluster.interNodeLatency;
  double bandwidth = cluster.cost(groupSpan(cluster, worldRanks)).bandwidth;
  return 2.0 * (hops + bytes / bandwidth);
}

static double lookup(const std::vector<double> &v, int i, double fallback) {
  return i >= 0 && i < static_cast<int>(v.size()) ? v[i] : fallback;
}

double CostModel::forwardTime(int s) const {
  return lookup(forward, s, unitForward);
}
double CostModel::backwardTime(int s) const {
  return lookup(backward, s, unitBackward);
}
double CostModel::weightGradTime(int s) const {
  return lookup(weightGrad, s, unitWeightGrad);
}
double CostModel::computeScale(int rank) const {
  return lookup(rankComputeScale, rank, 1.0);
}
double CostModel::boundary(int s) const { return lookup(boundaryBytes, s, 0); }
double CostModel::stash(int s) const { return lookup(stashBytes, s, 0); }
double CostModel::gradient(int s) const { return lookup(gradientBytes, s, 0); }

double CostModel::p2pTime(double bytes) const {
  return p2pLatency + (p2pBandwidth > 0 ? bytes / p2pBandwidth : 0.0);
}

double CostModel::allReduceBytesPerRank(double bytes, int ranks) {
  // Ring all-reduce: reduce-scatter then all-gather, each moving (n-1)/n.
  return ranks > 1 ? 2.0 * (ranks - 1) / ranks * bytes : 0.0;
}

double CostModel::allReduceTime(double bytes, int ranks) const {
  if (ranks <= 1)
    return 0.0;
  double perRank = allReduceBytesPerRank(bytes, ranks);
  return allReduceLatency +
         (allReduceBandwidth > 0 ? perRank / allReduceBandwidth : 0.0);
}

double CostModel::p2pTime(double bytes, int src, int dst) const {
  if (!deployment)
    return p2pTime(bytes);
  return transferTime(deployment->cluster, bytes, deployment->worldRank(src),
                      deployment->worldRank(dst));
}

std::vector<int>
CostModel::allReduceGroup(const std::vector<int> &members) const {
  return deployment ? worldGroup(members, deployment->world) : members;
}

bool CostModel::syncsInTwoLevels(const std::vector<int> &members) const {
  return deployment &&
         sched::syncsInTwoLevels(gradientSync, static_cast<int>(members.size()),
                                 deployment->world);
}

namespace {

/// One all-reduce over world ranks `group` on `cluster`: the algorithm it
/// runs, its time and the bytes each member sends.
struct FlatAllReduce {
  AllReduceAlgorithm algorithm = AllReduceAlgorithm::Ring;
  double time = 0, bytesPerRank = 0, interNodeBytesPerRank = 0;
};

/// Whether a collective over `group` runs at the inter-node link's rate:
/// the cost model times a group that spans nodes at the inter-node link's
/// per-GPU share (Cluster::cost of its span), every byte of it, however the
/// ring orders its members; so those are the bytes that count as crossing.
bool spansNodes(const Cluster &cluster, const std::vector<int> &group) {
  for (int r : group)
    if (cluster.nodeOf(r) != cluster.nodeOf(group.front()))
      return true;
  return false;
}

FlatAllReduce flatAllReduce(const Cluster &cluster, AllReduceAlgorithm wanted,
                            double bytes, const std::vector<int> &group) {
  FlatAllReduce f;
  const int n = static_cast<int>(group.size());
  if (n <= 1)
    return f;
  double ring = ringAllReduceTime(cluster, bytes, group);
  double tree = treeAllReduceTime(cluster, bytes, group);
  // Ties go to the ring, NCCL's default, which also sends fewer bytes.
  f.algorithm = wanted != AllReduceAlgorithm::Cheapest ? wanted
                : tree < ring ? AllReduceAlgorithm::Tree
                              : AllReduceAlgorithm::Ring;
  const bool isTree = f.algorithm == AllReduceAlgorithm::Tree;
  f.time = isTree ? tree : ring;
  f.bytesPerRank =
      isTree ? 2.0 * bytes : CostModel::allReduceBytesPerRank(bytes, n);
  f.interNodeBytesPerRank = spansNodes(cluster, group) ? f.bytesPerRank : 0.0;
  return f;
}

/// The sum among pipeline ranks `members` as CostModel charges it, with a
/// deployment: one flat all-reduce over every copy, or two levels.
FlatAllReduce deployedSum(const CostModel &cost, double bytes,
                          const std::vector<int> &members) {
  const Deployment &d = *cost.deployment;
  if (!cost.syncsInTwoLevels(members))
    return flatAllReduce(d.cluster, cost.allReduceAlgorithm, bytes,
                         worldGroup(members, d.world));
  base::TwoLevelGroups groups = base::twoLevelGroups(
      members, d.world.pipelineDevices, d.world.dataParallel);
  // Reduce-scatter and all-gather among the copy's members: NCCL's ring
  // ones, each half a ring all-reduce's steps.
  FlatAllReduce sum = flatAllReduce(d.cluster, AllReduceAlgorithm::Ring, bytes,
                                    groups.withinCopy[d.copy]);
  // Then each member's shard across the copies, the slowest setting the
  // pace (the all-gather needs every shard).
  const double shard = bytes / static_cast<double>(members.size());
  FlatAllReduce across;
  for (const std::vector<int> &copies : groups.acrossCopies) {
    FlatAllReduce f =
        flatAllReduce(d.cluster, cost.allReduceAlgorithm, shard, copies);
    if (f.time >= across.time)
      across = f;
  }
  sum.algorithm = across.algorithm;
  sum.time += across.time;
  sum.bytesPerRank += across.bytesPerRank;
  sum.interNodeBytesPerRank += across.interNodeBytesPerRank;
  return sum;
}

} // namespace

AllReduceAlgorithm
CostModel::allReduceAlgorithmFor(double bytes,
                                 const std::vector<int> &members) const {
  if (!deployment)
    return AllReduceAlgorithm::Ring;
  return deployedSum(*this, bytes, members).algorithm;
}

double CostModel::allReduceTime(double bytes,
                                const std::vector<int> &members) const {
  if (!deployment)
    return allReduceTime(bytes, static_cast<int>(members.size()));
  return deployedSum(*this, bytes, members).time;
}

double CostModel::allReduceBytesPerRank(double bytes,
                                        const std::vector<int> &members) const {
  if (!deployment)
    return allReduceBytesPerRank(bytes, static_cast<int>(members.size()));
  return deployedSum(*this, bytes, members).bytesPerRank;
}

double CostModel::allReduceInterNodeBytesPerRank(
    double bytes, const std::vector<int> &members) const {
  if (!deployment)
    return 0.0;
  return deployedSum(*this, bytes, members).interNodeBytesPerRank;
}

} // namespace bitpipe::sched
