//===- RmsNorm.cu - RMS norm, bf16 or fp32 data, fp32 statistics --------===//
//
// LLaMA's RMSNorm (runtime.h's bp_rms_norm_*), laid out as LayerNorm.cu:
// the forward and the input gradient one block per row with fp32 block
// reductions and 16-byte accesses where the rows allow, the gain's gradient
// a deterministic two-stage column sum (ColumnChunks.h). The formulas are
// the CPU kernel's (runtime/lib/cpu/kernels/RmsNorm.cpp).
//
//===----------------------------------------------------------------------===//

#include "ColumnChunks.h"
#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"

using namespace bitpipe::runtime::cuda;

namespace {

// Kernels are templates over N, the elements a thread moves per access, as
// LayerNorm.cu's.

template <int N, typename T>
__global__ void rmsNormFwdKernel(const T *x, const T *gamma, T *y, float *rstd,
                                 int64_t rows, int64_t H, float eps) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *xr = x + row * H;
    T *yr = y + row * H;
    float sq = 0.0f;
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      float v[decltype(w)::value];
      loadFloats(xr, c, v);
      for (float e : v)
        sq += e * e;
    });
    const float rs = 1.0f / sqrtf(blockReduce(sq, Plus(), 0.0f) * invH + eps);
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      constexpr int W = decltype(w)::value;
      float v[W], g[W];
      loadFloats(xr, c, v);
      loadFloats(gamma, c, g);
      for (int k = 0; k < W; ++k)
        v[k] = v[k] * rs * g[k];
      storeFloats(yr, c, v);
    });
    if (threadIdx.x == 0)
      rstd[row] = rs;
  }
}

/// dx = rstd (g - xhat mean(g xhat)), g = dy gamma, as the CPU.
template <int N, typename T>
__global__ void rmsNormBwdInputKernel(const T *dy, const T *x, const T *gamma,
                                      const float *rstd, T *dx, int64_t rows,
                                      int64_t H) {
  const float invH = 1.0f / static_cast<float>(H);
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T *dyr = dy + row * H, *xr = x + row * H;
    T *dxr = dx + row * H;
    const float rs = rstd[row];
    float gx = 0.0f;
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      constexpr int W = decltype(w)::value;
      float d[W], v[W], g[W];
      loadFloats(dyr, c, d);
      loadFloats(xr, c, v);
      loadFloats(gamma, c, g);
      for (int k = 0; k < W; ++k)
        gx += d[k] * g[k] * v[k] * rs;
    });
    const float meanGX = blockReduce(gx, Plus(), 0.0f) * invH;
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      constexpr int W = decltype(w)::value;
      float d[W], v[W], g[W];
      loadFloats(dyr, c, d);
      loadFloats(xr, c, v);
      loadFloats(gamma, c, g);
      for (int k = 0; k < W; ++k)
        d[k] = rs * (d[k] * g[k] - v[k] * rs * meanGX);
      storeFloats(dxr, c, d);
    });
  }
}

/// Stage 1 of dgamma = sum over rows of dy * xhat (ColumnChunks.h), a block
/// kColTile x N columns by kRowLanes rows as LayerNorm.cu's.
template <int N, typename T>
__global__ void rmsNormGainGradPartialKernel(const T *dy, const T *x,
                                             const float *rstd, float *partial,
                                             int64_t rows, int64_t H,
                                             int64_t rowsPerChunk) {
  __shared__ float lanes[kRowLanes][kColTile * N + 1];
  const int64_t c0 = blockIdx.x * static_cast<int64_t>(kColTile * N);
  const int64_t c = c0 + threadIdx.x * static_cast<int64_t>(N);
  const int64_t chunk = blockIdx.y;
  const int64_t begin = chunk * rowsPerChunk;
  const int64_t end = min(rows, begin + rowsPerChunk);
  float dg[N] = {};
  if (c < H) {
    for (int64_t r = begin + threadIdx.y; r < end; r += kRowLanes) {
      float d[N], v[N];
      loadFloats(dy, r * H + c, d);
      loadFloats(x, r * H + c, v);
      const float rs = rstd[r];
      for (int k = 0; k < N; ++k)
        dg[k] += d[k] * v[k] * rs;
    }
  }
  for (int k = 0; k < N; ++k)
    lanes[threadIdx.y][threadIdx.x * N + k] = dg[k];
  __syncthreads();
  const int thread = threadIdx.y * kColTile + threadIdx.x;
  for (int j = thread; j < kColTile * N; j += kColTile * kRowLanes) {
    if (c0 + j >= H)
      break;
    float g = 0.0f;
    for (int l = 0; l < kRowLanes; ++l)
      g += lanes[l][j];
    partial[chunk * H + c0 + j] = g;
  }
}

