//===- RmsNorm.cpp - runtime.h's bp_rms_norm_* on CUDA ---------------------===//
//
// x, y, dy, dx and the gain in the context's precision; rstd and dgamma
// are fp32 in both. See Dispatch.h.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_rms_norm_fwd(const float *x, const float *gamma,
                                       float *y, float *rstd, int64_t N,
                                       int64_t H, float eps) {
  return byPrecision(
      "bp_rms_norm_fwd",
      [&](void *s) {
        return bp_cuda_rms_norm_fwd_f32(x, gamma, y, rstd, N, H, eps, s);
      },
      [&](void *s) {
        return bp_cuda_rms_norm_fwd(asBf16Bits(x), asBf16Bits(gamma),
                                    asBf16Bits(y), rstd, N, H, eps, s);
      });
}

extern "C" bp_status_t bp_rms_norm_bwd(const float *dy, const float *x,
                                       const float *gamma, const float *rstd,
                                       float *dx, float *dgamma, int64_t N,
                                       int64_t H) {
  return byPrecision(
      "bp_rms_norm_bwd",
      [&](void *s) {
        return bp_cuda_rms_norm_bwd_f32(dy, x, gamma, rstd, dx, dgamma, N, H,
                                        s);
      },
      [&](void *s) {
        return bp_cuda_rms_norm_bwd(asBf16Bits(dy), asBf16Bits(x),
                                    asBf16Bits(gamma), rstd, asBf16Bits(dx),
                                    dgamma, N, H, s);
      });
}
