//===- Gelu.cpp - GELU, tanh approximation (GPT-2) --------------*- C++ -*-===//
//
// y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
// dy/dx = 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) du/dx,
// du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
//
// Computed through one exponential, e = exp(-2u), which loops vectorize
// (VectorExp.h; libm's tanhf was a quarter of a GPT step on one core):
// with s = 1 / (1 + e) = (1 + tanh(u)) / 2,
//   y = x s,   dy/dx = s + 2 x s (e s) du/dx,
// since 1 - tanh(u)^2 = 4 s (1 - s) and 1 - s = e s (no cancellation as
// s nears 1). Within a few float ulps of the tanh form.
//
//===----------------------------------------------------------------------===//

#include "Gelu.h"
#include "Common.h"
#include "VectorExp.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

using namespace bitpipe::runtime::cpu;

static constexpr float kSqrt2OverPi = 0.7978845608028654f;
static constexpr float kCubic = 0.044715f;

BP_CPU_CLONES void bitpipe::runtime::cpu::geluForwardRange(const float *x,
                                                           float *y,
                                                           int64_t first,
                                                           int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    const float v = x[i];
    const float u = kSqrt2OverPi * (v + kCubic * v * v * v);
    y[i] = v / (1.0f + vectorExp(-2.0f * u));
  }
}

extern "C" bp_status_t bp_gelu_fwd(const float *x, float *y, int64_t n) {
  BP_PROFILE_KERNEL(gelu_fwd);
  if (!BP_KERNEL_ARGS_VALID(gelu_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  parallelFor(n, kElementwiseGrain, [&](int64_t first, int64_t last) {
    geluForwardRange(x, y, first, last);
  });
  return BP_OK;
}

BP_CPU_CLONES void bitpipe::runtime::cpu::geluBackwardRange(
    const float *dy, const float *x, float *dx, int64_t first, int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    const float v = x[i];
    const float e = vectorExp(-2.0f * kSqrt2OverPi * (v + kCubic * v * v * v));
    const float s = 1.0f / (1.0f + e);
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    dx[i] = dy[i] * (s + 2.0f * v * s * (e * s) * du);
  }
}

extern "C" bp_status_t bp_gelu_bwd(const float *dy, const float *x, float *dx,
                                   int64_t n) {
  BP_PROFILE_KERNEL(gelu_bwd);
  if (!BP_KERNEL_ARGS_VALID(gelu_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  parallelFor(n, kElementwiseGrain, [&](int64_t first, int64_t last) {
    geluBackwardRange(dy, x, dx, first, last);
  });
  return BP_OK;
}
