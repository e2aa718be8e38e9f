//===- Pipeline.h - The bitpipe-pipeline pass pipeline ----------*- C++ -*-===//
//
// From a model to verified per-rank training programs in one pass pipeline:
// every choice the separate passes need (chunks, placement, split backward)
// follows from the schedule registry's entry for the request.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TRANSFORMS_PIPELINE_H
#define BITPIPE_TRANSFORMS_PIPELINE_H

#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Support/GradientSyncOptions.h"
#include "bitpipe/Support/RecomputeOptions.h"
#include "bitpipe/Support/TransportOptions.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace bitpipe {

/// What the pipeline is built from: the schedule request (checked and
/// completed by sched::validate) and what the pipeline adds to it.
/// bitpipe-compile fills it from its flags; bitpipe-pipeline's textual
/// options convert into it (PipelineOptions::toConfig).
/// The largest gradient bucket, in MiB (1 TiB): more than any device holds,
/// and its byte count stays far inside int64 (docs/models.md, "Limits").
/// bitpipe-insert-allreduce's bucket-mb and bucket-bytes are checked
/// against it.
constexpr double kMaxBucketMb = 1 << 20;

struct PipelineConfig {
  sched::ScheduleOptions request;
  /// Gradient bucket capacity in MiB (DDP's default).
  double bucketMb = 25.0;
  /// What each stage's backward computes again (bitpipe-generate-backward).
  sched::Recompute recompute = sched::Recompute::None;
  /// End with bitpipe-verify. A driver that lowers the result at once may
  /// leave it out: bitpipe-lower-program-to-runtime runs the same checks
  /// (verifyRankPrograms) before it changes anything, and at D=64 they
  /// cost most of a second (bench/results-log.md, "Compiler cost at
  /// scale, second slice").
  bool verify = true;
  /// Write the programs with their repeated runs as bitpipe.repeat from
  /// bitpipe-schedule on, so that neither the passes' work nor what is
  /// written grows with N (docs/repetition.md); false: straight programs.
  bool loops = true;
  /// How the CUDA runtime lays the transfers on NCCL communicators and
  /// streams (bitpipe-insert-transfers' `streams`).
  sched::TransferStreams streams = sched::TransferStreams::Channel;
  /// How a group of several pipeline ranks sums across the copies
  /// (bitpipe-insert-allreduce's `sync`).
  sched::GradientSync gradientSync = sched::GradientSync::Hierarchical;
};

/// The textual options of `bitpipe-pipeline`, under the names
/// bitpipe-compile's flags use too.
struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  Option<std::string> schedule{*this, sched::option::kSchedule,
                               llvm::cl::desc(sched::scheduleOptionHelp())};
  Option<int> devices{*this, sched::option::kDevices,
                      llvm::cl::desc("Pipeline devices D (required; 1..4096)"),
                      llvm::cl::init(0)};
  Option<int> microbatches{
      *this, sched::option::kMicrobatches,
      llvm::cl::desc("Micro-batches per step and copy N, 1..65536 "
                     "(default: the schedule's, 2 D)"),
      llvm::cl::init(0)};
  Option<int> chunksPerDevice{
      *this, sched::option::kChunksPerDevice,
      llvm::cl::desc("Chunks per device v of interleaved-1f1b, 2..64 "
                     "(default: the schedule's, 2)"),
      llvm::cl::init(0)};
  Option<int> maxInFlight{
      *this, sched::option::kMaxInFlight,
      llvm::cl::desc("Micro-batches a rank may hold in flight, 1..D, for "
                     "1f1b (default: D, no cap)"),
      llvm::cl::init(0)};
  Option<int> dataParallel{
      *this, sched::option::kDataParallel,
      llvm::cl::desc("Data-parallel copies K of the pipeline, 1..65536 "
                     "(world D * K, at most 2^20)"),
      llvm::cl::init(1)};
  Option<double> bucketMb{
      *this, "bucket-mb",
      llvm::cl::desc("Gradient bucket capacity in MiB (DDP: 25), in "
                     "(0, 1048576]"),
      llvm::cl::init(25.0)};
  Option<bool> splitBackward{
      *this, "split-backward",
      llvm::cl::desc("Split the backward into input and weight gradients "
                     "(only schedules with weight-gradient steps, zb-h1, "
                     "run it; they split without the option)"),
      llvm::cl::init(false)};
  Option<sched::Recompute> recompute{
      *this, "recompute",
      llvm::cl::desc("What each stage's backward computes again: none "
                     "(keep every value, statistics too), selective (the "
                     "statistics), full (the whole forward)"),
      llvm::cl::init(sched::Recompute::None), recomputeValues()};
  Option<bool> loops{
      *this, "loops",
      llvm::cl::desc("Write the programs' repeated runs as bitpipe.repeat "
                     "(false: straight programs)"),
      llvm::cl::init(true)};
  Option<sched::TransferStreams> transferStreams{
      *this, "transfer-streams",
      llvm::cl::desc("How the CUDA runtime lays the transfers on NCCL "
                     "communicators and streams (channel | shared)"),
      llvm::cl::init(sched::TransferStreams::Channel),
      transferStreamsValues()};
  Option<sched::GradientSync> gradientSync{
      *this, "gradient-sync",
      llvm::cl::desc("How a stage held by several pipeline ranks sums its "
                     "gradients across the copies (flat | hierarchical)"),
      llvm::cl::init(sched::GradientSync::Hierarchical), gradientSyncValues()};

  /// The one conversion into a PipelineConfig: options not given are left
  /// to the registry's defaults.
  PipelineConfig toConfig() const;
};

/// Appends the whole pipeline to `pm` (a module pass manager). A request
/// the registry rejects (sched::validate) becomes a pass that reports it and
/// fails. The schedule itself is generated once, by bitpipe-schedule.
void buildPipeline(mlir::OpPassManager &pm, const PipelineConfig &config);

/// Registers `bitpipe-pipeline`.
/// The option names of `bitpipe-pipeline`, sorted.
std::vector<std::string> pipelineOptionNames();

void registerBitPipePipelines();

} // namespace bitpipe

#endif // BITPIPE_TRANSFORMS_PIPELINE_H
