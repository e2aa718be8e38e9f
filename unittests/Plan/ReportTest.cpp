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

TEST(CompileCommand, ImportsFirstForAnotherMicrobatchSize) {
  EXPECT_EQ(
      compileCommand(config("1f1b", 0, 4), context("my model.json", true)),
      "bitpipe-import --config 'my model.json' --microbatch-size 4 -o "
      "gpt_96-mb4.mlir && bitpipe-compile gpt_96-mb4.mlir --schedule "
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
  e.peakMemory.weights = 2.0 * (1 << 30);
  e.p2pBytes = 1.0 * (1 << 30);
  e.allReduceBytes = 0.5 * (1 << 30);
  r.ranked = {e, e};
  r.ranked[1].stepTime = 2;
  for (int i = 0; i < kNumRejections; ++i)
    r.rejections.push_back({static_cast<Rejection>(i), 0, {}});
  r.rejections[int(Rejection::Memory)] = {Rejection::Memory, 1,
                                          "1f1b D=1: too big"};
  return r;
}

TEST(Report, TableHasAHeaderAndTopKRows) {
  std::string table = formatTable(result(), 1);
  EXPECT_EQ(table,
            "rank schedule            D   dp   v   mb      N split     step_s"
            "    tokens/s  bubble  peak_GiB   comm_GiB\n"
            "   1 bitpipe             8    4   -    1     16    no     1.5000"
            "       12345  0.1250      2.00       1.50\n");
  std::string all = formatTable(result(), 0);
  EXPECT_EQ(std::count(all.begin(), all.end(), '\n'), 3);
}

TEST(Report, RejectionsListOnlyWhatOccurred) {
  EXPECT_EQ(formatRejections(result()),
            "rejected: 1 of 3 configurations considered\n"
            "  memory             1  with the activations in flight, a rank "
            "exceeds the cap; e.g. 1f1b D=1: too big\n");
}

TEST(Report, JsonCarriesEveryColumn) {
  PlanRequest req;
  req.globalBatch = 64;
  std::string json =
      formatJson(result(), 0, req, "a100-4x8", context("m.json", true));
  for (const char *key :
       {"\"cluster\": \"a100-4x8\"", "\"global_batch\": 64",
        "\"considered\": 3", "\"feasible\": 2",
        "\"memory\": {\"count\": 1, \"example\": \"1f1b D=1: too big\"}",
        "\"schedule\": \"bitpipe\"", "\"step_time_s\": 1.5",
        "\"bubble\": 0.125", "\"p2p_bytes\": 1073741824",
        "\"compile_command\": \"bitpipe-compile m.json"})
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
}

} // namespace
