//===- FlashAttention.cu - bf16 attention on tensor cores --------*- CUDA -*-=//
//
// FlashAttention-2's algorithm (Dao, "FlashAttention-2: Faster Attention
// with Better Parallelism and Work Partitioning", 2023) on mma.sync
// m16n8k16 (bf16 products, fp32 sums), for head dimensions that are a
// multiple of 8 up to 128, padded with zero columns to D = 64 or 128.
//
// Forward, one block of 4 warps per (128 query rows, head, batch); each
// warp owns 32 rows (two 16-row strips sharing every K and V fragment it
// reads) and walks the key blocks (64 keys, 32 at d = 128 to stay within
// the registers) with the online softmax (running max m and sum l per row,
// the output rescaled when m grows), the probabilities going from the
// score registers straight into P V. Causal: key blocks past the diagonal
// are never visited (by the block, nor by a warp whose rows all precede
// them), and query blocks are handed out last-first (they have the most
// key blocks).
//
// Backward, deterministic: no fp32 atomics. After the preprocessing
// (RowDot.cuh), two kernels recompute P = exp(S - lse) from the saved row
// log-sum-exp:
//  - dK, dV: one block per 64 keys, each warp owning 16 keys and walking
//    the query blocks. It forms S^T = K Q^T and dP^T = V dO^T directly, so
//    its rows are its own keys and dV += P^T dO, dK += dS^T Q accumulate in
//    its registers: no reduction across warps or blocks.
//  - dQ: one block per 64 queries walking the key blocks, dQ += dS K.
// This recomputes S and dP once more than FlashAttention-2's single pass
// with atomic dQ adds (7 products instead of 5, about 1.4x the backward's
// tensor work), in exchange for dqkv being the same bits on every run,
// which the CPU target's equivalence tests and a reproducible loss rely on.
//
// Tiles move by cp.async into padded shared rows (WarpMma.cuh), the next
// key (or query) block loading while the current one is computed on. Rows
// past T and head columns past d are loaded as zeros and masked.
//
// Dropout (kDropout): each lane draws the keep bits of the score elements
// it holds (tileRow / tileCol of its C tiles) from the thread's
// DropoutMask. The forward zeroes the dropped probabilities in registers
// after the row sums and before they become P V's A fragments, and scales
// the output by 1 / (1 - p) with 1 / l; the backward's P' (for dV) and
// dS = P' dP' - P D are formed in scoresToDs.
//
//===----------------------------------------------------------------------===//

#include "../EagerModules.h"
#include "../Launch.h"
#include "AttentionDropout.cuh"
#include "AttentionKernels.h"
#include "RowDot.cuh"
#include "SharedMemoryOptIn.h"
#include "WarpMma.cuh"

#include <cuda_bf16.h>

using namespace bitpipe::runtime::cuda;
using namespace bitpipe::runtime::cuda::attention;
using bitpipe::runtime::DropoutMask;

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
/// Rows (queries or keys) of a backward block: 16 per warp (one mma row
/// tile). The forward's are ForwardTiles::kRows.
constexpr int kBlockRows = kWarps * 16;
constexpr float kLog2e = 1.4426950408889634f;

/// Scores are kept unscaled; exp(scale (s - m)) = exp2(scaleLog2 (s - m)).
struct Scales {
  float scale, scaleLog2;
};

/// The element offset of row t, head h of a qkv third (part 0, 1, 2) or of
/// out / dout (part -1: [B, T, H], row stride H).
__device__ inline int64_t rowOffset(const Shape &s, int b, int t, int part,
                                    int h) {
  if (part < 0)
    return (static_cast<int64_t>(b) * s.T + t) * s.H + h * s.d;
  return (static_cast<int64_t>(b) * s.T + t) * (3 * s.H) + part * s.H +
         h * s.d;
}

