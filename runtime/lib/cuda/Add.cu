//===- Add.cu - Residual add, bf16 or fp32 -------------------------------===//
//
// out = a + b, summed in fp32 and rounded once. For bf16: fp32 holds the sum
// of two bf16 values exactly unless one is below 2^-16 of the other, and then
// it is far below half a bf16 ulp of the other, so either way this is the
// correctly rounded bf16 sum; for fp32 it is the CPU kernel's sum.
// Element-wise and grid-stride; out may alias a or b because each element is
// read and written by the same thread. One kernel template serves both
// element types (DeviceMath.cuh's load / store).
//
// None of this has run on a GPU yet.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "Launch.h"
#include "core/ArgChecks.h"

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::allNonNull;
using bitpipe::runtime::allPositive;

namespace {

constexpr int kThreads = 256;

template <typename T>
__global__ void addKernel(const T *a, const T *b, T *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store(out, i, load(a, i) + load(b, i));
}

template <typename A>
bp_status_t add(const A *a, const A *b, A *out, int64_t n, void *stream,
                const char *name) {
  if (!allNonNull({a, b, out}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  addKernel<<<gridBlocks(n, kThreads), kThreads, 0, asStream(stream)>>>(
      asDevice(a), asDevice(b), asDevice(out), n);
  return checkLaunch(name);
}

} // namespace

extern "C" bp_status_t bp_cuda_add(const bp_bf16_t *a, const bp_bf16_t *b,
                                   bp_bf16_t *out, int64_t n, void *stream) {
  return add(a, b, out, n, stream, "bp_cuda_add");
}

extern "C" bp_status_t bp_cuda_add_f32(const float *a, const float *b,
                                       float *out, int64_t n, void *stream) {
  return add(a, b, out, n, stream, "bp_cuda_add_f32");
}
