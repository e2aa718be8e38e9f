//===- LLVMFatalErrors.h - LLVM fatal errors are findings -------*- C++ -*-===//
//
// report_fatal_error may end the process with exit(1), which a driver would
// take for a clean refusal. The targets that run LLVM or MLIR code install
// this handler first: it prints the reason and aborts, so that the fuzz
// driver records the input as a crash.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_FUZZ_LLVMFATALERRORS_H
#define BITPIPE_FUZZ_LLVMFATALERRORS_H

namespace bitpipe::fuzz {

/// Installs the handler once; later calls do nothing.
void makeLLVMFatalErrorsCrash();

} // namespace bitpipe::fuzz

#endif // BITPIPE_FUZZ_LLVMFATALERRORS_H
