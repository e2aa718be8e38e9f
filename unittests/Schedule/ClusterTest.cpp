//===- ClusterTest.cpp - Cluster descriptions and their link costs --------===//
//
// The file format and the formulas: docs/clusters.md.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Cluster.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

namespace {

std::string example(const std::string &name) {
  return std::string(BITPIPE_SOURCE_DIR) + "/examples/clusters/" + name;
}

Cluster a100() {
  Result<Cluster> c = readCluster(example("a100-4x8.json"));
  EXPECT_TRUE(c) << c.error;
  return c ? *c : Cluster();
}

/// A valid two-node file; the error tests below break one field each.
const char *kGood = R"({
  "name": "t", "description": "test",
  "nodes": 2, "gpus_per_node": 4,
  "gpu": {"memory_bytes": 1e9, "peak_bf16_flops": 1e12,
          "achievable_fraction": 0.5},
  "links": {
    "intra_node": {"latency": 1e-6, "bandwidth": 1e11},
    "inter_node": {"latency": 5e-6, "bandwidth_per_node": 4e10}
  }
})";

std::string errorOf(std::string text, const std::string &from,
                    const std::string &to) {
  size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    text.replace(at, from.size(), to);
  Result<Cluster> c = parseCluster(text, "cluster.json");
  EXPECT_FALSE(c) << "accepted " << to;
  return c.error;
}

} // namespace

TEST(Cluster, ReadsTheExamples) {
  Cluster a = a100();
  EXPECT_EQ(a.name, "a100-4x8");
  EXPECT_EQ(a.nodes, 4);
  EXPECT_EQ(a.gpusPerNode, 8);
  EXPECT_EQ(a.size(), 32);
  EXPECT_EQ(a.gpuMemoryBytes, 80.0 * (1 << 30));
  EXPECT_EQ(a.achievableFlops(), 156e12);
  EXPECT_EQ(a.intraNode.bandwidth, 300e9);
  // 4 x 200 Gb/s = 100 GB/s per node, 12.5 GB/s for each of its 8 GPUs.
  EXPECT_EQ(a.interNodeBandwidthPerNode, 100e9);
  EXPECT_EQ(a.interNode().bandwidth, 12.5e9);

  Result<Cluster> h = readCluster(example("h200-4x8.json"));
  ASSERT_TRUE(h) << h.error;
  EXPECT_EQ(h->intraNode.bandwidth, 450e9);
  // 8 x 400 Gb/s = 400 GB/s per node, 50 GB/s per GPU.
  EXPECT_EQ(h->interNode().bandwidth, 50e9);

  Result<Cluster> cpu = readCluster(example("cpu-dev.json"));
  ASSERT_TRUE(cpu) << cpu.error;
  EXPECT_EQ(cpu->nodes, 1);
  EXPECT_EQ(cpu->size(), 2);
  EXPECT_EQ(cpu->interNodeBandwidthPerNode, 0);
}

