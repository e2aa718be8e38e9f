//===- Elementwise.cu - The linear layers' own element-wise kernels -------===//
//
// Grid-stride kernels, templated on the element type (bf16 or fp32), all
// arithmetic in fp32. The column sums are two-stage so that a short, wide dy
// and a tall, narrow one both fill the device.
//
//===----------------------------------------------------------------------===//

#include "Elementwise.h"

#include "../DeviceMath.cuh"
#include "../EagerModules.h"
#include "../GeluMath.cuh"
#include "../Launch.h"

#include <algorithm>

namespace bitpipe::runtime::cuda::linear {
namespace {

constexpr int kThreads = 256;


/// The value \p v becomes when stored as T (round to nearest even for bf16).
__device__ inline float asStored(const bf16 *, float v) {
  return __bfloat162float(__float2bfloat16_rn(v));
}
__device__ inline float asStored(const float *, float v) { return v; }

template <typename T>
__global__ void biasGeluKernel(T *pre, const T *bias, T *y, int64_t n,
                               int64_t cols) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float v = load(pre, i);
    if (bias) {
      v += load(bias, i % cols);
      store(pre, i, v);
      v = asStored(pre, v);
    }
    if (y)
      store(y, i, geluTanh(v));
  }
}

template <typename T>
__global__ void scaleByGeluGradKernel(T *dx, const T *pre, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store(dx, i, load(dx, i) * geluTanhGrad(load(pre, i)));
}

//===----------------------------------------------------------------------===//
// Column sums. A thread owns V adjacent columns (one 16-byte load a row when
// the row length and dy allow it, else V = 1), a warp 32 V consecutive
// columns of a row, and a block's 8 warps stride through one chunk of rows;
// each column's 8 warp partials are added in warp order, then the chunks'
// sums in chunk order. Every column is summed in the same order whatever V
// is, and the chunking depends on (rows, cols) alone - never on the device
// or dy's alignment - so the bits are the same on every run.
//===----------------------------------------------------------------------===//

constexpr int kRowLanes = 8;
/// The column width the chunking is computed for, whatever V is.
constexpr int64_t kNominalTile = 256;
/// Enough blocks to fill an H200 several times over (132 SMs, 8 blocks of
/// 256 threads each), fixed so that the summation order stays fixed.
constexpr int64_t kTargetBlocks = 1056;
/// Fewer rows a chunk than this and the second stage's reads (one per chunk
/// and column) would stop being small next to the first's.
constexpr int64_t kMinRowsPerChunk = 64;

struct Chunking {
  int64_t chunks, rowsPerChunk;
};

Chunking chunkingFor(int64_t rows, int64_t cols) {
  const int64_t tiles = (cols + kNominalTile - 1) / kNominalTile;
  const int64_t wanted =
      std::max<int64_t>(1, (kTargetBlocks + tiles - 1) / tiles);
  const int64_t rowsPerChunk =
      std::max(kMinRowsPerChunk, (rows + wanted - 1) / wanted);
  return {(rows + rowsPerChunk - 1) / rowsPerChunk, rowsPerChunk};
}

template <typename T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };

__device__ inline float widen(bf16 v) { return __bfloat162float(v); }
__device__ inline float widen(float v) { return v; }

/// partial [chunks, cols] = each chunk's column sums; or, with a single
/// chunk (partial null), db += them directly. V divides cols.
template <typename T, int V>
__global__ void columnChunkSumsKernel(const T *dy, float *partial, float *db,
                                      int64_t rows, int64_t cols,
                                      int64_t rowsPerChunk) {
  __shared__ float lanes[kRowLanes][32 * V + 1];
  const int64_t col0 =
      (blockIdx.x * static_cast<int64_t>(32) + threadIdx.x) * V;
  const int64_t begin = blockIdx.y * rowsPerChunk;
  const int64_t end = begin + rowsPerChunk < rows ? begin + rowsPerChunk : rows;
  float sum[V];
  for (int j = 0; j < V; ++j)
    sum[j] = 0.0f;
  if (col0 < cols)
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      const Pack<T, V> p =
          *reinterpret_cast<const Pack<T, V> *>(dy + r * cols + col0);
      for (int j = 0; j < V; ++j)
        sum[j] += widen(p.v[j]);
    }
  for (int j = 0; j < V; ++j)
    lanes[threadIdx.y][threadIdx.x * V + j] = sum[j];
  __syncthreads();
  // The first warp finishes the block's 32 V columns, one column a thread
  // at a time.
  if (threadIdx.y != 0)
    return;
  for (int c = threadIdx.x; c < 32 * V; c += 32) {
    const int64_t col = blockIdx.x * static_cast<int64_t>(32) * V + c;
    if (col >= cols)
      break;
    float total = 0.0f;
    for (int lane = 0; lane < kRowLanes; ++lane)
      total += lanes[lane][c];
    if (partial)
      partial[blockIdx.y * cols + col] = total;
    else
      db[col] += total;
  }
}

