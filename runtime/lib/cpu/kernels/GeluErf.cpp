//===- GeluErf.cpp - GELU, exact form (BERT) --------------------*- C++ -*-===//
//
// y = x Phi(x) = 0.5 x (1 + erf(x / sqrt(2)))
// dy/dx = Phi(x) + x phi(x),  phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
//
// The form Hugging Face calls "gelu" (BERT's hidden_act); GPT-2's is the
// tanh approximation of Gelu.cpp. The two differ by up to about 1e-3 near
// |x| = 2, enough that a checkpoint trained with one drifts under the other.
//
// erf and exp through VectorErf.h and VectorExp.h, so that both loops
// vectorize (libm's erff was a call per element); erf within 1.5e-7.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "VectorErf.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

using namespace bitpipe::runtime::cpu;

static constexpr float kInvSqrt2 = 0.7071067811865476f;
static constexpr float kInvSqrt2Pi = 0.3989422804014327f;

/// Elements [first, last) of bp_gelu_erf_fwd.
BP_CPU_CLONES static void geluErfForward(const float *x, float *y,
                                         int64_t first, int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + vectorErf(v * kInvSqrt2));
  }
}

extern "C" bp_status_t bp_gelu_erf_fwd(const float *x, float *y, int64_t n) {
  BP_PROFILE_KERNEL(gelu_erf_fwd);
  if (!BP_KERNEL_ARGS_VALID(gelu_erf_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  parallelFor(n, kElementwiseGrain, [&](int64_t first, int64_t last) {
    geluErfForward(x, y, first, last);
  });
  return BP_OK;
}

/// Elements [first, last) of bp_gelu_erf_bwd.
BP_CPU_CLONES static void geluErfBackward(const float *dy, const float *x,
                                          float *dx, int64_t first,
                                          int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    float v = x[i];
    float cdf = 0.5f * (1.0f + vectorErf(v * kInvSqrt2));
    float pdf = kInvSqrt2Pi * vectorExp(-0.5f * v * v);
    dx[i] = dy[i] * (cdf + v * pdf);
  }
}

extern "C" bp_status_t bp_gelu_erf_bwd(const float *dy, const float *x,
                                       float *dx, int64_t n) {
  BP_PROFILE_KERNEL(gelu_erf_bwd);
  if (!BP_KERNEL_ARGS_VALID(gelu_erf_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  parallelFor(n, kElementwiseGrain, [&](int64_t first, int64_t last) {
    geluErfBackward(dy, x, dx, first, last);
  });
  return BP_OK;
}
