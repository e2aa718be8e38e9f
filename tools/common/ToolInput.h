//===- ToolInput.h - How the compiler tools vet their IR inputs -*- C++ -*-===//
//
// bitpipe-opt and bitpipe-compile read MLIR as text or as bytecode, and
// hand MLIR's parsers only what they survive (docs/robustness.md,
// "Limits"):
//
// - Text goes through TextGuard.h's scan first
//   (bitpipe/Support/TextGuard.h: nesting and literals that LLVM 19's text
//   parser cannot take).
// - Bytecode is read in a child process, which prints it back as generic
//   text with its locations; the tool then goes on with that text, scanned
//   like any other. MLIR 19's bytecode reader trusts the counts and indices
//   it reads: a damaged file makes it index out of bounds or ask for a
//   vector of 2^37 elements, and either ends the process. In the child that
//   is a refusal that names the file; the tool itself never runs the
//   reader.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_COMMON_TOOLINPUT_H
#define BITPIPE_TOOLS_COMMON_TOOLINPUT_H

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace bitpipe {

/// \p input as MLIR text that MLIR's parser can take safely, under the same
/// buffer name: text as it is, bytecode as its text form (above, read with
/// \p registry's dialects). An error says why not, for the caller to name
/// the file; MLIR's own diagnostics about a bytecode file it refused are
/// printed to stderr first.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
vetMlirInput(std::unique_ptr<llvm::MemoryBuffer> input,
             const mlir::DialectRegistry &registry);

} // namespace bitpipe

#endif // BITPIPE_TOOLS_COMMON_TOOLINPUT_H