TEST(Cluster, ErrorsNameTheFileTheFieldAndWhatWasExpected) {
  ASSERT_TRUE(parseCluster(kGood, "cluster.json"));
  EXPECT_EQ(errorOf(kGood, "\"bandwidth\": 1e11", "\"bandwidth\": -1"),
            "cluster.json: links.intra_node.bandwidth: expected a number of "
            "bytes per second (per GPU, per direction) from 1000 to 1e+20, "
            "got -1");
  EXPECT_EQ(errorOf(kGood, "\"latency\": 5e-6", "\"latency\": \"5us\""),
            "cluster.json: links.inter_node.latency: expected a number of "
            "seconds from 0 to 10, got \"5us\"");
  EXPECT_EQ(errorOf(kGood, "\"nodes\": 2", "\"nodes\": 2.5"),
            "cluster.json: nodes: expected an integer from 1 to 1e+06, got "
            "2.5");
  EXPECT_EQ(errorOf(kGood, "\"gpus_per_node\": 4", "\"gpus_per_node\": 0"),
            "cluster.json: gpus_per_node: expected an integer from 1 to 1024, "
            "got 0");
  EXPECT_EQ(errorOf(kGood, "\"achievable_fraction\": 0.5",
                    "\"achievable_fraction\": 1.5"),
            "cluster.json: gpu.achievable_fraction: expected a fraction above "
            "0, at most 1, got 1.5");
  EXPECT_EQ(errorOf(kGood, "\"memory_bytes\": 1e9, ", ""),
            "cluster.json: gpu.memory_bytes: expected a number of bytes from "
            "1.04858e+06 to 1e+15, got nothing (the field is missing)");
  EXPECT_EQ(errorOf(kGood, "\"intra_node\"", "\"nvlink\""),
            "cluster.json: links.intra_node: expected an object, got nothing "
            "(the field is missing)");
  EXPECT_EQ(errorOf(kGood, "\"memory_bytes\"", "\"memory_gib\": 80, \"memory_bytes\""),
            "cluster.json: gpu.memory_gib: expected one of memory_bytes, "
            "peak_bf16_flops or achievable_fraction, got the unknown field "
            "\"memory_gib\"");
  EXPECT_EQ(errorOf(kGood, "\"nodes\"", "\"racks\": 1, \"nodes\""),
            "cluster.json: racks: expected one of name, description, nodes, "
            "gpus_per_node, gpu, links, calibration or kernel_rates, got the "
            "unknown field \"racks\"");
  EXPECT_EQ(errorOf(kGood, "\"bandwidth_per_node\"", "\"bandwidth\""),
            "cluster.json: links.inter_node.bandwidth_per_node: expected a "
            "number of bytes per second (a node's NICs together, per "
            "direction) from 1000 to 1e+20, got nothing (the field is "
            "missing)");
  EXPECT_EQ(errorOf(kGood, "\"nodes\": 2", "\"nodes\": 1"),
            "cluster.json: links.inter_node: expected no inter_node link on a "
            "cluster of 1 node, got one");
  // Finite extremes that would turn predictions into inf, NaN or
  // 60-digit times, and numbers beyond a double, are refused where read.
  EXPECT_EQ(errorOf(kGood, "\"bandwidth\": 1e11", "\"bandwidth\": 1e-300"),
            "cluster.json: links.intra_node.bandwidth: expected a number of "
            "bytes per second (per GPU, per direction) from 1000 to 1e+20, "
            "got 1e-300");
  EXPECT_EQ(
      errorOf(kGood, "\"peak_bf16_flops\": 1e12", "\"peak_bf16_flops\": 1e300"),
      "cluster.json: gpu.peak_bf16_flops: expected a number of FLOP per "
      "second from 1e+06 to 1e+18, got 1e+300");
  EXPECT_EQ(
      errorOf(kGood, "\"peak_bf16_flops\": 1e12", "\"peak_bf16_flops\": 1e400"),
      "cluster.json: line 4, column 51: number 1e400 is beyond the "
      "range of a double (about 1.8e308)");
  EXPECT_EQ(errorOf(kGood, "\"latency\": 1e-6", "\"latency\": 3600"),
            "cluster.json: links.intra_node.latency: expected a number of "
            "seconds from 0 to 10, got 3600");
  // The array swallows the gpu object, then "links" meets its ":".
  EXPECT_EQ(errorOf(kGood, "\"gpu\": {", "\"gpu\": [{"),
            "cluster.json: line 6, column 10: expected ',' or ']'");
  EXPECT_EQ(errorOf("[1]", "[1]", "[]"),
            "cluster.json: expected an object at the top level, got an array");
  Result<Cluster> missing = readCluster("/nonexistent/c.json");
  EXPECT_EQ(missing.error, "/nonexistent/c.json: cannot be read: expected a "
                           "cluster description (JSON, docs/clusters.md)");
}

