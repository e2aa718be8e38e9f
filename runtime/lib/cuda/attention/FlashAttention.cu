//===- FlashAttention.cu - bf16 attention on tensor cores --------*- CUDA -*-=//
//
// FlashAttention-2's algorithm (Dao, "FlashAttention-2: Faster Attention
// with Better Parallelism and Work Partitioning", 2023) on mma.sync
// m16n8k16 (bf16 products, fp32 sums), for head dimensions that are a
// multiple of 8 up to 128, padded with zero columns to D = 64 or 128.
//
// Occupancy sets the shapes. Every kernel runs blocks of 8 warps and is
// compiled for two of them an SM (__launch_bounds__(256, 2)): 16 warps to
// hide the latency of one another's shared-memory loads and exponentials,
// which caps a thread at 65536 / 512 = 128 registers. Each warp therefore
// holds one 16-row strip of anything it accumulates (64 floats a thread for
// a 16 x 128 fp32 strip), and the score tiles are sized to fit beside it
// without spilling.
//
// Forward: one block per (128 query rows, head, batch); each warp owns 16
// rows and walks the key blocks (64 keys) with the online softmax (running
// max m and sum l per row, the output rescaled when m grows), the
// probabilities going from the score registers straight into P V. At
// D = 128 that is 64 floats of output and 32 of scores a thread. Causal:
// key blocks past the diagonal are never visited (by the block, nor by a
// warp whose rows all precede them), and query blocks are handed out
// last-first (they have the most key blocks).
//
// Backward, deterministic: no fp32 atomics. After the preprocessing
// (RowDot.cuh), two kernels recompute P = exp(S - lse) from the saved row
// log-sum-exp:
//  - dK, dV: one block per 64 keys walking the query blocks (64 queries,
//    32 at D = 128). A warp cannot hold both dK and dV for all D columns of
//    its keys (128 floats at D = 128), so each 16-key strip is shared by a
//    pair of warps, one per half of the head columns. The pair splits the
//    block's queries to form S^T = K Q^T and dP^T = V dO^T, so that no
//    score is computed twice; each warp leaves its P'^T and dS^T in shared
//    memory, already as the A fragments of the next products, and after a
//    barrier of the pair both take the full strips for dV += P'^T dO and
//    dK += dS^T Q over their own columns. Every element of dK and dV still
//    has one owner, which sums it in registers in a fixed order.
//  - dQ: one block per 128 queries walking the key blocks (32 keys: dQ, S
//    and dP of a strip then take 96 floats a thread at D = 128), each warp
//    owning 16 queries, dQ += dS K.
// This recomputes S and dP once more than FlashAttention-2's single pass
// with atomic dQ adds (7 products instead of 5, about 1.4x the backward's
// tensor work), in exchange for dqkv being the same bits on every run,
// which the CPU target's equivalence tests and a reproducible loss rely on.
//
// Tiles move by cp.async into padded shared rows (WarpMma.cuh), the next
// key (or query) block loading while the current one is computed on. Rows
// past T and head columns past d are loaded as zeros and masked. Shared
// memory a block, D = 128 / 64: forward 102 / 54 KiB, dK and dV 76.5 /
// 71 KiB, dQ 102 / 54 KiB; two blocks fit in the SM's 228 KiB, and each
// kernel is allowed more than 48 KiB by SharedMemoryOptIn.h.
//
// Dropout (kDropout): before a tile's scores are formed, each lane draws
// the keep bits of the score elements it will hold (tileRow / tileCol of
// its C tiles) into one register (keepBits), from the block's DropoutMask,
// which sits in shared memory. The forward zeroes the dropped
// probabilities in registers after the row sums and before they become
// P V's A fragments, and scales the output by 1 / (1 - p) with 1 / l; the
// backward's P' (for dV) and dS = P' dP' - P D are formed in scoresToDs.
//
// What keeps the kernels within 128 registers, besides the tile shapes:
// per-thread load offsets and dropout row offsets formed where they are
// used rather than hoisted out of the loops (freshThreadIndex, freshLane),
// the score products not unrolled over their reduced dimension
// (warpProductABt), and the mask and keep bits above. ptxas reports no
// spills for any of the twelve kernels.
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

