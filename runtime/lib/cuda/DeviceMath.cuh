//===- DeviceMath.cuh - bf16 access and fp32 reductions on the device -*- CUDA -*-=//
//
// What the kernels share inside the device: bf16 loads and stores that
// widen to / round from fp32 (all arithmetic is fp32), warp and block
// reductions, the online (max, sum-of-exp) pair of a softmax row, and the
// record of an out-of-range id.
//
// None of this has run on a GPU yet.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_DEVICEMATH_CUH
#define BITPIPE_RUNTIME_CUDA_DEVICEMATH_CUH

#include "bitpipe/cuda.h"

#include <cuda_bf16.h>

#include <cstdint>

namespace bitpipe::runtime::cuda {

using bf16 = __nv_bfloat16;

/// The ABI's raw bits as CUDA's type: same size and representation.
inline const bf16 *asBf16(const bp_bf16_t *p) {
  return reinterpret_cast<const bf16 *>(p);
}
inline bf16 *asBf16(bp_bf16_t *p) { return reinterpret_cast<bf16 *>(p); }
static_assert(sizeof(bf16) == sizeof(bp_bf16_t), "bf16 is 16 bits");

__device__ inline float load(const bf16 *p, int64_t i) {
  return __bfloat162float(p[i]);
}
/// Rounds to nearest even, once: each output is computed in fp32 and
/// rounded only when stored.
__device__ inline void store(bf16 *p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

//===----------------------------------------------------------------------===//
// Reductions. Butterfly (xor) shuffles, so every lane ends with the result;
// the combining operations are commutative, so every lane's result is the
// same bits.
//===----------------------------------------------------------------------===//

constexpr unsigned kFullMask = 0xffffffffu;

/// The (max, sum of exp(x - max)) pair of a softmax row, built one element
/// at a time in a single pass (Milakov and Gimelshein, "Online normalizer
/// calculation for softmax"): a vocabulary row (V = 50304) is read once. An
/// empty pair has sum 0.
struct MaxSum {
  float max;
  float sum;
};

__device__ inline MaxSum emptyMaxSum() { return {-INFINITY, 0.0f}; }

/// Adds one element: one exp per element, rescaling the sum when the max
/// grows.
__device__ inline MaxSum push(MaxSum a, float x) {
  if (a.sum == 0.0f)
    return {x, 1.0f};
  if (x > a.max)
    return {x, a.sum * expf(a.max - x) + 1.0f};
  return {a.max, a.sum + expf(x - a.max)};
}

/// Merges two pairs; symmetric in its arguments.
__device__ inline MaxSum combine(MaxSum a, MaxSum b) {
  if (a.sum == 0.0f)
    return b;
  if (b.sum == 0.0f)
    return a;
  float m = fmaxf(a.max, b.max);
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

struct Plus {
  template <typename T> __device__ T operator()(T a, T b) const {
    return a + b;
  }
};
struct Combine {
  __device__ MaxSum operator()(MaxSum a, MaxSum b) const {
    return combine(a, b);
  }
};

/// Two sums reduced together (layer-norm backward needs both of a row).
struct Float2Plus {
  __device__ float2 operator()(float2 a, float2 b) const {
    return make_float2(a.x + b.x, a.y + b.y);
  }
};

__device__ inline float shuffleXor(float v, int lane) {
  return __shfl_xor_sync(kFullMask, v, lane);
}
__device__ inline double shuffleXor(double v, int lane) {
  return __shfl_xor_sync(kFullMask, v, lane);
}
__device__ inline int64_t shuffleXor(int64_t v, int lane) {
  return __shfl_xor_sync(kFullMask, static_cast<long long>(v), lane);
}
__device__ inline float2 shuffleXor(float2 v, int lane) {
  return make_float2(shuffleXor(v.x, lane), shuffleXor(v.y, lane));
}
__device__ inline MaxSum shuffleXor(MaxSum v, int lane) {
  return {shuffleXor(v.max, lane), shuffleXor(v.sum, lane)};
}

template <typename T, typename Op> __device__ T warpReduce(T v, Op op) {
  for (int lane = 16; lane > 0; lane >>= 1)
    v = op(v, shuffleXor(v, lane));
  return v;
}

/// Reduces \p v over the block; every thread gets the result. blockDim.x
/// must be a whole number of warps (Launch.h's rowThreads), and every thread
/// of the block must call it (it synchronizes). Callable repeatedly.
template <typename T, typename Op>
__device__ T blockReduce(T v, Op op, T identity) {
  __shared__ T partial[32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = warpReduce(v, op);
  // The previous call's readers of `partial` must be done before it is
  // overwritten.
  __syncthreads();
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? partial[lane] : identity;
  return warpReduce(v, op);
}

//===----------------------------------------------------------------------===//
// Ids out of range.
//===----------------------------------------------------------------------===//

/// Records that \p who met an id out of range, unless something was already
/// recorded (the first report is the one bp_cuda_synchronize prints).
__device__ inline void reportBadIndex(int32_t *word, int32_t who) {
  atomicCAS(reinterpret_cast<int *>(word), 0, static_cast<int>(who));
}

__device__ inline bool inRange(int32_t id, int64_t V) {
  return id >= 0 && id < V;
}

} // namespace bitpipe::runtime::cuda

#endif // BITPIPE_RUNTIME_CUDA_DEVICEMATH_CUH
