//===- FuzzTarget.h - What every fuzz target provides -----------*- C++ -*-===//
//
// A fuzz target is one file that defines LLVMFuzzerTestOneInput, libFuzzer's
// entry point. The same file links either with libFuzzer (the
// BITPIPE_ENABLE_LIBFUZZER build, clang only) or with the project's own
// seeded mutation driver (MutationDriver.cpp, every build). See
// docs/robustness.md.
//
// The contract of a target: an input that the code under test refuses with
// an error is a success (return 0); a crash, an abort, an LLVM fatal error,
// an uncaught exception or a hang is a finding. A target that sees the code
// under test break its own promise (accepting what it documents as refused)
// reports it with reportFuzzFinding, which aborts.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_FUZZ_FUZZTARGET_H
#define BITPIPE_FUZZ_FUZZTARGET_H

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace bitpipe::fuzz {

/// Prints "fuzz finding: <what>" on stderr and aborts, so that the driver
/// (or libFuzzer) saves the input.
[[noreturn]] void reportFuzzFinding(const char *what);

} // namespace bitpipe::fuzz

#endif // BITPIPE_FUZZ_FUZZTARGET_H
