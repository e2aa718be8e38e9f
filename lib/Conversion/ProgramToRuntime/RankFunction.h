//===- RankFunction.h - A rank program as a function of calls ---*- C++ -*-===//
//
// The last step of bitpipe-lower-program-to-runtime: the calls planned for
// one program become `func.func @bitpipe_rankR(%ctx)`. Repeated runs of
// calls (the steady state of the schedule) become `scf.for` loops whose
// arguments are affine in the induction variable, so that the function,
// and with it the compile time and the executable, does not grow with the
// number of micro-batches (docs/repetition.md).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_RANKFUNCTION_H
#define BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_RANKFUNCTION_H

#include "bitpipe/Conversion/RuntimeAbi/RuntimeAbi.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

namespace bitpipe {

/// One bp_rt_* call to emit, with its integer arguments (the context comes
/// first and is not listed).
struct PlannedCall {
  abi::RuntimeCall fn;
  llvm::SmallVector<int64_t, 6> args;
  mlir::Location loc;
};

/// Emits `calls` as the rank function of `program`, in its place. With
/// `loops`, repeated runs of calls become scf.for loops; the calls the
/// function makes, unrolled, are exactly `calls` either way.
mlir::func::FuncOp emitRankFunction(bp::ProgramOp program,
                                    llvm::ArrayRef<PlannedCall> calls,
                                    bool loops);

} // namespace bitpipe

#endif // BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_RANKFUNCTION_H
