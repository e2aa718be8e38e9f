//===- LayerNorm.cu - Layer norm, bf16 or fp32 data, fp32 statistics ----===//
//
// Forward and the input gradient: one block per row (grid-stride over rows),
// the row's sums reduced across the block in fp32. Rows are at most 16 KiB
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

template <typename T>
__global__ void layerNormFwdKernel(const T *x, const T *gamma, const T *beta,
                                   T *y, float *mean,
                                   float *rstd, int64_t N, int64_t H,
                                   float eps) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const T *xr = x + row * H;
    T *yr = y + row * H;
    // Two passes, as the CPU kernel: the variance of centred values does
    // not cancel when |mean| >> std.
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < H; c += blockDim.x)
      sum += load(xr, c);
    const float mu = blockReduce(sum, Plus(), 0.0f) * invH;
    float sq = 0.0f;
    for (int64_t c = threadIdx.x; c < H; c += blockDim.x) {
      float d = load(xr, c) - mu;
      sq += d * d;
    }
    const float rs = 1.0f / sqrtf(blockReduce(sq, Plus(), 0.0f) * invH + eps);
    for (int64_t c = threadIdx.x; c < H; c += blockDim.x)
      store(yr, c, (load(xr, c) - mu) * rs * load(gamma, c) + load(beta, c));
    if (threadIdx.x == 0) {
      mean[row] = mu;
      rstd[row] = rs;
    }
  }
}

/// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy gamma, as the CPU.
template <typename T>
__global__ void layerNormBwdInputKernel(const T *dy, const T *x,
                                        const T *gamma, const float *mean,
                                        const float *rstd, T *dx, int64_t N,
                                        int64_t H) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t row = blockIdx.x; row < N; row += gridDim.x) {
    const T *dyr = dy + row * H, *xr = x + row * H;
    T *dxr = dx + row * H;
    const float mu = mean[row], rs = rstd[row];
    float2 sums = make_float2(0.0f, 0.0f); // (sum g, sum g xhat)
    for (int64_t c = threadIdx.x; c < H; c += blockDim.x) {
      float g = load(dyr, c) * load(gamma, c);
      sums.x += g;
      sums.y += g * (load(xr, c) - mu) * rs;
    }
    sums = blockReduce(sums, Float2Plus(), make_float2(0.0f, 0.0f));
    const float meanG = sums.x * invH, meanGX = sums.y * invH;
    for (int64_t c = threadIdx.x; c < H; c += blockDim.x) {
      float g = load(dyr, c) * load(gamma, c);
      float xhat = (load(xr, c) - mu) * rs;
      store(dxr, c, rs * (g - meanG - xhat * meanGX));
    }
  }
}

// Stage 1 of the parameter gradients (ColumnChunks.h): a block is kColTile
// columns x kRowLanes rows; each thread sums every kRowLanes-th row of its
// chunk for one column (a warp reads one row's kColTile consecutive
// columns), then the lanes of a column are summed in order.

template <typename T>
__global__ void layerNormParamGradPartialKernel(const T *dy, const T *x,
                                                const float *mean,
                                                const float *rstd,
                                                float *partial, int64_t N,
                                                int64_t H,
                                                int64_t rowsPerChunk) {
  __shared__ float lanes[2][kRowLanes][kColTile + 1];
  const int64_t c = blockIdx.x * static_cast<int64_t>(kColTile) + threadIdx.x;
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * rowsPerChunk;
  const int64_t end = min(N, begin + rowsPerChunk);
  float dg = 0.0f, db = 0.0f;
  if (c < H) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      float d = load(dy, r * H + c);
      dg += d * (load(x, r * H + c) - mean[r]) * rstd[r];
      db += d;
    }
  }
  lanes[0][threadIdx.y][threadIdx.x] = dg;
  lanes[1][threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < H) {
    float g = 0.0f, b = 0.0f;
    for (int l = 0; l < kRowLanes; ++l) {
      g += lanes[0][l][threadIdx.x];
      b += lanes[1][l][threadIdx.x];
    }
    partial[(2 * chunk) * H + c] = g;
    partial[(2 * chunk + 1) * H + c] = b;
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
  layerNormFwdKernel<<<gridBlocks(N, 1), rowThreads(H, 4), 0,
                       asStream(stream)>>>(asDevice(x), asDevice(gamma),
                                           asDevice(beta), asDevice(y), mean,
                                           rstd, N, H, eps);
  return checkLaunch(name);
}

template <typename A>
bp_status_t layerNormBwd(const A *dy, const A *x, const A *gamma,
                         const float *mean, const float *rstd, A *dx,
                         float *dgamma, float *dbeta, int64_t N, int64_t H,
                         void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(layer_norm_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  const ChunkPlan plan = planChunks(N, H);
  // Allocated first: failing here leaves every output untouched.
  auto *partial = static_cast<float *>(
      bp_cuda_alloc(2 * plan.chunks * H * static_cast<int64_t>(sizeof(float)),
                    stream));
  if (!partial)
    return BP_ERR_OUT_OF_MEMORY;

  layerNormBwdInputKernel<<<gridBlocks(N, 1), rowThreads(H, 4), 0, s>>>(
      asDevice(dy), asDevice(x), asDevice(gamma), mean, rstd, asDevice(dx), N,
      H);
  bp_status_t status = checkLaunch(name);
  if (status == BP_OK) {
    dim3 grid(static_cast<unsigned>((H + kColTile - 1) / kColTile),
              static_cast<unsigned>(plan.chunks));
    layerNormParamGradPartialKernel<<<grid, dim3(kColTile, kRowLanes), 0, s>>>(
        asDevice(dy), asDevice(x), mean, rstd, partial, N, H,
        plan.rowsPerChunk);
    status = checkLaunch(name);
  }
  if (status == BP_OK) {
    layerNormParamGradFinishKernel<<<gridBlocks(H, 256), 256, 0, s>>>(
        partial, plan.chunks, dgamma, dbeta, H);
    status = checkLaunch(name);
  }
  bp_cuda_free(partial, stream); // In stream order: after the kernels above.
  return status;
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