/// Stores a warp's 16 x D strip, times \p factor, as bf16 into rows
/// [row0, row0 + 16) of \p dst (row stride ld), skipping rows >= T and
/// columns >= d.
template <int D>
__device__ inline void storeStrip(const float (&acc)[D / 8][4], bf16 *dst,
                                  int64_t ld, int row0, int T, int d,
                                  float factorTop, float factorBottom) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + tileRow(2 * half);
    if (row >= T)
      continue;
    const float f = half ? factorBottom : factorTop;
#pragma unroll
    for (int j = 0; j < D / 8; ++j) {
      const int col = tileCol(j, 0);
      if (col < d)
        *reinterpret_cast<__nv_bfloat162 *>(dst + row * ld + col) =
            __floats2bfloat162_rn(acc[j][2 * half] * f,
                                  acc[j][2 * half + 1] * f);
    }
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <int D> struct ForwardTiles {
  // Each warp owns two 16-row strips (32 query rows): every K and V
  // fragment it loads from shared memory serves both.
  static constexpr int kStrips = 2;
  static constexpr int kRows = kWarps * 16 * kStrips; // 128 per block
  // Keys per block: at D = 128 the output (2 x 64 floats) and the scores
  // (2 x 16 floats) fit in 255 registers only with 32 keys.
  static constexpr int kKeys = D <= 64 ? 64 : 32;
  static constexpr int kLd = D + kRowPad;
  // Q, then K and V twice (the block being used and the one loading).
  static constexpr int kBytes = (kRows + 4 * kKeys) * kLd * 2;
};

