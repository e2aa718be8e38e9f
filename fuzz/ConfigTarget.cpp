//===- ConfigTarget.cpp - Fuzz target: model configuration -> model IR ----===//
//
// The input is the text of a model configuration (bitpipe's JSON schema or a
// Hugging Face config.json). What bitpipe-import does with it: parse it
// (bitpipe::parseModelConfig), build the model IR and verify it. A refused
// configuration is fine; a configuration the importer accepts must give IR
// that verifies (bitpipe-import calls the opposite an internal error).
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "LLVMFatalErrors.h"

#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/Import/ModelConfig.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bitpipe::fuzz::makeLLVMFatalErrorsCrash();
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<bitpipe::ModelConfig> config =
      bitpipe::parseModelConfig("fuzz-input.json", text);
  if (!config) {
    llvm::consumeError(config.takeError());
    return 0;
  }

  mlir::MLIRContext context(mlir::MLIRContext::Threading::DISABLED);
  // The verifier's messages are not findings; only its verdict is.
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      bitpipe::buildModel(context, *config);
  if (!module || mlir::failed(mlir::verify(*module)))
    bitpipe::fuzz::reportFuzzFinding(
        "the importer accepted a configuration whose model IR does not "
        "verify");
  return 0;
}
