//===- Emit.h - What bitpipe-compile writes after the lowering --*- C++ -*-===//
//
// From the module lowered to runtime calls (LLVM dialect) to what --emit
// asks for: LLVM IR, an object, or an executable linked with the runtime.
// Every output is written as every tool writes (ToolOutput.h,
// docs/files.md): a failed run leaves the previous output as it was.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_BITPIPE_COMPILE_EMIT_H
#define BITPIPE_TOOLS_BITPIPE_COMPILE_EMIT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/Timing.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>

namespace bitpipe::compile {

/// Where an output goes and how messages name it ("-o: " or "output: ",
/// as the user gave it or not).
struct OutputTarget {
  std::string path;
  std::string flag;
};

/// How objects are linked: the C++ compiler driver, and the runtime's
/// response file (empty: one relocatable object, no runtime).
struct LinkPlan {
  std::string linker;
  std::string runtimeLink;
};

/// Translates \p module to LLVM IR, optimises it at -O\p optLevel for the
/// host and writes it as text. \p inputName names the module in messages.
llvm::Error writeLLVMIR(mlir::ModuleOp module, llvm::StringRef inputName,
                        unsigned optLevel, const OutputTarget &output,
                        mlir::TimingScope &timing);

/// Compiles \p module to objects (the rank functions at -O0 in a thread of
/// their own, beside the rest at -O\p optLevel: CodeGeneration.h) and
/// writes an executable linked by \p link, or, when \p link has no runtime,
/// one object. The module is consumed: the rank functions are split off.
llvm::Error writeObjectCode(mlir::ModuleOp module, llvm::StringRef inputName,
                            unsigned optLevel, const LinkPlan &link,
                            const OutputTarget &output,
                            mlir::TimingScope &timing);

} // namespace bitpipe::compile

#endif // BITPIPE_TOOLS_BITPIPE_COMPILE_EMIT_H
