//===- StageAttrNames.h - Attributes that structure stage functions -*- C++ -*-===//
//
// The discardable attributes that the passes write on stage functions, their
// backward functions and their arguments and results, and later passes read.
// One definition of each name, so that writer and readers cannot disagree.
// The nn dialect's names (nn.param, nn.input, nn.layer, ...) are its own:
// NNAttrNames.h.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_STAGEATTRNAMES_H
#define BITPIPE_DIALECT_BITPIPE_IR_STAGEATTRNAMES_H

#include "llvm/ADT/StringRef.h"

namespace bitpipe::attr {

// On stage functions (bitpipe-partition, bitpipe-place).
/// The stage number.
inline constexpr llvm::StringLiteral kStage = "bitpipe.stage";
/// The first and last layer of the stage (array<i64: first, last>).
inline constexpr llvm::StringLiteral kLayers = "bitpipe.layers";
/// The sorted devices holding a replica of the stage.
inline constexpr llvm::StringLiteral kDevices = "bitpipe.devices";

// Between a forward and its backward (bitpipe-generate-backward).
/// On the forward: its backward function, or its two halves when split.
inline constexpr llvm::StringLiteral kBackward = "bitpipe.backward";
inline constexpr llvm::StringLiteral kBackwardInput = "bitpipe.backward_input";
inline constexpr llvm::StringLiteral kBackwardWeight =
    "bitpipe.backward_weight";
/// On a backward function: the forward it belongs to.
inline constexpr llvm::StringLiteral kBackwardOf = "bitpipe.backward_of";

// Roles of arguments and results.
/// A value the forward keeps for its backward (index into its saved list).
inline constexpr llvm::StringLiteral kSaved = "bitpipe.saved";
/// A value the input half of a split backward keeps for the weight half.
inline constexpr llvm::StringLiteral kStash = "bitpipe.stash";
/// A backward argument that is the forward's argument of this index.
inline constexpr llvm::StringLiteral kForwardArg = "bitpipe.forward_arg";
/// A backward argument: the gradient of the forward's result of this index.
inline constexpr llvm::StringLiteral kGradOfResult = "bitpipe.grad_of_result";
/// A backward result: the gradient of the forward's argument of this index.
inline constexpr llvm::StringLiteral kGradOfArg = "bitpipe.grad_of_arg";

// On the module.
/// What bitpipe-partition chose: a #bitpipe.partition.
inline constexpr llvm::StringLiteral kPartition = "bitpipe.partition";

} // namespace bitpipe::attr

#endif // BITPIPE_DIALECT_BITPIPE_IR_STAGEATTRNAMES_H