template <int D, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    flashForwardKernel(const bf16 *qkv, bf16 *out, float *lse, Shape s,
                       Scales sc, DropoutArgs drop) {
  using Tiles = ForwardTiles<D>;
  constexpr int MT = Tiles::kStrips, kRows = Tiles::kRows;
  constexpr int kKeys = Tiles::kKeys, kLd = Tiles::kLd;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16 *sQ = reinterpret_cast<bf16 *>(smem);
  bf16 *sK = sQ + kRows * kLd; // two buffers of kKeys rows
  bf16 *sV = sK + 2 * kKeys * kLd;

  // Causal query blocks last-first: the longest ones start first.
  const int qBlock = s.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int q0 = qBlock * kRows;
  const int64_t ld = 3 * static_cast<int64_t>(s.H);
  const int keyEnd = s.causal ? min(s.T, q0 + kRows) : s.T;
  const int numKeyBlocks = (keyEnd + kKeys - 1) / kKeys;

  const bf16 *kBase = qkv + rowOffset(s, b, 0, 1, h);
  const bf16 *vBase = qkv + rowOffset(s, b, 0, 2, h);
  loadTile<kRows, D, kThreads>(sQ, qkv + rowOffset(s, b, q0, 0, h), ld,
                               s.T - q0, s.d);
  loadTile<kKeys, D, kThreads>(sK, kBase, ld, s.T, s.d);
  loadTile<kKeys, D, kThreads>(sV, vBase, ld, s.T, s.d);
  commitCopies();

  const int warp = threadIdx.x / 32;
  const int warpRow0 = q0 + warp * 16 * MT; // first query row of this warp
  const int warpRowLast = warpRow0 + 16 * MT - 1;
  const DropoutMask mask = maskOf<kDropout>(drop);
  float o[MT][D / 8][4];
  zero(o);
  // Per thread and strip: rows tileRow(0) (index 0) and tileRow(2) (index
  // 1). m is the running max of the raw scores (the same in the 4 lanes of
  // a row); l is this lane's share of the running sum.
  float m[MT][2], l[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      m[mt][half] = -INFINITY;
      l[mt][half] = 0.0f;
    }

  for (int kb = 0; kb < numKeyBlocks; ++kb) {
    const int buf = kb % 2;
    if (kb + 1 < numKeyBlocks) {
      const int next = (kb + 1) * kKeys;
      loadTile<kKeys, D, kThreads>(sK + (1 - buf) * kKeys * kLd,
                                   kBase + next * ld, ld, s.T - next, s.d);
      loadTile<kKeys, D, kThreads>(sV + (1 - buf) * kKeys * kLd,
                                   vBase + next * ld, ld, s.T - next, s.d);
      commitCopies();
      waitCopies<1>();
    } else {
      waitCopies<0>();
    }
    __syncthreads();

    const int k0 = kb * kKeys;
    // Causal: a key block wholly after this warp's last row adds nothing
    // to its rows (the block's later warps still need it).
    if (!(s.causal && k0 > warpRowLast)) {
      float sc4[MT][kKeys / 8][4];
      zero(sc4);
      warpProductABt<MT, kKeys, D>(sc4, sQ + warp * 16 * MT * kLd, kLd,
                                   sK + buf * kKeys * kLd, kLd);

      // Keys past T, and (causal) keys after the row's query, get -inf.
      if (k0 + kKeys > s.T || (s.causal && k0 + kKeys - 1 > warpRow0)) {
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
              const int key = k0 + tileCol(j, e);
              const int row = warpRow0 + mt * 16 + tileRow(e);
              if (key >= s.T || (s.causal && key > row))
                sc4[mt][j][e] = -INFINITY;
            }
      }

#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          float mx = m[mt][half];
#pragma unroll
          for (int j = 0; j < kKeys / 8; ++j)
            mx = fmaxf(mx, fmaxf(sc4[mt][j][2 * half],
                                 sc4[mt][j][2 * half + 1]));
          // The row's other three lanes (same g, t = 0..3).
          mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
          mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
          // A row that has seen only masked keys keeps m = -inf; its offset
          // is then taken as 0 so that exp2(-inf - offset) = 0 rather than
          // NaN. (Key 0 is in block 0 and no query masks it, so this is a
          // guard.)
          const float offset = mx == -INFINITY ? 0.0f : mx * sc.scaleLog2;
          // exp(scale (mOld - mNew)) <= 1; 0 on the first block.
          const float corr = exp2f(m[mt][half] * sc.scaleLog2 - offset);
          m[mt][half] = mx;
          float sum = 0.0f;
#pragma unroll
          for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
            for (int e = 2 * half; e < 2 * half + 2; ++e) {
              sc4[mt][j][e] = exp2f(sc4[mt][j][e] * sc.scaleLog2 - offset);
              sum += sc4[mt][j][e];
            }
          l[mt][half] = l[mt][half] * corr + sum;
#pragma unroll
          for (int j = 0; j < D / 8; ++j) {
            o[mt][j][2 * half] *= corr;
            o[mt][j][2 * half + 1] *= corr;
          }
          // Dropped after the sum: l, and so lse, are the undropped P's.
          // (Keys past T and masked keys are 0 already, kept or not.)
          if constexpr (kDropout) {
            const int row = warpRow0 + mt * 16 + tileRow(2 * half);
#pragma unroll
            for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
              for (int e = 2 * half; e < 2 * half + 2; ++e)
                if (!mask.keeps(
                        dropoutElement(s, b, h, row, k0 + tileCol(j, e))))
                  sc4[mt][j][e] = 0.0f;
          }
        }

      uint32_t p[MT][kKeys / 16][4];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
        toAFragments<kKeys>(sc4[mt], p[mt]);
      warpProductPB<MT, D, kKeys>(o, p, sV + buf * kKeys * kLd, kLd);
    }
    // Every warp is done with this buffer before the next iteration starts
    // loading the block after next into it.
    __syncthreads();
  }

#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
    float inv[2];
