//===- SimtAttention.cu - Attention on CUDA cores --------------*- CUDA -*-===//
//
// The same algorithm as FlashAttention.cu (online softmax over key blocks;
// a deterministic backward that recomputes P = exp(S - lse), dK and dV per
// key block, dQ per query block), with fp32 arithmetic on CUDA cores. It
// serves the fp32 kernels (the --precision fp32 equivalence tests) and, for
// bf16, the head dimensions the tensor-core kernels do not take (not a
// multiple of 8, or above 128, up to kSimtMaxHeadDim). Nothing T x T: a
// block holds 16 rows and a 32-row tile of the other side.
//
// Work split: a warp owns 4 rows (queries, or keys in the dK/dV kernel);
// lane j scores the tile's row j against them (a dot product over d read
// from shared memory, the tile's rows padded to d + 1 floats so the 32
// lanes reading 32 rows hit 32 banks), the softmax statistics are warp
// reductions, and the products with the tile (P V, dS K, P^T dO, dS^T Q)
// broadcast each lane's probability by shuffle to lanes that own the d
// output columns (column c = lane + 32 i, i < kPerLane).
//
// Dropout (kDropout): each lane draws the keep bit of the (row, its key)
// or (its query, row) elements it scores, from the thread's DropoutMask.
//
//===----------------------------------------------------------------------===//

#include "../DeviceMath.cuh"
#include "../EagerModules.h"
#include "../Launch.h"
#include "AttentionDropout.cuh"
#include "AttentionKernels.h"
#include "RowDot.cuh"
#include "SharedMemoryOptIn.h"

using namespace bitpipe::runtime::cuda;
using namespace bitpipe::runtime::cuda::attention;
using bitpipe::runtime::DropoutMask;

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * kWarp;
constexpr int kRowsPerWarp = 4;
constexpr int kBlockRows = kWarps * kRowsPerWarp; // 16
constexpr int kTileRows = kWarp;                  // 32: one per lane

__device__ inline void narrow(float *p, int64_t i, float v) { p[i] = v; }
__device__ inline void narrow(bf16 *p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// Element offset of row t, head h, of a qkv third (part 0..2) or of
/// out / dout (part -1).
__device__ inline int64_t rowOffset(const Shape &s, int b, int t, int part,
                                    int h) {
  if (part < 0)
    return (static_cast<int64_t>(b) * s.T + t) * s.H + h * s.d;
  return (static_cast<int64_t>(b) * s.T + t) * (3 * s.H) + part * s.H +
         h * s.d;
}

/// Copies rows [t0, t0 + rows) of one head (part as rowOffset) into shared
/// memory as fp32 with row stride ldS; rows >= T become zeros.
template <typename E>
__device__ inline void loadRows(float *dst, int ldS, const E *src,
                                const Shape &s, int b, int t0, int rows,
                                int part, int h) {
  for (int i = threadIdx.x; i < rows * s.d; i += kThreads) {
    const int r = i / s.d, c = i % s.d, t = t0 + r;
    dst[r * ldS + c] = t < s.T ? widen(src[rowOffset(s, b, t, part, h) + c])
                               : 0.0f;
  }
}

/// Writes a warp's 4 rows of kPerLane columns per lane (times factor) to
/// rows row0.. of a head (part as rowOffset), skipping rows >= T.
template <typename E, int kPerLane>
__device__ inline void storeRows(E *dst, const float (&acc)[kRowsPerWarp][kPerLane],
                                 const Shape &s, int b, int row0, int part,
                                 int h, const float (&factor)[kRowsPerWarp]) {
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    if (row0 + r >= s.T)
      continue;
    const int64_t base = rowOffset(s, b, row0 + r, part, h);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = lane + kWarp * i;
      if (c < s.d)
        narrow(dst, base + c, acc[r][i] * factor[r]);
    }
  }
}

