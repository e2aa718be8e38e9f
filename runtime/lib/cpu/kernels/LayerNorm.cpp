//===- LayerNorm.cpp - Layer normalisation over the last dim ----*- C++ -*-===//
//
// The forward saves each row's mean and reciprocal standard deviation so that
// the backward need not recompute the statistics.
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

/// Rows [first, last) of bp_layer_norm_fwd.
BP_CPU_CLONES static void layerNormRows(const float *x, const float *gamma,
                                        const float *beta, float *y,
                                        float *mean, float *rstd, int64_t H,
                                        float eps, int64_t first,
                                        int64_t last) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t i = first; i < last; ++i) {
    const float *xr = x + i * H;
    float *yr = y + i * H;
    // Two passes: the variance of centred values does not suffer the
    // cancellation of E[x^2] - E[x]^2 when |mean| >> std.
    float sum = 0.0f;
    for (int64_t c = 0; c < H; ++c)
      sum += xr[c];
    float mu = sum * invH;
    float sq = 0.0f;
    for (int64_t c = 0; c < H; ++c) {
      float d = xr[c] - mu;
      sq += d * d;
    }
    float rs = 1.0f / std::sqrt(sq * invH + eps);
    for (int64_t c = 0; c < H; ++c)
      yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    mean[i] = mu;
    rstd[i] = rs;
  }
}

extern "C" bp_status_t bp_layer_norm_fwd(const float *x, const float *gamma,
                                         const float *beta, float *y,
                                         float *mean, float *rstd, int64_t N,
                                         int64_t H, float eps) {
  BP_PROFILE_KERNEL(layer_norm_fwd);
  if (!BP_KERNEL_ARGS_VALID(layer_norm_fwd) || !(eps >= 0.0f))
    return BP_ERR_INVALID_ARGUMENT;
  parallelFor(N, rowGrain(H), [&](int64_t first, int64_t last) {
    layerNormRows(x, gamma, beta, y, mean, rstd, H, eps, first, last);
  });
  return BP_OK;
}

/// Columns [first, last) of dgamma and dbeta, added into \p dgamma and
/// \p dbeta (which hold those columns only): each sums its rows in order,
/// so the sums are the same whatever thread takes the column.
BP_CPU_CLONES static void
layerNormParamGrads(const float *dy, const float *x, const float *mean,
                    const float *rstd, float *dgamma, float *dbeta, int64_t N,
                    int64_t H, int64_t first, int64_t last) {
  for (int64_t i = 0; i < N; ++i) {
    const float *dyr = dy + i * H;
    const float *xr = x + i * H;
    const float mu = mean[i], rs = rstd[i];
    for (int64_t c = first; c < last; ++c) {
      float xhat = (xr[c] - mu) * rs;
      dgamma[c - first] += dyr[c] * xhat;
      dbeta[c - first] += dyr[c];
    }
  }
}

/// Rows [first, last) of dx.
BP_CPU_CLONES static void
layerNormInputGrads(const float *dy, const float *x, const float *gamma,
                    const float *mean, const float *rstd, float *dx, int64_t H,
                    int64_t first, int64_t last) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t i = first; i < last; ++i) {
    const float *dyr = dy + i * H;
    const float *xr = x + i * H;
    float *dxr = dx + i * H;
    const float mu = mean[i], rs = rstd[i];
    // With xhat = (x - mu) rstd and g = dy * gamma, differentiating through
    // mu and rstd gives
    //   dx = rstd (g - mean(g) - xhat mean(g xhat)).
    float meanG = 0.0f, meanGX = 0.0f;
    for (int64_t c = 0; c < H; ++c) {
      float xhat = (xr[c] - mu) * rs;
      float g = dyr[c] * gamma[c];
      meanG += g;
      meanGX += g * xhat;
    }
    meanG *= invH;
    meanGX *= invH;
    for (int64_t c = 0; c < H; ++c) {
      float xhat = (xr[c] - mu) * rs;
      float g = dyr[c] * gamma[c];
      dxr[c] = rs * (g - meanG - xhat * meanGX);
    }
  }
}

/// bp_layer_norm_bwd into accumulators of type Acc (GradChunk.h).
template <typename Acc>
static bp_status_t layerNormGrad(const float *dy, const float *x,
                                 const float *gamma, const float *mean,
                                 const float *rstd, float *dx, Acc *dgamma,
                                 Acc *dbeta, int64_t N, int64_t H) {
  std::atomic<bool> outOfMemory{false};
  // The parameters' gradients by columns, then dx by rows.
  parallelFor(H, columnGrain(N), [&](int64_t first, int64_t last) {
    GradChunk<Acc> g(dgamma + first, last - first, 0);
    GradChunk<Acc> b(dbeta + first, last - first, 1);
    if (!g.ok() || !b.ok()) {
      outOfMemory = true;
      return;
    }
    layerNormParamGrads(dy, x, mean, rstd, g.data(), b.data(), N, H, first,
                        last);
    g.finish();
    b.finish();
  });
  if (outOfMemory)
    return BP_ERR_OUT_OF_MEMORY;
  parallelFor(N, rowGrain(H), [&](int64_t first, int64_t last) {
    layerNormInputGrads(dy, x, gamma, mean, rstd, dx, H, first, last);
  });
  return BP_OK;
}

extern "C" bp_status_t bp_layer_norm_bwd(const float *dy, const float *x,
                                         const float *gamma, const float *mean,
                                         const float *rstd, float *dx,
                                         float *dgamma, float *dbeta, int64_t N,
                                         int64_t H) {
  BP_PROFILE_KERNEL(layer_norm_bwd);
  if (!BP_KERNEL_ARGS_VALID(layer_norm_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return layerNormGrad(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, N, H);
}

extern "C" bp_status_t
bp_layer_norm_bwd_g64(const float *dy, const float *x, const float *gamma,
                      const float *mean, const float *rstd, float *dx,
                      double *dgamma, double *dbeta, int64_t N, int64_t H) {
  BP_PROFILE_KERNEL(layer_norm_bwd);
  if (!BP_KERNEL_ARGS_VALID(layer_norm_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return layerNormGrad(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, N, H);
}
