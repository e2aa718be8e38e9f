//===- BoundedTensors.h - Op trait: tensor sizes fit in int64 ---*- C++ -*-===//
//
// The ops of both dialects carry tensors whose element and byte counts the
// passes multiply and sum (costs, transfer sizes, buffer sizes). IR written
// by hand can give any shape, so every operand and result tensor of an op
// with this trait must have an element count, and a byte count, that fits
// in int64; the verifier says which one does not (docs/models.md,
// "Limits"). The trait's checks run before the op's own verifier, which
// may then multiply dimensions freely.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_BOUNDEDTENSORS_H
#define BITPIPE_SUPPORT_BOUNDEDTENSORS_H

#include "bitpipe/Support/TensorBytes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"

namespace bitpipe {

/// Fails, naming the value, when one of `op`'s tensors is too large.
inline mlir::LogicalResult verifyBoundedTensors(mlir::Operation *op) {
  auto check = [&](mlir::Type type, llvm::StringRef kind,
                   unsigned index) -> mlir::LogicalResult {
    auto shaped = llvm::dyn_cast<mlir::ShapedType>(type);
    if (!shaped || !shaped.hasRank() || checkedTensorBytes(shaped))
      return mlir::success();
    return op->emitOpError()
           << kind << " #" << index << " of type " << type
           << " has more elements or bytes than 2^63-1 (9223372036854775807)";
  };
  for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
    if (mlir::failed(check(type, "operand", i)))
      return mlir::failure();
  for (auto [i, type] : llvm::enumerate(op->getResultTypes()))
    if (mlir::failed(check(type, "result", i)))
      return mlir::failure();
  return mlir::success();
}

/// The op trait (TableGen: NativeOpTrait<"BoundedTensors"> in ::bitpipe).
template <typename ConcreteType>
class BoundedTensors
    : public mlir::OpTrait::TraitBase<ConcreteType, BoundedTensors> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyBoundedTensors(op);
  }
};

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_BOUNDEDTENSORS_H
