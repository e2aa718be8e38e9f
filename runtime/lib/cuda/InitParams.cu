//===- InitParams.cu - Initial weights and the state check, on the device -===//
//
// bp_cuda_init_normal draws a parameter's initial weights where they live,
// with core/Random.h compiled for the device: the same bits as a host draw
// (core/PortableMath.h says why they are), so a run initialised on the GPU
// starts where one initialised on the CPU does, and no host image of the
// weights is made or uploaded.
//
// bp_cuda_find_invalid is the end-of-training check that the weights and
// moments are what a checkpoint may hold, run where they are: only three
// indices per parameter cross the bus, not the whole store.
//
//===----------------------------------------------------------------------===//

#include "EagerModules.h"
#include "Launch.h"
#include "core/ArgChecks.h"
#include "core/Random.h"

#include <climits>

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::allNonNull;
using bitpipe::runtime::allPositive;
using bitpipe::runtime::randomNormal;

namespace {

constexpr int kThreads = 256;

__global__ void initNormalKernel(float *out, int64_t n, double stddev,
                                 uint64_t seed, uint64_t stream,
                                 int64_t first) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    out[i] = static_cast<float>(
        stddev * randomNormal(seed, stream, static_cast<uint64_t>(first + i)));
}

__device__ bool invalid(float x, bool nonNegative) {
  return !isfinite(x) || (nonNegative && x < 0.0f);
}

/// One block per segment (grid-stride over segments), the block's threads
/// over its elements; the smallest index of each kind by atomicMin.
__global__ void findInvalidKernel(const float *params, const float *m,
                                  const float *v,
                                  const bp_cuda_segment *segments,
                                  int32_t numSegments, int64_t *first) {
  for (int32_t s = blockIdx.x; s < numSegments; s += gridDim.x) {
    const bp_cuda_segment seg = segments[s];
    auto *slot = reinterpret_cast<unsigned long long *>(first + 3 * s);
    for (int64_t i = threadIdx.x; i < seg.count; i += blockDim.x) {
      if (invalid(params[seg.master + i], false))
        atomicMin(slot + 0, static_cast<unsigned long long>(i));
      if (invalid(m[seg.moment + i], false))
        atomicMin(slot + 1, static_cast<unsigned long long>(i));
      if (invalid(v[seg.moment + i], true))
        atomicMin(slot + 2, static_cast<unsigned long long>(i));
    }
  }
}

__global__ void noneFoundKernel(int64_t *first, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    first[i] = INT64_MAX;
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(noneFoundKernel);

extern "C" bp_status_t bp_cuda_init_normal(float *out, int64_t n, double stddev,
                                           uint64_t seed, uint64_t stream,
                                           int64_t first, void *cudaStream) {
  if (!allNonNull({out}) || !allPositive({n}) || first < 0 || !(stddev >= 0.0))
    return BP_ERR_INVALID_ARGUMENT;
  initNormalKernel<<<gridBlocks(n, kThreads), kThreads, 0,
                     asStream(cudaStream)>>>(out, n, stddev, seed, stream,
                                             first);
  return checkLaunch("bp_cuda_init_normal");
}

extern "C" bp_status_t bp_cuda_find_invalid(const float *params, const float *m,
                                            const float *v,
                                            const bp_cuda_segment *segments,
                                            int32_t numSegments, int64_t *first,
                                            void *stream) {
  if (!allNonNull({params, m, v, segments, first}) ||
      !allPositive({numSegments}))
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  const int64_t slots = 3 * static_cast<int64_t>(numSegments);
  noneFoundKernel<<<gridBlocks(slots, kThreads), kThreads, 0, s>>>(first,
                                                                   slots);
  if (bp_status_t st = checkLaunch("bp_cuda_find_invalid"); st != BP_OK)
    return st;
  findInvalidKernel<<<gridBlocks(numSegments, 1), kThreads, 0, s>>>(
      params, m, v, segments, numSegments, first);
  return checkLaunch("bp_cuda_find_invalid");
}
