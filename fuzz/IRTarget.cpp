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
// Each input runs in a child process. MLIR 19's parser can free an
// operation it still references when a parse error follows a forward
// reference inside an isolated region (docs/robustness.md): the tools exit
// right after the error, but a fuzzer that went on in the same process
// would crash on a later input and blame it. In a child the damage ends
// with the input, and a crash is the input's own.
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

#include <cerrno>
#include <csignal>
#include <string>

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/// The target's work on one input, in whichever process runs it.
static void checkInput(const uint8_t *data, size_t size) {
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
    return; // refused, as the tools refuse it
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(text, &context, "fuzz-input");
  if (!module)
    return;

  mlir::PassManager verify(&context);
  verify.addPass(bitpipe::createVerify());
  (void)verify.run(*module);

  bool isModel = false;
  module->walk([&](mlir::func::FuncOp f) {
    isModel |= f->hasAttr(bitpipe::nn::attr::kModel);
  });
  if (!isModel)
    return;
  bitpipe::PipelineOptions options;
  options.devices = 2;
  options.schedule = "1f1b";
  mlir::PassManager pipeline(&context);
  bitpipe::buildPipeline(pipeline, options.toConfig());
  (void)pipeline.run(*module);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pid_t child = ::fork();
  if (child < 0) { // No process to spare: run here, as before.
    checkInput(data, size);
    return 0;
  }
  if (child == 0) {
    // A parent killed for a hang takes its child along.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    checkInput(data, size);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) {
    // The child inherited the driver's crash handler (or libFuzzer's),
    // which has saved and printed the input; end this run the same way.
    ::signal(WTERMSIG(status), SIG_DFL);
    ::raise(WTERMSIG(status));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    bitpipe::fuzz::reportFuzzFinding(
        "the input's process exited with a non-zero status");
  return 0;
}
