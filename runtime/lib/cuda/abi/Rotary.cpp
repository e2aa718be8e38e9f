//===- Rotary.cpp - runtime.h's bp_rotary_* on CUDA ------------------------===//
//
// The fused q/k/v activations and their gradients: the context's
// precision. See Dispatch.h.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_rotary_fwd(const float *qkv, float *out, int64_t B,
                                     int64_t T, int64_t H, int64_t nh,
                                     int64_t nkv, float base) {
  return byPrecision(
      "bp_rotary_fwd",
      [&](void *s) {
        return bp_cuda_rotary_fwd_f32(qkv, out, B, T, H, nh, nkv, base, s);
      },
      [&](void *s) {
        return bp_cuda_rotary_fwd(asBf16Bits(qkv), asBf16Bits(out), B, T, H,
                                  nh, nkv, base, s);
      });
}

extern "C" bp_status_t bp_rotary_bwd(const float *dout, float *dqkv, int64_t B,
                                     int64_t T, int64_t H, int64_t nh,
                                     int64_t nkv, float base) {
  return byPrecision(
      "bp_rotary_bwd",
      [&](void *s) {
        return bp_cuda_rotary_bwd_f32(dout, dqkv, B, T, H, nh, nkv, base, s);
      },
      [&](void *s) {
        return bp_cuda_rotary_bwd(asBf16Bits(dout), asBf16Bits(dqkv), B, T, H,
                                  nh, nkv, base, s);
      });
}
