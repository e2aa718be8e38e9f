//===- Rotary.cu - Rotary position embedding, bf16 or fp32 --------------===//
//
// runtime.h's bp_rotary_*: one thread per rotated pair (row, head, i < d/2)
// of the q and k heads, grid-stride; the v heads are copied (nothing to do
// in place). The angle t * base^(-2i/d) and its cosine and sine are
// computed in double and rounded to float, as the CPU kernel
// (runtime/lib/cpu/kernels/Rotary.cpp) does, so both targets rotate by the
// same float factors. The backward is the rotation by minus the angle.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"

#include <cmath>

using namespace bitpipe::runtime::cuda;

namespace {

constexpr int kThreads = 256;

/// Rotates pair (i, i + d/2) of q/k head `head` of every row by sign *
/// angle; `pairs` = rows * (nh + nkv) * d/2.
template <typename T>
__global__ void rotaryKernel(const T *in, T *out, int64_t pairs, int64_t T_,
                             int64_t rotatedHeads, int64_t d, int64_t width,
                             double base, float sign) {
  const int64_t half = d / 2;
  for (int64_t p = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       p < pairs; p += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i = p % half;
    const int64_t head = (p / half) % rotatedHeads;
    const int64_t row = p / (half * rotatedHeads);
    const int64_t t = row % T_;
    const double angle =
        static_cast<double>(t) *
        pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    double sn, cs;
    sincos(angle, &sn, &cs);
    const float c = static_cast<float>(cs), s = sign * static_cast<float>(sn);
    const int64_t lo = row * width + head * d + i, hi = lo + half;
    // Both inputs are read before either output is written: out may alias
    // in.
    const float x0 = load(in, lo), x1 = load(in, hi);
    store(out, lo, x0 * c - x1 * s);
    store(out, hi, x1 * c + x0 * s);
  }
}

/// Copies the v heads (the last vWidth columns of every row).
template <typename T>
__global__ void copyValuesKernel(const T *in, T *out, int64_t rows,
                                 int64_t width, int64_t vWidth) {
  const int64_t n = rows * vWidth;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       k < n; k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t idx = (k / vWidth) * width + (width - vWidth) + k % vWidth;
    out[idx] = in[idx];
  }
}

template <typename A>
bp_status_t rotary(const A *in, A *out, int64_t B, int64_t T, int64_t H,
                   int64_t nh, int64_t nkv, float base, float sign,
                   void *stream, const char *name) {
  // The entry points have made the roles' checks (Kernels.h).
  if (H % nh != 0 || nh % nkv != 0 || (H / nh) % 2 != 0 || !(base > 0.0f) ||
      std::isinf(base))
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  const int64_t d = H / nh, rows = B * T, width = (nh + 2 * nkv) * d;
  const int64_t pairs = rows * (nh + nkv) * (d / 2);
  rotaryKernel<<<gridBlocks(pairs, kThreads), kThreads, 0, s>>>(
      asDevice(in), asDevice(out), pairs, T, nh + nkv, d, width,
      static_cast<double>(base), sign);
  bp_status_t status = checkLaunch(name);
  if (status != BP_OK ||
      static_cast<const void *>(in) == static_cast<const void *>(out))
    return status;
  copyValuesKernel<<<gridBlocks(rows * nkv * d, kThreads), kThreads, 0, s>>>(
      asDevice(in), asDevice(out), rows, width, nkv * d);
  return checkLaunch(name);
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(rotaryKernel<float>);

extern "C" bp_status_t bp_cuda_rotary_fwd(const bp_bf16_t *qkv, bp_bf16_t *out,
                                          int64_t B, int64_t T, int64_t H,
                                          int64_t nh, int64_t nkv, float base,
                                          void *stream) {
  if (!BP_KERNEL_ARGS_VALID(rotary_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  return rotary(qkv, out, B, T, H, nh, nkv, base, 1.0f, stream,
                "bp_cuda_rotary_fwd");
}

extern "C" bp_status_t bp_cuda_rotary_bwd(const bp_bf16_t *dout,
                                          bp_bf16_t *dqkv, int64_t B,
                                          int64_t T, int64_t H, int64_t nh,
                                          int64_t nkv, float base,
                                          void *stream) {
  if (!BP_KERNEL_ARGS_VALID(rotary_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return rotary(dout, dqkv, B, T, H, nh, nkv, base, -1.0f, stream,
                "bp_cuda_rotary_bwd");
}

extern "C" bp_status_t bp_cuda_rotary_fwd_f32(const float *qkv, float *out,
                                              int64_t B, int64_t T, int64_t H,
                                              int64_t nh, int64_t nkv,
                                              float base, void *stream) {
  if (!BP_KERNEL_ARGS_VALID(rotary_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  return rotary(qkv, out, B, T, H, nh, nkv, base, 1.0f, stream,
                "bp_cuda_rotary_fwd_f32");
}

extern "C" bp_status_t bp_cuda_rotary_bwd_f32(const float *dout, float *dqkv,
                                              int64_t B, int64_t T, int64_t H,
                                              int64_t nh, int64_t nkv,
                                              float base, void *stream) {
  if (!BP_KERNEL_ARGS_VALID(rotary_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return rotary(dout, dqkv, B, T, H, nh, nkv, base, -1.0f, stream,
                "bp_cuda_rotary_bwd_f32");
}
