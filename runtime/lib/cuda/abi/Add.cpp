//===- Add.cpp - runtime.h's bp_add_fwd on CUDA ----------------------------===//
//
// Activations and activation gradients (the residual stream, and the sums of
// fanned-out gradients): the context's precision. See Dispatch.h.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_add_fwd(const float *a, const float *b, float *out,
                                  int64_t n) {
  return byPrecision(
      "bp_add_fwd",
      [&](void *s) { return bp_cuda_add_f32(a, b, out, n, s); },
      [&](void *s) {
        return bp_cuda_add(asBf16Bits(a), asBf16Bits(b), asBf16Bits(out), n,
                           s);
      });
}
