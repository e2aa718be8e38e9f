//===- LowerToRuntime.h - Programs to the LLVM dialect ----------*- C++ -*-===//

#ifndef BITPIPE_CONVERSION_LOWERTORUNTIME_LOWERTORUNTIME_H
#define BITPIPE_CONVERSION_LOWERTORUNTIME_LOWERTORUNTIME_H

#include "bitpipe/Conversion/Target/Target.h"

#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace bitpipe {

/// What the program is compiled for: handed to the passes that need it
/// (bitpipe-lower-program-to-runtime writes both into the manifest,
/// bitpipe-lower-nn-to-runtime lowers in the precision).
struct LowerToRuntimeOptions {
  TargetKind target = TargetKind::CPU;
  Precision precision = Precision::FP32;
  /// Repeated runs of a rank's calls as loops (bitpipe-lower-program-to-
  /// runtime's `loops`, docs/repetition.md).
  bool loops = true;
  /// Check a CPU program under NCCL's rules too (bitpipe-lower-program-to-
  /// runtime's `nccl-rules`; a CUDA program always is).
  bool ncclRules = false;
};

/// Adds the passes of `bitpipe-lower-to-runtime` to \p pm (a module pass
/// manager): bitpipe-lower-program-to-runtime, bitpipe-lower-nn-to-runtime,
/// bitpipe-lower-to-llvm and bitpipe-emit-entry-points. The input is the
/// output of bitpipe-pipeline; the output is LLVM dialect that
/// mlir-translate turns into the object program.h describes.
void buildLowerToRuntimePipeline(mlir::OpPassManager &pm,
                                 const LowerToRuntimeOptions &options = {});

/// Registers `bitpipe-lower-to-runtime{target=... precision=...}` with the
/// pass-pipeline registry.
/// The option names of `bitpipe-lower-to-runtime`, sorted.
std::vector<std::string> lowerToRuntimePipelineOptionNames();

void registerLowerToRuntimePipeline();

} // namespace bitpipe

#endif // BITPIPE_CONVERSION_LOWERTORUNTIME_LOWERTORUNTIME_H
