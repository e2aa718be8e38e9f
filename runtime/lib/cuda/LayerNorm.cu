//===- LayerNorm.cu - Layer norm, bf16 or fp32 data, fp32 statistics ----===//
//
// Forward and the input gradient: one block per row (grid-stride over rows),
// the row's sums reduced across the block in fp32, 16 bytes a thread per
// access where the rows are aligned for it. Rows are at most 16 KiB
// of bf16 (H = 8192), so the second and third reads of a row hit L1/L2; the
// row is not staged in shared memory, which keeps every H within the default
// shared-memory limit.
//
// Parameter gradients are column sums over all N rows. They are reduced in
// two fixed-order stages rather than with atomics, so that dgamma and dbeta
// are the same bits on every run: per chunk of rows into a pool scratch
// buffer, then over the chunks into the fp32 accumulators.
//
// Every kernel is a template over the element type of x, y, dy, dx, gamma
// and beta (bf16 or fp32: DeviceMath.cuh's load / store), so both precisions
// run the same code; statistics and accumulators are fp32 in both.
//
//===----------------------------------------------------------------------===//

#include "ColumnChunks.h"
#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"

using namespace bitpipe::runtime::cuda;

namespace {

// Each kernel is a template over N, the elements a thread moves per access
// (DeviceMath.cuh's forEachInRow): 16 bytes' worth (8 bf16, 4 fp32) when
// every row starts on a 16-byte boundary, else 1. A kernel that only moves
// bytes reaches the memory's bandwidth with the wider accesses.

template <int N, typename T>
__global__ void layerNormFwdKernel(const T *x, const T *gamma, const T *beta,
                                   T *y, float *mean, float *rstd, int64_t rows,
                                   int64_t H, float eps) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xr = x + row * H;
    T *yr = y + row * H;
    // Two passes, as the CPU kernel: the variance of centred values does
    // not cancel when |mean| >> std.
    float sum = 0.0f;
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      float v[decltype(w)::value];
      loadFloats(xr, c, v);
      for (float e : v)
        sum += e;
    });
    const float mu = blockReduce(sum, Plus(), 0.0f) * invH;
    float sq = 0.0f;
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      float v[decltype(w)::value];
      loadFloats(xr, c, v);
      for (float e : v)
        sq += (e - mu) * (e - mu);
    });
    const float rs = 1.0f / sqrtf(blockReduce(sq, Plus(), 0.0f) * invH + eps);
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      constexpr int W = decltype(w)::value;
      float v[W], g[W], b[W];
      loadFloats(xr, c, v);
      loadFloats(gamma, c, g);
      loadFloats(beta, c, b);
      for (int k = 0; k < W; ++k)
        v[k] = (v[k] - mu) * rs * g[k] + b[k];
      storeFloats(yr, c, v);
    });
    if (threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

/// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma, as the CPU.
template <int N, typename T>
__global__ void layerNormBwdInputKernel(const T *dy, const T *x, const T *gamma,
                                        const float *mean, const float *rstd,
                                        T *dx, int64_t rows, int64_t H) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *dyr = dy + row * H, *xr = x + row * H;
    T *dxr = dx + row * H;
    const float mu = mean[row], rs = rstd[row];
    float2 sums = make_float2(0.0f, 0.0f); // (sum g, sum g xhat)
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      constexpr int W = decltype(w)::value;
      float d[W], v[W], g[W];
      loadFloats(dyr, c, d);
      loadFloats(xr, c, v);
      loadFloats(gamma, c, g);
      for (int k = 0; k < W; ++k) {
        sums.x += d[k] * g[k];
        sums.y += d[k] * g[k] * (v[k] - mu) * rs;
      }
    });
    sums = blockReduce(sums, Float2Plus(), make_float2(0.0f, 0.0f));
    const float meanG = sums.x * invH, meanGX = sums.y * invH;
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      constexpr int W = decltype(w)::value;
      float d[W], v[W], g[W];
      loadFloats(dyr, c, d);
      loadFloats(xr, c, v);
      loadFloats(gamma, c, g);
      for (int k = 0; k < W; ++k)
        d[k] = rs * (d[k] * g[k] - meanG - (v[k] - mu) * rs * meanGX);
      storeFloats(dxr, c, d);
    });
  }
}