#include <utility>

using namespace bitpipe::runtime::cuda;
using namespace bitpipe::runtime::cuda::attention;
using bitpipe::runtime::DropoutMask;

namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
/// Blocks an SM that every kernel is compiled for: ptxas keeps each thread
/// within 65536 / (kMinBlocks kThreads) = 128 registers.
constexpr int kMinBlocks = 2;
/// Rows (queries) of a forward or dQ block: one 16-row strip per warp.
constexpr int kQueryRows = kWarps * 16;
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

/// Stores a warp's 16 x N strip, times \p factor, as bf16 into rows
/// [row0, row0 + 16) and columns [col0, col0 + N) of \p dst (row stride
/// ld), skipping rows >= T and columns >= d.
template <int N>
__device__ inline void storeStrip(const float (&acc)[N / 8][4], bf16 *dst,
                                  int64_t ld, int row0, int col0, int T, int d,
                                  float factorTop, float factorBottom) {
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int row = row0 + tileRow(2 * half);
    if (row >= T)
      continue;
    const float f = half ? factorBottom : factorTop;
#pragma unroll
    for (int j = 0; j < N / 8; ++j) {
      const int col = col0 + tileCol(j, 0);
      if (col < d)
        *reinterpret_cast<__nv_bfloat162 *>(dst + row * ld + col) =
            __floats2bfloat162_rn(acc[j][2 * half] * f,
                                  acc[j][2 * half + 1] * f);
    }
  }
}

/// The block's dropout mask: the same for all its threads, so drawn once
/// into shared memory (visible after the next __syncthreads) and read from
/// there where the loops need it, rather than held in seven registers of
/// every thread through them.
template <bool kDropout>
__device__ inline const DropoutMask &blockMask(const DropoutArgs &drop) {
  __shared__ DropoutMask mask;
  if (kDropout && threadIdx.x == 0)
    mask = maskOf<kDropout>(drop);
  return mask;
}

