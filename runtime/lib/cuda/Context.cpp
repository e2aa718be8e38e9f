//===- Context.cpp - Stream and precision of runtime.h on CUDA ------------===//
//
// The two pieces of state that runtime.h's kernels need on the CUDA target
// and that their C signatures (shared with the CPU target) do not carry: the
// stream to enqueue on and the element type of activations (bitpipe/cuda.h,
// "The execution context"). Process-wide, set once by the executor.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"
#include "bitpipe/program.h"

#include <atomic>

namespace {
std::atomic<void *> currentStream{nullptr};
std::atomic<int32_t> currentPrecision{BP_PRECISION_FP32};
} // namespace

extern "C" void bp_cuda_set_stream(void *stream) { currentStream = stream; }
extern "C" void *bp_cuda_stream(void) { return currentStream; }
extern "C" void bp_cuda_set_precision(int32_t precision) {
  currentPrecision = precision;
}
extern "C" int32_t bp_cuda_precision(void) { return currentPrecision; }