#pragma unroll
    for (int half = 0; half < 2; ++half) {
      float sum = l[mt][half];
      sum += __shfl_xor_sync(kFullMask, sum, 1);
      sum += __shfl_xor_sync(kFullMask, sum, 2);
      // Under dropout, the kept entries' 1 / (1 - p) too.
      inv[half] = (kDropout ? mask.scale : 1.0f) / sum;
      const int row = warpRow0 + mt * 16 + tileRow(2 * half);
      if (threadIdx.x % 4 == 0 && row < s.T)
        lse[(static_cast<int64_t>(b) * s.nh + h) * s.T + row] =
            m[mt][half] * sc.scale + logf(sum);
    }
    storeStrip<D>(o[mt], out + rowOffset(s, b, 0, -1, h), s.H,
                  warpRow0 + mt * 16, s.T, s.d, inv[0], inv[1]);
  }
}

//===----------------------------------------------------------------------===//
// Backward: dQ
//===----------------------------------------------------------------------===//

template <int D> struct DqTiles {
  // Keys per block: 64 keeps dQ (D/8 x 4 floats), S and dP (16 floats
  // each per 32 keys) within 255 registers at D = 128.
  static constexpr int kKeys = 64;
  static constexpr int kLd = D + kRowPad;
  // Q and dO, then K and V twice.
  static constexpr int kBytes = (2 * kBlockRows + 4 * kKeys) * kLd * 2;
};

/// P and dS of one tile, in place: s (raw scores) becomes dS = P (dP - D),
/// P = exp(scale s - lse), zero where masked. Whether element e of tile j
/// is visible, and its row's lse (times log2 e) and D, are given by valid,
/// lseOf and dotOf. Under dropout (kDropout) p is P' (P times 1 / (1 - p)
/// where keeps(j, e), else 0), dp is dP' = dO V^T, and dS = P (dP - D) with
/// dP = dP' masked and scaled as P' is, i.e. P' dP' - P D.
template <int N, bool kDropout, typename Valid, typename RowLse,
          typename RowDotOf, typename Keeps>
__device__ inline void scoresToDs(float (&sc)[N / 8][4], float (&p)[N / 8][4],
                                  const float (&dp)[N / 8][4], float scaleLog2,
                                  Valid valid, RowLse lseOf, RowDotOf dotOf,
                                  Keeps keeps, float keptScale) {
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const bool visible = valid(j, e);
      const float pe =
          visible ? exp2f(sc[j][e] * scaleLog2 - lseOf(j, e)) : 0.0f;
      if constexpr (kDropout) {
        const float kept = visible && keeps(j, e) ? pe * keptScale : 0.0f;
        p[j][e] = kept;
        sc[j][e] = kept * dp[j][e] - pe * dotOf(j, e);
      } else {
        p[j][e] = pe;
        sc[j][e] = pe * (dp[j][e] - dotOf(j, e));
      }
    }
}

