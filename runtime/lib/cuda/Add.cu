//===- Add.cu - Residual add, bf16 or fp32 -------------------------------===//
//
// out = a + b, summed in fp32 and rounded once. For bf16: fp32 holds the sum
// of two bf16 values exactly unless one is below 2^-16 of the other, and then
// it is far below half a bf16 ulp of the other, so either way this is the
// correctly rounded bf16 sum; for fp32 it is the CPU kernel's sum.
// Element-wise and grid-stride, 16 bytes a thread at a time when the
// pointers allow (8 bf16 or 4 fp32: fewer, wider memory accesses for a
// kernel that only moves bytes); out may alias a or b because each element
// is read and written by the same thread. One kernel template serves both
// element types (DeviceMath.cuh's load / store).
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"

using namespace bitpipe::runtime::cuda;

namespace {

constexpr int kThreads = 256;

template <int N, typename T>
__global__ void addKernel(const T *a, const T *b, T *out, int64_t n) {
  forEachPack<N>(n, [&](int64_t i, auto width) {
    constexpr int W = decltype(width)::value;
    const Pack<T, W> x = loadPack<W>(a, i), y = loadPack<W>(b, i);
    Pack<T, W> z;
    for (int k = 0; k < W; ++k)
      store(z.v, k, load(x.v, k) + load(y.v, k));
    storePack(out, i, z);
  });
}

template <typename A>
bp_status_t add(const A *a, const A *b, A *out, int64_t n, void *stream,
                const char *name) {
  if (!BP_KERNEL_ARGS_VALID(add_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  constexpr int kPack = kPack16<A>;
  const cudaStream_t s = asStream(stream);
  if (isAligned({a, b, out}, 16))
    addKernel<kPack><<<gridBlocks((n + kPack - 1) / kPack, kThreads), kThreads,
                       0, s>>>(asDevice(a), asDevice(b), asDevice(out), n);
  else
    addKernel<1><<<gridBlocks(n, kThreads), kThreads, 0, s>>>(
        asDevice(a), asDevice(b), asDevice(out), n);
  return checkLaunch(name);
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(addKernel<1, float>);

extern "C" bp_status_t bp_cuda_add_fwd(const bp_bf16_t *a, const bp_bf16_t *b,
                                       bp_bf16_t *out, int64_t n,
                                       void *stream) {
  return add(a, b, out, n, stream, "bp_cuda_add_fwd");
}

extern "C" bp_status_t bp_cuda_add_fwd_f32(const float *a, const float *b,
                                           float *out, int64_t n,
                                           void *stream) {
  return add(a, b, out, n, stream, "bp_cuda_add_fwd_f32");
}