/// acc[r][i] += sum_j w[r] of lane j * tile[j][lane + 32 i], j < rows:
/// the product of the warp's per-lane weights with a shared tile.
template <int kPerLane>
__device__ inline void accumulateTile(float (&acc)[kRowsPerWarp][kPerLane],
                                      const float (&w)[kRowsPerWarp],
                                      const float *tile, int ldS, int rows,
                                      int d) {
  const int lane = threadIdx.x % kWarp;
  for (int j = 0; j < rows; ++j) {
    float wj[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
      wj[r] = __shfl_sync(kFullMask, w[r], j);
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int c = lane + kWarp * i;
      if (c < d) {
        const float x = tile[j * ldS + c];
#pragma unroll
        for (int r = 0; r < kRowsPerWarp; ++r)
          acc[r][i] += wj[r] * x;
      }
    }
  }
}

/// dots[r] = rows[r] . tile[lane] over d: the warp's 4 rows (broadcast
/// reads) against the tile row of this lane (stride ldTile, odd).
__device__ inline void dotRows(float (&dots)[kRowsPerWarp], const float *rows,
                               int ldRows, const float *tile, int ldTile,
                               int d) {
  const int lane = threadIdx.x % kWarp;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
    dots[r] = 0.0f;
  for (int c = 0; c < d; ++c) {
    const float x = tile[lane * ldTile + c];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r)
      dots[r] += rows[r * ldRows + c] * x;
  }
}

//===----------------------------------------------------------------------===//
// Forward: a block per (16 queries, head, batch).
//===----------------------------------------------------------------------===//

int forwardBytes(int d) {
  return (kBlockRows * d + kTileRows * (d + 1) + kTileRows * d) * 4;
}

template <typename E, int kPerLane, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    simtForwardKernel(const E *qkv, E *out, float *lse, Shape s,
                      DropoutArgs drop) {
  extern __shared__ float smemF[];
  const int d = s.d;
  float *sQ = smemF;                        // [16][d]
  float *sK = sQ + kBlockRows * d;          // [32][d + 1]
  float *sV = sK + kTileRows * (d + 1);     // [32][d]
  const int h = blockIdx.y, b = blockIdx.z, q0 = blockIdx.x * kBlockRows;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int row0 = q0 + warp * kRowsPerWarp;
  const float scale = s.scale;
  const DropoutMask mask = maskOf<kDropout>(drop);
  loadRows(sQ, d, qkv, s, b, q0, kBlockRows, 0, h);

  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][kPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      o[r][i] = 0.0f;
  }
  const int keyEnd = s.causal ? min(s.T, q0 + kBlockRows) : s.T;
  for (int k0 = 0; k0 < keyEnd; k0 += kTileRows) {
    __syncthreads(); // the previous tile's readers are done
    loadRows(sK, d + 1, qkv, s, b, k0, kTileRows, 1, h);
    loadRows(sV, d, qkv, s, b, k0, kTileRows, 2, h);
    __syncthreads();

    float p[kRowsPerWarp];
    dotRows(p, sQ + warp * kRowsPerWarp * d, d, sK, d + 1, d);
    const int key = k0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = row0 + r;
      const bool valid = key < s.T && !(s.causal && key > row);
      const float x = valid ? p[r] * scale : -INFINITY;
      const float mNew = fmaxf(m[r], warpReduce(x, Max()));
      // mNew is the same in every lane. Still -inf: nothing seen yet
      // (a guard; key 0 is in the first tile and visible to every row).
      if (mNew == -INFINITY) {
        p[r] = 0.0f;
        continue;
      }
      const float corr = expf(m[r] - mNew); // 0 on the first tile
      p[r] = valid ? expf(x - mNew) : 0.0f;
      l[r] = l[r] * corr + warpReduce(p[r], Plus());
      m[r] = mNew;
#pragma unroll
      for (int i = 0; i < kPerLane; ++i)
        o[r][i] *= corr;
      // Dropped after the sum: l, and so lse, are the undropped P's.
      if constexpr (kDropout)
        if (valid && !mask.keeps(dropoutElement(s, b, h, row, key)))
          p[r] = 0.0f;
    }
    accumulateTile(o, p, sV, d, min(kTileRows, s.T - k0), d);
  }

  float inv[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    // Under dropout, the kept entries' 1 / (1 - p) too.
    inv[r] = (kDropout ? mask.scale : 1.0f) / l[r];
    if (lane == 0 && row0 + r < s.T)
      lse[(static_cast<int64_t>(b) * s.nh + h) * s.T + row0 + r] =
          m[r] + logf(l[r]);
  }
  storeRows(out, o, s, b, row0, -1, h, inv);
}