template <int D, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    flashBackwardDqKernel(const bf16 *qkv, const bf16 *dout, const float *lse,
                          const float *rowDot, bf16 *dqkv, Shape s, Scales sc,
                          DropoutArgs drop) {
  using Tiles = DqTiles<D>;
  constexpr int kKeys = Tiles::kKeys, kLd = Tiles::kLd;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16 *sQ = reinterpret_cast<bf16 *>(smem);
  bf16 *sDo = sQ + kBlockRows * kLd;
  bf16 *sK = sDo + kBlockRows * kLd; // two buffers
  bf16 *sV = sK + 2 * kKeys * kLd;   // two buffers

  const int qBlock = s.causal ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int q0 = qBlock * kBlockRows;
  const int64_t ld = 3 * static_cast<int64_t>(s.H);
  const int keyEnd = s.causal ? min(s.T, q0 + kBlockRows) : s.T;
  const int numKeyBlocks = (keyEnd + kKeys - 1) / kKeys;

  const bf16 *kBase = qkv + rowOffset(s, b, 0, 1, h);
  const bf16 *vBase = qkv + rowOffset(s, b, 0, 2, h);
  loadTile<kBlockRows, D, kThreads>(sQ, qkv + rowOffset(s, b, q0, 0, h), ld,
                                    s.T - q0, s.d);
  loadTile<kBlockRows, D, kThreads>(sDo, dout + rowOffset(s, b, q0, -1, h),
                                    s.H, s.T - q0, s.d);
  loadTile<kKeys, D, kThreads>(sK, kBase, ld, s.T, s.d);
  loadTile<kKeys, D, kThreads>(sV, vBase, ld, s.T, s.d);
  commitCopies();

  const int warp = threadIdx.x / 32;
  const int warpRow0 = q0 + warp * 16;
  const DropoutMask mask = maskOf<kDropout>(drop);
  // This lane's two rows: their lse (times log2 e) and D = dO . O.
  float rowLse[2], rowD[2];
  const int64_t statBase = (static_cast<int64_t>(b) * s.nh + h) * s.T;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = warpRow0 + tileRow(2 * half);
    rowLse[half] = row < s.T ? lse[statBase + row] * kLog2e : 0.0f;
    rowD[half] = row < s.T ? rowDot[statBase + row] : 0.0f;
  }

  float dq[D / 8][4];
  zero(dq);
  for (int kb = 0; kb < numKeyBlocks; ++kb) {
    const int buf = kb % 2;
    if (kb + 1 < numKeyBlocks) {
      const int next = (kb + 1) * kKeys;
      loadTile<kKeys, D, kThreads>(sK + (1 - buf) * kKeys * kLd,
                                   kBase + next * ld, ld, s.T - next, s.d);
      loadTile<kKeys, D, kThreads>(sV + (1 - buf) * kKeys * kLd,
                                   vBase + next * ld, ld, s.T - next, s.d);
      commitCopies();
      waitCopies<1>();
    } else {
      waitCopies<0>();
    }
    __syncthreads();

    const int k0 = kb * kKeys;
    const bf16 *k = sK + buf * kKeys * kLd, *v = sV + buf * kKeys * kLd;
    float st[kKeys / 8][4], dp[kKeys / 8][4], p[kKeys / 8][4];
    zero(st);
    zero(dp);
    warpProductABt<kKeys, D>(st, sQ + warp * 16 * kLd, kLd, k, kLd);
    warpProductABt<kKeys, D>(dp, sDo + warp * 16 * kLd, kLd, v, kLd);
    scoresToDs<kKeys, kDropout>(
        st, p, dp, sc.scaleLog2,
        [&](int j, int e) {
          const int key = k0 + tileCol(j, e), row = warpRow0 + tileRow(e);
          return row < s.T && key < s.T && !(s.causal && key > row);
        },
        [&](int, int e) { return rowLse[e / 2]; },
        [&](int, int e) { return rowD[e / 2]; },
        [&](int j, int e) {
          return mask.keeps(dropoutElement(s, b, h, warpRow0 + tileRow(e),
                                           k0 + tileCol(j, e)));
        },
        mask.scale);
    uint32_t ds[kKeys / 16][4];
    toAFragments<kKeys>(st, ds);
    warpProductPB<D, kKeys>(dq, ds, k, kLd);
    __syncthreads();
  }
  // S = scale Q K^T, so dQ = scale dS K.
  storeStrip<D>(dq, dqkv + rowOffset(s, b, 0, 0, h), ld, warpRow0, s.T, s.d,
                sc.scale, sc.scale);
}

//===----------------------------------------------------------------------===//
// Backward: dK and dV
//===----------------------------------------------------------------------===//

template <int D> struct DkvTiles {
  // Queries per block: at D = 128 the dK and dV accumulators take 128
  // registers, so S^T and dP^T are kept to 16 x 32.
  static constexpr int kQueries = D <= 64 ? 64 : 32;
  static constexpr int kLd = D + kRowPad;
  // K and V, then Q and dO twice, then lse and D twice.
  static constexpr int kBytes =
      (2 * kBlockRows + 4 * kQueries) * kLd * 2 + 4 * kQueries * 4;
};

