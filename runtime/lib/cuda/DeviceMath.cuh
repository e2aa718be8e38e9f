//===- DeviceMath.cuh - Element access, fp32 reductions --------*- CUDA -*-===//
//
// What the kernels share inside the device: loads and stores of either
// element type (bf16 widened to / rounded from fp32, fp32 as it is; all
// arithmetic is fp32), so that one templated kernel serves both precisions,
// warp and block reductions, the online (max, sum-of-exp) pair of a softmax
// row, and the record of an out-of-range id.
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

/// fp32 elements (--precision fp32): the same kernels, no rounding.
__device__ inline float load(const float *p, int64_t i) { return p[i]; }
__device__ inline void store(float *p, int64_t i, float v) { p[i] = v; }

/// The device element type behind an ABI pointer (bp_bf16_t -> bf16, float
/// -> float), so a host template over the ABI type launches the kernel
/// template over the device type.
inline const bf16 *asDevice(const bp_bf16_t *p) { return asBf16(p); }
inline bf16 *asDevice(bp_bf16_t *p) { return asBf16(p); }
inline const float *asDevice(const float *p) { return p; }
inline float *asDevice(float *p) { return p; }

/// N consecutive elements moved as one vector access (16 bytes for 4 fp32,
/// 8 for 4 bf16): the memory-bound kernels' main loops, where the caller
/// has checked that the pointers allow it (Launch.h's isAligned).
template <typename T, int N> struct alignas(sizeof(T) * N) Pack {
  T v[N];
};
template <int N, typename T>
__device__ inline Pack<T, N> loadPack(const T *p, int64_t i) {
  return *reinterpret_cast<const Pack<T, N> *>(p + i);
}
template <int N, typename T>
__device__ inline void storePack(T *p, int64_t i, const Pack<T, N> &x) {
  *reinterpret_cast<Pack<T, N> *>(p + i) = x;
}

/// Elements of T in one 16-byte access: 8 bf16, 4 fp32.
template <typename T> constexpr int kPack16 = static_cast<int>(16 / sizeof(T));

/// A pack width as a type, so that one generic lambda serves the vector
/// loop and the scalar tail (forEachPack).
template <int N> struct Width {
  static constexpr int value = N;
};

/// Grid-stride over [0, n) in packs of N: op(i, Width<N>()) for every whole
/// pack starting at i, then op(i, Width<1>()) for the n % N elements left.
/// With N = 1 (pointers not aligned for packs) it is a plain grid-stride
/// loop. op reads and writes only elements [i, i + width) in its thread, so
/// outputs may alias inputs element for element.
template <int N, typename Op> __device__ void forEachPack(int64_t n, Op op) {
  const int64_t thread =
      blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  const int64_t threads = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t whole = n / N * N;
  for (int64_t i = thread * N; i < whole; i += threads * N)
    op(i, Width<N>());
  for (int64_t i = whole + thread; i < n; i += threads)
    op(i, Width<1>());
}

/// Block-stride over one row's [0, cols) in packs of N: op(c, Width<N>())
/// for every whole pack, then op(c, Width<1>()) for the cols % N left. The
/// row kernels (norms, embedding, cross-entropy) walk a row this way, one
/// block per row. Packs of a row are aligned only if the row starts on a
/// 16-byte boundary: the host picks N > 1 only when rowsPackable (Launch.h)
/// says every row does.
template <int N, typename Op>
__device__ void forEachInRow(int64_t cols, Op op) {
  const int64_t whole = cols / N * N;
  for (int64_t c = threadIdx.x * static_cast<int64_t>(N); c < whole;
       c += static_cast<int64_t>(blockDim.x) * N)
    op(c, Width<N>());
  for (int64_t c = whole + threadIdx.x; c < cols; c += blockDim.x)
    op(c, Width<1>());
}

/// W elements at p + i in one access, widened to fp32.
template <int W, typename T>
__device__ inline void loadFloats(const T *p, int64_t i, float (&out)[W]) {
  const Pack<T, W> x = loadPack<W>(p, i);
#pragma unroll
  for (int k = 0; k < W; ++k)
    out[k] = load(x.v, k);
}

/// W fp32 values rounded to T and stored at p + i in one access.
template <int W, typename T>
__device__ inline void storeFloats(T *p, int64_t i, const float (&v)[W]) {
  Pack<T, W> x;
#pragma unroll
  for (int k = 0; k < W; ++k)
    store(x.v, k, v[k]);
  storePack(p, i, x);
}

/// acc[i + k] += v[k] for an fp32 accumulator, 16 bytes at a time where W
/// allows (a pack of 8 bf16 columns is two of fp32): the accumulator is
/// aligned wherever the pack of its columns is.
template <int W>
__device__ inline void addToFloats(float *acc, int64_t i, const float (&v)[W]) {
  if constexpr (W % 4 == 0) {
#pragma unroll
    for (int k = 0; k < W; k += 4) {
      Pack<float, 4> a = loadPack<4>(acc, i + k);
#pragma unroll
      for (int j = 0; j < 4; ++j)
        a.v[j] += v[k + j];
      storePack(acc, i + k, a);
    }
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k)
      acc[i + k] += v[k];
  }
}

/// The same as atomic adds, one per element, or one per four where the
/// device has 16-byte float atomics (compute capability 9.0).
template <int W>
__device__ inline void atomicAddFloats(float *acc, int64_t i,
                                       const float (&v)[W]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool kVector = W % 4 == 0;
#else
  constexpr bool kVector = false;
#endif
  if constexpr (kVector) {
#pragma unroll
    for (int k = 0; k < W; k += 4)
      atomicAdd(reinterpret_cast<float4 *>(acc + i + k),
                make_float4(v[k], v[k + 1], v[k + 2], v[k + 3]));
  } else {
#pragma unroll
    for (int k = 0; k < W; ++k)
      atomicAdd(acc + i + k, v[k]);
  }
}

/// Runs launch(Width<N>()) when \p packed, else launch(Width<1>()): the
/// host side of a kernel template over its pack width.
template <int N, typename Launch>
auto withPackWidth(bool packed, Launch launch) {
  return packed ? launch(Width<N>()) : launch(Width<1>());
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
