//===- LLVMFatalErrors.cpp - LLVM fatal errors are findings -----*- C++ -*-===//

#include "LLVMFatalErrors.h"
#include "FuzzTarget.h"

#include "llvm/Support/ErrorHandling.h"

#include <string>

static void abortOnFatalError(void *, const char *reason, bool) {
  std::string what = std::string("LLVM fatal error: ") + reason;
  bitpipe::fuzz::reportFuzzFinding(what.c_str());
}

void bitpipe::fuzz::makeLLVMFatalErrorsCrash() {
  static bool installed = false;
  if (installed)
    return;
  installed = true;
  llvm::install_fatal_error_handler(abortOnFatalError);
}
