//===- Add.cu - Residual add, bf16 ---------------------------------------===//
//
// out = a + b, summed in fp32 and rounded once: fp32 holds the sum of two
// bf16 values exactly unless one is below 2^-16 of the other, and then it is
// far below half a bf16 ulp of the other, so either way this is the
// correctly rounded bf16 sum. Element-wise
// and grid-stride; out may alias a or b because each element is read and
// written by the same thread.
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

__global__ void addKernel(const bf16 *a, const bf16 *b, bf16 *out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       i < n; i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    store(out, i, load(a, i) + load(b, i));
}

} // namespace

extern "C" bp_status_t bp_cuda_add(const bp_bf16_t *a, const bp_bf16_t *b,
                                   bp_bf16_t *out, int64_t n, void *stream) {
  if (!allNonNull({a, b, out}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  addKernel<<<gridBlocks(n, kThreads), kThreads, 0, asStream(stream)>>>(
      asBf16(a), asBf16(b), asBf16(out), n);
  return checkLaunch("bp_cuda_add");
}
