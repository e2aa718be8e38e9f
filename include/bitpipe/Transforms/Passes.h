//===- Passes.h - bitpipe passes --------------------------------*- C++ -*-===//

#ifndef BITPIPE_TRANSFORMS_PASSES_H
#define BITPIPE_TRANSFORMS_PASSES_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Support/GradientSyncOptions.h"
#include "bitpipe/Support/RecomputeOptions.h"
#include "bitpipe/Support/TransportOptions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace bitpipe {

#define GEN_PASS_DECL
#include "bitpipe/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "bitpipe/Transforms/Passes.h.inc"

/// Registers `bitpipe-pipeline` (Pipeline.h).
void registerBitPipePipelines();

/// Every bitpipe pass and pass pipeline, for tools.
inline void registerAllBitPipePasses() {
  registerBitPipePasses();
  registerBitPipePipelines();
}

} // namespace bitpipe

#endif // BITPIPE_TRANSFORMS_PASSES_H
