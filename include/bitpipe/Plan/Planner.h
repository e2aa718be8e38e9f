//===- Planner.h - The best way to train a model on a cluster ---*- C++ -*-===//
//
// Searches the configurations of a training step for a model on a cluster
// at a fixed global batch: every registered schedule (Registry.h), the
// pipeline depth D, the data-parallel width dp, the chunks per device of a
// schedule that takes several, and the micro-batch size and count
// (global batch = dp * N * micro-batch size); the backward is split where
// the schedule's entry says so. Each candidate is cut into stages as
// bitpipe-partition cuts it (ModelProfile.h), timed by the event simulator
// on the cluster (CostModel::deployment: link-aware transfers, ring or
// tree all-reduces over every copy) and sized by rankMemory (Memory.h); those
// over the memory cap, or that the registry refuses, are rejected and
// counted by reason. Plain C++ on the schedule library; docs/planning.md.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_PLAN_PLANNER_H
#define BITPIPE_PLAN_PLANNER_H

#include "bitpipe/Plan/ModelProfile.h"
#include "bitpipe/Schedule/Cluster.h"
#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Memory.h"
#include "bitpipe/Schedule/Partition.h"
#include "bitpipe/Schedule/Recompute.h"
#include "bitpipe/Schedule/Schedule.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Transport.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace bitpipe::plan {

/// The transports' buffers per peer a rank talks to: NCCL_BUFFSIZE's
/// default (docs/clusters.md, "Memory").
inline constexpr double kCommBufferBytesPerPeer = 4.0 * 1024 * 1024;

/// The share of a GPU's memory a plan leaves free by default: what the
/// memory model does not count (the CUDA context, cuBLAS and attention
/// workspaces, a forward's transient tensors, the caching allocator's
/// fragmentation) takes a few GiB of an 80-141 GB card
/// (docs/planning.md, "Memory headroom").
inline constexpr double kDefaultMemoryHeadroomFraction = 0.10;

/// What to search, and under which limits.
struct PlanRequest {
  int64_t globalBatch = 0;   ///< Sequences per optimizer step, all copies.
  double memoryCapBytes = 0; ///< Per GPU; 0: the cluster's gpu.memory_bytes.
  /// What a plan leaves free of the cap: memoryHeadroomBytes plus
  /// memoryHeadroomFraction of the cap (a tool sets one of the two).
  double memoryHeadroomBytes = 0;
  double memoryHeadroomFraction = kDefaultMemoryHeadroomFraction;
  int gpus = 0;              ///< GPUs to use; 0: every GPU of the cluster.
  /// Also configurations with D * dp < gpus (some GPUs idle); otherwise
  /// D * dp == gpus.
  bool allowIdleGpus = false;
  /// What every configuration's backward computes again: none or full
  /// (docs/recompute.md; selective is not modelled).
  sched::Recompute recompute = sched::Recompute::None;
  /// A configuration over the memory cap without recomputation is tried
  /// again with full recomputation (docs/planning.md).
  bool recomputeToFit = false;
  /// The partition units a configuration may be cut from (docs/models.md,
  /// "Partition units"): each configuration takes the one whose stages
  /// balance best (the smallest most expensive stage; whole layers on a
  /// tie). Empty: whole layers only.
  std::vector<sched::PartitionUnits> units;
  std::vector<std::string> schedules; ///< Empty: every registered one.
  /// Pipeline depths D to try, each >= 1; empty: every D the GPUs allow.
  /// Comparing schedules at one depth takes the partition's granularity
  /// out of the comparison (bench/paper).
  std::vector<int> devices;
  std::vector<int64_t> microbatchSizes; ///< Sizes to try, each >= 1.
  int maxChunks = 8; ///< The most chunks per device tried (interleaved).
  sched::ComputePrecision precision = sched::ComputePrecision::Bf16;
  /// The rules the candidates' transfers run under: NCCL's on GPUs (a send
  /// waits for its receive; each channel and group on its own stream, as
  /// the CUDA runtime issues them), MPI's on CPUs (docs/nccl-transfers.md).
  sched::Transport transport = sched::Transport::Nccl;
  /// How a stage held by several pipeline ranks sums across the copies:
  /// the compiler's default, two levels (docs/data-parallel.md).
  sched::GradientSync gradientSync = sched::GradientSync::Hierarchical;
  /// Plan for runs with --shard-optimizer (docs/data-parallel.md, "Sharded
  /// optimizer"): a stage's optimizer state is divided by the world ranks
  /// holding it (its replicas in the pipeline times the copies).
  bool shardOptimizer = false;
  /// Threads that simulate candidates (0: one per hardware thread). The
  /// result is the same for any number.
  int jobs = 0;
};

/// One configuration of the search.
struct PlanConfig {
  std::string schedule;
  int devices = 0;      ///< D.
  int dataParallel = 0; ///< dp.
  int chunks = 0;       ///< Chunks per device; 0 where the schedule
                        ///< fixes them (!ScheduleInfo::choosesChunks).
  int64_t microbatchSize = 0;
  int microbatches = 0; ///< N per copy and step.
  bool splitBackward = false;
  int stages = 0; ///< Stages per pipeline, as the placement makes.
  /// What each stage's backward computes again (bitpipe-compile
  /// --recompute).
  sched::Recompute recompute = sched::Recompute::None;
  /// What the stages are cut from (bitpipe-compile --units).
  sched::PartitionUnits units = sched::PartitionUnits::Layers;

  int gpus() const { return devices * dataParallel; }
};