//===----------------------------------------------------------------------===//
// Backward: dQ, a block per (16 queries, head, batch).
//===----------------------------------------------------------------------===//

int dqBytes(int d) {
  return (2 * kBlockRows * d + 2 * kTileRows * (d + 1)) * 4;
}

template <typename E, int kPerLane, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    simtBackwardDqKernel(const E *qkv, const E *dout, const float *lse,
                         const float *rowDot, E *dqkv, Shape s,
                         DropoutArgs drop) {
  extern __shared__ float smemF[];
  const int d = s.d;
  float *sQ = smemF;                      // [16][d]
  float *sDo = sQ + kBlockRows * d;       // [16][d]
  float *sK = sDo + kBlockRows * d;       // [32][d + 1]
  float *sV = sK + kTileRows * (d + 1);   // [32][d + 1]
  const int h = blockIdx.y, b = blockIdx.z, q0 = blockIdx.x * kBlockRows;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int row0 = q0 + warp * kRowsPerWarp;
  const float scale = s.scale;
  const DropoutMask mask = maskOf<kDropout>(drop);
  loadRows(sQ, d, qkv, s, b, q0, kBlockRows, 0, h);
  loadRows(sDo, d, dout, s, b, q0, kBlockRows, -1, h);

  const int64_t statBase = (static_cast<int64_t>(b) * s.nh + h) * s.T;
  float rowLse[kRowsPerWarp], rowD[kRowsPerWarp], dq[kRowsPerWarp][kPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const bool inRange = row0 + r < s.T;
    rowLse[r] = inRange ? lse[statBase + row0 + r] : 0.0f;
    rowD[r] = inRange ? rowDot[statBase + row0 + r] : 0.0f;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      dq[r][i] = 0.0f;
  }
  const int keyEnd = s.causal ? min(s.T, q0 + kBlockRows) : s.T;
  for (int k0 = 0; k0 < keyEnd; k0 += kTileRows) {
    __syncthreads();
    loadRows(sK, d + 1, qkv, s, b, k0, kTileRows, 1, h);
    loadRows(sV, d + 1, qkv, s, b, k0, kTileRows, 2, h);
    __syncthreads();

    float sc[kRowsPerWarp], dp[kRowsPerWarp], ds[kRowsPerWarp];
    dotRows(sc, sQ + warp * kRowsPerWarp * d, d, sK, d + 1, d);
    dotRows(dp, sDo + warp * kRowsPerWarp * d, d, sV, d + 1, d);
    const int key = k0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = row0 + r;
      const bool valid = row < s.T && key < s.T && !(s.causal && key > row);
      const float p = valid ? expf(sc[r] * scale - rowLse[r]) : 0.0f;
      if constexpr (kDropout) {
        // dp is dP' = dO V^T: dS = P' dP' - P D.
        const float kept =
            valid && mask.keeps(dropoutElement(s, b, h, row, key))
                ? p * mask.scale
                : 0.0f;
        ds[r] = kept * dp[r] - p * rowD[r];
      } else {
        ds[r] = p * (dp[r] - rowD[r]);
      }
    }
    accumulateTile(dq, ds, sK, d + 1, min(kTileRows, s.T - k0), d);
  }
  // S = scale Q K^T, so dQ = scale dS K.
  const float factor[kRowsPerWarp] = {scale, scale, scale, scale};
  storeRows(dqkv, dq, s, b, row0, 0, h, factor);
}

