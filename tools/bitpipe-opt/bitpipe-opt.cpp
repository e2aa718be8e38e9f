//===- bitpipe-opt.cpp - The bitpipe optimizer driver ---------------------===//
//
// MlirOptMain with the nn and bitpipe dialects, the upstream dialects model
// IR and its lowerings use, and every bitpipe pass and pipeline registered.
//
// mlir-opt's command line, but not its output file: MlirOptMain's own
// removes the old -o file when the passes fail and leaves a truncated one
// on a full disk. Here the result is printed into the temporary that
// replaces the -o file on success only, as every tool writes (ToolOutput.h,
// docs/files.md): a failed run leaves the previous -o file as it was.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/Passes.h"
#include "bitpipe/InitAllDialects.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

#include "PassOptionCheck.h"
#include "ToolInput.h"
#include "ToolOutput.h"
#include "bitpipe/base/MemoryReuse.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

/// Gives MLIR's boolean command-line option \p name the value \p value,
/// unless the command line gave it one.
static void setUnlessGiven(llvm::StringRef name, bool value) {
  auto &options = llvm::cl::getRegisteredOptions();
  auto it = options.find(name);
  if (it == options.end())
    return;
  if (auto *option = static_cast<llvm::cl::opt<bool> *>(it->second);
      option && option->getNumOccurrences() == 0)
    *option = value;
}

static int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "bitpipe-opt") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  bitpipe::keepFreedMemoryForReuse();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  bitpipe::registerAllBitPipePasses();
  bitpipe::registerConversionPasses();
  bitpipe::registerLowerToLLVMPipeline();
  bitpipe::registerLowerToRuntimePipeline();

  mlir::DialectRegistry registry;
  bitpipe::registerAllDialects(registry);
  // Before MLIR's own parse of the command line, which stops at an unknown
  // pass option with "no such option" alone.
  if (llvm::Error e = bitpipe::checkPassOptionNames(argc, argv))
    return fail(llvm::toString(std::move(e)));
  auto [inputPath, outputPath] = mlir::registerAndParseCLIOptions(
      argc, argv, "bitpipe optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  // The module is verified after parsing and after every pass
  // (-verify-each, on by default), so the printer's own verification before
  // it prints would check the same IR a second time: at D=64, N=512 a
  // sixth of printing at D=64, N=512 (bench/results-log.md, "NCCL's
  // rules"). Kept when the passes do not verify, where it is what keeps
  // invalid IR out of custom printers.
  if (config.shouldVerifyPasses())
    setUnlessGiven("mlir-print-assume-verified", true);
  // A diagnostic names its op by location and says what is wrong; MLIR's
  // "see current operation" note after it would print the op, which for a
  // pass's error about the module is the whole module (44 KB for a tiny
  // model). --mlir-print-op-on-diagnostic brings the note back.
  setUnlessGiven("mlir-print-op-on-diagnostic", false);
  if (config.shouldShowDialects()) {
    llvm::outs() << "Available Dialects: ";
    llvm::interleave(registry.getDialectNames(), llvm::outs(), ",");
    llvm::outs() << "\n";
    return 0;
  }
  // Before any work: a -o naming a directory or a link fails now.
  if (llvm::Error e = bitpipe::checkOutputPath(outputPath))
    return fail("-o: " + llvm::toString(std::move(e)));

  std::string message;
  std::unique_ptr<llvm::MemoryBuffer> input =
      mlir::openInputFile(inputPath, &message);
  if (!input)
    return fail(message);
  // Text that would overflow MLIR's recursive parser or stall its integer
  // conversion is refused before the parser sees it, and bytecode is read
  // apart, in a child process (ToolInput.h).
  std::string inputName = input->getBufferIdentifier().str();
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> vetted =
      bitpipe::vetMlirInput(std::move(input), registry);
  if (!vetted)
    return fail(inputName + ": " + llvm::toString(vetted.takeError()));
  llvm::Expected<bool> written = bitpipe::writeOutputFileUnlessAbandoned(
      outputPath, [&](llvm::raw_ostream &os) {
        return mlir::succeeded(
            mlir::MlirOptMain(os, std::move(*vetted), registry, config));
      });
  if (!written)
    return fail("-o: " + llvm::toString(written.takeError()));
  if (!*written)
    return 1; // the diagnostics say why; the -o file is untouched
  return 0;
}
