//===- Pipeline.h - The bitpipe-pipeline pass pipeline ----------*- C++ -*-===//
//
// From a model to verified per-rank training programs in one pass pipeline:
// every choice the separate passes need (chunks, placement, split backward)
// follows from the schedule, the device count and the micro-batch count.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TRANSFORMS_PIPELINE_H
#define BITPIPE_TRANSFORMS_PIPELINE_H

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace bitpipe {

struct PipelineOptions : public mlir::PassPipelineOptions<PipelineOptions> {
  Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("gpipe, 1f1b, interleaved-1f1b, chimera, bitpipe or "
                     "zb-h1 (required)")};
  Option<int> devices{*this, "devices",
                      llvm::cl::desc("Pipeline devices D (required)"),
                      llvm::cl::init(0)};
  Option<int> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Micro-batches per step and copy N (required)"),
      llvm::cl::init(0)};
  Option<int> chunksPerDevice{
      *this, "chunks-per-device",
      llvm::cl::desc("Chunks per device v of interleaved-1f1b (default: the "
                     "schedule's, 2)"),
      llvm::cl::init(0)};
  Option<int> dataParallel{
      *this, "dp",
      llvm::cl::desc("Data-parallel copies K of the pipeline (world D * K)"),
      llvm::cl::init(1)};
  Option<double> bucketMb{
      *this, "bucket-mb",
      llvm::cl::desc("Gradient bucket capacity in MiB (DDP: 25)"),
      llvm::cl::init(25.0)};
  Option<bool> splitBackward{
      *this, "split-backward",
      llvm::cl::desc("Split the backward into input and weight gradients "
                     "even when the schedule does not need it"),
      llvm::cl::init(false)};
};

/// Appends the whole pipeline to `pm` (a module pass manager). Options the
/// schedule library rejects (an unknown schedule, a micro-batch count it
/// cannot schedule) become a pass that reports them and fails.
void buildPipeline(mlir::OpPassManager &pm, const PipelineOptions &options);

/// Registers `bitpipe-pipeline`.
void registerBitPipePipelines();

} // namespace bitpipe

#endif // BITPIPE_TRANSFORMS_PIPELINE_H