//===----------------------------------------------------------------------===//
// Backward: dK and dV, a block per (16 keys, head, batch).
//===----------------------------------------------------------------------===//

int dkvBytes(int d) {
  return (2 * kBlockRows * d + 2 * kTileRows * (d + 1) + 2 * kTileRows) * 4;
}

template <typename E, int kPerLane, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    simtBackwardDkvKernel(const E *qkv, const E *dout, const float *lse,
                          const float *rowDot, E *dqkv, Shape s,
                          DropoutArgs drop) {
  extern __shared__ float smemF[];
  const int d = s.d;
  float *sK = smemF;                      // [16][d]
  float *sV = sK + kBlockRows * d;        // [16][d]
  float *sQ = sV + kBlockRows * d;        // [32][d + 1]
  float *sDo = sQ + kTileRows * (d + 1);  // [32][d + 1]
  float *sLse = sDo + kTileRows * (d + 1); // [32]
  float *sDot = sLse + kTileRows;          // [32]
  const int h = blockIdx.y, b = blockIdx.z, k0 = blockIdx.x * kBlockRows;
  const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  const int key0 = k0 + warp * kRowsPerWarp; // this warp's first key
  const float scale = s.scale;
  const DropoutMask mask = maskOf<kDropout>(drop);
  const int64_t statBase = (static_cast<int64_t>(b) * s.nh + h) * s.T;
  loadRows(sK, d, qkv, s, b, k0, kBlockRows, 1, h);
  loadRows(sV, d, qkv, s, b, k0, kBlockRows, 2, h);

  float dk[kRowsPerWarp][kPerLane], dv[kRowsPerWarp][kPerLane];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int i = 0; i < kPerLane; ++i)
      dk[r][i] = dv[r][i] = 0.0f;
  // Causal: queries before the block's first key see none of its keys.
  for (int q0 = s.causal ? k0 : 0; q0 < s.T; q0 += kTileRows) {
    __syncthreads();
    loadRows(sQ, d + 1, qkv, s, b, q0, kTileRows, 0, h);
    loadRows(sDo, d + 1, dout, s, b, q0, kTileRows, -1, h);
    if (threadIdx.x < kTileRows) {
      const int t = q0 + threadIdx.x;
      sLse[threadIdx.x] = t < s.T ? lse[statBase + t] : 0.0f;
      sDot[threadIdx.x] = t < s.T ? rowDot[statBase + t] : 0.0f;
    }
    __syncthreads();

    float sc[kRowsPerWarp], dp[kRowsPerWarp], p[kRowsPerWarp],
        ds[kRowsPerWarp];
    dotRows(sc, sK + warp * kRowsPerWarp * d, d, sQ, d + 1, d);
    dotRows(dp, sV + warp * kRowsPerWarp * d, d, sDo, d + 1, d);
    const int query = q0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int key = key0 + r;
      const bool valid =
          query < s.T && key < s.T && !(s.causal && key > query);
      if constexpr (kDropout) {
        // p becomes P', for dV = P'^T dO; dp is dP'^T: dS = P' dP' - P D.
        const float pr = valid ? expf(sc[r] * scale - sLse[lane]) : 0.0f;
        p[r] = valid && mask.keeps(dropoutElement(s, b, h, query, key))
                   ? pr * mask.scale
                   : 0.0f;
        ds[r] = p[r] * dp[r] - pr * sDot[lane];
      } else {
        p[r] = valid ? expf(sc[r] * scale - sLse[lane]) : 0.0f;
        ds[r] = p[r] * (dp[r] - sDot[lane]);
      }
    }
    const int rows = min(kTileRows, s.T - q0);
    accumulateTile(dv, p, sDo, d + 1, rows, d);
    accumulateTile(dk, ds, sQ, d + 1, rows, d);
  }
  const float one[kRowsPerWarp] = {1.0f, 1.0f, 1.0f, 1.0f};
  const float factor[kRowsPerWarp] = {scale, scale, scale, scale};
  storeRows(dqkv, dk, s, b, key0, 1, h, factor);
  storeRows(dqkv, dv, s, b, key0, 2, h, one);
}

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

