//===- CostModel.cpp - Times and sizes the simulator charges --------------===//

#include "bitpipe/Schedule/CostModel.h"

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

AllReduceAlgorithm
CostModel::allReduceAlgorithmFor(double bytes,
                                 const std::vector<int> &members) const {
  if (!deployment)
    return AllReduceAlgorithm::Ring;
  if (allReduceAlgorithm != AllReduceAlgorithm::Cheapest)
    return allReduceAlgorithm;
  std::vector<int> group = allReduceGroup(members);
  // Ties go to the ring, NCCL's default, which also sends fewer bytes.
  return treeAllReduceTime(deployment->cluster, bytes, group) <
                 ringAllReduceTime(deployment->cluster, bytes, group)
             ? AllReduceAlgorithm::Tree
             : AllReduceAlgorithm::Ring;
}

double CostModel::allReduceTime(double bytes,
                                const std::vector<int> &members) const {
  if (!deployment)
    return allReduceTime(bytes, static_cast<int>(members.size()));
  std::vector<int> group = allReduceGroup(members);
  return allReduceAlgorithmFor(bytes, members) == AllReduceAlgorithm::Tree
             ? treeAllReduceTime(deployment->cluster, bytes, group)
             : ringAllReduceTime(deployment->cluster, bytes, group);
}

double CostModel::allReduceBytesPerRank(double bytes,
                                        const std::vector<int> &members) const {
  int n = static_cast<int>(allReduceGroup(members).size());
  if (n <= 1)
    return 0.0;
  return allReduceAlgorithmFor(bytes, members) == AllReduceAlgorithm::Tree
             ? 2.0 * bytes
             : allReduceBytesPerRank(bytes, n);
}

} // namespace bitpipe::sched