/// Under dropout, the keep bits of the score elements this lane holds in a
/// 16 x N strip: bit 4 j + e for element e of C tile j, whose mask element
/// is \p element(row, col) at strip row tileRow(e) and column tileCol(j, e).
/// Drawn before the scores are formed, while the registers that they and
/// the exponentials will take are free, and kept in one register.
template <int N, bool kDropout, typename Element>
__device__ inline uint32_t keepBits(const DropoutMask &mask, Element element) {
  static_assert(N / 8 * 4 <= 32, "a bit an element, in 32 bits");
  uint32_t bits = 0;
  if constexpr (kDropout) {
    // From a fresh lane index, so that the elements' 64-bit row offsets
    // are formed here rather than hoisted out of the caller's loop.
    const int lane = freshLane();
    // Two tiles' draws (8 hashes) an iteration: enough to hide their
    // latency, and a loop the compiler keeps as one, rather than 32 draws
    // that it would spread through the softmax to where each bit is tested.
#pragma unroll 2
    for (int j = 0; j < N / 8; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        if (mask.keeps(element(tileRow(e, lane), tileCol(j, e, lane))))
          bits |= 1u << (4 * j + e);
  }
  return bits;
}

/// Bit (j, e) of keepBits.
__device__ inline bool kept(uint32_t bits, int j, int e) {
  return (bits >> (4 * j + e)) & 1u;
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <int D> struct ForwardTiles {
  static constexpr int kRows = kQueryRows;
  // Keys per block: a 16 x 64 score strip is 32 floats a thread, beside
  // the output's 64 at D = 128.
  static constexpr int kKeys = 64;
  static constexpr int kLd = D + kRowPad;
  // Q, then K and V twice (the block being used and the one loading).
  static constexpr int kBytes = (kRows + 4 * kKeys) * kLd * 2;
};

template <int D, bool kDropout>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    flashForwardKernel(const bf16 *qkv, bf16 *out, float *lse, Shape s,
                       Scales sc, DropoutArgs drop) {
  using Tiles = ForwardTiles<D>;
  constexpr int kRows = Tiles::kRows, kKeys = Tiles::kKeys;
  constexpr int kLd = Tiles::kLd;
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
  const int warpRow0 = q0 + warp * 16; // first query row of this warp
  const DropoutMask &mask = blockMask<kDropout>(drop);
  float o[D / 8][4];
  zero(o);
  // Rows tileRow(0) (index 0) and tileRow(2) (index 1) of the strip. m is
  // the running max of the raw scores (the same in the 4 lanes of a row);
  // l is this lane's share of the running sum.
  float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};

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
    // A warp whose rows are all past T has nothing to add, and causal, a
    // key block wholly after its last row adds nothing to its rows (the
    // block's later warps still need both).
    if (warpRow0 < s.T && !(s.causal && k0 > warpRow0 + 15)) {
      const uint32_t keep =
          keepBits<kKeys, kDropout>(mask, [&](int row, int col) {
            return dropoutElement(s, b, h, warpRow0 + row, k0 + col);
          });
      float st[kKeys / 8][4];
      zero(st);
      warpProductABt<kKeys, D>(st, sQ + warp * 16 * kLd, kLd,
                               sK + buf * kKeys * kLd, kLd);

      // Keys past T, and (causal) keys after the row's query, get -inf.
      if (k0 + kKeys > s.T || (s.causal && k0 + kKeys - 1 > warpRow0)) {
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = k0 + tileCol(j, e);
            const int row = warpRow0 + tileRow(e);
            if (key >= s.T || (s.causal && key > row))
              st[j][e] = -INFINITY;
          }
      }

#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float mx = m[half];
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j)
          mx = fmaxf(mx, fmaxf(st[j][2 * half], st[j][2 * half + 1]));
        // The row's other three lanes (same g, t = 0..3).
        mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(kFullMask, mx, 2));
        // A row that has seen only masked keys keeps m = -inf; its offset
        // is then taken as 0 so that exp2(-inf - offset) = 0 rather than
        // NaN. (Key 0 is in block 0 and no query masks it, so this is a
        // guard.)
        const float offset = mx == -INFINITY ? 0.0f : mx * sc.scaleLog2;
        // exp(scale (mOld - mNew)) <= 1; 0 on the first block.
        const float corr = exp2f(m[half] * sc.scaleLog2 - offset);
        m[half] = mx;
        float sum = 0.0f;
#pragma unroll
        for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
          for (int e = 2 * half; e < 2 * half + 2; ++e) {
            st[j][e] = exp2f(st[j][e] * sc.scaleLog2 - offset);
            sum += st[j][e];
          }
        l[half] = l[half] * corr + sum;
#pragma unroll
        for (int j = 0; j < D / 8; ++j) {
          o[j][2 * half] *= corr;
          o[j][2 * half + 1] *= corr;
        }
        // Dropped after the sum: l, and so lse, are the undropped P's.
        // (Keys past T and masked keys are 0 already, kept or not.)
        if constexpr (kDropout) {
#pragma unroll
          for (int j = 0; j < kKeys / 8; ++j)
#pragma unroll
            for (int e = 2 * half; e < 2 * half + 2; ++e)
              if (!kept(keep, j, e))
                st[j][e] = 0.0f;
        }
      }

      uint32_t p[kKeys / 16][4];
      toAFragments<kKeys>(st, p);
      warpProductPB<D, kKeys>(o, p, sV + buf * kKeys * kLd, kLd);
    }
    // Every warp is done with this buffer before the next iteration starts
    // loading the block after next into it.
    __syncthreads();
  }

  float inv[2];
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    float sum = l[half];
    sum += __shfl_xor_sync(kFullMask, sum, 1);
    sum += __shfl_xor_sync(kFullMask, sum, 2);
    // Under dropout, the kept entries' 1 / (1 - p) too.
    inv[half] = (kDropout ? mask.scale : 1.0f) / sum;
    const int row = warpRow0 + tileRow(2 * half);
    if (threadIdx.x % 4 == 0 && row < s.T)
      lse[(static_cast<int64_t>(b) * s.nh + h) * s.T + row] =
          m[half] * sc.scale + logf(sum);
  }
  storeStrip<D>(o, out + rowOffset(s, b, 0, -1, h), s.H, warpRow0, 0, s.T, s.d,
                inv[0], inv[1]);
}