dim3 blockGrid(const Shape &s) {
  return dim3(static_cast<unsigned>((s.T + kBlockRows - 1) / kBlockRows),
              static_cast<unsigned>(s.nh), static_cast<unsigned>(s.B));
}

template <typename E, int kPerLane, bool kDropout>
bp_status_t forwardFor(const E *qkv, E *out, float *lse, const Shape &s,
                       const DropoutArgs &drop, cudaStream_t stream) {
  if (bp_status_t st =
          allowSharedMemory<simtForwardKernel<E, kPerLane, kDropout>>(
              forwardBytes(kWarp * kPerLane), forwardName<kDropout>());
      st != BP_OK)
    return st;
  simtForwardKernel<E, kPerLane, kDropout>
      <<<blockGrid(s), kThreads, forwardBytes(s.d), stream>>>(qkv, out, lse, s,
                                                              drop);
  return checkLaunch(forwardName<kDropout>());
}

template <typename E, int kPerLane, bool kDropout>
bp_status_t backwardFor(const E *qkv, const E *out, const E *dout,
                        const float *lse, E *dqkv, float *rowDot,
                        const Shape &s, const DropoutArgs &drop,
                        cudaStream_t stream) {
  if (bp_status_t st =
          allowSharedMemory<simtBackwardDqKernel<E, kPerLane, kDropout>>(
              dqBytes(kWarp * kPerLane), backwardName<kDropout>());
      st != BP_OK)
    return st;
  if (bp_status_t st =
          allowSharedMemory<simtBackwardDkvKernel<E, kPerLane, kDropout>>(
              dkvBytes(kWarp * kPerLane), backwardName<kDropout>());
      st != BP_OK)
    return st;
  launchRowDot(out, dout, rowDot, s, stream);
  simtBackwardDkvKernel<E, kPerLane, kDropout>
      <<<blockGrid(s), kThreads, dkvBytes(s.d), stream>>>(
          qkv, dout, lse, rowDot, dqkv, s, drop);
  simtBackwardDqKernel<E, kPerLane, kDropout>
      <<<blockGrid(s), kThreads, dqBytes(s.d), stream>>>(qkv, dout, lse, rowDot,
                                                         dqkv, s, drop);
  return checkLaunch(backwardName<kDropout>());
}

/// The instantiation with or without dropout.
template <typename E, int kPerLane>
bp_status_t forwardFor(const E *qkv, E *out, float *lse, const Shape &s,
                       const DropoutArgs &drop, cudaStream_t stream) {
  if (drop.on())
    return forwardFor<E, kPerLane, true>(qkv, out, lse, s, drop, stream);
  return forwardFor<E, kPerLane, false>(qkv, out, lse, s, drop, stream);
}

template <typename E, int kPerLane>
bp_status_t backwardFor(const E *qkv, const E *out, const E *dout,
                        const float *lse, E *dqkv, float *rowDot,
                        const Shape &s, const DropoutArgs &drop,
                        cudaStream_t stream) {
  if (drop.on())
    return backwardFor<E, kPerLane, true>(qkv, out, dout, lse, dqkv, rowDot, s,
                                          drop, stream);
  return backwardFor<E, kPerLane, false>(qkv, out, dout, lse, dqkv, rowDot, s,
                                         drop, stream);
}

/// The columns each lane owns: the fewest of 1, 2, 4, 8 that cover d.
template <typename E>
bp_status_t forwardAnyD(const E *qkv, E *out, float *lse, const Shape &s,
                        const DropoutArgs &drop, void *stream) {
  cudaStream_t st = asStream(stream);
  if (s.d <= 32)
    return forwardFor<E, 1>(qkv, out, lse, s, drop, st);
  if (s.d <= 64)
    return forwardFor<E, 2>(qkv, out, lse, s, drop, st);
  if (s.d <= 128)
    return forwardFor<E, 4>(qkv, out, lse, s, drop, st);
  return forwardFor<E, 8>(qkv, out, lse, s, drop, st);
}

