//===- SwiGlu.cu - SwiGLU gate of LLaMA's MLP, bf16 or fp32 -------------===//
//
// y = silu(gate) * up, element-wise, grid-stride, 16 bytes a thread at a
// time when the pointers allow (as Gelu.cu); each element widened to fp32,
// computed with the accurate expf and rounded once. The formulas are the
// CPU kernel's (runtime/lib/cpu/kernels/SwiGlu.cpp).
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"

using namespace bitpipe::runtime::cuda;

namespace {

constexpr int kThreads = 256;

__device__ inline float sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

template <int N, typename T>
__global__ void swigluFwdKernel(const T *gate, const T *up, T *y, int64_t n) {
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    const Pack<T, W> g = loadPack<W>(gate, i), u = loadPack<W>(up, i);
    Pack<T, W> out;
    for (int k = 0; k < W; ++k) {
      const float gk = load(g.v, k);
      store(out.v, k, gk * sigmoid(gk) * load(u.v, k));
    }
    storePack(y, i, out);
  });
}

template <int N, typename T>
__global__ void swigluBwdKernel(const T *dy, const T *gate, const T *up,
                                T *dgate, T *dup, int64_t n) {
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    // Every input is read before an output is written, in the same thread:
    // dgate may alias gate or dy.
    const Pack<T, W> d = loadPack<W>(dy, i), g = loadPack<W>(gate, i),
                     u = loadPack<W>(up, i);
    Pack<T, W> dg, du;
    for (int k = 0; k < W; ++k) {
      const float gk = load(g.v, k), dk = load(d.v, k);
      const float s = sigmoid(gk);
      store(dg.v, k, dk * load(u.v, k) * s * (1.0f + gk * (1.0f - s)));
      store(du.v, k, dk * gk * s);
    }
    storePack(dgate, i, dg);
    storePack(dup, i, du);
  });
}

template <typename A>
bp_status_t swigluFwd(const A *gate, const A *up, A *y, int64_t n,
                      void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(swiglu_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  constexpr int kPack = kPack16<A>;
  const cudaStream_t s = asStream(stream);
  if (isAligned({gate, up, y}, 16))
    swigluFwdKernel<kPack><<<gridBlocks((n + kPack - 1) / kPack, kThreads),
                             kThreads, 0, s>>>(asDevice(gate), asDevice(up),
                                               asDevice(y), n);
  else
    swigluFwdKernel<1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(
        asDevice(gate), asDevice(up), asDevice(y), n);
  return checkLaunch(name);
}

template <typename A>
bp_status_t swigluBwd(const A *dy, const A *gate, const A *up, A *dgate,
                      A *dup, int64_t n, void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(swiglu_bwd) ||
      static_cast<const void *>(dgate) == static_cast<const void *>(dup))
    return BP_ERR_INVALID_ARGUMENT;
  constexpr int kPack = kPack16<A>;
  const cudaStream_t s = asStream(stream);
  if (isAligned({dy, gate, up, dgate, dup}, 16))
    swigluBwdKernel<kPack><<<gridBlocks((n + kPack - 1) / kPack, kThreads),
                             kThreads, 0, s>>>(asDevice(dy), asDevice(gate),
                                               asDevice(up), asDevice(dgate),
                                               asDevice(dup), n);
  else
    swigluBwdKernel<1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(
        asDevice(dy), asDevice(gate), asDevice(up), asDevice(dgate),
        asDevice(dup), n);
  return checkLaunch(name);
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(swigluFwdKernel<1, float>);

extern "C" bp_status_t bp_cuda_swiglu_fwd(const bp_bf16_t *gate,
                                          const bp_bf16_t *up, bp_bf16_t *y,
                                          int64_t n, void *stream) {
  return swigluFwd(gate, up, y, n, stream, "bp_cuda_swiglu_fwd");
}

extern "C" bp_status_t bp_cuda_swiglu_bwd(const bp_bf16_t *dy,
                                          const bp_bf16_t *gate,
                                          const bp_bf16_t *up,
                                          bp_bf16_t *dgate, bp_bf16_t *dup,
                                          int64_t n, void *stream) {
  return swigluBwd(dy, gate, up, dgate, dup, n, stream, "bp_cuda_swiglu_bwd");
}

extern "C" bp_status_t bp_cuda_swiglu_fwd_f32(const float *gate,
                                              const float *up, float *y,
                                              int64_t n, void *stream) {
  return swigluFwd(gate, up, y, n, stream, "bp_cuda_swiglu_fwd_f32");
}

extern "C" bp_status_t bp_cuda_swiglu_bwd_f32(const float *dy,
                                              const float *gate,
                                              const float *up, float *dgate,
                                              float *dup, int64_t n,
                                              void *stream) {
  return swigluBwd(dy, gate, up, dgate, dup, n, stream,
                   "bp_cuda_swiglu_bwd_f32");
}
