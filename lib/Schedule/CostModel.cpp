//===- CostModel.cpp - Times and sizes the simulator charges --------------===//

#include "bitpipe/Schedule/CostModel.h"

namespace bitpipe::sched {

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

double CostModel::allReduceTime(double bytes,
                                const std::vector<int> &members) const {
  if (!deployment)
    return allReduceTime(bytes, static_cast<int>(members.size()));
  return ringAllReduceTime(deployment->cluster, bytes,
                           allReduceGroup(members));
}

} // namespace bitpipe::sched
