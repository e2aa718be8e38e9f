//===- Lowering.h - The pieces of bitpipe-lower-nn-to-runtime ---*- C++ -*-===//
//
// The steps of the pass that are not one pattern per nn op, each in its own
// file: choosing the buffers' element types (StoragePrecision.cpp) and the
// fused linear + GELU calls (EpilogueFusion.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_CONVERSION_NNTORUNTIME_LOWERING_H
#define BITPIPE_LIB_CONVERSION_NNTORUNTIME_LOWERING_H

#include "bitpipe/Conversion/Target/Target.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"

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

/// The fused patterns (benefit above the per-op ones): nn.linear feeding
/// nn.gelu, nn.linear_input_grad feeding nn.gelu_grad.
void populateEpilogueFusionPatterns(const mlir::TypeConverter &converter,
                                    mlir::RewritePatternSet &patterns);

} // namespace bitpipe::nn_lowering

#endif // BITPIPE_LIB_CONVERSION_NNTORUNTIME_LOWERING_H
