//===- TestClusters.h - Small clusters with round link numbers --*- C++ -*-===//
//
// Test-only: clusters whose link costs are easy to work by hand, shared by
// the tests of the simulator's communication costs.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_UNITTESTS_SCHEDULE_TESTCLUSTERS_H
#define BITPIPE_UNITTESTS_SCHEDULE_TESTCLUSTERS_H

#include "bitpipe/Schedule/Cluster.h"

#include <string>

namespace bitpipe::sched::test {

/// `nodes` x `gpusPerNode` with round link numbers: intra_node 1 us and
/// 100 GB/s; inter_node 5 us and 10 GB/s per GPU.
inline Cluster cluster(int nodes, int gpusPerNode) {
  Cluster c;
  c.name = std::to_string(nodes) + "x" + std::to_string(gpusPerNode);
  c.nodes = nodes;
  c.gpusPerNode = gpusPerNode;
  c.gpuMemoryBytes = 1e9;
  c.peakBf16Flops = 1e12;
  c.intraNode = {1e-6, 1e11};
  c.interNodeLatency = 5e-6;
  c.interNodeBandwidthPerNode = 1e10 * gpusPerNode;
  return c;
}

} // namespace bitpipe::sched::test

#endif // BITPIPE_UNITTESTS_SCHEDULE_TESTCLUSTERS_H