__global__ void addChunkSumsKernel(const float *partial, float *db,
                                   int64_t chunks, int64_t cols) {
  for (int64_t col =
           blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       col < cols; col += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float total = 0.0f;
    for (int64_t c = 0; c < chunks; ++c)
      total += partial[c * cols + col];
    db[col] += total;
  }
}

template <typename T>
bp_status_t launchBiasGelu(T *pre, const T *bias, T *y, int64_t rows,
                           int64_t cols, cudaStream_t stream,
                           const char *function) {
  const int64_t n = rows * cols;
  biasGeluKernel<<<gridBlocks(n, kThreads), kThreads, 0, stream>>>(pre, bias, y,
                                                                   n, cols);
  return checkLaunch(function);
}

template <typename T>
bp_status_t launchScaleByGeluGrad(T *dx, const T *pre, int64_t n,
                                  cudaStream_t stream, const char *function) {
  scaleByGeluGradKernel<<<gridBlocks(n, kThreads), kThreads, 0, stream>>>(
      dx, pre, n);
  return checkLaunch(function);
}

template <typename T, int V>
void enqueueChunkSums(const T *dy, float *partial, float *db, int64_t rows,
                      int64_t cols, const Chunking &c, cudaStream_t stream) {
  const dim3 block(32, kRowLanes);
  const dim3 grid(static_cast<unsigned>((cols + 32 * V - 1) / (32 * V)),
                  static_cast<unsigned>(c.chunks));
  columnChunkSumsKernel<T, V>
      <<<grid, block, 0, stream>>>(dy, partial, db, rows, cols, c.rowsPerChunk);
}

template <typename T>
bp_status_t launchAddColumnSums(const T *dy, float *db, int64_t rows,
                                int64_t cols, cudaStream_t stream,
                                const char *function) {
  const Chunking c = chunkingFor(rows, cols);
  // 16-byte loads when every row starts 16-byte aligned.
  constexpr int kWide = 16 / sizeof(T);
  const bool wide =
      cols % kWide == 0 && reinterpret_cast<uintptr_t>(dy) % 16 == 0;
  float *partial = nullptr;
  if (c.chunks > 1) {
    partial = static_cast<float *>(bp_cuda_alloc(
        c.chunks * cols * static_cast<int64_t>(sizeof(float)), stream));
    if (!partial)
      return BP_ERR_OUT_OF_MEMORY;
  }
  if (wide)
    enqueueChunkSums<T, kWide>(dy, partial, db, rows, cols, c, stream);
  else
    enqueueChunkSums<T, 1>(dy, partial, db, rows, cols, c, stream);
  bp_status_t s = checkLaunch(function);
  if (s == BP_OK && partial) {
    addChunkSumsKernel<<<gridBlocks(cols, kThreads), kThreads, 0, stream>>>(
        partial, db, c.chunks, cols);
    s = checkLaunch(function);
  }
  // In stream order: the block is reused only by work enqueued after these
  // kernels on this stream.
  bp_cuda_free(partial, stream);
  return s;
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(addChunkSumsKernel);

bp_status_t biasGelu(bp_bf16_t *pre, const bp_bf16_t *bias, bp_bf16_t *y,
                     int64_t rows, int64_t cols, cudaStream_t stream,
                     const char *function) {
  return launchBiasGelu(asBf16(pre), bias ? asBf16(bias) : nullptr,
                        y ? asBf16(y) : nullptr, rows, cols, stream, function);
}
bp_status_t biasGelu(float *pre, const float *bias, float *y, int64_t rows,
                     int64_t cols, cudaStream_t stream, const char *function) {
  return launchBiasGelu(pre, bias, y, rows, cols, stream, function);
}

bp_status_t scaleByGeluGrad(bp_bf16_t *dx, const bp_bf16_t *pre, int64_t n,
                            cudaStream_t stream, const char *function) {
  return launchScaleByGeluGrad(asBf16(dx), asBf16(pre), n, stream, function);
}
bp_status_t scaleByGeluGrad(float *dx, const float *pre, int64_t n,
                            cudaStream_t stream, const char *function) {
  return launchScaleByGeluGrad(dx, pre, n, stream, function);
}

bp_status_t addColumnSums(const bp_bf16_t *dy, float *db, int64_t rows,
                          int64_t cols, cudaStream_t stream,
                          const char *function) {
  return launchAddColumnSums(asBf16(dy), db, rows, cols, stream, function);
}
bp_status_t addColumnSums(const float *dy, float *db, int64_t rows,
                          int64_t cols, cudaStream_t stream,
                          const char *function) {
  return launchAddColumnSums(dy, db, rows, cols, stream, function);
}

} // namespace bitpipe::runtime::cuda::linear
