//===- Dropout.cpp - Dropout, forward and backward --------------*- C++ -*-===//
//
// y = x * scale where core/Dropout.h's mask keeps an element, 0 where it
// drops it; the backward is the same call on the gradient (Kernels.h). The
// mask is a pure function of (key, site, element), so the loop keeps no
// generator state and draws what the CUDA kernels and the float64
// reference draw. Each element is read before it is written, in one
// iteration, so y may alias x.
//
//===----------------------------------------------------------------------===//

#include "core/Dropout.h"
#include "Common.h"
#include "core/KernelProfile.h"

#include <cstring>

using namespace bitpipe::runtime;

extern "C" bp_status_t bp_dropout(const float *x, float *y, const int32_t *key,
                                  int32_t site, float p, int64_t n) {
  BP_PROFILE_KERNEL(dropout);
  if (!BP_KERNEL_ARGS_VALID(dropout) || !dropoutArgsValid(site, p) ||
      n > kDropoutMaxElements)
    return BP_ERR_INVALID_ARGUMENT;
  if (p == 0.0f) {
    // Nothing is dropped and the scale is 1: a copy, with no draws.
    if (y != x)
      std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
    return BP_OK;
  }
  const DropoutMask mask = dropoutMask(key, site, p);
  for (int64_t e = 0; e < n; ++e)
    y[e] = mask.keeps(static_cast<uint64_t>(e)) ? x[e] * mask.scale : 0.0f;
  return BP_OK;
}
