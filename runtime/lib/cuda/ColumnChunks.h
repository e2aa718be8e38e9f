//===- ColumnChunks.h - Deterministic column sums over rows -----*- C++ -*-===//
//
// The norms' parameter gradients are column sums over all N rows. They are
// reduced in two fixed-order stages rather than with atomics, so that the
// gradients are the same bits on every run: per chunk of rows into a pool
// scratch buffer (blocks of kColTile columns x kRowLanes rows), then over
// the chunks into the fp32 accumulators. LayerNorm.cu and RmsNorm.cu share
// the plan.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_COLUMNCHUNKS_H
#define BITPIPE_RUNTIME_CUDA_COLUMNCHUNKS_H

#include <algorithm>
#include <cstdint>

namespace bitpipe::runtime::cuda {

constexpr int kColTile = 32;
constexpr int kRowLanes = 8;

/// Chunks of rows for stage 1 when a block covers \p colsPerBlock columns
/// (kColTile times the pack width): about kTargetBlocks blocks in all (a
/// few blocks per SM on an H200, whatever H is), at least kRowLanes rows a
/// chunk. The scratch is (sums per column) * chunks * H floats, so at most
/// about 2 * kTargetBlocks * colsPerBlock floats for the layer norm's two
/// (4 MiB with packs of 8 bf16): a few percent of what stage 1 reads.
struct ChunkPlan {
  int64_t rowsPerChunk, chunks;
};
constexpr int64_t kTargetBlocks = 2048;
constexpr int64_t kMaxGridY = 65535;

inline ChunkPlan planChunks(int64_t N, int64_t H, int64_t colsPerBlock) {
  const int64_t colTiles = (H + colsPerBlock - 1) / colsPerBlock;
  int64_t chunks = std::max<int64_t>(1, kTargetBlocks / colTiles);
  int64_t rowsPerChunk = std::max<int64_t>(kRowLanes, (N + chunks - 1) / chunks);
  rowsPerChunk = std::max(rowsPerChunk, (N + kMaxGridY - 1) / kMaxGridY);
  return {rowsPerChunk, (N + rowsPerChunk - 1) / rowsPerChunk};
}

} // namespace bitpipe::runtime::cuda

#endif // BITPIPE_RUNTIME_CUDA_COLUMNCHUNKS_H
