//===- PaperClustersTest.cpp - The paper comparison's cluster files -------===//
//
// The cluster files bench/paper adds (docs/clusters.md, "The examples"):
// the H200 nodes at 128 and 1024 GPUs, and the A100 GPUs on links that
// cost nearly nothing.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Cluster.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

namespace {

Cluster read(const std::string &name) {
  Result<Cluster> c = readCluster(std::string(BITPIPE_SOURCE_DIR) +
                                  "/examples/clusters/" + name);
  EXPECT_TRUE(c) << c.error;
  return c ? *c : Cluster();
}

} // namespace

TEST(PaperClusters, TheH200NodesScaleOutWithTheSameLinks) {
  Cluster small = read("h200-4x8.json");
  for (auto [name, nodes] : {std::pair<const char *, int>{"h200-16x8.json", 16},
                             {"h200-128x8.json", 128}}) {
    Cluster c = read(name);
    EXPECT_EQ(c.nodes, nodes) << name;
    EXPECT_EQ(c.size(), nodes * 8) << name;
    EXPECT_EQ(c.gpuMemoryBytes, small.gpuMemoryBytes) << name;
    EXPECT_EQ(c.achievableFlops(), small.achievableFlops()) << name;
    EXPECT_EQ(c.intraNode.latency, small.intraNode.latency) << name;
    EXPECT_EQ(c.intraNode.bandwidth, small.intraNode.bandwidth) << name;
    EXPECT_EQ(c.interNode().latency, small.interNode().latency) << name;
    EXPECT_EQ(c.interNode().bandwidth, small.interNode().bandwidth) << name;
  }
}

TEST(PaperClusters, IdealLinksKeepTheA100sAndFreeTheLinks) {
  Cluster a = read("a100-4x8.json");
  Cluster ideal = read("a100-4x8-ideal-links.json");
  EXPECT_EQ(ideal.size(), a.size());
  EXPECT_EQ(ideal.gpuMemoryBytes, a.gpuMemoryBytes);
  EXPECT_EQ(ideal.achievableFlops(), a.achievableFlops());
  // A 1 GB hand-off across nodes: 1 ns + 1 ns, against the A100 file's
  // 6 us + 80 ms.
  EXPECT_LT(transferTime(ideal, 1e9, 0, 8), 1e-8);
  EXPECT_NEAR(transferTime(a, 1e9, 0, 8), 6e-6 + 0.08, 1e-12);
}
