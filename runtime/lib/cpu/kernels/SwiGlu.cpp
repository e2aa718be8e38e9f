//===- SwiGlu.cpp - SwiGLU gate of LLaMA's MLP ------------------*- C++ -*-===//
//
// y = silu(gate) * up, silu(g) = g * s, s = sigmoid(g) = 1 / (1 + exp(-g)).
// d silu / dg = s + g s (1 - s) = s (1 + g (1 - s)).
// 1 / (1 + exp(-g)) is exact at both tails in float: exp(-g) overflows to
// inf for g < -88 (s = 0) and underflows to 0 for large g (s = 1).
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include <cmath>

using namespace bitpipe::runtime::cpu;

static float sigmoid(float g) { return 1.0f / (1.0f + std::exp(-g)); }

extern "C" bp_status_t bp_swiglu_fwd(const float *gate, const float *up,
                                     float *y, int64_t n) {
  if (!BP_KERNEL_ARGS_VALID(swiglu_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    y[i] = g * sigmoid(g) * up[i];
  }
  return BP_OK;
}

extern "C" bp_status_t bp_swiglu_bwd(const float *dy, const float *gate,
                                     const float *up, float *dgate, float *dup,
                                     int64_t n) {
  if (!BP_KERNEL_ARGS_VALID(swiglu_bwd) || dgate == dup)
    return BP_ERR_INVALID_ARGUMENT;
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i], u = up[i], d = dy[i];
    const float s = sigmoid(g);
    // Read both inputs before writing: dgate may alias gate or dy.
    dgate[i] = d * u * s * (1.0f + g * (1.0f - s));
    dup[i] = d * g * s;
  }
  return BP_OK;
}
