//===- ToolInput.cpp - How the compiler tools vet their IR inputs ---------===//

#include "ToolInput.h"

#include "bitpipe/Support/TextGuard.h"

#include "mlir/Bytecode/BytecodeReader.h"

std::optional<std::string>
bitpipe::refuseUnsafeMlirInput(llvm::MemoryBufferRef input) {
  if (mlir::isBytecode(input))
    return std::nullopt;
  std::optional<TextExcess> excess =
      findTextExcess(input.getBuffer(), TextSyntax::Mlir);
  if (!excess)
    return std::nullopt;
  return excess->what + " at byte " + std::to_string(excess->offset) +
         ", which MLIR's parser cannot take safely";
}