/// What a configuration costs, as simulated.
struct Estimate {
  PlanConfig config;
  double stepTime = 0;          ///< Seconds (the simulator's makespan).
  double tokensPerSecond = 0;   ///< globalBatch * seqLen / stepTime.
  double bubble = 0;            ///< SimResult::bubbleRatio.
  sched::RankMemory peakMemory; ///< Of the rank whose total is largest.
  int peakRank = 0;             ///< That rank (pipeline rank).
  /// Bytes every rank of every copy sends in a step: point-to-point
  /// activations and gradients, and the all-reduces' sends (ring or tree,
  /// whichever each all-reduce runs).
  double p2pBytes = 0;
  double allReduceBytes = 0;
  /// Of the all-reduces' bytes, the most that one rank sends across nodes
  /// in a step (CostModel::allReduceInterNodeBytesPerRank): what a
  /// two-level sync halves for a mirror pair.
  double allReduceInterNodeBytesPerRank = 0;
  double allReduceOverlap = 1; ///< SimResult::allReduceOverlap.
  /// Model FLOP utilisation: the model's forward and backward FLOPs per
  /// step over stepTime and the peak of the GPUs the configuration uses
  /// (modelFlopsUtilization).
  double mfu = 0;

  double tokensPerSecondPerGpu() const {
    return tokensPerSecond / config.gpus();
  }
};

/// The share of `gpus` GPUs' peak FLOP/s that `modelFlops` per step
/// computed in `stepTime` seconds make: MFU, as PaLM defines it (no
/// recomputation counted, the peak the cluster file's).
double modelFlopsUtilization(double modelFlops, double stepTime, int gpus,
                             double peakFlopsPerGpu);

/// Why a configuration was not kept.
enum class Rejection {
  Stages,       ///< More stages than the model has partition units.
  Schedule,     ///< The registry or the generator refuses (D, N, v).
  Model,        ///< The model cannot be built at that micro-batch size.
  MemoryStates, ///< Weights, gradients, optimizer state and buffers alone
                ///< exceed the cap (not simulated).
  Memory,       ///< With the activations in flight, over the cap.
  Simulation,   ///< The simulator failed or found a deadlock.
};
inline constexpr int kNumRejections = 6;
/// "stages", "schedule", "model", "memory-states", "memory", "simulation".
const char *rejectionName(Rejection reason);
/// One line: what the reason means.
const char *rejectionMeaning(Rejection reason);

struct RejectionCount {
  Rejection reason;
  int64_t count = 0;
  std::string example; ///< The first such configuration and why.
};

/// What became of one schedule's configurations.
struct ScheduleOutcome {
  std::string schedule;
  int64_t considered = 0;
  int best = -1; ///< Its fastest in PlanResult::ranked; -1: none fits.
  /// Why the others were rejected, in Rejection's order, as PlanResult's.
  std::vector<RejectionCount> rejections;
};

struct PlanResult {
  /// Every configuration that fits, fastest first (ties: less memory,
  /// fewer GPUs, then the registry's order, D, chunks, micro-batch size).
  std::vector<Estimate> ranked;
  /// One entry per reason, in Rejection's order (count 0 when none).
  std::vector<RejectionCount> rejections;
  /// One entry per schedule searched, in the registry's order.
  std::vector<ScheduleOutcome> schedules;
  int64_t considered = 0;    ///< ranked.size() + every rejection.
  double memoryCapBytes = 0; ///< Memory per GPU.
  double memoryHeadroomBytes = 0; ///< Of it, left free.
  int gpus = 0;                   ///< The GPUs searched over.
  int64_t seqLen = 0;
  /// The model's forward and backward FLOPs per token (0 when no profile
  /// could be built).
  double modelFlopsPerToken = 0;
  /// How the plans' mirror pairs sum across copies (the request's).
  sched::GradientSync gradientSync = sched::GradientSync::Hierarchical;

  int64_t rejected() const { return considered - int64_t(ranked.size()); }
  /// What a rank may use: the cap less the headroom.
  double memoryBudgetBytes() const {
    return memoryCapBytes - memoryHeadroomBytes;
  }
};

/// The model's profile at a micro-batch size, in partition units
/// (ProfileFromIR.h's ModelSource::profile; tests give hand-made ones).
using ProfileSource = std::function<sched::Result<ModelProfile>(
    int64_t microbatchSize, sched::PartitionUnits units)>;

/// Checks the request against the cluster: errors name the field, the
/// value and what was expected (the tool prefixes "--").
std::string checkRequest(const PlanRequest &request,
                         const sched::Cluster &cluster,
                         const char *flagPrefix = "");

/// The memory per GPU the request plans with (its cap, or the cluster's),
/// and the headroom it leaves free of it.
double memoryCap(const PlanRequest &request, const sched::Cluster &cluster);
double memoryHeadroom(const PlanRequest &request,
                      const sched::Cluster &cluster);

/// The search. Fails when the request does not pass checkRequest.
sched::Result<PlanResult> search(const PlanRequest &request,
                                 const sched::Cluster &cluster,
                                 const ProfileSource &profile);

/// A configuration's simulated step, kept for its picture (sched::toSvg,
/// toSvgStack); times in seconds.
struct Timeline {
  sched::Schedule schedule;
  sched::SimResult sim;
};

/// Times and sizes one configuration of `model` (whose micro-batch size is
/// the configuration's). Fails, saying why, where the search would reject
/// it; `reason` (when given) says which Rejection, and `timeline` (when
/// given) receives the simulated step.
sched::Result<Estimate>
evaluate(const PlanConfig &config, const ModelProfile &model,
         const sched::Cluster &cluster, const PlanRequest &request,
         Rejection *reason = nullptr, Timeline *timeline = nullptr);

} // namespace bitpipe::plan

#endif // BITPIPE_PLAN_PLANNER_H