TEST(Cluster, SaysWhichNumbersWereCalibrated) {
  // Without "calibration" every rate is assumed: the GPU examples' are
  // vendor figures and typical fractions; cpu-dev's were fitted on runs.
  EXPECT_EQ(a100().computeCalibration, "");
  EXPECT_EQ(a100().linkCalibration, "");
  Result<Cluster> cpu = readCluster(example("cpu-dev.json"));
  ASSERT_TRUE(cpu) << cpu.error;
  EXPECT_NE(cpu->computeCalibration.find("fitted"), std::string::npos);
  EXPECT_NE(cpu->linkCalibration.find("fitted"), std::string::npos);

  std::string text = kGood;
  text.insert(text.find("\"nodes\""),
              "\"calibration\": {\"compute\": \"fitted on run 7\"}, ");
  Result<Cluster> partly = parseCluster(text, "cluster.json");
  ASSERT_TRUE(partly) << partly.error;
  EXPECT_EQ(partly->computeCalibration, "fitted on run 7");
  EXPECT_EQ(partly->linkCalibration, "");

  EXPECT_EQ(errorOf(text, "\"fitted on run 7\"", "\" \""),
            "cluster.json: calibration.compute: expected a non-empty string, "
            "got \" \"");
  EXPECT_EQ(errorOf(text, "\"compute\"", "\"flops\""),
            "cluster.json: calibration.flops: expected one of compute or "
            "links, got the unknown field \"flops\"");
  EXPECT_EQ(errorOf(text, "{\"compute\": \"fitted on run 7\"}", "true"),
            "cluster.json: calibration: expected an object, got true");
}

TEST(Cluster, EveryTruncationOfAGoodFileIsAnError) {
  std::string good = kGood;
  for (size_t n = 0; n < good.size(); ++n) {
    Result<Cluster> c = parseCluster(good.substr(0, n), "cluster.json");
    ASSERT_FALSE(c) << "accepted the first " << n << " bytes";
    EXPECT_EQ(c.error.rfind("cluster.json: ", 0), 0u) << c.error;
  }
}

TEST(Cluster, RanksFillANodeBeforeTheNext) {
  Cluster a = a100();
  // D=8 on 8-GPU nodes: each copy's pipeline is one node.
  World d8{8, 4};
  EXPECT_EQ(a.linkBetween(d8.rank(0, 3), d8.rank(0, 4)), LinkClass::IntraNode);
  EXPECT_EQ(a.linkBetween(d8.rank(1, 7), d8.rank(1, 0)), LinkClass::IntraNode);
  EXPECT_EQ(a.nodeOf(d8.rank(3, 5)), 3);
  // D=16: the hand-off between pipeline ranks 7 and 8 crosses nodes.
  World d16{16, 2};
  EXPECT_EQ(a.linkBetween(d16.rank(0, 6), d16.rank(0, 7)), LinkClass::IntraNode);
  EXPECT_EQ(a.linkBetween(d16.rank(0, 7), d16.rank(0, 8)), LinkClass::InterNode);
  EXPECT_EQ(a.linkBetween(d16.rank(1, 15), d16.rank(1, 8)), LinkClass::IntraNode);
  EXPECT_EQ(a.linkBetween(5, 5), LinkClass::Local);
}

TEST(Cluster, PointToPointIsTheLinksAlphaBetaTime) {
  Cluster a = a100();
  // 1 MB within a node: 3 us + 1e6 / 300e9 s.
  EXPECT_DOUBLE_EQ(transferTime(a, 1e6, 3, 4), 3e-6 + 1e6 / 300e9);
  // Across nodes: 6 us + 1e6 / 12.5e9 s = 86 us.
  EXPECT_DOUBLE_EQ(transferTime(a, 1e6, 7, 8), 86e-6);
  EXPECT_EQ(transferTime(a, 1e6, 7, 7), 0);
}

