//===- Dispatch.h - runtime.h's kernels onto cuda.h's -----------*- C++ -*-===//
//
// On the CUDA target, runtime.h's functions (the ABI compiled stage
// functions call, typed `float *` on both targets) run cuda.h's kernels on
// the execution context's stream, choosing the bf16 or the _f32 kernel by
// the context's precision (bitpipe/cuda.h, "The execution context"). Under
// bf16 an activation, activation-gradient or weight pointer holds bf16 bits
// (asBf16Bits); parameter gradients, statistics and the loss stay fp32.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ABI_DISPATCH_H
#define BITPIPE_RUNTIME_CUDA_ABI_DISPATCH_H

#include "bitpipe/cuda.h"
#include "bitpipe/program.h"

#include <cstdio>

namespace bitpipe::runtime::cuda {

/// A runtime.h pointer as the bf16 bits it holds under BP_PRECISION_BF16.
inline const bp_bf16_t *asBf16Bits(const float *p) {
  return reinterpret_cast<const bp_bf16_t *>(p);
}
inline bp_bf16_t *asBf16Bits(float *p) {
  return reinterpret_cast<bp_bf16_t *>(p);
}

/// fp32(stream) or bf16(stream) by the context's precision, on its stream.
/// A precision that is neither is an error naming \p what (the executor
/// sets it from the manifest, so this means a broken set-up, not bad data).
template <typename Fp32, typename Bf16>
bp_status_t byPrecision(const char *what, Fp32 fp32, Bf16 bf16) {
  const int32_t precision = bp_cuda_precision();
  switch (precision) {
  case BP_PRECISION_FP32:
    return fp32(bp_cuda_stream());
  case BP_PRECISION_BF16:
    return bf16(bp_cuda_stream());
  default:
    std::fprintf(stderr,
                 "bitpipe: cuda: %s: the execution context's precision is %d; "
                 "expected BP_PRECISION_FP32 (%d) or BP_PRECISION_BF16 (%d), "
                 "set by bp_cuda_set_precision\n",
                 what, static_cast<int>(precision),
                 static_cast<int>(BP_PRECISION_FP32),
                 static_cast<int>(BP_PRECISION_BF16));
    std::fflush(stderr);
    return BP_ERR_INVALID_ARGUMENT;
  }
}

} // namespace bitpipe::runtime::cuda

#endif // BITPIPE_RUNTIME_CUDA_ABI_DISPATCH_H
