//===- NNAttrs.h - nn attributes and enums ----------------------*- C++ -*-===//

#ifndef BITPIPE_DIALECT_NN_IR_NNATTRS_H
#define BITPIPE_DIALECT_NN_IR_NNATTRS_H

#include "bitpipe/Dialect/NN/IR/NNAttrNames.h"

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/APFloat.h"

#include <optional>

#include "bitpipe/Dialect/NN/IR/NNEnums.h.inc"

namespace bitpipe::nn {
/// The `std` parameter of #nn.init: a float literal, as a double.
mlir::FailureOr<std::optional<llvm::APFloat>> parseStd(mlir::AsmParser &parser);
/// The probability of #nn.dropout: a float literal, held as an f32.
mlir::FailureOr<llvm::APFloat> parseProbability(mlir::AsmParser &parser);
} // namespace bitpipe::nn

#define GET_ATTRDEF_CLASSES
#include "bitpipe/Dialect/NN/IR/NNAttrs.h.inc"

#endif // BITPIPE_DIALECT_NN_IR_NNATTRS_H
