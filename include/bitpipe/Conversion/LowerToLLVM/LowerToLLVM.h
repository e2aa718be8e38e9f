//===- LowerToLLVM.h - The runtime-call IR to the LLVM dialect --*- C++ -*-===//

#ifndef BITPIPE_CONVERSION_LOWERTOLLVM_LOWERTOLLVM_H
#define BITPIPE_CONVERSION_LOWERTOLLVM_LOWERTOLLVM_H

#include "mlir/Pass/PassManager.h"

namespace bitpipe {

/// Adds the passes of `bitpipe-lower-to-llvm` to \p pm (a module pass
/// manager): memref, func (bare-pointer calling convention) and arith to the
/// LLVM dialect, then reconcile-unrealized-casts.
void buildLowerToLLVMPipeline(mlir::OpPassManager &pm);

/// Registers `bitpipe-lower-to-llvm` with the pass-pipeline registry.
void registerLowerToLLVMPipeline();

} // namespace bitpipe

#endif // BITPIPE_CONVERSION_LOWERTOLLVM_LOWERTOLLVM_H
