//===- BitPipeOps.h - bitpipe operations ------------------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H
#define BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeTypes.h"
#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Dialect/NN/IR/NNAttrNames.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"

#include "bitpipe/Support/BoundedTensors.h"

#define GET_OP_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h.inc"

namespace bitpipe::bp {

/// Argument and result attributes that give the values of stage functions
/// and their backward functions a role (bitpipe-partition and
/// bitpipe-generate-backward write them; parameters and training inputs are
/// the nn dialect's). A bound op passes only the values without a state
/// role; see the binding rule of bitpipe.forward.
namespace role {
using attr::kForwardArg;
using attr::kGradOfResult;
using attr::kSaved;
using attr::kStash;
using nn::attr::kInput;
using nn::attr::kParam;
} // namespace role

/// Which op calls a function, and so which of its values are stage state.
enum class CalleeRole { Forward, Backward, WeightGrad };

/// Indices of the arguments of `fn` that a bound op of `role` passes as
/// operands (after the saved handle, for backward), in order.
llvm::SmallVector<unsigned> getBoundArguments(mlir::FunctionOpInterface fn,
                                              CalleeRole role);
/// Indices of the results of `fn` that a bound op of `role` returns (before
/// the saved handle, for forward), in order.
llvm::SmallVector<unsigned> getBoundResults(mlir::FunctionOpInterface fn,
                                            CalleeRole role);
/// `fn`'s type filtered by role: what the bound op's operands and results
/// (without the handle) must be.
mlir::FunctionType getBoundType(mlir::FunctionOpInterface fn, CalleeRole role);

} // namespace bitpipe::bp

#endif // BITPIPE_DIALECT_BITPIPE_IR_BITPIPEOPS_H
