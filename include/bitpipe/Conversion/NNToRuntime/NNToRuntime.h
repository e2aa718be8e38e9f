//===- NNToRuntime.h - nn ops to runtime kernel calls -----------*- C++ -*-===//

#ifndef BITPIPE_CONVERSION_NNTORUNTIME_NNTORUNTIME_H
#define BITPIPE_CONVERSION_NNTORUNTIME_NNTORUNTIME_H

#include "bitpipe/Conversion/Target/Target.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace bitpipe {

#define GEN_PASS_DECL_LOWERNNTORUNTIME
#include "bitpipe/Conversion/Passes.h.inc"

/// A lowered function's (DenseI64ArrayAttr) results that became trailing
/// arguments, in order: the parameter gradients it accumulates in place.
/// bitpipe-emit-entry-points passes the accumulators the runtime puts in
/// those results' slots (docs/runtime-abi.md, "Parameter gradients").
inline constexpr llvm::StringLiteral kAccumulatedResultsAttrName =
    "bitpipe.accumulated_results";

/// Tensors of static shape become memrefs of that shape; other types stay.
class NNToRuntimeTypeConverter : public mlir::TypeConverter {
public:
  NNToRuntimeTypeConverter();
};

/// The patterns lowering every nn op (and splat tensor constants) to
/// allocations and kernel calls.
void populateNNToRuntimeConversionPatterns(
    const mlir::TypeConverter &converter, mlir::RewritePatternSet &patterns);

} // namespace bitpipe

#endif // BITPIPE_CONVERSION_NNTORUNTIME_NNTORUNTIME_H