/// Stage 2: one thread per column sums the chunks in order and accumulates.
__global__ void rmsNormGainGradFinishKernel(const float *partial,
                                            int64_t chunks, float *dgamma,
                                            int64_t H) {
  for (int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       c < H; c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float g = 0.0f;
    for (int64_t k = 0; k < chunks; ++k)
      g += partial[k * H + c];
    dgamma[c] += g;
  }
}

template <typename A>
bp_status_t rmsNormFwd(const A *x, const A *gamma, A *y, float *rstd,
                       int64_t N, int64_t H, float eps, void *stream,
                       const char *name) {
  if (!BP_KERNEL_ARGS_VALID(rms_norm_fwd) || !(eps >= 0.0f))
    return BP_ERR_INVALID_ARGUMENT;
  constexpr int kPack = kPack16<A>;
  return withPackWidth<kPack>(
      rowsPackable(H, kPack, {x, gamma, y}), [&](auto w) -> bp_status_t {
        constexpr int P = decltype(w)::value;
        rmsNormFwdKernel<P>
            <<<gridBlocks(N, 1), rowThreadsPacked(H, P), 0, asStream(stream)>>>(
                asDevice(x), asDevice(gamma), asDevice(y), rstd, N, H, eps);
        return checkLaunch(name);
      });
}

template <typename A>
bp_status_t rmsNormBwd(const A *dy, const A *x, const A *gamma,
                       const float *rstd, A *dx, float *dgamma, int64_t N,
                       int64_t H, void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(rms_norm_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  constexpr int kPack = kPack16<A>;
  return withPackWidth<kPack>(
      rowsPackable(H, kPack, {dy, x, gamma, dx}), [&](auto w) -> bp_status_t {
        constexpr int P = decltype(w)::value;
        const ChunkPlan plan = planChunks(N, H, kColTile * P);
        // Allocated first: failing here leaves every output untouched.
        auto *partial = static_cast<float *>(bp_cuda_alloc(
            plan.chunks * H * static_cast<int64_t>(sizeof(float)), stream));
        if (!partial)
          return BP_ERR_OUT_OF_MEMORY;

        // The gain's gradient reads dy before the input gradient is
        // written: dx may not alias dy (runtime.h), but the order costs
        // nothing.
        dim3 grid(
            static_cast<unsigned>((H + kColTile * P - 1) / (kColTile * P)),
            static_cast<unsigned>(plan.chunks));
        rmsNormGainGradPartialKernel<P>
            <<<grid, dim3(kColTile, kRowLanes), 0, s>>>(
                asDevice(dy), asDevice(x), rstd, partial, N, H,
                plan.rowsPerChunk);
        bp_status_t status = checkLaunch(name);
        if (status == BP_OK) {
          rmsNormGainGradFinishKernel<<<gridBlocks(H, 256), 256, 0, s>>>(
              partial, plan.chunks, dgamma, H);
          status = checkLaunch(name);
        }
        if (status == BP_OK) {
          rmsNormBwdInputKernel<P>
              <<<gridBlocks(N, 1), rowThreadsPacked(H, P), 0, s>>>(
                  asDevice(dy), asDevice(x), asDevice(gamma), rstd,
                  asDevice(dx), N, H);
          status = checkLaunch(name);
        }
        // In stream order: after the kernels above.
        bp_cuda_free(partial, stream);
        return status;
      });
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(rmsNormGainGradFinishKernel);

extern "C" bp_status_t bp_cuda_rms_norm_fwd(const bp_bf16_t *x,
                                            const bp_bf16_t *gamma,
                                            bp_bf16_t *y, float *rstd,
                                            int64_t N, int64_t H, float eps,
                                            void *stream) {
  return rmsNormFwd(x, gamma, y, rstd, N, H, eps, stream,
                    "bp_cuda_rms_norm_fwd");
}

extern "C" bp_status_t bp_cuda_rms_norm_bwd(const bp_bf16_t *dy,
                                            const bp_bf16_t *x,
                                            const bp_bf16_t *gamma,
                                            const float *rstd, bp_bf16_t *dx,
                                            float *dgamma, int64_t N,
                                            int64_t H, void *stream) {
  return rmsNormBwd(dy, x, gamma, rstd, dx, dgamma, N, H, stream,
                    "bp_cuda_rms_norm_bwd");
}

extern "C" bp_status_t bp_cuda_rms_norm_fwd_f32(const float *x,
                                                const float *gamma, float *y,
                                                float *rstd, int64_t N,
                                                int64_t H, float eps,
                                                void *stream) {
  return rmsNormFwd(x, gamma, y, rstd, N, H, eps, stream,
                    "bp_cuda_rms_norm_fwd_f32");
}

extern "C" bp_status_t bp_cuda_rms_norm_bwd_f32(const float *dy,
                                                const float *x,
                                                const float *gamma,
                                                const float *rstd, float *dx,
                                                float *dgamma, int64_t N,
                                                int64_t H, void *stream) {
  return rmsNormBwd(dy, x, gamma, rstd, dx, dgamma, N, H, stream,
                    "bp_cuda_rms_norm_bwd_f32");
}
