//===- SwiGlu.cpp - runtime.h's bp_swiglu_* on CUDA ------------------------===//
//
// Every operand is an activation or its gradient: the context's precision.
// See Dispatch.h.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_swiglu_fwd(const float *gate, const float *up,
                                     float *y, int64_t n) {
  return byPrecision(
      "bp_swiglu_fwd",
      [&](void *s) { return bp_cuda_swiglu_fwd_f32(gate, up, y, n, s); },
      [&](void *s) {
        return bp_cuda_swiglu_fwd(asBf16Bits(gate), asBf16Bits(up),
                                  asBf16Bits(y), n, s);
      });
}

extern "C" bp_status_t bp_swiglu_bwd(const float *dy, const float *gate,
                                     const float *up, float *dgate, float *dup,
                                     int64_t n) {
  return byPrecision(
      "bp_swiglu_bwd",
      [&](void *s) {
        return bp_cuda_swiglu_bwd_f32(dy, gate, up, dgate, dup, n, s);
      },
      [&](void *s) {
        return bp_cuda_swiglu_bwd(asBf16Bits(dy), asBf16Bits(gate),
                                  asBf16Bits(up), asBf16Bits(dgate),
                                  asBf16Bits(dup), n, s);
      });
}
