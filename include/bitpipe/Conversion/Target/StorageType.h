//===- StorageType.h - The element type of a value in memory ----*- C++ -*-===//
//
// Which tensors of a stage function are bf16 under Precision::BF16, decided
// in one place for the two passes that need it: bitpipe-lower-nn-to-runtime
// (the buffers it allocates, the functions' signatures) and
// bitpipe-lower-program-to-runtime (the manifest's "dtype" of each role,
// written before the stage functions are lowered). Mixed precision as
// PyTorch AMP and Megatron-LM train (docs/architecture.md, "Targets and
// precision"):
//
//  * f32 stays f32 for the values the kernels accumulate into or that need
//    the range: the parameter gradients (results of nn.linear_weight_grad,
//    the gamma and beta gradients of nn.layer_norm_grad, both results of
//    nn.embedding_grad, and nn.add sums of two of them, as a tied weight's
//    gradient is), and every rank-0 tensor (the loss, its seed and its
//    gradient). So do the kernels' statistics: the scratch ones (mean,
//    rstd, lse) that the lowering allocates, and those a forward op returns
//    for its backward (nn::BackwardOpInterface::getNumStatisticResults),
//    followed through calls and into the backward's saved arguments;
//  * every other f32 tensor is bf16: activations, their gradients, saved
//    values, and the parameters the stage functions read (the runtime
//    passes them a bf16 copy of its fp32 master weights);
//  * i32 token ids and labels stay i32.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_CONVERSION_TARGET_STORAGETYPE_H
#define BITPIPE_CONVERSION_TARGET_STORAGETYPE_H

#include "bitpipe/Conversion/Target/Target.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Value.h"

namespace bitpipe {

/// Whether \p value is a parameter's gradient (or a sum of such), which
/// stays f32 in every precision.
bool isParameterGradient(mlir::Value value);

/// The type \p value's buffer has under \p precision (a parameter
/// gradient and a statistic keep theirs): its own type, or the
/// same shape with bf16 elements (rules above). Values that are not f32
/// tensors keep their type.
mlir::Type storageType(mlir::Value value, Precision precision);

/// The same rule for a value known only by its type and whether it is a
/// parameter gradient: the arguments and results of a function declaration
/// (the manifest's roles say which results are parameter gradients).
mlir::Type storageType(mlir::Type type, bool parameterGradient,
                       Precision precision);

} // namespace bitpipe

#endif // BITPIPE_CONVERSION_TARGET_STORAGETYPE_H
