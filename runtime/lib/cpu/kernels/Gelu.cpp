//===- Gelu.cpp - GELU, tanh approximation (GPT-2) --------------*- C++ -*-===//
//
// y = 0.5 x (1 + tanh(u)),  u = sqrt(2/pi) (x + 0.044715 x^3)
// dy/dx = 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) du/dx,
// du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2)
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include <cmath>

using namespace bitpipe::runtime::cpu;

static constexpr float kSqrt2OverPi = 0.7978845608028654f;
static constexpr float kCubic = 0.044715f;

extern "C" bp_status_t bp_gelu_fwd(const float *x, float *y, int64_t n) {
  if (!allNonNull({x, y}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float u = kSqrt2OverPi * (v + kCubic * v * v * v);
    y[i] = 0.5f * v * (1.0f + std::tanh(u));
  }
  return BP_OK;
}

extern "C" bp_status_t bp_gelu_bwd(const float *dy, const float *x, float *dx,
                                   int64_t n) {
  if (!allNonNull({dy, x, dx}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  for (int64_t i = 0; i < n; ++i) {
    float v = x[i];
    float th = std::tanh(kSqrt2OverPi * (v + kCubic * v * v * v));
    float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    float d = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du;
    dx[i] = dy[i] * d;
  }
  return BP_OK;
}
