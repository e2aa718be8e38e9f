//===- Gelu.cu - GELU, tanh form (GPT-2), bf16 or fp32 ----------------===//
//
// Element-wise, grid-stride; each element widened to fp32, computed with
// the accurate tanhf (not a fast approximation: GELU's output feeds the next
// matrix product, and the CPU kernel's formula is the reference), rounded
// once when the element type is bf16. The formulas are the CPU kernel's
// (runtime/lib/cpu/kernels/Gelu.cpp). One kernel template per direction
// serves both element types (DeviceMath.cuh's load / store).
//
// None of this has run on a GPU yet.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "Launch.h"
#include "core/ArgChecks.h"

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::allNonNull;
using bitpipe::runtime::allPositive;

namespace {

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;
constexpr int kThreads = 256;

template <typename T>
__global__ void geluFwdKernel(const T *x, T *y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = load(x, i);
    float u = kSqrt2OverPi * (v + kCubic * v * v * v);
    store(y, i, 0.5f * v * (1.0f + tanhf(u)));
  }
}

template <typename T>
__global__ void geluBwdKernel(const T *dy, const T *x, T *dx, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = load(x, i);
    float th = tanhf(kSqrt2OverPi * (v + kCubic * v * v * v));
    float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    float d = 0.5f * (1.0f + th) + 0.5f * v * (1.0f - th * th) * du;
    // Reads dy[i] before writing dx[i], in the same thread: dx may alias dy.
    store(dx, i, load(dy, i) * d);
  }
}

template <typename A>
bp_status_t geluFwd(const A *x, A *y, int64_t n, void *stream,
                    const char *name) {
  if (!allNonNull({x, y}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  geluFwdKernel<<<gridBlocks(n, kThreads), kThreads, 0, asStream(stream)>>>(
      asDevice(x), asDevice(y), n);
  return checkLaunch(name);
}

template <typename A>
bp_status_t geluBwd(const A *dy, const A *x, A *dx, int64_t n, void *stream,
                    const char *name) {
  if (!allNonNull({dy, x, dx}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  geluBwdKernel<<<gridBlocks(n, kThreads), kThreads, 0, asStream(stream)>>>(
      asDevice(dy), asDevice(x), asDevice(dx), n);
  return checkLaunch(name);
}

} // namespace

extern "C" bp_status_t bp_cuda_gelu_fwd(const bp_bf16_t *x, bp_bf16_t *y,
                                        int64_t n, void *stream) {
  return geluFwd(x, y, n, stream, "bp_cuda_gelu_fwd");
}

extern "C" bp_status_t bp_cuda_gelu_bwd(const bp_bf16_t *dy,
                                        const bp_bf16_t *x, bp_bf16_t *dx,
                                        int64_t n, void *stream) {
  return geluBwd(dy, x, dx, n, stream, "bp_cuda_gelu_bwd");
}

extern "C" bp_status_t bp_cuda_gelu_fwd_f32(const float *x, float *y,
                                            int64_t n, void *stream) {
  return geluFwd(x, y, n, stream, "bp_cuda_gelu_fwd_f32");
}

extern "C" bp_status_t bp_cuda_gelu_bwd_f32(const float *dy, const float *x,
                                            float *dx, int64_t n,
                                            void *stream) {
  return geluBwd(dy, x, dx, n, stream, "bp_cuda_gelu_bwd_f32");
}
