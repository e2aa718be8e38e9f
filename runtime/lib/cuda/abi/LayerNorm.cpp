//===- LayerNorm.cpp - runtime.h's bp_layer_norm_* on CUDA -----------------===//
//
// x, y, dy, dx and the weights gamma, beta in the context's precision; the
// statistics mean, rstd and the gradients dgamma, dbeta are fp32 in both.
// See Dispatch.h.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_layer_norm_fwd(const float *x, const float *gamma,
                                         const float *beta, float *y,
                                         float *mean, float *rstd, int64_t N,
                                         int64_t H, float eps) {
  return byPrecision(
      "bp_layer_norm_fwd",
      [&](void *s) {
        return bp_cuda_layer_norm_fwd_f32(x, gamma, beta, y, mean, rstd, N, H,
                                          eps, s);
      },
      [&](void *s) {
        return bp_cuda_layer_norm_fwd(asBf16Bits(x), asBf16Bits(gamma),
                                      asBf16Bits(beta), asBf16Bits(y), mean,
                                      rstd, N, H, eps, s);
      });
}

extern "C" bp_status_t bp_layer_norm_bwd(const float *dy, const float *x,
                                         const float *gamma, const float *mean,
                                         const float *rstd, float *dx,
                                         float *dgamma, float *dbeta, int64_t N,
                                         int64_t H) {
  return byPrecision(
      "bp_layer_norm_bwd",
      [&](void *s) {
        return bp_cuda_layer_norm_bwd_f32(dy, x, gamma, mean, rstd, dx, dgamma,
                                          dbeta, N, H, s);
      },
      [&](void *s) {
        return bp_cuda_layer_norm_bwd(asBf16Bits(dy), asBf16Bits(x),
                                      asBf16Bits(gamma), mean, rstd,
                                      asBf16Bits(dx), dgamma, dbeta, N, H, s);
      });
}
