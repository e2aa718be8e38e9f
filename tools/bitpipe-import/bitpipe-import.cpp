//===- bitpipe-import.cpp - Writes model IR from a model configuration ----===//
//
//   bitpipe-import [gpt|bert|llama] --config FILE [--seq-len N]
//                  [--microbatch-size N] [-o OUT.mlir]
//
// FILE is bitpipe's JSON schema or a Hugging Face config.json. The output is
// written as every tool writes (ToolOutput.h, docs/files.md): to a temporary
// file renamed over OUT once complete, so a failed run (a full disk, a
// signal) leaves the previous OUT as it was; "-" and devices are written
// into; a directory or a symbolic link is refused before any work.
//
//===----------------------------------------------------------------------===//

#include "ToolOutput.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/Import/ModelConfig.h"
#include "bitpipe/Support/PartitionUnitsOptions.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

// --help lists these alone, not the options LLVM's libraries register.
static cl::OptionCategory category("bitpipe-import options");
static cl::opt<std::string> familyArg(cl::Positional,
                                      cl::desc("[gpt|bert|llama]"),
                                      cl::init(""), cl::cat(category));
static cl::opt<std::string> configPath("config", cl::Required,
                                       cl::desc("Model configuration (JSON)"),
                                       cl::value_desc("file"),
                                       cl::cat(category));
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("file"), cl::init("-"),
                                       cl::cat(category));
static cl::opt<int64_t> seqLen("seq-len",
                               cl::desc("Tokens per sample (overrides the "
                                        "config)"),
                               cl::init(0), cl::cat(category));
static cl::opt<int64_t>
    microbatchSize("microbatch-size",
                   cl::desc("Samples per micro-batch (overrides the config)"),
                   cl::init(0), cl::cat(category));

static cl::opt<bitpipe::sched::PartitionUnits>
    units("units",
          cl::desc("The units stages are cut from: whole layers (default) or "
                   "each layer's attention and MLP halves (docs/models.md, "
                   "\"Partition units\")"),
          cl::init(bitpipe::sched::PartitionUnits::Layers),
          bitpipe::partitionUnitsValues(), cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "bitpipe-import") << message << "\n";
  return 1;
}

int main(int argc, char **argv) {
  InitLLVM y(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "bitpipe model importer: writes model IR for a "
                              "GPT-, BERT- or LLaMA-style configuration\n");

  if (Error e = bitpipe::checkOutputPath(outputPath))
    return fail("-o: " + toString(std::move(e)));

  bitpipe::ModelConfigOverrides overrides;
  if (!familyArg.empty()) {
    overrides.family = bitpipe::parseModelFamily(familyArg);
    if (!overrides.family)
      return fail("unknown model family '" + familyArg + "' (expected " +
                  bitpipe::modelFamilyList() + ")");
  }
  // The importer checks them with the file's sizes (ModelLimits.h).
  if (seqLen.getNumOccurrences())
    overrides.seqLen = seqLen;
  if (microbatchSize.getNumOccurrences())
    overrides.microbatchSize = microbatchSize;

  Expected<bitpipe::ModelConfig> config =
      bitpipe::loadModelConfig(configPath, overrides);
  if (!config)
    return fail(toString(config.takeError()));

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      bitpipe::buildModel(context, *config, units);
  if (failed(mlir::verify(*module)))
    return fail("internal error: the generated model IR does not verify");

  if (Error e = bitpipe::writeOutputFile(
          outputPath, [&](raw_ostream &os) { module->print(os); }))
    return fail("-o: " + toString(std::move(e)));
  return 0;
}
