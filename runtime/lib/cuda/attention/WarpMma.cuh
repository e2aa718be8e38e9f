//===- WarpMma.cuh - Tensor-core tiles of one warp -------------*- CUDA -*-===//
//
// The few PTX instructions the tensor-core attention kernels are built on,
// and the two warp-level products every step of FlashAttention-2 reduces
// to. Layouts are those of the PTX ISA ("Matrix fragments for mma.m16n8k16"
// and "ldmatrix"), with g = lane / 4 and t = lane % 4:
//  - A (16 x 16, row-major), four 32-bit registers of two bf16 each:
//      a0 = (g, 2t..2t+1), a1 = (g+8, 2t..), a2 = (g, 2t+8..),
//      a3 = (g+8, 2t+8..)
//  - B (16 x 8, k x n), two registers:
//      b0 = (k 2t..2t+1, n g), b1 = (k 2t+8.., n g)
//  - C (16 x 8, fp32), four floats:
//      c0, c1 = (g, 2t..2t+1), c2, c3 = (g+8, 2t..)
// A C tile of scores is therefore, pair of n-tiles by pair, already an A
// fragment of the next product once rounded to bf16 (toAFragments): the
// probabilities go from one product to the next without a layout change
// (in registers, or, between two warps, copied as whole fragments).
//
// Shared-memory tiles are row-major with rows padded by 8 elements (16
// bytes): ldmatrix reads eight rows at one column, and with the padding
// those eight 16-byte pieces fall in eight different bank groups (a row of
// 64 or 128 bf16 would put them all in the same banks).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ATTENTION_WARPMMA_CUH
#define BITPIPE_RUNTIME_CUDA_ATTENTION_WARPMMA_CUH

#include "../DeviceMath.cuh"

#include <cuda_bf16.h>

#include <cstdint>

namespace bitpipe::runtime::cuda::attention {

/// Padding of every shared-memory row, in elements (16 bytes).
constexpr int kRowPad = 8;

__device__ inline uint32_t sharedAddress(const void *p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

/// The thread's index in the block, and its lane, read afresh from the
/// special registers (volatile, so never reused from an earlier read).
/// Offsets formed from threadIdx.x alone depend on nothing that changes
/// in a kernel's loop, so the compiler hoists them out of it and holds
/// them in registers through the whole loop body, where the accumulators
/// need every register; formed from these, they are recomputed (a few
/// integer instructions) where they are used.
__device__ inline int freshThreadIndex() {
  unsigned tid;
  asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
  return static_cast<int>(tid);
}
__device__ inline int freshLane() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;\n" : "=r"(lane));
  return static_cast<int>(lane);
}

//===----------------------------------------------------------------------===//
// Asynchronous copies (cp.async): global -> shared without registers, so the
// next tile loads while this one is computed on.
//===----------------------------------------------------------------------===//

/// Copies 16 bytes, or writes 16 zero bytes when !valid (cp.async's
/// src-size 0 reads nothing): rows past T and columns past d become zeros,
/// which add nothing to any product (a garbage NaN times a zero
/// probability would not).
__device__ inline void copy16(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                   sharedAddress(dst)),
               "l"(src), "r"(valid ? 16 : 0));
}
__device__ inline void commitCopies() {
  asm volatile("cp.async.commit_group;\n" ::);
}
/// Waits until at most N of this thread's committed groups are pending.
template <int N> __device__ inline void waitCopies() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/// Starts copying rows [0, Rows) x columns [0, D) of a tile into \p dst
/// (row stride D + kRowPad), from \p src (row stride \p ld elements): row r
/// and 8-column piece c are copied when r < validRows and c < validCols,
/// zero-filled otherwise. validCols is a multiple of 8 (the head dimension
/// d); \p src must be 16-byte aligned and so must ld * 2 bytes. Every
/// thread of the block (Threads of them) takes part, each copying the same
/// number of pieces.
template <int Rows, int D, int Threads>
__device__ inline void loadTile(bf16 *dst, const bf16 *src, int64_t ld,
                                int validRows, int validCols) {
  constexpr int kPieces = D / 8;
  static_assert(Rows * kPieces % Threads == 0, "whole pieces a thread");
  // Called in the kernels' loops: the pieces' offsets from a fresh read.
  const int tid = freshThreadIndex();
#pragma unroll
  for (int n = 0; n < Rows * kPieces / Threads; ++n) {
    const int i = tid + n * Threads;
    const int r = i / kPieces, c = (i % kPieces) * 8;
    const bool valid = r < validRows && c < validCols;
    copy16(dst + r * (D + kRowPad) + c, valid ? src + r * ld + c : src, valid);
  }
}

//===----------------------------------------------------------------------===//
// ldmatrix and mma.
//===----------------------------------------------------------------------===//

/// Four 8x8 bf16 matrices; lane i gives the address of row i % 8 of matrix
/// i / 8 and gets, in register j, its two elements of matrix j.
__device__ inline void ldmatrix4(uint32_t (&r)[4], const bf16 *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, "
               "[%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(sharedAddress(p)));
}
/// The same, each matrix transposed on the way.
__device__ inline void ldmatrix4Trans(uint32_t (&r)[4], const bf16 *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, "
               "%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(sharedAddress(p)));
}

/// c += a b for one 16 x 8 x 16 tile, bf16 products summed in fp32.
__device__ inline void mma16816(float (&c)[4], const uint32_t (&a)[4],
                                uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                 "r"(b1));
}

