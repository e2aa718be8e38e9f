//===- MultiTensor.cu - The chunk table of the optimizer's launches -------===//
//
// launchChunkTable (MultiTensor.cuh): one block of 1024 threads. Each thread
// counts the chunks of a contiguous run of segments, the block scans those
// counts (Hillis-Steele in shared memory: 10 steps), and each thread writes
// its run's prefix. Parallel loads of the segment table, so a few thousand
// segments cost a few microseconds, not a serial walk.
//
//===----------------------------------------------------------------------===//

#include "EagerModules.h"
#include "MultiTensor.cuh"

namespace bitpipe::runtime::cuda {

namespace {

constexpr int kScanThreads = 1024;

__device__ bool wellFormed(const bp_cuda_segment &seg) {
  return seg.offset >= 0 && seg.master >= 0 && seg.moment >= 0 &&
         seg.count >= 0 && seg.reserved == 0;
}

__device__ int64_t chunksOf(const bp_cuda_segment &seg) {
  return wellFormed(seg) ? (seg.count + kChunk - 1) / kChunk : 0;
}

__global__ void chunkTableKernel(const bp_cuda_segment *segments,
                                 int32_t numSegments, int64_t *table,
                                 int32_t *indexError, int32_t reporter) {
  __shared__ int64_t scan[kScanThreads];
  const int t = threadIdx.x;
  const int64_t perThread = (numSegments + kScanThreads - 1) / kScanThreads;
  const int64_t begin = min(static_cast<int64_t>(numSegments), t * perThread);
  const int64_t end = min(static_cast<int64_t>(numSegments), begin + perThread);
  int64_t mine = 0;
  for (int64_t s = begin; s < end; ++s) {
    const bp_cuda_segment seg = segments[s];
    if (!wellFormed(seg))
      reportBadIndex(indexError, reporter);
    mine += chunksOf(seg);
  }
  scan[t] = mine;
  __syncthreads();
  for (int step = 1; step < kScanThreads; step <<= 1) {
    const int64_t left = t >= step ? scan[t - step] : 0;
    __syncthreads();
    scan[t] += left;
    __syncthreads();
  }
  int64_t next = scan[t] - mine; // Exclusive prefix of this thread's run.
  for (int64_t s = begin; s < end; ++s) {
    table[s] = next;
    next += chunksOf(segments[s]);
  }
  if (t == kScanThreads - 1)
    table[numSegments] = scan[t];
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(chunkTableKernel);

bp_status_t launchChunkTable(const bp_cuda_segment *segments,
                             int32_t numSegments, int64_t *table,
                             IndexReporter reporter, cudaStream_t stream,
                             const char *what) {
  int32_t *indexError = indexErrorWord();
  if (!indexError)
    return BP_ERR_DEVICE;
  chunkTableKernel<<<1, kScanThreads, 0, stream>>>(segments, numSegments,
                                                   table, indexError, reporter);
  return checkLaunch(what);
}

} // namespace bitpipe::runtime::cuda
