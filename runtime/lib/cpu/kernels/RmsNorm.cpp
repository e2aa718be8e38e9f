//===- RmsNorm.cpp - RMS normalisation over the last dim --------*- C++ -*-===//
//
// LLaMA's RMSNorm: y = x * rstd * gamma with rstd = 1 / sqrt(mean(x^2) +
// eps); no centring and no bias. The forward saves rstd per row for the
// backward, as the layer norm saves its statistics.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "GradChunk.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

#include <atomic>
#include <cmath>

using namespace bitpipe::runtime::cpu;

/// Rows [first, last) of bp_rms_norm_fwd.
BP_CPU_CLONES static void rmsNormRows(const float *x, const float *gamma,
                                      float *y, float *rstd, int64_t H,
                                      float eps, int64_t first, int64_t last) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t i = first; i < last; ++i) {
    const float *xr = x + i * H;
    float *yr = y + i * H;
    float sq = 0.0f;
    for (int64_t c = 0; c < H; ++c)
      sq += xr[c] * xr[c];
    const float rs = 1.0f / std::sqrt(sq * invH + eps);
    for (int64_t c = 0; c < H; ++c)
      yr[c] = xr[c] * rs * gamma[c];
    rstd[i] = rs;
  }
}

extern "C" bp_status_t bp_rms_norm_fwd(const float *x, const float *gamma,
                                       float *y, float *rstd, int64_t N,
                                       int64_t H, float eps) {
  BP_PROFILE_KERNEL(rms_norm_fwd);
  if (!BP_KERNEL_ARGS_VALID(rms_norm_fwd) || !(eps >= 0.0f))
    return BP_ERR_INVALID_ARGUMENT;
  parallelFor(N, rowGrain(H), [&](int64_t first, int64_t last) {
    rmsNormRows(x, gamma, y, rstd, H, eps, first, last);
  });
  return BP_OK;
}

/// Columns [first, last) of dgamma, added into \p dgamma (which holds those
/// columns only), each summing its rows in order.
BP_CPU_CLONES static void rmsNormParamGrads(const float *dy, const float *x,
                                            const float *rstd, float *dgamma,
                                            int64_t N, int64_t H, int64_t first,
                                            int64_t last) {
  for (int64_t i = 0; i < N; ++i) {
    const float *dyr = dy + i * H;
    const float *xr = x + i * H;
    const float rs = rstd[i];
    for (int64_t c = first; c < last; ++c)
      dgamma[c - first] += dyr[c] * (xr[c] * rs);
  }
}

/// Rows [first, last) of dx.
BP_CPU_CLONES static void rmsNormInputGrads(const float *dy, const float *x,
                                            const float *gamma,
                                            const float *rstd, float *dx,
                                            int64_t H, int64_t first,
                                            int64_t last) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t i = first; i < last; ++i) {
    const float *dyr = dy + i * H;
    const float *xr = x + i * H;
    float *dxr = dx + i * H;
    const float rs = rstd[i];
    // With xhat = x rstd and g = dy * gamma, differentiating through rstd
    // (d rstd / dx_c = -rstd^3 x_c / H) gives
    //   dx = rstd (g - xhat mean(g xhat)).
    float meanGX = 0.0f;
    for (int64_t c = 0; c < H; ++c) {
      const float xhat = xr[c] * rs;
      meanGX += dyr[c] * gamma[c] * xhat;
    }
    meanGX *= invH;
    for (int64_t c = 0; c < H; ++c) {
      const float xhat = xr[c] * rs;
      dxr[c] = rs * (dyr[c] * gamma[c] - xhat * meanGX);
    }
  }
}

/// bp_rms_norm_bwd into accumulators of type Acc (GradChunk.h).
template <typename Acc>
static bp_status_t rmsNormGrad(const float *dy, const float *x,
                               const float *gamma, const float *rstd, float *dx,
                               Acc *dgamma, int64_t N, int64_t H) {
  std::atomic<bool> outOfMemory{false};
  // dgamma by columns, then dx by rows.
  parallelFor(H, columnGrain(N), [&](int64_t first, int64_t last) {
    GradChunk<Acc> g(dgamma + first, last - first);
    if (!g.ok()) {
      outOfMemory = true;
      return;
    }
    rmsNormParamGrads(dy, x, rstd, g.data(), N, H, first, last);
    g.finish();
  });
  if (outOfMemory)
    return BP_ERR_OUT_OF_MEMORY;
  parallelFor(N, rowGrain(H), [&](int64_t first, int64_t last) {
    rmsNormInputGrads(dy, x, gamma, rstd, dx, H, first, last);
  });
  return BP_OK;
}

extern "C" bp_status_t bp_rms_norm_bwd(const float *dy, const float *x,
                                       const float *gamma, const float *rstd,
                                       float *dx, float *dgamma, int64_t N,
                                       int64_t H) {
  BP_PROFILE_KERNEL(rms_norm_bwd);
  if (!BP_KERNEL_ARGS_VALID(rms_norm_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return rmsNormGrad(dy, x, gamma, rstd, dx, dgamma, N, H);
}

extern "C" bp_status_t bp_rms_norm_bwd_g64(const float *dy, const float *x,
                                           const float *gamma,
                                           const float *rstd, float *dx,
                                           double *dgamma, int64_t N,
                                           int64_t H) {
  BP_PROFILE_KERNEL(rms_norm_bwd);
  if (!BP_KERNEL_ARGS_VALID(rms_norm_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return rmsNormGrad(dy, x, gamma, rstd, dx, dgamma, N, H);
}