template <int D, bool kDropout>
__global__ void __launch_bounds__(kThreads)
    flashBackwardDkvKernel(const bf16 *qkv, const bf16 *dout, const float *lse,
                           const float *rowDot, bf16 *dqkv, Shape s, Scales sc,
                           DropoutArgs drop) {
  using Tiles = DkvTiles<D>;
  constexpr int kQueries = Tiles::kQueries, kLd = Tiles::kLd;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16 *sK = reinterpret_cast<bf16 *>(smem);
  bf16 *sV = sK + kBlockRows * kLd;
  bf16 *sQ = sV + kBlockRows * kLd;     // two buffers
  bf16 *sDo = sQ + 2 * kQueries * kLd;  // two buffers
  float *sLse = reinterpret_cast<float *>(sDo + 2 * kQueries * kLd); // two
  float *sDot = sLse + 2 * kQueries;                                 // two

  // Causal: key blocks in order, so the first ones, which have the most
  // queries, start first.
  const int kBlock = blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int k0 = kBlock * kBlockRows;
  const int64_t ld = 3 * static_cast<int64_t>(s.H);
  // Causal: queries before k0 see none of these keys.
  const int firstQueryBlock = s.causal ? k0 / kQueries : 0;
  const int numQueryBlocks = (s.T + kQueries - 1) / kQueries;
  const int64_t statBase = (static_cast<int64_t>(b) * s.nh + h) * s.T;

  const bf16 *qBase = qkv + rowOffset(s, b, 0, 0, h);
  const bf16 *doBase = dout + rowOffset(s, b, 0, -1, h);
  // Query block qb into buffer buf: Q and dO by cp.async, lse (times
  // log2 e) and D by ordinary loads (visible after the __syncthreads that
  // precedes their use).
  auto loadQueries = [&](int qb, int buf) {
    const int first = qb * kQueries;
    loadTile<kQueries, D, kThreads>(sQ + buf * kQueries * kLd,
                                    qBase + first * ld, ld, s.T - first, s.d);
    loadTile<kQueries, D, kThreads>(sDo + buf * kQueries * kLd,
                                    doBase + first * static_cast<int64_t>(s.H),
                                    s.H, s.T - first, s.d);
    for (int i = threadIdx.x; i < kQueries; i += kThreads) {
      const int row = first + i;
      sLse[buf * kQueries + i] =
          row < s.T ? lse[statBase + row] * kLog2e : 0.0f;
      sDot[buf * kQueries + i] = row < s.T ? rowDot[statBase + row] : 0.0f;
    }
  };

  loadTile<kBlockRows, D, kThreads>(sK, qkv + rowOffset(s, b, k0, 1, h), ld,
                                    s.T - k0, s.d);
  loadTile<kBlockRows, D, kThreads>(sV, qkv + rowOffset(s, b, k0, 2, h), ld,
                                    s.T - k0, s.d);
  loadQueries(firstQueryBlock, 0);
  commitCopies();

  const int warp = threadIdx.x / 32;
  const int warpKey0 = k0 + warp * 16; // first key of this warp's strip
  const DropoutMask mask = maskOf<kDropout>(drop);
  float dk[D / 8][4], dv[D / 8][4];
  zero(dk);
  zero(dv);
  for (int qb = firstQueryBlock; qb < numQueryBlocks; ++qb) {
    const int buf = (qb - firstQueryBlock) % 2;
    if (qb + 1 < numQueryBlocks) {
      loadQueries(qb + 1, 1 - buf);
      commitCopies();
      waitCopies<1>();
    } else {
      waitCopies<0>();
    }
    __syncthreads();

    const int first = qb * kQueries;
    const bf16 *q = sQ + buf * kQueries * kLd;
    const bf16 *dO = sDo + buf * kQueries * kLd;
    const float *lseLog2 = sLse + buf * kQueries;
    const float *dot = sDot + buf * kQueries;
    // Rows are this warp's keys, columns the block's queries.
    float st[kQueries / 8][4], dpt[kQueries / 8][4], pt[kQueries / 8][4];
    zero(st);
    zero(dpt);
    warpProductABt<kQueries, D>(st, sK + warp * 16 * kLd, kLd, q, kLd);
    warpProductABt<kQueries, D>(dpt, sV + warp * 16 * kLd, kLd, dO, kLd);
    // Transposed: P'^T, and dS^T = P'^T dP'^T - P^T D.
    scoresToDs<kQueries, kDropout>(
        st, pt, dpt, sc.scaleLog2,
        [&](int j, int e) {
          const int query = first + tileCol(j, e), key = warpKey0 + tileRow(e);
          return query < s.T && key < s.T && !(s.causal && key > query);
        },
        [&](int j, int e) { return lseLog2[tileCol(j, e)]; },
        [&](int j, int e) { return dot[tileCol(j, e)]; },
        [&](int j, int e) {
          return mask.keeps(dropoutElement(s, b, h, first + tileCol(j, e),
                                           warpKey0 + tileRow(e)));
        },
        mask.scale);
    uint32_t pFrag[kQueries / 16][4], dsFrag[kQueries / 16][4];
    toAFragments<kQueries>(pt, pFrag);
    warpProductPB<D, kQueries>(dv, pFrag, dO, kLd);
    toAFragments<kQueries>(st, dsFrag);
    warpProductPB<D, kQueries>(dk, dsFrag, q, kLd);
    __syncthreads();
  }
  // S = scale Q K^T, so dK = scale dS^T Q.
  storeStrip<D>(dk, dqkv + rowOffset(s, b, 0, 1, h), ld, warpKey0, s.T, s.d,
                sc.scale, sc.scale);
  storeStrip<D>(dv, dqkv + rowOffset(s, b, 0, 2, h), ld, warpKey0, s.T, s.d,
                1.0f, 1.0f);
}