//===----------------------------------------------------------------------===//
// Backward: dQ
//===----------------------------------------------------------------------===//

template <int D> struct DqTiles {
  static constexpr int kRows = kQueryRows;
  // Keys per block: dQ (D / 8 x 4 floats) and the S and dP strips (kKeys /
  // 8 x 4 floats each) within 128 registers: 64 + 2 x 16 at D = 128. (At
  // D = 64, 64 keys would be 32 + 2 x 32 floats, and spill.)
  static constexpr int kKeys = 32;
  static constexpr int kLd = D + kRowPad;
  // Q and dO, then K and V twice.
  static constexpr int kBytes = (2 * kRows + 4 * kKeys) * kLd * 2;
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
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    flashBackwardDqKernel(const bf16 *qkv, const bf16 *dout, const float *lse,
                          const float *rowDot, bf16 *dqkv, Shape s, Scales sc,
                          DropoutArgs drop) {
  using Tiles = DqTiles<D>;
  constexpr int kRows = Tiles::kRows, kKeys = Tiles::kKeys;
  constexpr int kLd = Tiles::kLd;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16 *sQ = reinterpret_cast<bf16 *>(smem);
  bf16 *sDo = sQ + kRows * kLd;
  bf16 *sK = sDo + kRows * kLd;    // two buffers
  bf16 *sV = sK + 2 * kKeys * kLd; // two buffers

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
  loadTile<kRows, D, kThreads>(sDo, dout + rowOffset(s, b, q0, -1, h), s.H,
                               s.T - q0, s.d);
  loadTile<kKeys, D, kThreads>(sK, kBase, ld, s.T, s.d);
  loadTile<kKeys, D, kThreads>(sV, vBase, ld, s.T, s.d);
  commitCopies();

  const int warp = threadIdx.x / 32;
  const int warpRow0 = q0 + warp * 16;
  const DropoutMask &mask = blockMask<kDropout>(drop);
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
    // As in the forward: rows past T, and (causal) keys after the warp's
    // last row, add nothing.
    if (warpRow0 < s.T && !(s.causal && k0 > warpRow0 + 15)) {
      const bf16 *k = sK + buf * kKeys * kLd, *v = sV + buf * kKeys * kLd;
      const uint32_t keep =
          keepBits<kKeys, kDropout>(mask, [&](int row, int col) {
            return dropoutElement(s, b, h, warpRow0 + row, k0 + col);
          });
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
          [&](int j, int e) { return kept(keep, j, e); }, mask.scale);
      uint32_t ds[kKeys / 16][4];
      toAFragments<kKeys>(st, ds);
      warpProductPB<D, kKeys>(dq, ds, k, kLd);
    }
    __syncthreads();
  }
  // S = scale Q K^T, so dQ = scale dS K.
  storeStrip<D>(dq, dqkv + rowOffset(s, b, 0, 0, h), ld, warpRow0, 0, s.T, s.d,
                sc.scale, sc.scale);
}

//===----------------------------------------------------------------------===//
// Backward: dK and dV
//===----------------------------------------------------------------------===//

/// The barrier of the two warps that share strip \p strip: barrier 1 +
/// strip, by immediate ids (syncWarps), one branch per strip.
template <int... Strip>
__device__ inline void pairBarrier(int strip,
                                   std::integer_sequence<int, Strip...>) {
  ((strip == Strip ? syncWarps<1 + Strip, 64>() : void()), ...);
}

