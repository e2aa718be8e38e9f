//===- bitpipe-opt.cpp - The bitpipe optimizer driver ---------------------===//
//
// MlirOptMain with the nn and bitpipe dialects, the upstream dialects model
// IR and its lowerings use, and every bitpipe pass and pipeline registered.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/Passes.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  bitpipe::registerAllBitPipePasses();
  bitpipe::registerConversionPasses();
  bitpipe::registerLowerToLLVMPipeline();
  bitpipe::registerLowerToRuntimePipeline();

  mlir::DialectRegistry registry;
  registry.insert<bitpipe::nn::NNDialect, bitpipe::bp::BitPipeDialect,
                  mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect, mlir::memref::MemRefDialect,
                  mlir::tensor::TensorDialect>();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "bitpipe optimizer driver\n", registry));
}
