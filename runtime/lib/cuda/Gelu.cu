//===- Gelu.cu - GELU, tanh (GPT-2) or erf (BERT) form, bf16 or fp32 -===//
//
// Element-wise, grid-stride; each element widened to fp32, computed with
// the accurate tanhf / erff (not fast approximations: GELU's output feeds the
// next matrix product, and the CPU kernels' formulas are the reference),
// rounded once when the element type is bf16. The formulas are the CPU
// kernels' (runtime/lib/cpu/kernels/Gelu.cpp, GeluErf.cpp). 16 bytes a
// thread at a time when the pointers allow. One kernel template per
// direction serves both forms (GeluMath.cuh's TanhGelu / ErfGelu) and both
// element types (DeviceMath.cuh's load / store).
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "GeluMath.cuh"
#include "Launch.h"

using namespace bitpipe::runtime::cuda;

namespace {

constexpr int kThreads = 256;

template <typename Form, int N, typename T>
__global__ void geluFwdKernel(const T *x, T *y, int64_t n) {
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    const Pack<T, W> a = loadPack<W>(x, i);
    Pack<T, W> b;
    for (int k = 0; k < W; ++k)
      store(b.v, k, Form::value(load(a.v, k)));
    storePack(y, i, b);
  });
}

template <typename Form, int N, typename T>
__global__ void geluBwdKernel(const T *dy, const T *x, T *dx, int64_t n) {
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    // Reads dy's elements before writing dx's, in the same thread: dx may
    // alias dy.
    const Pack<T, W> g = loadPack<W>(dy, i), a = loadPack<W>(x, i);
    Pack<T, W> d;
    for (int k = 0; k < W; ++k)
      store(d.v, k, load(g.v, k) * Form::grad(load(a.v, k)));
    storePack(dx, i, d);
  });
}

template <typename Form, typename A>
bp_status_t geluFwd(const A *x, A *y, int64_t n, void *stream,
                    const char *name) {
  // gelu_fwd's parameters are gelu_erf_fwd's (Kernels.h).
  if (!BP_KERNEL_ARGS_VALID(gelu_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  constexpr int kPack = kPack16<A>;
  const cudaStream_t s = asStream(stream);
  if (isAligned({x, y}, 16))
    geluFwdKernel<Form, kPack>
        <<<gridBlocks((n + kPack - 1) / kPack, kThreads), kThreads, 0, s>>>(
            asDevice(x), asDevice(y), n);
  else
    geluFwdKernel<Form, 1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(
        asDevice(x), asDevice(y), n);
  return checkLaunch(name);
}

template <typename Form, typename A>
bp_status_t geluBwd(const A *dy, const A *x, A *dx, int64_t n, void *stream,
                    const char *name) {
  // gelu_bwd's parameters are gelu_erf_bwd's (Kernels.h).
  if (!BP_KERNEL_ARGS_VALID(gelu_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  constexpr int kPack = kPack16<A>;
  const cudaStream_t s = asStream(stream);
  if (isAligned({dy, x, dx}, 16))
    geluBwdKernel<Form, kPack>
        <<<gridBlocks((n + kPack - 1) / kPack, kThreads), kThreads, 0, s>>>(
            asDevice(dy), asDevice(x), asDevice(dx), n);
  else
    geluBwdKernel<Form, 1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(
        asDevice(dy), asDevice(x), asDevice(dx), n);
  return checkLaunch(name);
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(geluFwdKernel<TanhGelu, 1, float>);

extern "C" bp_status_t bp_cuda_gelu_fwd(const bp_bf16_t *x, bp_bf16_t *y,
                                        int64_t n, void *stream) {
  return geluFwd<TanhGelu>(x, y, n, stream, "bp_cuda_gelu_fwd");
}

extern "C" bp_status_t bp_cuda_gelu_bwd(const bp_bf16_t *dy,
                                        const bp_bf16_t *x, bp_bf16_t *dx,
                                        int64_t n, void *stream) {
  return geluBwd<TanhGelu>(dy, x, dx, n, stream, "bp_cuda_gelu_bwd");
}

extern "C" bp_status_t bp_cuda_gelu_fwd_f32(const float *x, float *y,
                                            int64_t n, void *stream) {
  return geluFwd<TanhGelu>(x, y, n, stream, "bp_cuda_gelu_fwd_f32");
}

extern "C" bp_status_t bp_cuda_gelu_bwd_f32(const float *dy, const float *x,
                                            float *dx, int64_t n,
                                            void *stream) {
  return geluBwd<TanhGelu>(dy, x, dx, n, stream, "bp_cuda_gelu_bwd_f32");
}

extern "C" bp_status_t bp_cuda_gelu_erf_fwd(const bp_bf16_t *x, bp_bf16_t *y,
                                            int64_t n, void *stream) {
  return geluFwd<ErfGelu>(x, y, n, stream, "bp_cuda_gelu_erf_fwd");
}

extern "C" bp_status_t bp_cuda_gelu_erf_bwd(const bp_bf16_t *dy,
                                            const bp_bf16_t *x, bp_bf16_t *dx,
                                            int64_t n, void *stream) {
  return geluBwd<ErfGelu>(dy, x, dx, n, stream, "bp_cuda_gelu_erf_bwd");
}

extern "C" bp_status_t bp_cuda_gelu_erf_fwd_f32(const float *x, float *y,
                                                int64_t n, void *stream) {
  return geluFwd<ErfGelu>(x, y, n, stream, "bp_cuda_gelu_erf_fwd_f32");
}

extern "C" bp_status_t bp_cuda_gelu_erf_bwd_f32(const float *dy, const float *x,
                                                float *dx, int64_t n,
                                                void *stream) {
  return geluBwd<ErfGelu>(dy, x, dx, n, stream, "bp_cuda_gelu_erf_bwd_f32");
}