TEST(Cluster, RingAllReduceRunsAtTheSlowestLinkOfItsGroup) {
  Cluster a = a100();
  EXPECT_EQ(groupSpan(a, {3}), LinkClass::Local);
  EXPECT_EQ(ringAllReduceTime(a, 1e8, {3}), 0);
  // 8 ranks of node 0: 2*7 * (3 us + 1e8 / (8 * 300e9) s)
  //                  = 14 * (3e-6 + 41.6667e-6) = 625.33 us.
  std::vector<int> node0 = {0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(groupSpan(a, node0), LinkClass::IntraNode);
  EXPECT_DOUBLE_EQ(ringAllReduceTime(a, 1e8, node0),
                   14 * (3e-6 + 1e8 / (8 * 300e9)));
  EXPECT_NEAR(ringAllReduceTime(a, 1e8, node0), 625.333e-6, 1e-9);
  // One rank on each of 4 nodes: 2*3 * (6 us + 1e8 / (4 * 12.5e9) s)
  //                             = 6 * 2006 us = 12.036 ms.
  std::vector<int> acrossNodes = {0, 8, 16, 24};
  EXPECT_EQ(groupSpan(a, acrossNodes), LinkClass::InterNode);
  EXPECT_DOUBLE_EQ(ringAllReduceTime(a, 1e8, acrossNodes), 12.036e-3);
}

TEST(Cluster, ADeploymentMustFitItsCluster) {
  Deployment d{a100(), World{8, 4}, 3};
  EXPECT_EQ(d.check(8), "");
  EXPECT_EQ(d.worldRank(2), 26);
  EXPECT_EQ(d.check(4),
            "the deployment's world has 8 pipeline ranks, the schedule 4");
  d.copy = 4;
  EXPECT_EQ(d.check(8), "the deployment's copy is 4, expected 0 to 3");
  d.copy = 0;
  d.world.dataParallel = 5;
  EXPECT_EQ(d.check(8), "the world has 40 ranks, but cluster a100-4x8 has 32 "
                        "GPUs (4 nodes x 8)");
}

namespace {

/// kGood with kernel rates on a 2 x 2 x 2 linear grid (tokens 100 and 400,
/// in and out 10 and 1000) whose forward rate is 1e9 x the number of the
/// grid point (1 to 8 in row-major order), the gradients 2x and 4x that;
/// attention on 1 x 2 shapes, causal and not; the rest at 5e8.
std::string withRates(const std::string &linear, const std::string &attention,
                      const std::string &extra = "") {
  std::string text = kGood;
  text.insert(text.rfind('}'),
              ",\n\"kernel_rates\": {\"measured\": \"by hand\", "
              "\"linear\": [" +
                  linear + "], \"attention\": [" + attention +
                  "], \"other\": 5e8" + extra + "}");
  return text;
}

std::string linearGrid(int skip = -1) {
  std::string out;
  int n = 0;
  for (int tokens : {100, 400})
    for (int in : {10, 1000})
      for (int o : {10, 1000}) {
        ++n;
        if (n - 1 == skip)
          continue;
        out += std::string(out.empty() ? "" : ", ") +
               "{\"tokens\": " + std::to_string(tokens) +
               ", \"in\": " + std::to_string(in) +
               ", \"out\": " + std::to_string(o) +
               ", \"forward\": " + std::to_string(n) +
               "e9, \"input_grad\": " + std::to_string(2 * n) +
               "e9, \"weight_grad\": " + std::to_string(4 * n) + "e9}";
      }
  return out;
}

const char *kAttention =
    "{\"seq_len\": 128, \"head_dim\": 32, \"causal\": true, \"forward\": 1e9, "
    "\"backward\": 5e8}, "
    "{\"seq_len\": 128, \"head_dim\": 64, \"causal\": true, \"forward\": 2e9, "
    "\"backward\": 1e9}, "
    "{\"seq_len\": 128, \"head_dim\": 32, \"causal\": false, \"forward\": 3e9, "
    "\"backward\": 1.5e9}, "
    "{\"seq_len\": 128, \"head_dim\": 64, \"causal\": false, \"forward\": 4e9, "
    "\"backward\": 2e9}";

} // namespace

TEST(ClusterKernelRates, GridPointsGiveTheirRatesAndBetweenThemInterpolate) {
  Result<Cluster> c = parseCluster(withRates(linearGrid(), kAttention), "c");
  ASSERT_TRUE(c) << c.error;
  ASSERT_TRUE(c->kernelRates);
  const KernelRates &r = *c->kernelRates;
  EXPECT_EQ(r.measured(), "by hand");
  // Grid point 6 (row-major, from 1): tokens 400, in 10, out 1000.
  LinearRate at = r.linear({400, 10, 1000});
  EXPECT_DOUBLE_EQ(at.forward, 6e9);
  EXPECT_DOUBLE_EQ(at.inputGrad, 12e9);
  EXPECT_DOUBLE_EQ(at.weightGrad, 24e9);
  // Tokens 200 is half-way between 100 and 400 in log2: the mean of points
  // 2 and 6 (in 10, out 1000).
  EXPECT_DOUBLE_EQ(r.linear({200, 10, 1000}).forward, 4e9);
  // in 100 is half-way between 10 and 1000 in log10: points 1 and 3.
  EXPECT_DOUBLE_EQ(r.linear({100, 100, 10}).forward, 2e9);
  // Beyond the grid, the nearest edge's rate.
  EXPECT_DOUBLE_EQ(r.linear({50, 5, 5}).forward, 1e9);
  EXPECT_DOUBLE_EQ(r.linear({1000000, 5000, 5000}).forward, 8e9);
  // Attention: one sequence length (clamped), causal chosen.
  EXPECT_DOUBLE_EQ(r.attention({512, 64, true}).forward, 2e9);
  EXPECT_DOUBLE_EQ(r.attention({64, 32, false}).backward, 1.5e9);
  EXPECT_DOUBLE_EQ(r.other(), 5e8);
}

TEST(ClusterKernelRates, WorkIsTimedAtItsShapesRates) {
  Result<Cluster> c = parseCluster(withRates(linearGrid(), kAttention), "c");
  ASSERT_TRUE(c) << c.error;
  ComputeWork w;
  w.addLinear({400, 10, 1000}, 2);      // 2 x 8e6 FLOPs at 6e9, 12e9, 24e9.
  w.addAttention({128, 64, true}, 4e6); // at 2e9; backward 8e6 at 1e9.
  w.otherForwardFlops = 1e6;            // at 5e8
  w.otherBackwardFlops = 2e6;
  w.otherWeightGradFlops = 3e5;
  ComputeTimes t = c->computeTimes(w, /*splitBackward=*/false);
  EXPECT_DOUBLE_EQ(t.forward, 16e6 / 6e9 + 4e6 / 2e9 + 1e6 / 5e8);
  EXPECT_DOUBLE_EQ(t.inputGrad, 16e6 / 12e9 + 8e6 / 1e9 + 2e6 / 5e8);
  EXPECT_DOUBLE_EQ(t.weightGrad, 16e6 / 24e9 + 3e5 / 5e8);
  // A run reaching 80 % of the measured rates: every time / 0.8.
  c->kernelRates->runFraction = 0.8;
  ComputeTimes slower = c->computeTimes(w, false);
  EXPECT_DOUBLE_EQ(slower.forward, t.forward / 0.8);
  EXPECT_DOUBLE_EQ(slower.inputGrad, t.inputGrad / 0.8);
  EXPECT_DOUBLE_EQ(slower.weightGrad, t.weightGrad / 0.8);
  // A split backward's halves at 90 % of that, where a schedule splits it;
  // the forward and an unsplit backward as before.
  c->kernelRates->splitFraction = 0.9;
  ComputeTimes split = c->computeTimes(w, /*splitBackward=*/true);
  EXPECT_DOUBLE_EQ(split.forward, slower.forward);
  EXPECT_DOUBLE_EQ(split.inputGrad, slower.inputGrad / 0.9);
  EXPECT_DOUBLE_EQ(split.weightGrad, slower.weightGrad / 0.9);
  EXPECT_DOUBLE_EQ(c->computeTimes(w, false).inputGrad, slower.inputGrad);
  // Without rates: the one achievable rate (5e11), the same split.
  c->kernelRates.reset();
  t = c->computeTimes(w, true);
  EXPECT_DOUBLE_EQ(t.forward, (16e6 + 4e6 + 1e6) / 5e11);
  EXPECT_DOUBLE_EQ(t.inputGrad, (16e6 + 8e6 + 2e6) / 5e11);
  EXPECT_DOUBLE_EQ(t.weightGrad, (16e6 + 3e5) / 5e11);
}

TEST(ClusterKernelRates, ErrorsNameTheEntryAndWhatIsMissing) {
  auto error = [](const std::string &text) {
    Result<Cluster> c = parseCluster(text, "c.json");
    EXPECT_FALSE(c);
    return c.error;
  };
  EXPECT_EQ(error(withRates(linearGrid(/*skip=*/4), kAttention)),
            "c.json: kernel_rates.linear: expected a full grid of shapes "
            "(every combination of the values that occur), got none for "
            "tokens 400, in 10, out 10");
  EXPECT_EQ(error(withRates(linearGrid() + ", {\"tokens\": 100, \"in\": 10}",
                            kAttention)),
            "c.json: kernel_rates.linear[8].out: expected an integer from 1 "
            "to 1e+09, got nothing (the field is missing)");
  std::string causalOnly = kAttention;
  causalOnly = causalOnly.substr(0, causalOnly.find(", {\"seq_len\": 128, "
                                                    "\"head_dim\": 32, "
                                                    "\"causal\": false"));
  EXPECT_EQ(error(withRates(linearGrid(), causalOnly)),
            "c.json: kernel_rates.attention (causal false): expected at "
            "least one shape, got none");
  std::string slow = linearGrid();
  const std::string first = "\"forward\": 1e9";
  slow.replace(slow.find(first), first.size(), "\"forward\": 0");
  EXPECT_EQ(error(withRates(slow, kAttention)),
            "c.json: kernel_rates.linear[0].forward: expected a number of "
            "FLOP per second from 1000 to 1e+18, got 0");
  EXPECT_EQ(error(withRates(linearGrid(), kAttention, ", \"gemm\": 1")),
            "c.json: kernel_rates.gemm: expected one of measured, linear, "
            "attention, other, run_fraction or split_fraction, got the "
            "unknown field \"gemm\"");
  EXPECT_EQ(error(withRates(linearGrid(), kAttention,
                            ", \"run_fraction\": 1.5")),
            "c.json: kernel_rates.run_fraction: expected a fraction above 0, "
            "at most 1, got 1.5");
  EXPECT_EQ(
      error(withRates(linearGrid(), kAttention, ", \"split_fraction\": 0")),
      "c.json: kernel_rates.split_fraction: expected a fraction above "
      "0, at most 1, got 0");
  Result<Cluster> fitted = parseCluster(
      withRates(linearGrid(), kAttention, ", \"run_fraction\": 0.9"), "c");
  ASSERT_TRUE(fitted) << fitted.error;
  EXPECT_DOUBLE_EQ(fitted->kernelRates->runFraction, 0.9);
}

/// What bench-kernel-rates writes (KernelRates::toJson) is what the parser
/// reads: the same grid, rates and fractions back.
TEST(ClusterKernelRates, ToJsonReadsBackAsTheSameRates) {
  Result<Cluster> c = parseCluster(
      withRates(linearGrid(), kAttention,
                ", \"run_fraction\": 0.9, \"split_fraction\": 0.95"),
      "c");
  ASSERT_TRUE(c) << c.error;
  std::string text = kGood;
  text.insert(text.rfind('}'),
              ",\n\"kernel_rates\": " + c->kernelRates->toJson());
  Result<Cluster> again = parseCluster(text, "again");
  ASSERT_TRUE(again) << again.error << "\n" << text;
  const KernelRates &a = *c->kernelRates, &b = *again->kernelRates;
  EXPECT_EQ(b.measured(), a.measured());
  EXPECT_DOUBLE_EQ(b.runFraction, 0.9);
  EXPECT_DOUBLE_EQ(b.splitFraction, 0.95);
  EXPECT_DOUBLE_EQ(b.other(), a.other());
  ASSERT_EQ(b.linearEntries().size(), a.linearEntries().size());
  for (size_t i = 0; i < a.linearEntries().size(); ++i) {
    const LinearRate &x = a.linearEntries()[i], &y = b.linearEntries()[i];
    EXPECT_EQ(y.shape, x.shape);
    EXPECT_DOUBLE_EQ(y.forward, x.forward);
    EXPECT_DOUBLE_EQ(y.inputGrad, x.inputGrad);
    EXPECT_DOUBLE_EQ(y.weightGrad, x.weightGrad);
  }
  ASSERT_EQ(b.attentionEntries().size(), a.attentionEntries().size());
  for (size_t i = 0; i < a.attentionEntries().size(); ++i) {
    const AttentionRate &x = a.attentionEntries()[i],
                        &y = b.attentionEntries()[i];
    EXPECT_EQ(y.shape, x.shape);
    EXPECT_DOUBLE_EQ(y.forward, x.forward);
    EXPECT_DOUBLE_EQ(y.backward, x.backward);
  }
}
