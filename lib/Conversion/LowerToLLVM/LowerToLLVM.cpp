//===- LowerToLLVM.cpp - The runtime-call IR to the LLVM dialect ----------===//
//
// `bitpipe-lower-to-llvm`: upstream conversions only, in the order upstream
// uses them. The input is the output of bitpipe-lower-nn-to-runtime: memrefs
// (static shapes, identity layouts), func calls of the kernels, arith
// scalars and the few LLVM-dialect ops that produce kernel pointers; and the
// rank functions of bitpipe-lower-program-to-runtime, whose loops (scf.for)
// become branches first.
//
// Calling convention: bare pointers (`use-bare-ptr-memref-call-conv`). All
// memrefs here are static and dense, so a buffer is fully described by its
// address and the descriptor's extra fields (allocated pointer, offset,
// sizes, strides) would carry nothing. A function on tensors thus becomes a
// C function with one `float *` / `int32_t *` per tensor argument, returning
// one pointer per tensor result (a struct of pointers when there are
// several) - the runtime ABI's own style.
//
// Memory: memref.alloc and memref.dealloc become calls of MLIR's generic
// allocation functions (_mlir_memref_to_llvm_alloc / _free), which the
// runtime defines on its caching pool (bp_alloc / bp_free in runtime.h), not
// of malloc and free. Returned buffers are such blocks (no alignment
// padding: memref.alloc without an alignment), so the caller frees them
// with bp_free.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/LowerToLLVM/LowerToLLVM.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void bitpipe::buildLowerToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createConvertSCFToCFPass());
  FinalizeMemRefToLLVMConversionPassOptions memrefOptions;
  memrefOptions.useGenericFunctions = true;
  pm.addPass(createFinalizeMemRefToLLVMConversionPass(memrefOptions));
  ConvertFuncToLLVMPassOptions funcOptions;
  funcOptions.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(funcOptions));
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void bitpipe::registerLowerToLLVMPipeline() {
  PassPipelineRegistration<>(
      "bitpipe-lower-to-llvm",
      "Lower the output of bitpipe-lower-nn-to-runtime to the LLVM dialect "
      "(scf to cf; memref, func with bare-pointer memrefs, arith, cf; then "
      "reconcile-unrealized-casts)",
      [](OpPassManager &pm) { buildLowerToLLVMPipeline(pm); });
}
