//===- InitAllDialects.h - The dialects bitpipe's IR uses -------*- C++ -*-===//
//
// Model IR, per-rank programs and their lowering to runtime calls use these
// dialects: one list for every tool that parses or produces that IR
// (bitpipe-opt, bitpipe-compile, the IR fuzz target), so that they accept
// the same files. Callers link the dialects' libraries.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_INITALLDIALECTS_H
#define BITPIPE_INITALLDIALECTS_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

namespace bitpipe {

inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<nn::NNDialect, bp::BitPipeDialect, mlir::arith::ArithDialect,
                  mlir::cf::ControlFlowDialect, mlir::func::FuncDialect,
                  mlir::LLVM::LLVMDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::tensor::TensorDialect>();
}

} // namespace bitpipe

#endif // BITPIPE_INITALLDIALECTS_H
