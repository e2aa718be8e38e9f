//===- IRTarget.cpp - Fuzz target: IR parser and verifiers ----------------===//
//
// The input is MLIR text. Like bitpipe-opt and bitpipe-compile, the target
// first scans it with the text guard (Support/TextGuard.h), which refuses
// what MLIR's parser cannot survive; then it parses it with the dialects
// bitpipe-opt registers for model IR and per-rank programs (nn, bitpipe,
// func, arith, tensor), which runs every op, attribute and type verifier of
// the nn and bitpipe dialects. A module that parses then goes through
// bitpipe-verify, the whole-module checks of the per-rank programs, and a
// model (a function with #nn.model) through the whole bitpipe-pipeline
// (2 devices, 1F1B), as bitpipe-compile runs it. Parse, verifier and pass
// errors are refusals, not findings.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"
#include "LLVMFatalErrors.h"

#include "bitpipe/InitAllDialects.h"
#include "bitpipe/Dialect/NN/IR/NNAttrNames.h"
#include "bitpipe/Support/TextGuard.h"
#include "bitpipe/Transforms/Passes.h"
#include "bitpipe/Transforms/Pipeline.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  bitpipe::fuzz::makeLLVMFatalErrorsCrash();
  mlir::DialectRegistry registry;
  bitpipe::registerAllDialects(registry);
  // A fresh context per input: nothing one input interns can change how
  // the next parses.
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });

  // A copy with a NUL after it, as the tools' file buffers have: MLIR's
  // lexer stops at the NUL, and libFuzzer's data has none.
  std::string text(reinterpret_cast<const char *>(data), size);
  if (bitpipe::findTextExcess(text, bitpipe::TextSyntax::Mlir))
    return 0; // refused, as the tools refuse it
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context, "fuzz-input");
  if (!module)
    return 0;

  mlir::PassManager verify(&context);
  verify.addPass(bitpipe::createVerify());
  (void)verify.run(*module);

  bool isModel = false;
  module->walk([&](mlir::func::FuncOp f) {
    isModel |= f->hasAttr(bitpipe::nn::attr::kModel);
  });
  if (!isModel)
    return 0;
  bitpipe::PipelineOptions options;
  options.devices = 2;
  options.schedule = "1f1b";
  mlir::PassManager pipeline(&context);
  bitpipe::buildPipeline(pipeline, options.toConfig());
  (void)pipeline.run(*module);
  return 0;
}
