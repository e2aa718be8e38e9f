//===- LowerToRuntime.cpp - Tensor-level programs to the LLVM dialect -----===//
//
// `bitpipe-lower-to-runtime`: the whole way from bitpipe-pipeline's output
// to an LLVM-dialect module that defines what program.h promises. The
// programs go first, while the stage functions are still on tensors and
// carry their role attributes; the entries last, once the C signatures of
// the stage functions are final.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/LowerToRuntime/LowerToRuntime.h"

#include "bitpipe/Conversion/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void bitpipe::buildLowerToRuntimePipeline(OpPassManager &pm) {
  pm.addPass(createLowerProgramToRuntime());
  pm.addPass(createLowerNNToRuntime());
  buildLowerToLLVMPipeline(pm);
  pm.addPass(createEmitEntryPoints());
}

void bitpipe::registerLowerToRuntimePipeline() {
  PassPipelineRegistration<>(
      "bitpipe-lower-to-runtime",
      "Lower the output of bitpipe-pipeline to the LLVM dialect: rank "
      "programs as calls of bitpipe/program.h, stage functions as calls of "
      "the kernels, the manifest and the entry tables",
      [](OpPassManager &pm) { buildLowerToRuntimePipeline(pm); });
}
