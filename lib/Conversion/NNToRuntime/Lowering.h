//===- Lowering.h - The pieces of bitpipe-lower-nn-to-runtime ---*- C++ -*-===//
//
// The steps of the pass that are not one pattern per nn op, each in its own
// file: choosing the buffers' element types (StoragePrecision.cpp), summing
// parameter gradients in f32 under bf16 (GradientSums.cpp) and the fused
// linear + GELU calls (EpilogueFusion.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_CONVERSION_NNTORUNTIME_LOWERING_H
#define BITPIPE_LIB_CONVERSION_NNTORUNTIME_LOWERING_H

#include "bitpipe/Conversion/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/DenseMap.h"

namespace bitpipe::nn_lowering {

/// Gives every tensor of the module's functions (arguments, op results,
/// signatures, call results) the type its buffer will have under
/// \p precision (bitpipe/Conversion/Target/StorageType.h), in place, before
/// the conversion: the type converter then maps each tensor type to the
/// memref of the same element type, and every pattern allocates what the
/// op's (retyped) result says. A no-op under fp32. Fails, with an error on
/// the op, where the types would disagree: a call whose operands do not
/// fit its callee, an nn.add of a parameter gradient and an activation
/// gradient, or a splat constant that is not a scalar (bp_fill writes f32
/// only).
mlir::LogicalResult assignStoragePrecision(mlir::ModuleOp module,
                                           Precision precision);

/// Where the kernels of parameter gradients accumulate. A gradient that a
/// stage function returns (nn.param) accumulates into the rank's
/// accumulator, an argument of the lowered function
/// (passGradientAccumulators), sums of such included. Other sums of
/// parameter gradients (nn.add of two of them, in functions that are no
/// stage's backward) stay bp_add_fwd calls under fp32; under bf16
/// bp_add_fwd reads bf16 (the precision of activations), while parameter
/// gradients are f32: so the later gradient's kernel, which accumulates
/// anyway, accumulates into the earlier gradient's buffer instead of a
/// freshly zeroed one, and the add is that buffer.
struct GradientSumPlan {
  /// A parameter-gradient result -> the accumulator argument (tensor level)
  /// or the earlier parameter gradient whose buffer its kernel accumulates
  /// into.
  llvm::DenseMap<mlir::Value, mlir::Value> accumulateInto;
  /// An nn.add that is no call -> the operand (0 or 1) whose buffer holds
  /// the sum.
  llvm::DenseMap<mlir::Operation *, unsigned> sums;
};

/// Whether \p value is a result that its gradient kernel accumulates into:
/// the parameter gradients of nn.linear_weight_grad, nn.embedding_grad,
/// nn.layer_norm_grad and nn.rms_norm_grad (not their input gradients).
bool isAccumulatedResult(mlir::Value value);

/// Makes every parameter-gradient result of the module's functions (one
/// carrying nn.param: a backward's gradient of a parameter) an argument of
/// \p target's accumulator type (gradientAccumulatorBits), appended after
/// the arguments in result order, into which the gradient kernels that make
/// it accumulate directly (\p plan's accumulateInto); the nn.add ops that
/// summed them go. The function lists the results it turned into
/// arguments in kAccumulatedResultsAttrName. Fails, with an error on the
/// function, where a returned gradient is not made by gradient kernels
/// alone (GradientAccumulators.cpp), or on an op whose parameter gradients
/// would accumulate into two element types. Runs after
/// assignStoragePrecision, which would retype the arguments.
mlir::LogicalResult passGradientAccumulators(mlir::ModuleOp module,
                                             TargetKind target,
                                             GradientSumPlan &plan);

/// Adds to \p plan the in-place sums of \p module under \p precision (none
/// under fp32), for the sums passGradientAccumulators left. Fails, with an
/// error on the add, where a sum cannot be accumulated in place: an operand
/// with another user, or the later gradient not the direct result of a
/// gradient kernel.
mlir::LogicalResult planGradientSums(mlir::ModuleOp module, Precision precision,
                                     GradientSumPlan &plan);

/// The per-op patterns, calling the kernels of \p precision, those of
/// parameter gradients and their sums following \p sums (which must
/// outlive the patterns).
void populateNNToRuntimeConversionPatterns(const mlir::TypeConverter &converter,
                                           mlir::RewritePatternSet &patterns,
                                           Precision precision,
                                           const GradientSumPlan &sums);

/// The fused patterns (benefit above the per-op ones): nn.linear feeding
/// nn.gelu, nn.linear_input_grad feeding nn.gelu_grad.
void populateEpilogueFusionPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns,
                                    Precision precision);

} // namespace bitpipe::nn_lowering

#endif // BITPIPE_LIB_CONVERSION_NNTORUNTIME_LOWERING_H
