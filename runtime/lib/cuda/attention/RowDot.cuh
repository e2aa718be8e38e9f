//===- RowDot.cuh - The attention backward's preprocessing ------*- CUDA -*-=//
//
// FlashAttention-2's backward needs, per query row, D = dO . O: the softmax
// backward dS = P (dP - rowsum(P dP)) has rowsum(P dP) = dO . (P V) = dO . O,
// a sum over the whole key row that a tile of keys does not see. It is
// computed once, before the tiles, into rowDot [B, nh, T] fp32 (as the CPU
// kernel computes its D; runtime/lib/cpu/kernels/Attention.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ATTENTION_ROWDOT_CUH
#define BITPIPE_RUNTIME_CUDA_ATTENTION_ROWDOT_CUH

#include "../DeviceMath.cuh"
#include "../Launch.h"
#include "AttentionKernels.h"

namespace bitpipe::runtime::cuda::attention {

__device__ inline float widen(float v) { return v; }
__device__ inline float widen(bf16 v) { return __bfloat162float(v); }

/// One warp per (b, h, t) row, t fastest, so that rowDot is written in
/// order; lanes stride over the head's d columns and sum in fp32.
template <typename E>
__global__ void rowDotKernel(const E *out, const E *dout, float *rowDot,
                             Shape s) {
  const int64_t rows = static_cast<int64_t>(s.B) * s.nh * s.T;
  const int lane = threadIdx.x % kWarp;
  const int64_t warpsInGrid =
      static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x / kWarp) +
                   threadIdx.x / kWarp;
       r < rows; r += warpsInGrid) {
    const int64_t t = r % s.T, bh = r / s.T;
    const int64_t b = bh / s.nh, h = bh % s.nh;
    const int64_t base = (b * s.T + t) * s.H + h * s.d;
    float sum = 0.0f;
    for (int c = lane; c < s.d; c += kWarp)
      sum += widen(out[base + c]) * widen(dout[base + c]);
    sum = warpReduce(sum, Plus());
    if (lane == 0)
      rowDot[r] = sum;
  }
}

template <typename E>
inline void launchRowDot(const E *out, const E *dout, float *rowDot,
                         const Shape &s, cudaStream_t stream) {
  constexpr int kThreads = 256;
  const int64_t rows = static_cast<int64_t>(s.B) * s.nh * s.T;
  rowDotKernel<E><<<gridBlocks(rows, kThreads / kWarp), kThreads, 0, stream>>>(
      out, dout, rowDot, s);
}

} // namespace bitpipe::runtime::cuda::attention

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_ROWDOT_CUH
