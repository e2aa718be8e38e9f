//===- ReportTest.cpp - The planner's table, JSON and command line --------===//

#include "bitpipe/Plan/Report.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace bitpipe::plan;

namespace {

PlanConfig config(const std::string &schedule, int chunks, int64_t size) {
  PlanConfig c;
  c.schedule = schedule;
  c.devices = 8;
  c.dataParallel = 4;
  c.chunks = chunks;
  c.microbatchSize = size;
  c.microbatches = 16;
  return c;
}

CommandContext context(const std::string &path, bool isConfig) {
  CommandContext ctx;
  ctx.modelPath = path;
  ctx.modelIsConfig = isConfig;
  ctx.modelMicrobatchSize = 1;
  ctx.modelName = "gpt_96";
  return ctx;
}

TEST(CompileCommand, NamesBitpipeCompilesFlags) {
  EXPECT_EQ(compileCommand(config("bitpipe", 0, 1),
                           context("examples/gpt-96.json", true)),
            "bitpipe-compile examples/gpt-96.json --schedule bitpipe "
            "--devices 8 --microbatches 16 --dp 4 --target cuda "
            "--precision bf16 -o gpt_96_train");
  EXPECT_EQ(
      compileCommand(config("interleaved-1f1b", 3, 1), context("m.json", true)),
      "bitpipe-compile m.json --schedule interleaved-1f1b --devices 8 "
      "--microbatches 16 --chunks-per-device 3 --dp 4 --target cuda "
      "--precision bf16 -o gpt_96_train");
}

TEST(CompileCommand, NamesAnotherMicrobatchSize) {
  EXPECT_EQ(
      compileCommand(config("1f1b", 0, 4), context("my model.json", true)),
      "bitpipe-compile 'my model.json' --microbatch-size 4 --schedule "
      "1f1b --devices 8 --microbatches 16 --dp 4 --target cuda "
      "--precision bf16 -o gpt_96_train");
}

TEST(Report, SizesTakeABinaryUnit) {
  EXPECT_EQ(formatBytes(512), "512.00 B");
  EXPECT_EQ(formatBytes(1024 * 1024), "1.00 MiB");
  EXPECT_EQ(formatBytes(80.0 * (1 << 30)), "80.00 GiB");
}

PlanResult result() {
  PlanResult r;
  r.gpus = 32;
  r.considered = 3;
  r.memoryCapBytes = 80.0 * (1 << 30);
  r.seqLen = 1024;
  Estimate e;
  e.config = config("bitpipe", 0, 1);
  e.stepTime = 1.5;
  e.tokensPerSecond = 12345;
  e.bubble = 0.125;
  e.mfu = 0.4;
  e.peakMemory.weights = 2.0 * (1 << 30);
  e.p2pBytes = 1.0 * (1 << 30);
  e.allReduceBytes = 0.5 * (1 << 30);
  r.ranked = {e, e};
  r.ranked[1].stepTime = 2;
  for (int i = 0; i < kNumRejections; ++i)
    r.rejections.push_back({static_cast<Rejection>(i), 0, {}});
  r.rejections[int(Rejection::Memory)] = {Rejection::Memory, 1,
                                          "1f1b D=1: too big"};
  r.schedules = {{"bitpipe", 2, 0, r.rejections}};
  r.schedules[0].rejections[int(Rejection::Memory)] = {};
  r.schedules.push_back({"1f1b", 1, -1, r.rejections});
  return r;
}

bitpipe::sched::Cluster cluster() {
  bitpipe::sched::Cluster c;
  c.name = "a100-4x8";
  c.nodes = 4;
  c.gpusPerNode = 8;
  c.peakBf16Flops = 312e12;
  c.achievableFraction = 0.5;
  return c;
}

TEST(Report, TableHasAHeaderAndTopKRows) {
  std::string table = formatTable(result(), 1);
  EXPECT_EQ(table,
            "rank schedule            D   dp   v   mb      N split     step_s"
            "    tokens/s tok/s/GPU   MFU  bubble  peak_GiB   comm_GiB\n"
            "   1 bitpipe             8    4   -    1     16    no     1.5000"
            "       12345       386 0.400  0.1250      2.00       1.50\n");
  std::string all = formatTable(result(), 0);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 3);
}

TEST(Report, RejectionsListOnlyWhatOccurred) {
  EXPECT_EQ(formatRejections(result()),
            "rejected: 1 of 3 configurations considered\n"
            "  memory             1  with the activations in flight, a rank "
            "exceeds the budget; e.g. 1f1b D=1: too big\n");
}

