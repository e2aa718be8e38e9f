//===- CodeGeneration.h - LLVM IR to object code for bitpipe-compile ------===//
//
// What bitpipe-compile does after the translation to LLVM IR: the optimiser
// and the code generator, at the levels the rank functions and the stage
// functions each call for (docs/architecture.md, "From programs to an
// executable").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_BITPIPE_COMPILE_CODEGENERATION_H
#define BITPIPE_TOOLS_BITPIPE_COMPILE_CODEGENERATION_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace bitpipe::compile {

/// The host's target machine, position-independent (executables are PIE),
/// generating code at \p optLevel (0-3). Null, with \p error set, when the
/// host has no code generator.
std::unique_ptr<llvm::TargetMachine>
createHostTargetMachine(unsigned optLevel, std::string &error);

/// Runs LLVM's -O<optLevel> pipeline on \p module; functions marked
/// `optnone` (the rank functions) are left as they are.
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    unsigned optLevel);

/// A module as the code generator takes it: at -O1 and above, the bodies of
/// the `optnone` functions (the rank functions) in a module of their own, to
/// be generated at -O0 (fast instruction selection and register allocation:
/// at D=64 they are most of the code and gain nothing from more), and the
/// rest, to be optimised and generated at the requested level. Split before
/// optimising, so that the optimiser's module passes do not walk what they
/// would leave as it is.
struct CodeGenerationUnits {
  std::unique_ptr<llvm::Module> optNone; ///< Null when nothing was split off.
  std::unique_ptr<llvm::Module> rest;
};

/// \p module (consumed) split as CodeGenerationUnits says; whole in `rest`
/// at -O0, when it has no `optnone` function, or when one cannot move (it
/// has local linkage or names a local symbol, or the module has an
/// appending global).
CodeGenerationUnits splitForCodeGeneration(std::unique_ptr<llvm::Module> module,
                                           unsigned optLevel);

/// The object code of \p units (consumed), one object per unit, to link
/// together: `optNone` at -O0, `rest` by \p machine.
llvm::Expected<std::vector<llvm::SmallVector<char, 0>>>
generateObjects(CodeGenerationUnits units, llvm::TargetMachine &machine);

} // namespace bitpipe::compile

#endif // BITPIPE_TOOLS_BITPIPE_COMPILE_CODEGENERATION_H
