//===- ProgramToRuntime.h - Programs to calls of program.h ------*- C++ -*-===//

#ifndef BITPIPE_CONVERSION_PROGRAMTORUNTIME_PROGRAMTORUNTIME_H
#define BITPIPE_CONVERSION_PROGRAMTORUNTIME_PROGRAMTORUNTIME_H

#include "bitpipe/Conversion/Target/Target.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace bitpipe {

#define GEN_PASS_DECL_LOWERPROGRAMTORUNTIME
#include "bitpipe/Conversion/Passes.h.inc"

/// The module attribute through which bitpipe-lower-program-to-runtime
/// tells bitpipe-emit-entry-points what to emit:
/// `{functions = [@f0, ...], ranks = [@bitpipe_rank0, ...]}`, the
/// manifest's functions in order and the rank functions by rank.
inline constexpr llvm::StringLiteral kEntryPointsAttrName =
    "bitpipe.entry_points";

/// The largest MPI tag every implementation accepts (MPI_TAG_UB >= 32767):
/// a transfer's tag is its position on its channel modulo 32768.
inline constexpr int64_t kMaxTransferTag = 32767;

} // namespace bitpipe

#endif // BITPIPE_CONVERSION_PROGRAMTORUNTIME_PROGRAMTORUNTIME_H
