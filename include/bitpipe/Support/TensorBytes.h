//===- TensorBytes.h - The bytes of a tensor type ---------------*- C++ -*-===//
//
// Every size the compiler gives a tensor (costs, buffers, gradient buckets,
// the simulator's transfers and a model's profile) is its element count
// times a whole number of bytes per element, multiplied without wrapping
// (bitpipe/base/CheckedArithmetic.h). The passes differ only in what they
// do with a type that has no such size: refuse it, assert it away, or leave
// it out of an estimate; the size itself is computed here once.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_TENSORBYTES_H
#define BITPIPE_SUPPORT_TENSORBYTES_H

#include "bitpipe/base/CheckedArithmetic.h"

#include "mlir/IR/BuiltinTypes.h"

#include <optional>

namespace bitpipe {

/// The bytes of a tensor of `type`, or nullopt when they leave int64.
/// Dynamic dimensions count as 1 (they are refused where sizes matter).
inline std::optional<int64_t> checkedTensorBytes(mlir::ShapedType type) {
  mlir::Type element = type.getElementType();
  llvm::SmallVector<int64_t> factors = {
      element.isIntOrFloat() ? (element.getIntOrFloatBitWidth() + 7) / 8 : 8};
  for (int64_t dim : type.getShape())
    if (!mlir::ShapedType::isDynamic(dim))
      factors.push_back(dim);
  return checkedProduct(factors);
}

/// The bytes of a ranked, statically shaped tensor of ints or floats; nullopt
/// for any other type, and when the bytes leave int64.
inline std::optional<int64_t> staticTensorBytes(mlir::Type type) {
  auto tensor = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape() ||
      !tensor.getElementType().isIntOrFloat())
    return std::nullopt;
  return checkedTensorBytes(tensor);
}

/// The bytes of `type` for an estimate (the simulator, a model's profile):
/// staticTensorBytes, or 0 where there is none, since a size the estimate
/// cannot know is better left out than guessed.
inline double estimatedTensorBytes(mlir::Type type) {
  return static_cast<double>(staticTensorBytes(type).value_or(0));
}

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_TENSORBYTES_H
