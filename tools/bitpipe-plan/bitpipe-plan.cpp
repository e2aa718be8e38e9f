//===- bitpipe-plan.cpp - The best configuration for a cluster ------------===//
//
//   bitpipe-plan MODEL.json|MODEL.mlir --cluster CLUSTER.json
//                [--nodes N] [--gpus-per-node G]
//                --global-batch B [--memory-cap 80GiB]
//                [--memory-headroom 10%|SIZE] [--gpus G]
//                [--schedules a,b] [--devices D,..]
//                [--microbatch-sizes 1,2,4,8]
//                [--max-chunks 8] [--allow-idle-gpus] [--top K]
//                [--recompute none|full] [--recompute-to-fit]
//                [--json FILE] [--timelines FILE.svg]
//                [--target cuda|cpu] [--precision bf16|fp32]
//                [--jobs J]
//
// Searches schedule, pipeline depth, data-parallel width, chunks per device
// and micro-batch size and count for the model on the cluster at the global
// batch (lib/Plan, docs/planning.md), and prints what it assumes (memory
// headroom, compute rate and whether it was calibrated, MFU's terms), the
// fastest configurations that fit, the best of each schedule, what was
// rejected and why, and the bitpipe-compile command of the best; with
// --timelines, one picture of the best of each schedule's simulated steps at
// one time scale. Exits 1 on a bad input, or when no configuration fits.
//
//===----------------------------------------------------------------------===//

#include "ToolOutput.h"
#include "bitpipe/Conversion/Target/Target.h"
#include "bitpipe/Plan/ClusterShape.h"
#include "bitpipe/Plan/Planner.h"
#include "bitpipe/Plan/ProfileFromIR.h"
#include "bitpipe/Plan/Report.h"
#include "bitpipe/Schedule/Cluster.h"
#include "bitpipe/Schedule/Export.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Support/GradientSyncOptions.h"
#include "bitpipe/Support/PartitionUnitsOptions.h"
#include "bitpipe/Support/RecomputeOptions.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace llvm;
namespace sched = bitpipe::sched;

