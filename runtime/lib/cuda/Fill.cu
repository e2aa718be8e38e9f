//===- Fill.cu - Fills of fp32 and bf16 buffers ---------------------------===//
//
// bp_cuda_fill_f32 / _bf16 (bitpipe/cuda.h): out[i] = value. Generated code
// zeroes the parameter-gradient accumulators and writes the loss seed with
// it (through runtime.h's bp_fill), the executor whatever else needs a
// constant. Grid-stride, in 16-byte (fp32) or 8-byte (bf16) stores when the
// pointer allows. The bf16 value is value rounded to nearest even, once.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"
#include "core/ArgChecks.h"

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::allNonNull;
using bitpipe::runtime::allPositive;

namespace {

constexpr int kThreads = 256;
constexpr int kPack = 4;

template <int N, typename T>
__global__ void fillKernel(T *out, float value, int64_t n) {
  // Converted once per thread (identity for fp32, round to nearest even for
  // bf16): the stores below copy these bits.
  Pack<T, 1> one;
  store(one.v, 0, value);
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    Pack<T, W> p;
    for (int k = 0; k < W; ++k)
      p.v[k] = one.v[0];
    storePack(out, i, p);
  });
}

template <typename A>
bp_status_t fill(A *out, float value, int64_t n, void *stream,
                 const char *name) {
  if (!allNonNull({out}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  auto *dout = asDevice(out);
  const cudaStream_t s = asStream(stream);
  if (isAligned({out}, sizeof(A) * kPack))
    fillKernel<kPack><<<gridBlocks((n + kPack - 1) / kPack, kThreads),
                        kThreads, 0, s>>>(dout, value, n);
  else
    fillKernel<1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(dout, value, n);
  return checkLaunch(name);
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(fillKernel<1, float>);

extern "C" bp_status_t bp_cuda_fill_f32(float *out, float value, int64_t n,
                                        void *stream) {
  return fill(out, value, n, stream, "bp_cuda_fill_f32");
}

extern "C" bp_status_t bp_cuda_fill_bf16(bp_bf16_t *out, float value,
                                         int64_t n, void *stream) {
  return fill(out, value, n, stream, "bp_cuda_fill_bf16");
}
