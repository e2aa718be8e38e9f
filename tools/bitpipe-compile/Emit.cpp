//===- Emit.cpp - What bitpipe-compile writes after the lowering ----------===//

#include "Emit.h"

#include "CodeGeneration.h"
#include "ToolOutput.h"

#include "mlir/Target/LLVMIR/Export.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <functional>
#include <optional>
#include <thread>
#include <vector>

using namespace llvm;
using namespace bitpipe::compile;

namespace {

Error failure(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// \p e, its message after the output's flag: how a failure to write the
/// output reads.
Error aboutOutput(const OutputTarget &output, Error e) {
  if (!e)
    return Error::success();
  return failure(output.flag + toString(std::move(e)));
}

/// Links \p objects into \p result (a temporary the caller renames over
/// the output): an executable with the runtime of \p link, or, when it has
/// none, one relocatable object (`-r`).
Error linkObjects(ArrayRef<std::string> objects, StringRef result,
                  const LinkPlan &link, StringRef output) {
  ErrorOr<std::string> linkerPath = sys::findProgramByName(link.linker);
  if (!linkerPath)
    return failure("linker '" + link.linker + "' not found");
  std::string responseArg = "@" + link.runtimeLink;
  SmallVector<StringRef> args = {*linkerPath};
  if (link.runtimeLink.empty())
    args.append({"-r", "-nostdlib"});
  args.append(objects.begin(), objects.end());
  if (!link.runtimeLink.empty())
    args.push_back(responseArg);
  args.append({"-o", result});
  std::string message;
  int rc =
      sys::ExecuteAndWait(*linkerPath, args, std::nullopt, {}, 0, 0, &message);
  if (rc != 0)
    return failure("linking '" + output + "' failed (" + link.linker +
                   " exited with " + Twine(rc) +
                   (message.empty() ? "" : ": " + message) +
                   "); the previous '" + output + "', if any, is unchanged");
  return Error::success();
}

/// The objects of \p module, in memory (the ELF writer seeks back into what
/// it wrote): the rank functions' at -O0 in a thread of their own, beside
/// the rest's at -O\p optLevel; one object at -O0.
Expected<std::vector<SmallVector<char, 0>>>
compileObjects(mlir::ModuleOp module, StringRef inputName, unsigned optLevel,
               mlir::TimingScope &timing) {
  mlir::OwningOpRef<mlir::ModuleOp> rankModule;
  {
    mlir::TimingScope splitting = timing.nest("Split off the rank functions");
    rankModule = splitOffRankFunctions(module, optLevel);
  }
  using Object = Expected<SmallVector<char, 0>>;
  std::optional<Object> rankObject;
  std::thread rankThread;
  mlir::TimingScope compiling = timing.nest("Compile the objects");
  if (rankModule)
    rankThread = std::thread([&] {
      mlir::TimingScope rankTiming =
          compiling.nest("The rank functions, -O0 (a thread of their own)");
      rankObject.emplace(compileToObject(
          *rankModule, 0, (inputName + " (rank functions)").str(), rankTiming));
    });
  Object restObject = [&] {
    mlir::TimingScope restTiming = compiling.nest("The rest");
    return compileToObject(module, optLevel, inputName.str(), restTiming);
  }();
  if (rankThread.joinable())
    rankThread.join();
  compiling.stop();

  std::vector<SmallVector<char, 0>> all;
  if (rankObject) {
    if (!*rankObject) {
      consumeError(restObject.takeError());
      return rankObject->takeError();
    }
    all.push_back(std::move(**rankObject));
  }
  if (!restObject)
    return restObject.takeError();
  all.push_back(std::move(*restObject));
  return all;
}

} // namespace

Error bitpipe::compile::writeLLVMIR(mlir::ModuleOp module, StringRef inputName,
                                    unsigned optLevel,
                                    const OutputTarget &output,
                                    mlir::TimingScope &timing) {
  std::string error;
  std::unique_ptr<TargetMachine> machine =
      createHostTargetMachine(optLevel, error);
  if (!machine)
    return failure("no code generator for this host: " + error);
  LLVMContext llvmContext;
  mlir::TimingScope translating = timing.nest("Translate to LLVM IR");
  std::unique_ptr<Module> llvmModule =
      mlir::translateModuleToLLVMIR(module, llvmContext, inputName);
  if (!llvmModule)
    return failure(inputName + ": translation to LLVM IR failed");
  translating.stop();
  llvmModule->setDataLayout(machine->createDataLayout());
  llvmModule->setTargetTriple(machine->getTargetTriple().str());
  mlir::TimingScope optimizing = timing.nest("Optimise LLVM IR");
  optimizeModule(*llvmModule, *machine, optLevel);
  optimizing.stop();
  mlir::TimingScope printing = timing.nest("Print LLVM IR");
  return aboutOutput(output, writeOutputFile(output.path, [&](raw_ostream &os) {
                       llvmModule->print(os, nullptr);
                     }));
}

Error bitpipe::compile::writeObjectCode(mlir::ModuleOp module,
                                        StringRef inputName, unsigned optLevel,
                                        const LinkPlan &link,
                                        const OutputTarget &output,
                                        mlir::TimingScope &timing) {
  Expected<std::vector<SmallVector<char, 0>>> objects =
      compileObjects(module, inputName, optLevel, timing);
  if (!objects)
    return objects.takeError();
  const bool executable = !link.runtimeLink.empty();
  // A single object is written as it is.
  if (!executable && objects->size() == 1) {
    StringRef bytes(objects->front().data(), objects->front().size());
    return aboutOutput(
        output,
        writeOutputFile(output.path, [&](raw_ostream &os) { os << bytes; }));
  }
  mlir::TimingScope linking = timing.nest("Link");
  std::vector<std::string> objectPaths;
  // One scratch file per object, each removed however the link ends.
  std::function<Error(size_t)> linkFrom = [&](size_t i) -> Error {
    if (i == objects->size() && executable)
      return writeOutputFileFrom(output.path, [&](StringRef result) {
        return linkObjects(objectPaths, result, link, output.path);
      });
    // An object: the relocatable link goes to a scratch file, whose bytes
    // are then written as every output is (so a full disk is reported as
    // for one object).
    if (i == objects->size())
      return withScratchFile(
          "bitpipe-compile", "o", [&](StringRef combined) -> Error {
            if (Error e = linkObjects(objectPaths, combined, link, output.path))
              return e;
            ErrorOr<std::unique_ptr<MemoryBuffer>> bytes =
                MemoryBuffer::getFile(combined);
            if (!bytes)
              return createStringError(bytes.getError(),
                                       "cannot read the linked object '" +
                                           combined +
                                           "': " + bytes.getError().message());
            return writeOutputFile(output.path, [&](raw_ostream &os) {
              os << (*bytes)->getBuffer();
            });
          });
    return withScratchFile(
        "bitpipe-compile", "o", [&](StringRef path) -> Error {
          StringRef bytes((*objects)[i].data(), (*objects)[i].size());
          if (Error e =
                  writeOutputFile(path, [&](raw_ostream &os) { os << bytes; }))
            return e;
          objectPaths.push_back(path.str());
          return linkFrom(i + 1);
        });
  };
  return aboutOutput(output, linkFrom(0));
}
