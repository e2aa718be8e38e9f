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

/// The object code of \p module (consumed), as one or two objects to link
/// together: at -O1 and above, the `optnone` functions are generated in an
/// object of their own at -O0 (fast instruction selection and register
/// allocation: at D=64 they are most of the code and gain nothing from
/// more), the rest at \p optLevel by \p machine.
llvm::Expected<std::vector<llvm::SmallVector<char, 0>>>
generateObjects(std::unique_ptr<llvm::Module> module,
                llvm::TargetMachine &machine, unsigned optLevel);

} // namespace bitpipe::compile

#endif // BITPIPE_TOOLS_BITPIPE_COMPILE_CODEGENERATION_H