namespace {

cl::OptionCategory category("bitpipe-plan options");

cl::opt<std::string> modelPath(cl::Positional, cl::Required,
                               cl::desc("<model config.json | model.mlir>"),
                               cl::cat(category));
cl::opt<std::string> clusterPath("cluster", cl::Required,
                                 cl::desc("Cluster description "
                                          "(docs/clusters.md)"),
                                 cl::value_desc("file"), cl::cat(category));
cl::opt<int> nodes("nodes",
                   cl::desc("Nodes of the cluster file's kind (default: the "
                            "file's)"),
                   cl::value_desc("N"), cl::cat(category));
cl::opt<int> gpusPerNode("gpus-per-node",
                         cl::desc("GPUs per node (default: the cluster "
                                  "file's)"),
                         cl::value_desc("G"), cl::cat(category));
cl::opt<int64_t> globalBatch("global-batch", cl::Required,
                             cl::desc("Sequences per optimizer step, over "
                                      "all data-parallel copies"),
                             cl::value_desc("B"), cl::cat(category));
cl::opt<std::string>
    memoryCap("memory-cap",
              cl::desc("Memory per GPU: bytes, or a number with KiB, MiB, "
                       "GiB, TiB, KB, MB, GB or TB (default: the cluster's "
                       "gpu.memory_bytes)"),
              cl::value_desc("size"), cl::cat(category));
const std::string headroomHelp =
    "Memory per GPU left free of the cap for what the memory model does not "
    "count: a share (10%) or a size (6GiB; 0: none). Default " +
    std::to_string(
        static_cast<int>(bitpipe::plan::kDefaultMemoryHeadroomFraction * 100)) +
    "%";
cl::opt<std::string> memoryHeadroom("memory-headroom", cl::desc(headroomHelp),
                                    cl::value_desc("share|size"),
                                    cl::cat(category));
cl::opt<int> gpus("gpus",
                  cl::desc("GPUs to use (default: all of the cluster's)"),
                  cl::init(0), cl::cat(category));
cl::opt<bool> allowIdle("allow-idle-gpus",
                        cl::desc("Also consider D * dp below --gpus"),
                        cl::init(false), cl::cat(category));
cl::opt<sched::Recompute> recompute(
    "recompute",
    cl::desc("What every configuration's backward computes again: none "
             "(default) or full (docs/recompute.md; selective is not "
             "modelled)"),
    cl::init(sched::Recompute::None), bitpipe::recomputeValues(),
    cl::cat(category));
cl::opt<sched::GradientSync> gradientSync(
    "gradient-sync",
    cl::desc("How a stage held by several pipeline ranks sums across the "
             "data-parallel copies, as bitpipe-compile --gradient-sync "
             "(default: hierarchical)"),
    cl::init(sched::GradientSync::Hierarchical), bitpipe::gradientSyncValues(),
    cl::cat(category));
cl::opt<bool> shardOptimizer(
    "shard-optimizer",
    cl::desc("Plan for executables run with --shard-optimizer: each "
             "stage's optimizer state divided by the ranks holding it "
             "(docs/data-parallel.md, \"Sharded optimizer\")"),
    cl::init(false), cl::cat(category));
cl::opt<bool> recomputeToFit(
    "recompute-to-fit",
    cl::desc("Try a configuration over the memory cap again with full "
             "recomputation"),
    cl::init(false), cl::cat(category));
cl::list<sched::PartitionUnits> unitsList(
    "units", cl::CommaSeparated,
    cl::desc("The partition units a configuration may be cut from; each "
             "takes the one whose stages balance best (default: "
             "layers,halves for a configuration, the IR's own for model "
             "IR; docs/models.md, \"Partition units\")"),
    bitpipe::partitionUnitsValues(), cl::cat(category));
cl::list<std::string> scheduleList("schedules", cl::CommaSeparated,
                                   cl::desc("Schedules to try (default: "
                                            "all registered)"),
                                   cl::value_desc("name,..."),
                                   cl::cat(category));
cl::list<int> depths("devices", cl::CommaSeparated,
                     cl::desc("Pipeline depths D to try (default: every D "
                              "the GPUs allow)"),
                     cl::value_desc("D,..."), cl::cat(category));
cl::list<int64_t> microbatchSizes(
    "microbatch-sizes", cl::CommaSeparated,
    cl::desc("Micro-batch sizes to try (default: 1,2,4,8 and the model's; "
             "model IR: its own only)"),
    cl::value_desc("n,..."), cl::cat(category));
cl::opt<int> maxChunks("max-chunks",
                       cl::desc("The most chunks per device tried for a "
                                "schedule that takes several (8)"),
                       cl::init(8), cl::cat(category));
cl::opt<int> jobs("jobs",
                  cl::desc("Threads that simulate candidates (0: one per "
                           "hardware thread; the result is the same)"),
                  cl::init(0), cl::cat(category));
cl::opt<int> top("top", cl::desc("Rows of the table (10; 0: all)"),
                 cl::init(10), cl::cat(category));
cl::opt<std::string> jsonPath("json",
                              cl::desc("Also write the result as JSON "
                                       "(\"-\": standard output, instead of "
                                       "the table)"),
                              cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> timelinesPath(
    "timelines",
    cl::desc("Also draw the simulated step of the best configuration of "
             "each schedule, fastest first, one above the other at one time "
             "scale (SVG)"),
    cl::value_desc("file.svg"), cl::cat(category));
cl::opt<bitpipe::TargetKind> target("target",
                                    cl::desc("The target of the compile "
                                             "command (cuda)"),
                                    cl::init(bitpipe::TargetKind::CUDA),
                                    bitpipe::targetKindValues(),
                                    cl::cat(category));
cl::opt<bitpipe::Precision>
    precision("precision",
              cl::desc("Training precision (default: the target's, bf16 on "
                       "cuda): sizes weights and activations"),
              bitpipe::precisionValues(), cl::cat(category));

int fail(const Twine &message) {
  WithColor::error(errs(), "bitpipe-plan") << message << "\n";
  return 1;
}

/// --timelines: the best configuration of each schedule simulated again,
/// its timeline kept, drawn fastest first. Each panel's title names the
/// configuration.
Error writeTimelines(const bitpipe::plan::PlanResult &result,
                     const bitpipe::plan::PlanRequest &request,
                     const sched::Cluster &cluster,
                     bitpipe::plan::ModelSource &source) {
  std::vector<int> best;
  for (const bitpipe::plan::ScheduleOutcome &outcome : result.schedules)
    if (outcome.best >= 0)
      best.push_back(outcome.best);
  std::sort(best.begin(), best.end());
  std::vector<bitpipe::plan::Timeline> timelines(best.size());
  for (auto [i, index] : llvm::enumerate(best)) {
    const bitpipe::plan::PlanConfig &config = result.ranked[index].config;
    sched::Result<bitpipe::plan::ModelProfile> profile =
        source.profile(config.microbatchSize, config.units);
    if (!profile)
      return createStringError(inconvertibleErrorCode(), profile.error);
    sched::Result<bitpipe::plan::Estimate> again = bitpipe::plan::evaluate(
        config, *profile, cluster, request, nullptr, &timelines[i]);
    if (!again)
      return createStringError(inconvertibleErrorCode(), again.error);
    timelines[i].schedule.name = "#" + std::to_string(index + 1) + " " +
                                 config.schedule +
                                 " dp=" + std::to_string(config.dataParallel) +
                                 " mb=" + std::to_string(config.microbatchSize);
  }
  std::vector<sched::SvgPanel> panels;
  for (const bitpipe::plan::Timeline &t : timelines)
    panels.push_back({&t.schedule, &t.sim});
  sched::SvgOptions options;
  options.timeUnit = "s";
  std::string svg = sched::toSvgStack(panels, options);
  return bitpipe::writeOutputFile(timelinesPath,
                                  [&](raw_ostream &os) { os << svg; });
}

/// "80GiB", "8.5e10", "512 MiB", "0" in bytes; negative when unreadable.
double parseSize(const std::string &text) {
  static const struct {
    const char *suffix;
    double factor;
  } units[] = {{"KiB", 1024.0},
               {"MiB", 1024.0 * 1024},
               {"GiB", 1024.0 * 1024 * 1024},
               {"TiB", 1024.0 * 1024 * 1024 * 1024},
               {"KB", 1e3},
               {"MB", 1e6},
               {"GB", 1e9},
               {"TB", 1e12},
               {"B", 1.0}};
  StringRef s = StringRef(text).trim();
  double factor = 1;
  for (const auto &u : units)
    if (s.ends_with(u.suffix)) {
      s = s.drop_back(StringRef(u.suffix).size()).rtrim();
      factor = u.factor;
      break;
    }
  double value = 0;
  if (s.empty() || s.getAsDouble(value) || !std::isfinite(value) || value < 0)
    return -1;
  return value * factor;
}

/// "10%" as a fraction; negative when not a share in [0%, 100%).
double parseShare(StringRef text) {
  double percent = 0;
  if (!text.consume_back("%") || text.trim().getAsDouble(percent) ||
      !(percent >= 0 && percent < 100))
    return -1;
  return percent / 100;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "bitpipe-plan: the fastest schedule, pipeline depth, data-parallel "
      "width, chunks and micro-batches for a model on a cluster\n");

  sched::Result<sched::Cluster> file = sched::readCluster(clusterPath);
  if (!file)
    return fail("--cluster: " + file.error);
  auto given = [](const cl::opt<int> &flag) {
    return flag.getNumOccurrences() ? std::optional<int>(flag.getValue())
                                    : std::nullopt;
  };
  sched::Result<sched::Cluster> cluster = bitpipe::plan::resizeCluster(
      *file, given(nodes), given(gpusPerNode), "--");
  if (!cluster)
    return fail(cluster.error);

  bitpipe::Precision trainPrecision = precision.getNumOccurrences()
                                          ? precision.getValue()
                                          : bitpipe::defaultPrecision(target);
  if (!bitpipe::supportsPrecision(target, trainPrecision))
    return fail("--precision " + bitpipe::stringifyPrecision(trainPrecision) +
                " is not supported by --target " +
                bitpipe::stringifyTargetKind(target) +
                " (the CPU runtime has fp32 kernels only)");

  bitpipe::plan::PlanRequest request;
  request.globalBatch = globalBatch;
  if (memoryCap.getNumOccurrences()) {
    request.memoryCapBytes = parseSize(memoryCap);
    if (!(request.memoryCapBytes > 0))
      return fail("--memory-cap: expected a positive size in bytes, or with "
                  "a unit (80GiB, 512MiB, 8e10), got '" +
                  memoryCap + "'");
  }
  if (memoryHeadroom.getNumOccurrences()) {
    StringRef text = StringRef(memoryHeadroom).trim();
    double share = text.ends_with("%") ? parseShare(text) : 0;
    double bytes = text.ends_with("%") ? 0 : parseSize(text.str());
    if (share < 0 || bytes < 0)
      return fail("--memory-headroom: expected a share of the memory in [0%, "
                  "100%) or a size in bytes, or with a unit (10%, 6GiB, 0), "
                  "got '" +
                  memoryHeadroom + "'");
    request.memoryHeadroomFraction = share;
    request.memoryHeadroomBytes = bytes;
  }
  if (gpus.getNumOccurrences() && gpus < 1)
    return fail("--gpus must be in [1, " + Twine(cluster->size()) + "], got " +
                Twine(gpus.getValue()));
  request.gpus = gpus;
  request.allowIdleGpus = allowIdle;
  request.recompute = recompute;
  request.gradientSync = gradientSync;
  request.shardOptimizer = shardOptimizer;
  request.recomputeToFit = recomputeToFit;
  request.schedules.assign(scheduleList.begin(), scheduleList.end());
  request.devices.assign(depths.begin(), depths.end());
  request.maxChunks = maxChunks;
  request.jobs = jobs;
  request.precision = trainPrecision == bitpipe::Precision::BF16
                          ? sched::ComputePrecision::Bf16
                          : sched::ComputePrecision::Fp32;
  // The CUDA runtime's NCCL communicator holds a send until its receive is
  // posted; the CPU runtime's MPI does not.
  request.transport = target == bitpipe::TargetKind::CUDA
                          ? sched::Transport::Nccl
                          : sched::Transport::Mpi;
  if (top < 0)
    return fail("--top must be 0 (all) or more, got " + Twine(top.getValue()));

  // The sizes: the flag's, or 1, 2, 4, 8 and the model's own (added once
  // the model is read). The flags are checked before the model is read, so
  // that a wrong one is said at once.
  if (!microbatchSizes.empty())
    request.microbatchSizes.assign(microbatchSizes.begin(),
                                   microbatchSizes.end());
  else
    request.microbatchSizes = {1, 2, 4, 8};
  if (std::string error = bitpipe::plan::checkRequest(request, *cluster, "--");
      !error.empty())
    return fail(error);

  Expected<std::unique_ptr<bitpipe::plan::ModelSource>> model =
      bitpipe::plan::ModelSource::open(modelPath);
  if (!model)
    return fail(toString(model.takeError()));
  bitpipe::plan::ModelSource &source = **model;

  const int64_t own = source.defaultMicrobatchSize();
  if (source.fixesMicrobatchSize()) {
    // Model IR: its own size only.
    for (int64_t size : microbatchSizes)
      if (size != own)
        return fail("--microbatch-sizes: " + modelPath +
                    " is model IR, whose types fix the micro-batch size at " +
                    Twine(own) + ", got " + Twine(size) +
                    " (give the model's configuration to search others)");
    request.microbatchSizes = {own};
  } else if (microbatchSizes.empty()) {
    request.microbatchSizes.push_back(own);
  }

  // Half layers where the model is a configuration (the importer numbers
  // its units); model IR keeps the units its ops carry.
  if (!unitsList.empty()) {
    if (!source.choosesUnits())
      for (sched::PartitionUnits units : unitsList)
        if (units != sched::PartitionUnits::Layers)
          return fail("--units: " + modelPath +
                      " is model IR, whose ops fix its partition units "
                      "(give the model's configuration to cut it from " +
                      sched::partitionUnitsName(units) + ")");
    request.units.assign(unitsList.begin(), unitsList.end());
  } else if (source.choosesUnits()) {
    request.units = {sched::PartitionUnits::Layers,
                     sched::PartitionUnits::Halves};
  }

  sched::Result<bitpipe::plan::PlanResult> result = bitpipe::plan::search(
      request, *cluster, [&](int64_t size, sched::PartitionUnits units) {
        return source.profile(size, units);
      });
  if (!result)
    return fail(result.error);

  bitpipe::plan::CommandContext context;
  context.modelPath = modelPath;
  context.modelIsConfig = source.isConfig();
  context.modelMicrobatchSize = source.defaultMicrobatchSize();
  context.modelName = source.name();
  context.target = bitpipe::stringifyTargetKind(target).str();
  context.precision = bitpipe::stringifyPrecision(trainPrecision).str();
  context.gradientSync = gradientSync;
  context.shardOptimizer = shardOptimizer;

  if (!timelinesPath.empty() && !result->ranked.empty())
    if (Error e = writeTimelines(*result, request, *cluster, source))
      return fail("--timelines: " + toString(std::move(e)));
  if (!jsonPath.empty()) {
    std::string json =
        bitpipe::plan::formatJson(*result, top, request, *cluster, context);
    if (Error e = bitpipe::writeOutputFile(
            jsonPath, [&](raw_ostream &os) { os << json; }))
      return fail("--json: " + toString(std::move(e)));
  }
  if (jsonPath != "-") {
    raw_ostream &os = outs();
    os << "bitpipe-plan: " << source.name() << " on " << cluster->name
       << ", global batch " << request.globalBatch << " x " << result->seqLen
       << " tokens, " << context.precision << "\n";
    os << bitpipe::plan::formatAssumptions(
        *result, *cluster, {clusterPath, file->nodes, file->gpusPerNode});
    os << bitpipe::plan::formatTable(*result, top);
    os << bitpipe::plan::formatBestPerSchedule(*result);
    os << bitpipe::plan::formatRejections(*result);
    if (!result->ranked.empty()) {
      os << "best: "
         << bitpipe::plan::compileCommand(result->ranked.front().config,
                                          context)
         << "\n";
      if (context.shardOptimizer)
        os << "run the executable with " << bitpipe::plan::runFlags(context)
           << ": the memory above assumes the optimizer sharded\n";
    }
    os.flush();
  }
  if (result->ranked.empty())
    return fail("no configuration of the " + Twine(result->considered) +
                " considered fits (the rejections above say why)");
  return 0;
}
