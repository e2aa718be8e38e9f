//===- NNInterfaces.h - nn op interfaces and traits -------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_NN_IR_NNINTERFACES_H
#define BITPIPE_DIALECT_NN_IR_NNINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace bitpipe::nn::OpTrait {
/// Marks a backward op whose results are weight gradients only (the "W" work
/// of a split backward).
template <typename ConcreteType>
class WeightGradient
    : public mlir::OpTrait::TraitBase<ConcreteType, WeightGradient> {};
} // namespace bitpipe::nn::OpTrait

#include "bitpipe/Dialect/NN/IR/NNInterfaces.h.inc"

namespace bitpipe::nn {
/// True for backward ops that compute weight gradients only.
inline bool isWeightGradient(mlir::Operation *op) {
  return op->hasTrait<OpTrait::WeightGradient>();
}
} // namespace bitpipe::nn

#endif // BITPIPE_DIALECT_NN_IR_NNINTERFACES_H
