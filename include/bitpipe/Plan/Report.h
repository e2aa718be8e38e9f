//===- Report.h - The planner's answer, for people and scripts --*- C++ -*-===//
//
// The assumptions the numbers rest on, the ranked table, the best of each
// schedule, the rejections by reason, the same as JSON, and the
// bitpipe-compile command line that builds the best configuration
// (tools/bitpipe-compile's flags; docs/planning.md, "Output").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_PLAN_REPORT_H
#define BITPIPE_PLAN_REPORT_H

#include "bitpipe/Plan/Planner.h"

#include <cstdint>
#include <string>

namespace bitpipe::plan {

/// The model and target the command line names.
struct CommandContext {
  std::string modelPath;
  bool modelIsConfig = true;
  int64_t modelMicrobatchSize = 0; ///< What the file gives.
  std::string modelName;           ///< For the output's file name.
  std::string target = "cuda";     ///< bitpipe-compile --target.
  std::string precision = "bf16";  ///< bitpipe-compile --precision.
  /// bitpipe-compile --gradient-sync (written where it is not the default).
  sched::GradientSync gradientSync = sched::GradientSync::Hierarchical;
  /// bitpipe-plan --shard-optimizer: the executable must run with it.
  bool shardOptimizer = false;
};

/// The flags the compiled executable must run with for the plan's memory
/// to hold ("--shard-optimizer"), "" for none.
std::string runFlags(const CommandContext &context);

/// `bytes` with a binary unit and two decimals: "512.00 MiB", "80.00 GiB".
std::string formatBytes(double bytes);

/// The commands that build `config`: bitpipe-compile on the model, or,
/// when the micro-batch size differs from the configuration file's,
/// bitpipe-import --microbatch-size first (bitpipe-compile takes the
/// file's). Arguments are quoted for a POSIX shell where they need it.
std::string compileCommand(const PlanConfig &config,
                           const CommandContext &context);

/// "445.05 TFLOP": FLOPs with a decimal unit and two decimals (a rate adds
/// "/s").
std::string formatFlops(double flops);

/// Where the cluster came from, for the report: the file, and its size
/// there when --nodes or --gpus-per-node changed it.
struct ClusterOrigin {
  std::string path;
  int fileNodes = 0, fileGpusPerNode = 0;
};

/// What the plan assumes, a line each: the cluster's size and the GPUs
/// used, the memory per GPU and the headroom left free of it, the compute
/// rate and whether the cluster file says it was calibrated, the model's
/// FLOPs per token and what MFU can reach, and the links' calibration.
std::string formatAssumptions(const PlanResult &result,
                              const sched::Cluster &cluster,
                              const ClusterOrigin &origin);

/// The first `topK` rows of the ranking (all when topK <= 0), with a header.
std::string formatTable(const PlanResult &result, int topK);

/// The fastest configuration of each schedule, with its place in the
/// ranking and its tokens/s over the best's, and for a schedule none of
/// whose configurations fits, why: its rejections by reason and the first
/// example of the commonest. Empty when one schedule was searched (the
/// table says it all).
std::string formatBestPerSchedule(const PlanResult &result);

/// "rejected: N of M" and one line per reason that occurred, with its
/// count, meaning and first example.
std::string formatRejections(const PlanResult &result);

/// Everything above as one JSON object (docs/planning.md, "Output").
std::string formatJson(const PlanResult &result, int topK,
                       const PlanRequest &request,
                       const sched::Cluster &cluster,
                       const CommandContext &context);

} // namespace bitpipe::plan

#endif // BITPIPE_PLAN_REPORT_H
