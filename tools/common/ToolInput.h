//===- ToolInput.h - How the compiler tools vet their IR inputs -*- C++ -*-===//
//
// bitpipe-opt and bitpipe-compile read MLIR as text or as bytecode. Text
// goes through TextGuard.h's scan first (bitpipe/Support/TextGuard.h:
// nesting and integer literals that LLVM 19's text parser cannot survive);
// bytecode is not text, has no such literals and is read by MLIR's bytecode
// reader, which checks its own bounds.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_COMMON_TOOLINPUT_H
#define BITPIPE_TOOLS_COMMON_TOOLINPUT_H

#include "llvm/Support/MemoryBuffer.h"

#include <optional>
#include <string>

namespace bitpipe {

/// Why \p input cannot be handed to MLIR's parser ("... at byte N, which
/// MLIR's parser cannot take safely"), or nothing when it can.
std::optional<std::string> refuseUnsafeMlirInput(llvm::MemoryBufferRef input);

} // namespace bitpipe

#endif // BITPIPE_TOOLS_COMMON_TOOLINPUT_H
