//===- ClusterShapeTest.cpp - A cluster file's machine at another size ----===//

#include "bitpipe/Plan/ClusterShape.h"

#include <gtest/gtest.h>

using namespace bitpipe;
using namespace bitpipe::plan;

namespace {

sched::Cluster nodesOf(int nodes, int gpus) {
  sched::Cluster c;
  c.name = "box";
  c.nodes = nodes;
  c.gpusPerNode = gpus;
  c.gpuMemoryBytes = 8e10;
  c.peakBf16Flops = 1e15;
  c.achievableFraction = 0.5;
  c.intraNode = {1e-6, 1e11};
  if (nodes > 1) {
    c.interNodeLatency = 5e-6;
    c.interNodeBandwidthPerNode = 4e11;
  }
  c.computeCalibration = "fitted on run 7";
  return c;
}

TEST(ClusterShape, TakesTheSizeAndKeepsTheMachine) {
  sched::Result<sched::Cluster> c =
      resizeCluster(nodesOf(4, 8), 16, std::nullopt, "--");
  ASSERT_TRUE(c) << c.error;
  EXPECT_EQ(c->nodes, 16);
  EXPECT_EQ(c->gpusPerNode, 8);
  EXPECT_EQ(c->size(), 128);
  EXPECT_EQ(c->name, "box");
  EXPECT_EQ(c->achievableFlops(), 5e14);
  EXPECT_EQ(c->interNodeBandwidthPerNode, 4e11);
  EXPECT_EQ(c->computeCalibration, "fitted on run 7");

  c = resizeCluster(nodesOf(4, 8), 1, 4, "--");
  ASSERT_TRUE(c) << c.error;
  EXPECT_EQ(c->size(), 4);
  // Nothing given: the file's own.
  c = resizeCluster(nodesOf(4, 8), std::nullopt, std::nullopt);
  ASSERT_TRUE(c) << c.error;
  EXPECT_EQ(c->size(), 32);
  // One node's GPUs may change; it stays one node.
  c = resizeCluster(nodesOf(1, 2), 1, 8);
  ASSERT_TRUE(c) << c.error;
  EXPECT_EQ(c->size(), 8);
}

TEST(ClusterShape, RefusesWhatAClusterFileCouldNotSay) {
  EXPECT_EQ(resizeCluster(nodesOf(4, 8), 0, std::nullopt, "--").error,
            "--nodes must be an integer from 1 to 1000000, got 0");
  EXPECT_EQ(resizeCluster(nodesOf(4, 8), std::nullopt, 2048, "--").error,
            "--gpus-per-node must be an integer from 1 to 1024, got 2048");
  EXPECT_EQ(resizeCluster(nodesOf(1, 2), 4, std::nullopt, "--").error,
            "--nodes 4: cluster 'box' describes a single node, with no "
            "links.inter_node to join 4 of them (expected a cluster file of "
            "several nodes, docs/clusters.md)");
}

} // namespace
