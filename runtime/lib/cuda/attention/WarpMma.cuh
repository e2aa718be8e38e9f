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
// probabilities never leave registers.
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
/// thread of the block (Threads of them) takes part.
template <int Rows, int D, int Threads>
__device__ inline void loadTile(bf16 *dst, const bf16 *src, int64_t ld,
                                int validRows, int validCols) {
  constexpr int kPieces = D / 8;
  for (int i = threadIdx.x; i < Rows * kPieces; i += Threads) {
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

/// acc[16 MT x N] += A[16 MT x K] B[N x K]^T, both in shared memory,
/// row-major with row strides lda and ldb (S = Q K^T, dP = dO V^T and their
/// transposes: both operands have the reduced dimension along their rows).
/// acc[m] is the m-th 16-row strip. Each B fragment loaded serves MT row
/// strips: shared-memory reads per mma fall as MT grows.
template <int MT, int N, int K>
__device__ inline void warpProductABt(float (&acc)[MT][N / 8][4],
                                      const bf16 *a, int lda, const bf16 *b,
                                      int ldb) {
  static_assert(N % 16 == 0 && K % 16 == 0, "whole 16 x 16 pieces");
  const int lane = threadIdx.x % 32;
  // A: matrices (rows 0-7, k 0-7), (rows 8-15, k 0-7), (rows 0-7, k 8-15),
  // (rows 8-15, k 8-15) = a0..a3. B: (n 0-7, k 0-7), (n 0-7, k 8-15),
  // (n 8-15, k 0-7), (n 8-15, k 8-15) = b0, b1 of two n-tiles: B's n-rows
  // hold its k along them, which is what the non-transposed load gives.
  const bf16 *aLane = a + (lane % 16) * lda + (lane / 16) * 8;
  const bf16 *bLane =
      b + ((lane % 8) + (lane / 16) * 8) * ldb + ((lane / 8) % 2) * 8;
#pragma unroll
  for (int k = 0; k < K; k += 16) {
    uint32_t af[MT][4];
#pragma unroll
    for (int m = 0; m < MT; ++m)
      ldmatrix4(af[m], aLane + m * 16 * lda + k);
#pragma unroll
    for (int n = 0; n < N; n += 16) {
      uint32_t bf[4];
      ldmatrix4(bf, bLane + n * ldb + k);
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        mma16816(acc[m][n / 8], af[m], bf[0], bf[1]);
        mma16816(acc[m][n / 8 + 1], af[m], bf[2], bf[3]);
      }
    }
  }
}

/// One 16-row strip: acc[16 x N] += A[16 x K] B[N x K]^T.
template <int N, int K>
__device__ inline void warpProductABt(float (&acc)[N / 8][4], const bf16 *a,
                                      int lda, const bf16 *b, int ldb) {
  warpProductABt<1, N, K>(reinterpret_cast<float(&)[1][N / 8][4]>(acc), a,
                          lda, b, ldb);
}

/// acc[16 MT x N] += P[16 MT x K] B[K x N]: P in registers as A fragments
/// (toAFragments of score strips), B in shared memory, row-major with row
/// stride ldb (O += P V, dQ += dS K, dV += P^T dO, dK += dS^T Q: B has the
/// reduced dimension down its columns, so ldmatrix transposes it).
template <int MT, int N, int K>
__device__ inline void warpProductPB(float (&acc)[MT][N / 8][4],
                                     const uint32_t (&p)[MT][K / 16][4],
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
#pragma unroll
      for (int m = 0; m < MT; ++m) {
        mma16816(acc[m][n / 8], p[m][k / 16], bf[0], bf[1]);
        mma16816(acc[m][n / 8 + 1], p[m][k / 16], bf[2], bf[3]);
      }
    }
  }
}

/// One 16-row strip: acc[16 x N] += P[16 x K] B[K x N].
template <int N, int K>
__device__ inline void warpProductPB(float (&acc)[N / 8][4],
                                     const uint32_t (&p)[K / 16][4],
                                     const bf16 *b, int ldb) {
  warpProductPB<1, N, K>(
      reinterpret_cast<float(&)[1][N / 8][4]>(acc),
      reinterpret_cast<const uint32_t(&)[1][K / 16][4]>(p), b, ldb);
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
/// of element e of C tile j held by this lane.
__device__ inline int tileRow(int e) { return (threadIdx.x % 32) / 4 + (e / 2) * 8; }
__device__ inline int tileCol(int j, int e) {
  return j * 8 + (threadIdx.x % 4) * 2 + e % 2;
}

} // namespace bitpipe::runtime::cuda::attention

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_WARPMMA_CUH
