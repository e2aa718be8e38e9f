//===- Cast.cu - fp32 <-> bf16 conversions --------------------------------===//
//
// bp_cuda_cast_f32_to_bf16 rounds to nearest even (__float2bfloat16_rn: NaN
// stays NaN, overflow past the largest bf16 becomes infinity, as IEEE
// rounding says); bp_cuda_cast_bf16_to_f32 is exact. For bf16 copies of
// fp32 tensors outside the optimizer's fused step (e.g. the weights after
// loading a checkpoint). Grid-stride, 4 elements a vector access when both
// pointers allow it.
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

/// out[i] = in[i] through fp32: DeviceMath.cuh's load widens, store rounds.
template <int N, typename In, typename Out>
__global__ void castKernel(const In *in, Out *out, int64_t n) {
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    const Pack<In, W> a = loadPack<W>(in, i);
    Pack<Out, W> b;
    for (int k = 0; k < W; ++k)
      store(b.v, k, load(a.v, k));
    storePack(out, i, b);
  });
}

template <typename InA, typename OutA>
bp_status_t cast(const InA *in, OutA *out, int64_t n, void *stream,
                 const char *name) {
  if (!allNonNull({in, out}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  if (isAligned({in}, sizeof(InA) * kPack) &&
      isAligned({out}, sizeof(OutA) * kPack))
    castKernel<kPack><<<gridBlocks((n + kPack - 1) / kPack, kThreads),
                        kThreads, 0, s>>>(asDevice(in), asDevice(out), n);
  else
    castKernel<1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(
        asDevice(in), asDevice(out), n);
  return checkLaunch(name);
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(castKernel<1, float, bf16>);

extern "C" bp_status_t bp_cuda_cast_f32_to_bf16(const float *in,
                                                bp_bf16_t *out, int64_t n,
                                                void *stream) {
  return cast(in, out, n, stream, "bp_cuda_cast_f32_to_bf16");
}

extern "C" bp_status_t bp_cuda_cast_bf16_to_f32(const bp_bf16_t *in,
                                                float *out, int64_t n,
                                                void *stream) {
  return cast(in, out, n, stream, "bp_cuda_cast_bf16_to_f32");
}
