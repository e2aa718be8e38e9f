//===- Dropout.cu - Dropout, bf16 or fp32 ---------------------------------===//
//
// y = x * scale where core/Dropout.h's mask keeps an element, 0 where it
// drops it (Kernels.h); the backward is the same call on the gradient. The
// mask is the CPU kernel's, bit for bit: the keep test compares integers
// and the scale is one correctly rounded fp32 division. A kept element is
// widened to fp32, scaled and rounded once when the element type is bf16.
// Each thread reads the key's four words from device memory and builds the
// mask's constants once, then handles its packs of the grid-stride loop
// (16 bytes at a time when the pointers allow), with 64-bit element
// indices; y may alias x because each element is read and written by the
// same thread. One kernel template serves both element types.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"
#include "core/Dropout.h"

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::dropoutArgsValid;
using bitpipe::runtime::DropoutMask;
using bitpipe::runtime::dropoutMask;
using bitpipe::runtime::kDropoutMaxElements;

namespace {

constexpr int kThreads = 256;

template <int N, typename T>
__global__ void dropoutKernel(const T *x, T *y, const int32_t *key,
                              int32_t site, float p, int64_t n) {
  const DropoutMask mask = dropoutMask(key, site, p);
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    const Pack<T, W> a = loadPack<W>(x, i);
    Pack<T, W> b;
    for (int k = 0; k < W; ++k)
      store(b.v, k,
            mask.keeps(static_cast<uint64_t>(i + k)) ? load(a.v, k) * mask.scale
                                                     : 0.0f);
    storePack(y, i, b);
  });
}

template <typename A>
bp_status_t dropout(const A *x, A *y, const int32_t *key, int32_t site, float p,
                    int64_t n, void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(dropout) || !dropoutArgsValid(site, p) ||
      n > kDropoutMaxElements)
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  if (p == 0.0f) {
    // Nothing is dropped and the scale is 1: a copy, with no draws.
    if (y == x)
      return BP_OK;
    return checkCuda(cudaMemcpyAsync(y, x, static_cast<size_t>(n) * sizeof(A),
                                     cudaMemcpyDeviceToDevice, s),
                     name);
  }
  constexpr int kPack = kPack16<A>;
  if (isAligned({x, y}, 16))
    dropoutKernel<kPack>
        <<<gridBlocks((n + kPack - 1) / kPack, kThreads), kThreads, 0, s>>>(
            asDevice(x), asDevice(y), key, site, p, n);
  else
    dropoutKernel<1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(
        asDevice(x), asDevice(y), key, site, p, n);
  return checkLaunch(name);
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(dropoutKernel<1, float>);

extern "C" bp_status_t bp_cuda_dropout(const bp_bf16_t *x, bp_bf16_t *y,
                                       const int32_t *key, int32_t site,
                                       float p, int64_t n, void *stream) {
  return dropout(x, y, key, site, p, n, stream, "bp_cuda_dropout");
}

extern "C" bp_status_t bp_cuda_dropout_f32(const float *x, float *y,
                                           const int32_t *key, int32_t site,
                                           float p, int64_t n, void *stream) {
  return dropout(x, y, key, site, p, n, stream, "bp_cuda_dropout_f32");
}