//===----------------------------------------------------------------------===//
// Launchers
//===----------------------------------------------------------------------===//

/// One block per \p rows rows (queries or keys), head and batch.
dim3 blockGrid(const Shape &s, int rows) {
  return dim3(static_cast<unsigned>((s.T + rows - 1) / rows),
              static_cast<unsigned>(s.nh), static_cast<unsigned>(s.B));
}

Scales scalesOf(const Shape &s) { return {s.scale, s.scale * kLog2e}; }

template <int D, bool kDropout>
bp_status_t forwardFor(const bf16 *qkv, bf16 *out, float *lse, const Shape &s,
                       const DropoutArgs &drop, cudaStream_t stream) {
  constexpr int bytes = ForwardTiles<D>::kBytes;
  if (bp_status_t st = allowSharedMemory<flashForwardKernel<D, kDropout>>(
          bytes, forwardName<kDropout>());
      st != BP_OK)
    return st;
  flashForwardKernel<D, kDropout>
      <<<blockGrid(s, ForwardTiles<D>::kRows), kThreads, bytes, stream>>>(
          qkv, out, lse, s, scalesOf(s), drop);
  return checkLaunch(forwardName<kDropout>());
}

template <int D, bool kDropout>
bp_status_t backwardFor(const bf16 *qkv, const bf16 *out, const bf16 *dout,
                        const float *lse, bf16 *dqkv, float *rowDot,
                        const Shape &s, const DropoutArgs &drop,
                        cudaStream_t stream) {
  constexpr int dqBytes = DqTiles<D>::kBytes, dkvBytes = DkvTiles<D>::kBytes;
  if (bp_status_t st = allowSharedMemory<flashBackwardDqKernel<D, kDropout>>(
          dqBytes, backwardName<kDropout>());
      st != BP_OK)
    return st;
  if (bp_status_t st = allowSharedMemory<flashBackwardDkvKernel<D, kDropout>>(
          dkvBytes, backwardName<kDropout>());
      st != BP_OK)
    return st;
  launchRowDot(out, dout, rowDot, s, stream);
  flashBackwardDkvKernel<D, kDropout>
      <<<blockGrid(s, kBlockRows), kThreads, dkvBytes, stream>>>(
          qkv, dout, lse, rowDot, dqkv, s, scalesOf(s), drop);
  flashBackwardDqKernel<D, kDropout>
      <<<blockGrid(s, kBlockRows), kThreads, dqBytes, stream>>>(
          qkv, dout, lse, rowDot, dqkv, s, scalesOf(s), drop);
  return checkLaunch(backwardName<kDropout>());
}

