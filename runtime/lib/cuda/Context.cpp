//===- Context.cpp - The stream of runtime.h's kernels on CUDA ------------===//
//
// The one piece of state that runtime.h's kernels need on the CUDA target
// and that their C signatures (shared with the CPU target) do not carry:
// the stream to enqueue on (bitpipe/cuda.h, "The execution context").
// Process-wide, set once by the executor. The precision is not state: it
// is the name of the kernel called (bitpipe/abi/Kernels.h).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"

#include <atomic>

namespace {
std::atomic<void *> currentStream{nullptr};
} // namespace

extern "C" void bp_cuda_set_stream(void *stream) { currentStream = stream; }
extern "C" void *bp_cuda_stream(void) { return currentStream; }