template <int D> struct DkvTiles {
  // Keys per block: a 16-key strip per pair of warps.
  static constexpr int kKeys = kWarps / 2 * 16;
  // Queries per block, of which each warp of a pair forms the scores of
  // half: dK and dV take D / 16 x 4 floats each (64 in all at D = 128),
  // S^T, dP^T and P^T kQueries / 16 x 4 each.
  static constexpr int kQueries = D <= 64 ? 64 : 32;
  static constexpr int kHalf = kQueries / 2;
  static constexpr int kLd = D + kRowPad;
  // What a pair passes between its warps: for each of its strip's
  // kQueries / 16 A fragments of P'^T and of dS^T, 16 bytes a lane.
  static constexpr int kFragments = kQueries / 16;
  static constexpr int kExchangeBytes = kKeys / 16 * 2 * kFragments * 32 * 16;
  // K and V, then Q and dO twice, the exchange, then lse and D twice.
  static constexpr int kBytes =
      (2 * kKeys + 4 * kQueries) * kLd * 2 + kExchangeBytes + 4 * kQueries * 4;
};

template <int D, bool kDropout>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
    flashBackwardDkvKernel(const bf16 *qkv, const bf16 *dout, const float *lse,
                           const float *rowDot, bf16 *dqkv, Shape s, Scales sc,
                           DropoutArgs drop) {
  using Tiles = DkvTiles<D>;
  constexpr int kKeys = Tiles::kKeys, kQueries = Tiles::kQueries;
  constexpr int kHalf = Tiles::kHalf, kFragments = Tiles::kFragments;
  constexpr int kLd = Tiles::kLd;
  extern __shared__ __align__(16) unsigned char smem[];
  bf16 *sK = reinterpret_cast<bf16 *>(smem);
  bf16 *sV = sK + kKeys * kLd;
  bf16 *sQ = sV + kKeys * kLd;         // two buffers
  bf16 *sDo = sQ + 2 * kQueries * kLd; // two buffers
  // [strip][P'^T, dS^T][fragment][lane]
  uint4 *sExchange = reinterpret_cast<uint4 *>(sDo + 2 * kQueries * kLd);
  float *sLse =
      reinterpret_cast<float *>(sExchange + kKeys / 16 * 2 * kFragments * 32);
  float *sDot = sLse + 2 * kQueries; // two buffers each

  // Causal: key blocks in order, so the first ones, which have the most
  // queries, start first.
  const int kBlock = blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int k0 = kBlock * kKeys;
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

  loadTile<kKeys, D, kThreads>(sK, qkv + rowOffset(s, b, k0, 1, h), ld,
                               s.T - k0, s.d);
  loadTile<kKeys, D, kThreads>(sV, qkv + rowOffset(s, b, k0, 2, h), ld,
                               s.T - k0, s.d);
  loadQueries(firstQueryBlock, 0);
  commitCopies();

  // Warps 2i and 2i + 1 share strip i; `half` picks the warp's queries of
  // a block (for S^T and dP^T) and its head columns (of dK and dV).
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int strip = warp / 2, half = warp % 2;
  const int warpKey0 = k0 + strip * 16; // first key of the strip
  const int col0 = half * (D / 2);
  uint4 *pOut = sExchange + strip * 2 * kFragments * 32 + lane;
  uint4 *dsOut = pOut + kFragments * 32;
  const DropoutMask &mask = blockMask<kDropout>(drop);
  float dk[D / 16][4], dv[D / 16][4];
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
    // A strip past T has nothing to store, and causal, one whose keys all
    // follow the block's queries gets nothing from them. Both warps of the
    // pair decide alike, so both or neither meet at the pair's barrier.
    if (warpKey0 < s.T && !(s.causal && warpKey0 > first + kQueries - 1)) {
      // This warp's half of the queries: rows are the strip's keys.
      const int halfFirst = first + half * kHalf;
      float st[kHalf / 8][4], pt[kHalf / 8][4];
      if (s.causal && warpKey0 > halfFirst + kHalf - 1) {
        // All of them precede the strip's keys: P and dS are 0.
        zero(st);
        zero(pt);
      } else {
        const float *lseLog2 = sLse + buf * kQueries + half * kHalf;
        const float *dot = sDot + buf * kQueries + half * kHalf;
        const uint32_t keep =
            keepBits<kHalf, kDropout>(mask, [&](int row, int col) {
              // Transposed: rows are keys, columns queries.
              return dropoutElement(s, b, h, halfFirst + col, warpKey0 + row);
            });
        float dpt[kHalf / 8][4];
        zero(st);
        zero(dpt);
        warpProductABt<kHalf, D>(st, sK + strip * 16 * kLd, kLd,
                                 q + half * kHalf * kLd, kLd);
        warpProductABt<kHalf, D>(dpt, sV + strip * 16 * kLd, kLd,
                                 dO + half * kHalf * kLd, kLd);
        // Transposed: P'^T, and dS^T = P'^T dP'^T - P^T D.
        scoresToDs<kHalf, kDropout>(
            st, pt, dpt, sc.scaleLog2,
            [&](int j, int e) {
              const int query = halfFirst + tileCol(j, e);
              const int key = warpKey0 + tileRow(e);
              return query < s.T && key < s.T && !(s.causal && key > query);
            },
            [&](int j, int e) { return lseLog2[tileCol(j, e)]; },
            [&](int j, int e) { return dot[tileCol(j, e)]; },
            [&](int j, int e) { return kept(keep, j, e); }, mask.scale);
      }
      // Fragment f of the strip covers queries 16 f .. 16 f + 15 of the
      // block; this warp's are half * kFragments / 2 onwards.
      uint32_t frag[kHalf / 16][4];
      toAFragments<kHalf>(pt, frag);
#pragma unroll
      for (int f = 0; f < kHalf / 16; ++f)
        pOut[(half * kHalf / 16 + f) * 32] =
            make_uint4(frag[f][0], frag[f][1], frag[f][2], frag[f][3]);
      toAFragments<kHalf>(st, frag);
#pragma unroll
      for (int f = 0; f < kHalf / 16; ++f)
        dsOut[(half * kHalf / 16 + f) * 32] =
            make_uint4(frag[f][0], frag[f][1], frag[f][2], frag[f][3]);

      pairBarrier(strip, std::make_integer_sequence<int, kKeys / 16>());

      // Both halves of the strip, over all the block's queries, into this
      // warp's columns of dV and dK.
      uint32_t all[kFragments][4];
#pragma unroll
      for (int f = 0; f < kFragments; ++f) {
        const uint4 v = pOut[f * 32];
        all[f][0] = v.x, all[f][1] = v.y, all[f][2] = v.z, all[f][3] = v.w;
      }
      warpProductPB<D / 2, kQueries>(dv, all, dO + col0, kLd);
#pragma unroll
      for (int f = 0; f < kFragments; ++f) {
        const uint4 v = dsOut[f * 32];
        all[f][0] = v.x, all[f][1] = v.y, all[f][2] = v.z, all[f][3] = v.w;
      }
      warpProductPB<D / 2, kQueries>(dk, all, q + col0, kLd);
    }
    // Every warp is done with this buffer, and with the exchange, before
    // the next iteration loads into the one and writes the other.
    __syncthreads();
  }
  // S = scale Q K^T, so dK = scale dS^T Q.
  storeStrip<D / 2>(dk, dqkv + rowOffset(s, b, 0, 1, h), ld, warpKey0, col0,
                    s.T, s.d, sc.scale, sc.scale);
  storeStrip<D / 2>(dv, dqkv + rowOffset(s, b, 0, 2, h), ld, warpKey0, col0,
                    s.T, s.d, 1.0f, 1.0f);
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
      <<<blockGrid(s, DkvTiles<D>::kKeys), kThreads, dkvBytes, stream>>>(
          qkv, dout, lse, rowDot, dqkv, s, scalesOf(s), drop);
  flashBackwardDqKernel<D, kDropout>
      <<<blockGrid(s, DqTiles<D>::kRows), kThreads, dqBytes, stream>>>(
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