/// Waits until \p Threads threads of the block (whole warps) have reached
/// barrier \p Id (1 to 15; __syncthreads is barrier 0), their shared-memory
/// writes before it then visible to each other: for warps that exchange
/// data only among themselves, and need not hold up the rest of the block.
/// The id is an immediate: given one in a register, ptxas reserves all 16
/// barriers for the block, and barriers are an SM resource that limits how
/// many blocks it holds.
template <int Id, int Threads> __device__ inline void syncWarps() {
  static_assert(Id >= 1 && Id < 16 && Threads % 32 == 0, "a named barrier");
  asm volatile("bar.sync %0, %1;\n" ::"n"(Id), "n"(Threads) : "memory");
}

/// Two floats as a bf16 pair, the first in the low half (the lower column).
__device__ inline uint32_t packBf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

//===----------------------------------------------------------------------===//
// The two products of one warp: a 16-row strip of C, N columns wide, held
// as N / 8 C tiles (acc[j] = columns 8j .. 8j+7).
//===----------------------------------------------------------------------===//

template <typename T> __device__ inline void zero(T &array) {
  constexpr int n = sizeof(T) / sizeof(float);
  float *p = reinterpret_cast<float *>(&array);
#pragma unroll
  for (int i = 0; i < n; ++i)
    p[i] = 0.0f;
}

/// acc[16 x N] += A[16 x K] B[N x K]^T, both in shared memory, row-major
/// with row strides lda and ldb (S = Q K^T, dP = dO V^T and their
/// transposes: both operands have the reduced dimension along their rows).
template <int N, int K>
__device__ inline void warpProductABt(float (&acc)[N / 8][4], const bf16 *a,
                                      int lda, const bf16 *b, int ldb) {
  static_assert(N % 16 == 0 && K % 16 == 0, "whole 16 x 16 pieces");
  const int lane = threadIdx.x % 32;
  // A: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
  // (rows 8-15, k 8-15) = a0..a3. B: (n 0-7, k 0-7), (n 0-7, k 8-15),
  // (n 8-15, k 0-7), (n 8-15, k 8-15) = b0, b1 of two n-tiles: B's n-rows
  // hold its k along them, which is what the non-transposed load gives.
  const bf16 *aLane = a + (lane % 16) * lda + (lane / 16) * 8;
  const bf16 *bLane =
      b + ((lane % 8) + (lane / 16) * 8) * ldb + ((lane / 8) % 2) * 8;
  // Not unrolled over k: unrolled, the compiler issues the ldmatrix of
  // several k steps ahead (4 registers each) and, at 128 registers a
  // thread, spills the accumulators to make room. A warp then waits on
  // each step's loads, which the SM's other 15 warps cover.
#pragma unroll 1
  for (int k = 0; k < K; k += 16) {
    uint32_t af[4];
    ldmatrix4(af, aLane + k);
#pragma unroll
    for (int n = 0; n < N; n += 16) {
      uint32_t bf[4];
      ldmatrix4(bf, bLane + n * ldb + k);
      mma16816(acc[n / 8], af, bf[0], bf[1]);
      mma16816(acc[n / 8 + 1], af, bf[2], bf[3]);
    }
  }
}

/// acc[16 x N] += P[16 x K] B[K x N]: P in registers as A fragments
/// (toAFragments of score strips), B in shared memory, row-major with row
/// stride ldb (O += P V, dQ += dS K, dV += P^T dO, dK += dS^T Q: B has the
/// reduced dimension down its columns, so ldmatrix transposes it).
template <int N, int K>
__device__ inline void warpProductPB(float (&acc)[N / 8][4],
                                     const uint32_t (&p)[K / 16][4],
                                     const bf16 *b, int ldb) {
  static_assert(N % 16 == 0 && K % 16 == 0, "whole 16 x 16 pieces");
  const int lane = threadIdx.x % 32;
  // Matrices (k 0-7, n 0-7), (k 8-15, n 0-7), (k 0-7, n 8-15),
  // (k 8-15, n 8-15), each transposed: b0, b1 of two n-tiles.
  const bf16 *bLane =
      b + ((lane % 8) + ((lane / 8) % 2) * 8) * ldb + (lane / 16) * 8;
#pragma unroll
  for (int k = 0; k < K; k += 16) {
#pragma unroll
    for (int n = 0; n < N; n += 16) {
      uint32_t bf[4];
      ldmatrix4Trans(bf, bLane + k * ldb + n);
      mma16816(acc[n / 8], p[k / 16], bf[0], bf[1]);
      mma16816(acc[n / 8 + 1], p[k / 16], bf[2], bf[3]);
    }
  }
}

/// A 16 x K strip of C tiles as the A fragments of a product over K,
/// rounded to bf16: columns 16k .. 16k+15 are C tiles 2k and 2k+1.
template <int K>
__device__ inline void toAFragments(const float (&c)[K / 8][4],
                                    uint32_t (&a)[K / 16][4]) {
#pragma unroll
  for (int k = 0; k < K / 16; ++k) {
    a[k][0] = packBf16(c[2 * k][0], c[2 * k][1]);
    a[k][1] = packBf16(c[2 * k][2], c[2 * k][3]);
    a[k][2] = packBf16(c[2 * k + 1][0], c[2 * k + 1][1]);
    a[k][3] = packBf16(c[2 * k + 1][2], c[2 * k + 1][3]);
  }
}

/// Row (0..15, within the warp's strip) and column (within the strip's N)
/// of element e of C tile j held by lane \p lane (by default, this one).
__device__ inline int tileRow(int e, int lane) {
  return lane / 4 + (e / 2) * 8;
}
__device__ inline int tileCol(int j, int e, int lane) {
  return j * 8 + (lane % 4) * 2 + e % 2;
}
__device__ inline int tileRow(int e) { return tileRow(e, threadIdx.x % 32); }
__device__ inline int tileCol(int j, int e) {
  return tileCol(j, e, threadIdx.x % 32);
}

} // namespace bitpipe::runtime::cuda::attention

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_WARPMMA_CUH