// Stage 1 of the parameter gradients (ColumnChunks.h): a block is
// kColTile x N columns by kRowLanes rows; each thread sums every
// kRowLanes-th row of its chunk for its N adjacent columns (a warp reads
// one row's kColTile x N consecutive columns), then the lanes of a column
// are summed in order. A column's sum is the same whatever N is.

template <int N, typename T>
__global__ void
layerNormParamGradPartialKernel(const T *dy, const T *x, const float *mean,
                                const float *rstd, float *partial, int64_t rows,
                                int64_t H, int64_t rowsPerChunk) {
  __shared__ float lanes[2][kRowLanes][kColTile * N + 1];
  const int64_t c0 = blockIdx.x * static_cast<int64_t>(kColTile * N);
  const int64_t c = c0 + threadIdx.x * static_cast<int64_t>(N);
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * rowsPerChunk;
  const int64_t end = min(rows, begin + rowsPerChunk);
  // With N > 1, H is a multiple of N: a thread's columns are all in range
  // or all out.
  float dg[N] = {}, db[N] = {};
  if (c < H) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      float d[N], v[N];
      loadFloats(dy, r * H + c, d);
      loadFloats(x, r * H + c, v);
      const float mu = mean[r], rs = rstd[r];
      for (int k = 0; k < N; ++k) {
        dg[k] += d[k] * (v[k] - mu) * rs;
        db[k] += d[k];
      }
    }
  }
  for (int k = 0; k < N; ++k) {
    lanes[0][threadIdx.y][threadIdx.x * N + k] = dg[k];
    lanes[1][threadIdx.y][threadIdx.x * N + k] = db[k];
  }
  __syncthreads();
  // Every thread of the block finishes columns: kColTile x N columns over
  // kColTile x kRowLanes threads.
  const int thread = threadIdx.y * kColTile + threadIdx.x;
  for (int j = thread; j < kColTile * N; j += kColTile * kRowLanes) {
    if (c0 + j >= H)
      break;
    float g = 0.0f, b = 0.0f;
    for (int l = 0; l < kRowLanes; ++l) {
      g += lanes[0][l][j];
      b += lanes[1][l][j];
    }
    partial[(2 * chunk) * H + c0 + j] = g;
    partial[(2 * chunk + 1) * H + c0 + j] = b;
  }
}

/// Stage 2: one thread per column sums the chunks in order and accumulates.
__global__ void layerNormParamGradFinishKernel(const float *partial,
                                               int64_t chunks, float *dgamma,
                                               float *dbeta, int64_t H) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       c < H; c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g = 0.0f, b = 0.0f;
    for (int64_t k = 0; k < chunks; ++k) {
      g += partial[(2 * k) * H + c];
      b += partial[(2 * k + 1) * H + c];
    }
    dgamma[c] += g;
    dbeta[c] += b;
  }
}

template <typename A>
bp_status_t layerNormFwd(const A *x, const A *gamma, const A *beta, A *y,
                         float *mean, float *rstd, int64_t N, int64_t H,
                         float eps, void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(layer_norm_fwd) || !(eps >= 0.0f))
    return BP_ERR_INVALID_ARGUMENT;
  constexpr int kPack = kPack16<A>;
  return withPackWidth<kPack>(
      rowsPackable(H, kPack, {x, gamma, beta, y}), [&](auto w) -> bp_status_t {
        constexpr int P = decltype(w)::value;
        layerNormFwdKernel<P>
            <<<gridBlocks(N, 1), rowThreadsPacked(H, P), 0, asStream(stream)>>>(
                asDevice(x), asDevice(gamma), asDevice(beta), asDevice(y), mean,
                rstd, N, H, eps);
        return checkLaunch(name);
      });
}

