//===- NNAttrNames.h - The discardable attributes of model IR ---*- C++ -*-===//
//
// The one definition of each `nn.*` attribute name (bitpipe-import and
// bitpipe-annotate-cost write them; the partitioner, the passes, the
// lowering and the manifest read them; NNDialect verifies them). Only
// names and spellings here, no dialect: a reader that only needs the name
// (the bitpipe dialect's argument roles, for one) includes this alone.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_IR_NNATTRNAMES_H
#define BITPIPE_DIALECT_NN_IR_NNATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace bitpipe::nn::attr {

// On ops.
/// The layer the op belongs to (an integer >= 0); the partitioner cuts
/// only between layers.
inline constexpr llvm::StringLiteral kLayer = "nn.layer";
/// What the op costs: #nn.cost (bitpipe-annotate-cost).
inline constexpr llvm::StringLiteral kCost = "nn.cost";

// On the model function.
/// The configuration it was built from: #nn.model.
inline constexpr llvm::StringLiteral kModel = "nn.model";

// On function arguments (and the parameter gradients a backward returns).
/// A parameter, by name (a non-empty string).
inline constexpr llvm::StringLiteral kParam = "nn.param";
/// How a parameter starts: #nn.init.
inline constexpr llvm::StringLiteral kInit = "nn.init";
/// A training input: kTokens, kLabels or kDropoutKey.
inline constexpr llvm::StringLiteral kInput = "nn.input";

/// The values of kInput.
inline constexpr llvm::StringLiteral kTokens = "tokens";
inline constexpr llvm::StringLiteral kLabels = "labels";
/// The micro-batch's random key (nn.dropout's and nn.attention's `key`).
inline constexpr llvm::StringLiteral kDropoutKey = "dropout_key";

} // namespace bitpipe::nn::attr

#endif // BITPIPE_DIALECT_NN_IR_NNATTRNAMES_H
