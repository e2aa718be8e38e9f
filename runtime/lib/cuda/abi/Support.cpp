//===- Support.cpp - runtime.h's bp_fill and bp_check on CUDA -------------===//
//
// bp_fill: generated code fills only fp32 buffers (the parameter-gradient
// accumulators it zeroes, the loss seed), which are fp32 in both
// precisions, so it is always bp_cuda_fill_f32, on the context's stream.
// bp_check: the CPU target's message and abort
// (runtime/lib/cpu/kernels/Support.cpp), with the status named by the
// device-agnostic core's errorCodeName, which also knows BP_ERR_DEVICE.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"
#include "core/Status.h"

#include <cstdio>
#include <cstdlib>

extern "C" bp_status_t bp_fill(float *out, float value, int64_t n) {
  return bp_cuda_fill_f32(out, value, n, bp_cuda_stream());
}

extern "C" void bp_check(bp_status_t status, const char *what) {
  if (status == BP_OK)
    return;
  std::fprintf(stderr, "bitpipe: %s failed: %s (status %d)\n",
               what ? what : "<kernel>",
               bitpipe::runtime::errorCodeName(
                   static_cast<bitpipe::runtime::ErrorCode>(status)),
               static_cast<int>(status));
  std::fflush(stderr);
  std::abort();
}