/// The instantiation of head dimension D, with or without dropout.
template <int D>
bp_status_t forwardFor(const bf16 *qkv, bf16 *out, float *lse, const Shape &s,
                       const DropoutArgs &drop, cudaStream_t stream) {
  if (drop.on())
    return forwardFor<D, true>(qkv, out, lse, s, drop, stream);
  return forwardFor<D, false>(qkv, out, lse, s, drop, stream);
}

template <int D>
bp_status_t backwardFor(const bf16 *qkv, const bf16 *out, const bf16 *dout,
                        const float *lse, bf16 *dqkv, float *rowDot,
                        const Shape &s, const DropoutArgs &drop,
                        cudaStream_t stream) {
  if (drop.on())
    return backwardFor<D, true>(qkv, out, dout, lse, dqkv, rowDot, s, drop,
                                stream);
  return backwardFor<D, false>(qkv, out, dout, lse, dqkv, rowDot, s, drop,
                               stream);
}

/// The shared-memory allowances of the three kernels of head dimension D,
/// at start-up (prepareFlashAttention).
template <int D, bool kDropout> bp_status_t allowFor() {
  if (bp_status_t st = prepareSharedMemory<flashForwardKernel<D, kDropout>>(
          ForwardTiles<D>::kBytes, "bp_cuda_prepare (flash attention)");
      st != BP_OK)
    return st;
  if (bp_status_t st = prepareSharedMemory<flashBackwardDqKernel<D, kDropout>>(
          DqTiles<D>::kBytes, "bp_cuda_prepare (flash attention)");
      st != BP_OK)
    return st;
  return prepareSharedMemory<flashBackwardDkvKernel<D, kDropout>>(
      DkvTiles<D>::kBytes, "bp_cuda_prepare (flash attention)");
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(flashForwardKernel<64, false>);

namespace bitpipe::runtime::cuda::attention {

bp_status_t flashForward(const bp_bf16_t *qkv, bp_bf16_t *out, float *lse,
                         const Shape &s, const DropoutArgs &dropout,
                         void *stream) {
  if (s.d <= 64)
    return forwardFor<64>(asBf16(qkv), asBf16(out), lse, s, dropout,
                          asStream(stream));
  return forwardFor<128>(asBf16(qkv), asBf16(out), lse, s, dropout,
                         asStream(stream));
}

bp_status_t flashBackward(const bp_bf16_t *qkv, const bp_bf16_t *out,
                          const bp_bf16_t *dout, const float *lse,
                          bp_bf16_t *dqkv, float *rowDot, const Shape &s,
                          const DropoutArgs &dropout, void *stream) {
  if (s.d <= 64)
    return backwardFor<64>(asBf16(qkv), asBf16(out), asBf16(dout), lse,
                           asBf16(dqkv), rowDot, s, dropout, asStream(stream));
  return backwardFor<128>(asBf16(qkv), asBf16(out), asBf16(dout), lse,
                          asBf16(dqkv), rowDot, s, dropout, asStream(stream));
}

bp_status_t prepareFlashAttention() {
  for (bp_status_t st : {allowFor<64, false>(), allowFor<128, false>(),
                         allowFor<64, true>(), allowFor<128, true>()})
    if (st != BP_OK)
      return st;
  return BP_OK;
}

} // namespace bitpipe::runtime::cuda::attention