template <typename E>
bp_status_t backwardAnyD(const E *qkv, const E *out, const E *dout,
                         const float *lse, E *dqkv, float *rowDot,
                         const Shape &s, const DropoutArgs &drop,
                         void *stream) {
  cudaStream_t st = asStream(stream);
  if (s.d <= 32)
    return backwardFor<E, 1>(qkv, out, dout, lse, dqkv, rowDot, s, drop, st);
  if (s.d <= 64)
    return backwardFor<E, 2>(qkv, out, dout, lse, dqkv, rowDot, s, drop, st);
  if (s.d <= 128)
    return backwardFor<E, 4>(qkv, out, dout, lse, dqkv, rowDot, s, drop, st);
  return backwardFor<E, 8>(qkv, out, dout, lse, dqkv, rowDot, s, drop, st);
}

/// The shared-memory allowances of the three kernels of one instantiation,
/// at start-up (prepareSimtAttention).
template <typename E, int kPerLane, bool kDropout> bp_status_t allowFor() {
  const char *what = "bp_cuda_prepare (attention)";
  if (bp_status_t st =
          prepareSharedMemory<simtForwardKernel<E, kPerLane, kDropout>>(
              forwardBytes(kWarp * kPerLane), what);
      st != BP_OK)
    return st;
  if (bp_status_t st =
          prepareSharedMemory<simtBackwardDqKernel<E, kPerLane, kDropout>>(
              dqBytes(kWarp * kPerLane), what);
      st != BP_OK)
    return st;
  return prepareSharedMemory<simtBackwardDkvKernel<E, kPerLane, kDropout>>(
      dkvBytes(kWarp * kPerLane), what);
}
template <typename E, bool kDropout> bp_status_t allowForAnyD() {
  for (bp_status_t st :
       {allowFor<E, 1, kDropout>(), allowFor<E, 2, kDropout>(),
        allowFor<E, 4, kDropout>(), allowFor<E, 8, kDropout>()})
    if (st != BP_OK)
      return st;
  return BP_OK;
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(simtForwardKernel<float, 1, false>);

namespace bitpipe::runtime::cuda::attention {

static_assert(kSimtMaxHeadDim == kWarp * 8, "8 columns per lane at most");

bp_status_t simtForward(const float *qkv, float *out, float *lse,
                        const Shape &s, const DropoutArgs &dropout,
                        void *stream) {
  return forwardAnyD(qkv, out, lse, s, dropout, stream);
}
bp_status_t simtForward(const bp_bf16_t *qkv, bp_bf16_t *out, float *lse,
                        const Shape &s, const DropoutArgs &dropout,
                        void *stream) {
  return forwardAnyD(asBf16(qkv), asBf16(out), lse, s, dropout, stream);
}
bp_status_t simtBackward(const float *qkv, const float *out, const float *dout,
                         const float *lse, float *dqkv, float *rowDot,
                         const Shape &s, const DropoutArgs &dropout,
                         void *stream) {
  return backwardAnyD(qkv, out, dout, lse, dqkv, rowDot, s, dropout, stream);
}
bp_status_t simtBackward(const bp_bf16_t *qkv, const bp_bf16_t *out,
                         const bp_bf16_t *dout, const float *lse,
                         bp_bf16_t *dqkv, float *rowDot, const Shape &s,
                         const DropoutArgs &dropout, void *stream) {
  return backwardAnyD(asBf16(qkv), asBf16(out), asBf16(dout), lse, asBf16(dqkv),
                      rowDot, s, dropout, stream);
}

bp_status_t prepareSimtAttention() {
  for (bp_status_t st :
       {allowForAnyD<float, false>(), allowForAnyD<bf16, false>(),
        allowForAnyD<float, true>(), allowForAnyD<bf16, true>()})
    if (st != BP_OK)
      return st;
  return BP_OK;
}

} // namespace bitpipe::runtime::cuda::attention
