//===- ModelInput.cpp - The model bitpipe-compile starts from -------------===//

#include "ModelInput.h"

#include "ToolInput.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/Import/ModelConfig.h"

#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

using namespace llvm;

mlir::OwningOpRef<mlir::ModuleOp>
bitpipe::compile::loadModel(mlir::MLIRContext &context, StringRef path,
                            const ModelConfigOverrides &overrides,
                            PartitionUnits units, std::string &error) {
  if (path.ends_with(".json")) {
    Expected<ModelConfig> config = loadModelConfig(path.str(), overrides);
    if (!config) {
      error = toString(config.takeError());
      return nullptr;
    }
    return buildModel(context, *config, units);
  }
  if (overrides.seqLen || overrides.microbatchSize) {
    error = (path + ": model IR fixes the sequence length and the "
                    "micro-batch size in its types; --seq-len and "
                    "--microbatch-size apply to a configuration (.json)")
                .str();
    return nullptr;
  }
  if (units != PartitionUnits::Layers) {
    error = (path +
             ": model IR fixes its partition units in its ops' "
             "nn.layer; --units applies to a configuration (.json): "
             "import the IR with bitpipe-import --units " +
             sched::partitionUnitsName(units) + " instead")
                .str();
    return nullptr;
  }
  std::string message;
  std::unique_ptr<MemoryBuffer> file = mlir::openInputFile(path, &message);
  if (!file) {
    error = message;
    return nullptr;
  }
  Expected<std::unique_ptr<MemoryBuffer>> vetted =
      vetMlirInput(std::move(file), context.getDialectRegistry());
  if (!vetted) {
    error = (path + ": " + toString(vetted.takeError())).str();
    return nullptr;
  }
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(*vetted), SMLoc());
  auto module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, &context);
  if (!module)
    error = ("cannot parse " + path).str();
  return module;
}