template <typename A>
bp_status_t layerNormBwd(const A *dy, const A *x, const A *gamma,
                         const float *mean, const float *rstd, A *dx,
                         float *dgamma, float *dbeta, int64_t N, int64_t H,
                         void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(layer_norm_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  constexpr int kPack = kPack16<A>;
  return withPackWidth<kPack>(
      rowsPackable(H, kPack, {dy, x, gamma, dx}), [&](auto w) -> bp_status_t {
        constexpr int P = decltype(w)::value;
        const ChunkPlan plan = planChunks(N, H, kColTile * P);
        // Allocated first: failing here leaves every output untouched.
        auto *partial = static_cast<float *>(bp_cuda_alloc(
            2 * plan.chunks * H * static_cast<int64_t>(sizeof(float)), stream));
        if (!partial)
          return BP_ERR_OUT_OF_MEMORY;

        layerNormBwdInputKernel<P>
            <<<gridBlocks(N, 1), rowThreadsPacked(H, P), 0, s>>>(
                asDevice(dy), asDevice(x), asDevice(gamma), mean, rstd,
                asDevice(dx), N, H);
        bp_status_t status = checkLaunch(name);
        if (status == BP_OK) {
          dim3 grid(
              static_cast<unsigned>((H + kColTile * P - 1) / (kColTile * P)),
              static_cast<unsigned>(plan.chunks));
          layerNormParamGradPartialKernel<P>
              <<<grid, dim3(kColTile, kRowLanes), 0, s>>>(
                  asDevice(dy), asDevice(x), mean, rstd, partial, N, H,
                  plan.rowsPerChunk);
          status = checkLaunch(name);
        }
        if (status == BP_OK) {
          layerNormParamGradFinishKernel<<<gridBlocks(H, 256), 256, 0, s>>>(
              partial, plan.chunks, dgamma, dbeta, H);
          status = checkLaunch(name);
        }
        // In stream order: after the kernels above.
        bp_cuda_free(partial, stream);
        return status;
      });
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(layerNormParamGradFinishKernel);

extern "C" bp_status_t bp_cuda_layer_norm_fwd(const bp_bf16_t *x,
                                              const bp_bf16_t *gamma,
                                              const bp_bf16_t *beta,
                                              bp_bf16_t *y, float *mean,
                                              float *rstd, int64_t N,
                                              int64_t H, float eps,
                                              void *stream) {
  return layerNormFwd(x, gamma, beta, y, mean, rstd, N, H, eps, stream,
                      "bp_cuda_layer_norm_fwd");
}

extern "C" bp_status_t
bp_cuda_layer_norm_bwd(const bp_bf16_t *dy, const bp_bf16_t *x,
                       const bp_bf16_t *gamma, const float *mean,
                       const float *rstd, bp_bf16_t *dx, float *dgamma,
                       float *dbeta, int64_t N, int64_t H, void *stream) {
  return layerNormBwd(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, N, H,
                      stream, "bp_cuda_layer_norm_bwd");
}

extern "C" bp_status_t bp_cuda_layer_norm_fwd_f32(const float *x,
                                                  const float *gamma,
                                                  const float *beta, float *y,
                                                  float *mean, float *rstd,
                                                  int64_t N, int64_t H,
                                                  float eps, void *stream) {
  return layerNormFwd(x, gamma, beta, y, mean, rstd, N, H, eps, stream,
                      "bp_cuda_layer_norm_fwd_f32");
}

extern "C" bp_status_t
bp_cuda_layer_norm_bwd_f32(const float *dy, const float *x, const float *gamma,
                           const float *mean, const float *rstd, float *dx,
                           float *dgamma, float *dbeta, int64_t N, int64_t H,
                           void *stream) {
  return layerNormBwd(dy, x, gamma, mean, rstd, dx, dgamma, dbeta, N, H,
                      stream, "bp_cuda_layer_norm_bwd_f32");
}
