//===- Gelu.cpp - runtime.h's bp_gelu[_erf]_fwd / _bwd on CUDA ------------===//
//
// Every operand is an activation or its gradient: the context's precision.
// See Dispatch.h.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_gelu_fwd(const float *x, float *y, int64_t n) {
  return byPrecision(
      "bp_gelu_fwd", [&](void *s) { return bp_cuda_gelu_fwd_f32(x, y, n, s); },
      [&](void *s) {
        return bp_cuda_gelu_fwd(asBf16Bits(x), asBf16Bits(y), n, s);
      });
}

extern "C" bp_status_t bp_gelu_bwd(const float *dy, const float *x, float *dx,
                                   int64_t n) {
  return byPrecision(
      "bp_gelu_bwd",
      [&](void *s) { return bp_cuda_gelu_bwd_f32(dy, x, dx, n, s); },
      [&](void *s) {
        return bp_cuda_gelu_bwd(asBf16Bits(dy), asBf16Bits(x), asBf16Bits(dx),
                                n, s);
      });
}

extern "C" bp_status_t bp_gelu_erf_fwd(const float *x, float *y, int64_t n) {
  return byPrecision(
      "bp_gelu_erf_fwd",
      [&](void *s) { return bp_cuda_gelu_erf_fwd_f32(x, y, n, s); },
      [&](void *s) {
        return bp_cuda_gelu_erf_fwd(asBf16Bits(x), asBf16Bits(y), n, s);
      });
}

extern "C" bp_status_t bp_gelu_erf_bwd(const float *dy, const float *x,
                                       float *dx, int64_t n) {
  return byPrecision(
      "bp_gelu_erf_bwd",
      [&](void *s) { return bp_cuda_gelu_erf_bwd_f32(dy, x, dx, n, s); },
      [&](void *s) {
        return bp_cuda_gelu_erf_bwd(asBf16Bits(dy), asBf16Bits(x),
                                    asBf16Bits(dx), n, s);
      });
}