TEST(Report, BestOfEachScheduleSaysWhereItRanksOrWhyNoneFits) {
  PlanResult r = result();
  r.ranked[1].config.schedule = "gpipe";
  r.ranked[1].tokensPerSecond = 12345 * 0.75;
  r.schedules.insert(r.schedules.begin(), {"gpipe", 4, 1, r.rejections});
  r.schedules[0].rejections[int(Rejection::Memory)] = {};
  r.schedules[0].rejections[int(Rejection::Schedule)] = {Rejection::Schedule, 3,
                                                         "gpipe D=8: no"};
  r.schedules[2].rejections[int(Rejection::Schedule)] = {Rejection::Schedule, 1,
                                                         "1f1b D=3: odd"};
  r.schedules[2].rejections[int(Rejection::Memory)] = {Rejection::Memory, 2,
                                                       "1f1b D=1: too big"};
  r.schedules[2].considered = 3;
  EXPECT_EQ(formatBestPerSchedule(r),
            "best of each schedule (rank: its place in the whole ranking; "
            "vs_best: its tokens/s over the best's):\n"
            "rank schedule            D   dp   v   mb      N split     step_s"
            "    tokens/s tok/s/GPU   MFU  bubble  peak_GiB   comm_GiB "
            "vs_best\n"
            "   2 gpipe               8    4   -    1     16    no     2.0000"
            "        9259       289 0.400  0.1250      2.00       1.50   "
            "0.750\n"
            "   1 bitpipe             8    4   -    1     16    no     1.5000"
            "       12345       386 0.400  0.1250      2.00       1.50   "
            "1.000\n"
            "   - 1f1b: none of its 3 configurations fits: memory 2, "
            "schedule 1; e.g. 1f1b D=1: too big (with the activations in "
            "flight, a rank exceeds the budget)\n");
  // One schedule: the table above says it all.
  r.schedules.resize(1);
  EXPECT_EQ(formatBestPerSchedule(r), "");
}

TEST(Report, AssumptionsSayWhatIsAssumedAndWhatCalibrated) {
  PlanResult r = result();
  r.memoryHeadroomBytes = 8.0 * (1 << 30);
  r.modelFlopsPerToken = 2.5e9;
  bitpipe::sched::Cluster c = cluster();
  std::string text = formatAssumptions(r, c, {"a100.json", 4, 8});
  EXPECT_EQ(text,
            "cluster: 4 nodes x 8 GPUs, 32 used, from a100.json\n"
            "memory:  80.00 GiB per GPU, 8.00 GiB of it (10.0%) left free for "
            "what the memory model does not count (the runtime's context, "
            "workspaces, fragmentation): a budget of 72.00 GiB\n"
            "compute: 156.00 TFLOP/s per GPU (312.00 TFLOP/s peak x 0.5 "
            "achievable), assumed, not calibrated on this cluster (its file "
            "has no calibration.compute; docs/calibration.md): step times, "
            "tokens/s and MFU scale with it\n"
            "model:   2.50 GFLOP per token (forward + backward); MFU = that x "
            "tokens/s / (GPUs x peak), at most 0.5 (no bubble, no exposed "
            "communication)\n"
            "links:   assumed, not calibrated on this cluster (its file has no "
            "calibration.links; docs/calibration.md): transfer and all-reduce "
            "times are the file's figures\n"
            "sync:    a stage held by two ranks of a pipeline sums in two "
            "levels (reduce-scatter in the copy, its halves across the "
            "copies, all-gather) (--gradient-sync hierarchical)\n");
  r.gradientSync = bitpipe::sched::GradientSync::Flat;
  EXPECT_NE(formatAssumptions(r, c, {"a100.json", 4, 8})
                .find("sync:    one all-reduce over every holder of a stage "
                      "(--gradient-sync flat)\n"),
            std::string::npos);
  c.computeCalibration = "fitted on run 7";
  c.linkCalibration = "fitted on run 8";
  c.nodes = 1;
  c.gpusPerNode = 4;
  r.gpus = 2;
  text = formatAssumptions(r, c, {"a100.json", 4, 8});
  EXPECT_NE(text.find("cluster: 1 node x 4 GPUs, 2 used, from a100.json "
                      "(which describes 4 x 8; the GPUs, their rate and the "
                      "links are its)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("achievable), calibrated: fitted on run 7\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("links:   calibrated: fitted on run 8\n"),
            std::string::npos)
      << text;
}

TEST(Report, JsonCarriesEveryColumn) {
  PlanRequest req;
  req.globalBatch = 64;
  std::string json =
      formatJson(result(), 0, req, cluster(), context("m.json", true));
  for (const char *key :
       {"\"cluster\": \"a100-4x8\"", "\"nodes\": 4", "\"gpus_per_node\": 8",
        "\"compute\": {\"calibrated\": false, \"calibration\": \"\", "
        "\"peak_flops_per_gpu\": 312000000000000, \"achievable_fraction\": "
        "0.5, \"sustained_flops_per_gpu\": 156000000000000, "
        "\"rates_by_kernel_shape\": null}",
        "\"links\": {\"calibrated\": false",
        "\"memory_budget_bytes\": 85899345920", "\"mfu\": 0.40000000000000002",
        "\"by_schedule\": [\n    {\"schedule\": \"bitpipe\", \"considered\": "
        "2, "
        "\"best\": {\"rank\": 1, \"schedule\": \"bitpipe\"",
        "{\"schedule\": \"1f1b\", \"considered\": 1, \"best\": null, "
        "\"rejected\": {\"memory\": {\"count\": 1, \"example\": \"1f1b D=1: "
        "too big\"}}}",
        "\"tokens_per_s_per_gpu\": 385.78125", "\"global_batch\": 64",
        "\"considered\": 3", "\"feasible\": 2",
        "\"memory\": {\"count\": 1, \"example\": \"1f1b D=1: too big\"}",
        "\"schedule\": \"bitpipe\"", "\"step_time_s\": 1.5",
        "\"bubble\": 0.125", "\"p2p_bytes\": 1073741824",
        "\"compile_command\": \"bitpipe-compile m.json"})
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
}

} // namespace
