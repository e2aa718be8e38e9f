//===- Rotary.cpp - Rotary position embedding of q and k --------*- C++ -*-===//
//
// Hugging Face LLaMA's layout (rotate_half): feature i of a head pairs with
// feature i + d/2, rotated by the angle t * base^(-2i/d) at position t.
// The backward is the rotation by minus that angle (a rotation's inverse is
// its transpose), so one routine serves both with the sine's sign.
// The cos/sin table [T, d/2] is computed once per call, in double.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"

#include <cmath>
#include <cstring>

using namespace bitpipe::runtime::cpu;

/// out = rotate(in) in the q and k heads (sign = +1 forward, -1 backward),
/// copied in the v heads. The entry points have checked the roles' part of
/// the arguments (Kernels.h).
BP_CPU_CLONES static bp_status_t rotate(const float *in, float *out, int64_t B,
                                        int64_t T, int64_t H, int64_t nh,
                                        int64_t nkv, float base, float sign) {
  if (H % nh != 0 || nh % nkv != 0 || (H / nh) % 2 != 0 || !(base > 0.0f) ||
      std::isinf(base))
    return BP_ERR_INVALID_ARGUMENT;
  const int64_t d = H / nh, half = d / 2;
  const int64_t rotatedHeads = nh + nkv, width = (nh + 2 * nkv) * d;

  ScratchBuffer cosTable(T * half), sinTable(T * half);
  if (!cosTable.ok() || !sinTable.ok())
    return BP_ERR_OUT_OF_MEMORY;
  float *cs = cosTable.get(), *sn = sinTable.get();
  for (int64_t i = 0; i < half; ++i) {
    const double invFreq =
        std::pow(static_cast<double>(base), -2.0 * double(i) / double(d));
    for (int64_t t = 0; t < T; ++t) {
      const double angle = double(t) * invFreq;
      cs[t * half + i] = static_cast<float>(std::cos(angle));
      sn[t * half + i] = sign * static_cast<float>(std::sin(angle));
    }
  }

  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const float *src = in + (b * T + t) * width;
      float *dst = out + (b * T + t) * width;
      const float *c = cs + t * half, *s = sn + t * half;
      for (int64_t h = 0; h < rotatedHeads; ++h) {
        const float *x = src + h * d;
        float *y = dst + h * d;
        for (int64_t i = 0; i < half; ++i) {
          // Both inputs are read before either output is written: out may
          // alias in.
          const float lo = x[i], hi = x[i + half];
          y[i] = lo * c[i] - hi * s[i];
          y[i + half] = hi * c[i] + lo * s[i];
        }
      }
      // v heads: unchanged (memmove: out may alias in).
      std::memmove(dst + rotatedHeads * d, src + rotatedHeads * d,
                   static_cast<size_t>(nkv * d) * sizeof(float));
    }
  return BP_OK;
}

extern "C" bp_status_t bp_rotary_fwd(const float *qkv, float *out, int64_t B,
                                     int64_t T, int64_t H, int64_t nh,
                                     int64_t nkv, float base) {
  BP_PROFILE_KERNEL(rotary_fwd);
  if (!BP_KERNEL_ARGS_VALID(rotary_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  return rotate(qkv, out, B, T, H, nh, nkv, base, 1.0f);
}

extern "C" bp_status_t bp_rotary_bwd(const float *dout, float *dqkv, int64_t B,
                                     int64_t T, int64_t H, int64_t nh,
                                     int64_t nkv, float base) {
  BP_PROFILE_KERNEL(rotary_bwd);
  if (!BP_KERNEL_ARGS_VALID(rotary_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return rotate(dout, dqkv, B, T, H, nh, nkv, base, -1.0f);
}
