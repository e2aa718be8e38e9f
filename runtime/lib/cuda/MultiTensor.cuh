//===- MultiTensor.cuh - The optimizer's work split ------------*- CUDA -*-===//
//
// bp_cuda_sum_squares and bp_cuda_adamw_step each cover every parameter of
// the rank in one launch (a multi-tensor launch: hundreds of segments, from
// a layer-norm gain of H elements to the token embedding's V x H). The
// segment table is a device array, so the host cannot see the sizes: a
// first small kernel (launchChunkTable) cuts every segment into chunks of
// kChunk elements and writes, on the device, the index of each segment's
// first chunk (an exclusive prefix sum; the table's last entry is the
// total). The main kernel then runs a fixed grid of kMultiTensorBlocks
// blocks, block b taking chunks b, b + grid, ...: every block gets about the
// same work whatever the segment sizes, and each finds its chunk's segment
// by binary search in the table.
//
// The split depends only on the segments (not on the device), so a
// reduction over it (the sum of squares) adds in the same order on every
// run and every GPU.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_MULTITENSOR_CUH
#define BITPIPE_RUNTIME_CUDA_MULTITENSOR_CUH

#include "DeviceMath.cuh"
#include "Launch.h"

#include <cstdint>

namespace bitpipe::runtime::cuda {

/// Elements a block handles at a time: 256 threads x 4 packs of 4.
constexpr int64_t kChunk = 4096;
constexpr int kMultiTensorThreads = 256;
/// A fixed grid: several blocks per SM of an H200 (132 SMs), and the same
/// on every device so that reductions add in the same order everywhere.
constexpr int kMultiTensorBlocks = 1056;

/// Enqueues the kernel that writes table[s] = the first chunk of segment s
/// (num_segments + 1 entries, the last the total). A segment with a
/// negative offset, master, moment or count, or a nonzero reserved field,
/// gets no chunks
/// and is recorded as \p reporter in the index-error word.
bp_status_t launchChunkTable(const bp_cuda_segment *segments,
                             int32_t numSegments, int64_t *table,
                             IndexReporter reporter, cudaStream_t stream,
                             const char *what);

/// The segment that holds chunk \p c (< table[numSegments]): the last s with
/// table[s] <= c. Segments without chunks share their successor's table
/// entry, so the last of equal entries is the one that owns chunks.
__device__ inline int32_t segmentOfChunk(const int64_t *table,
                                         int32_t numSegments, int64_t c) {
  int32_t lo = 0, hi = numSegments; // table[lo] <= c < table[hi]
  while (hi - lo > 1) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (table[mid] <= c)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/// Element range [begin, end) of the gradients (the segment's `offset`)
/// that chunk \p c covers; the same elements of the master weights and
/// the moments are `toMaster` and `toMoment` further on (negative where a
/// sharded store keeps them compactly).
struct ChunkRange {
  int64_t begin, end;
  int64_t toMaster, toMoment;
  // begin is a multiple of 4 elements in every array (the segment's
  // offsets are): a sharded store's parts start where the shards cut the
  // buckets, which need not be, and run one element at a time.
  bool packable;
};

__device__ inline ChunkRange chunkRange(const bp_cuda_segment &seg,
                                        int64_t chunkInSegment) {
  const int64_t first = chunkInSegment * kChunk;
  const int64_t last = min(seg.count, first + kChunk);
  return {seg.offset + first, seg.offset + last, seg.master - seg.offset,
          seg.moment - seg.offset,
          (seg.offset | seg.master | seg.moment) % 4 == 0};
}

/// Calls op(i, Width<W>()) for [r.begin, r.end) across the block's threads:
/// packs of 4 when \p packs (the caller's pointers are aligned and the
/// range starts on a pack), the tail one by one.
template <typename Op>
__device__ void forChunk(const ChunkRange &r, bool packs, Op op) {
  int64_t i = r.begin;
  if (packs) {
    const int64_t whole = r.begin + (r.end - r.begin) / 4 * 4;
    for (int64_t j = r.begin + 4 * static_cast<int64_t>(threadIdx.x);
         j < whole; j += 4 * static_cast<int64_t>(blockDim.x))
      op(j, Width<4>());
    i = whole;
  }
  for (int64_t j = i + threadIdx.x; j < r.end; j += blockDim.x)
    op(j, Width<1>());
}

} // namespace bitpipe::runtime::cuda

#endif // BITPIPE_RUNTIME_CUDA_MULTITENSOR_CUH
