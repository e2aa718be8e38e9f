//===- Accumulate.cu - acc += g in fp32 -----------------------------------===//
//
// bp_cuda_accumulate_f32: a micro-batch's parameter gradient added into the
// rank's fp32 accumulator. One fp32 add per element, as the CPU's +=, so
// the sum over micro-batches is the same bits whichever target adds it (in
// the same order). Grid-stride, 16-byte accesses when both pointers allow.
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

template <int N>
__global__ void accumulateKernel(float *acc, const float *g, int64_t n) {
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    Pack<float, W> a = loadPack<W>(acc, i);
    const Pack<float, W> b = loadPack<W>(g, i);
    for (int k = 0; k < W; ++k)
      a.v[k] = __fadd_rn(a.v[k], b.v[k]);
    storePack(acc, i, a);
  });
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(accumulateKernel<1>);

extern "C" bp_status_t bp_cuda_accumulate_f32(float *acc, const float *g,
                                              int64_t n, void *stream) {
  if (!allNonNull({acc, g}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  if (isAligned({acc, g}, sizeof(float) * kPack))
    accumulateKernel<kPack><<<gridBlocks((n + kPack - 1) / kPack, kThreads),
                              kThreads, 0, s>>>(acc, g, n);
  else
    accumulateKernel<1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(acc, g, n);
  return checkLaunch("bp_cuda_accumulate_f32");
}
