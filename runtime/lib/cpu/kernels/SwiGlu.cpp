//===- SwiGlu.cpp - SwiGLU gate of LLaMA's MLP ------------------*- C++ -*-===//
//
// y = silu(gate) * up, silu(g) = g * s, s = sigmoid(g) = 1 / (1 + exp(-g)).
// d silu / dg = s + g s (1 - s) = s (1 + g (1 - s)).
// exp through VectorExp.h, so that the loops vectorize (libm's expf was
// most of these kernels' time). Its clamp would bound exp(-g) by exp(88)
// below g = -88, so s is 0 there by a select, as libm's overflow to inf
// gave it; above g = 87 exp(-g) is clamped to exp(-87) and s rounds to 1,
// as before.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "VectorExp.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

using namespace bitpipe::runtime::cpu;

static float sigmoid(float g) {
  const float s = 1.0f / (1.0f + vectorExp(-g));
  return g < -88.0f ? 0.0f : s;
}

/// Elements [first, last) of bp_swiglu_fwd.
BP_CPU_CLONES static void swigluForward(const float *gate, const float *up,
                                        float *y, int64_t first, int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    const float g = gate[i];
    y[i] = g * sigmoid(g) * up[i];
  }
}

extern "C" bp_status_t bp_swiglu_fwd(const float *gate, const float *up,
                                     float *y, int64_t n) {
  BP_PROFILE_KERNEL(swiglu_fwd);
  if (!BP_KERNEL_ARGS_VALID(swiglu_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  parallelFor(n, kElementwiseGrain, [&](int64_t first, int64_t last) {
    swigluForward(gate, up, y, first, last);
  });
  return BP_OK;
}

/// Elements [first, last) of bp_swiglu_bwd.
BP_CPU_CLONES static void swigluBackward(const float *dy, const float *gate,
                                         const float *up, float *dgate,
                                         float *dup, int64_t first,
                                         int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    const float g = gate[i], u = up[i], d = dy[i];
    const float s = sigmoid(g);
    // Read both inputs before writing: dgate may alias gate or dy.
    dgate[i] = d * u * s * (1.0f + g * (1.0f - s));
    dup[i] = d * g * s;
  }
}

extern "C" bp_status_t bp_swiglu_bwd(const float *dy, const float *gate,
                                     const float *up, float *dgate, float *dup,
                                     int64_t n) {
  BP_PROFILE_KERNEL(swiglu_bwd);
  if (!BP_KERNEL_ARGS_VALID(swiglu_bwd) || dgate == dup)
    return BP_ERR_INVALID_ARGUMENT;
  parallelFor(n, kElementwiseGrain, [&](int64_t first, int64_t last) {
    swigluBackward(dy, gate, up, dgate, dup, first, last);
  });
  return BP_OK;
}
