//===- Partition.h - Contiguous, balanced cuts of a layer list --*- C++ -*-===//
//
// A pipeline stage is a contiguous run of layers. Given the cost of each
// layer (for instance forward + backward FLOPs of one micro-batch) and a
// number of chunks K, `balancePartition` cuts the layers into K contiguous,
// non-empty chunks so that the most expensive chunk is as cheap as possible:
// in a pipeline the slowest stage sets the pace of all of them.
// `partitionAt` checks and costs a cut the user chose instead.
//
// Layers are numbered by position, 0..L-1. Costs must be finite and
// non-negative. Plain C++, no MLIR; errors are messages, not asserts, because
// the arguments come from users (pass options).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_PARTITION_H
#define BITPIPE_SCHEDULE_PARTITION_H

#include "bitpipe/Schedule/Error.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace bitpipe::sched {

/// The units a model's stages are cut from, which the importer numbers its
/// ops by (`nn.layer`; docs/models.md, "Partition units"): whole
/// transformer layers, or each layer's attention and MLP halves, which let
/// stages balance where the layers do not divide into them evenly.
/// bitpipe-import, bitpipe-compile and bitpipe-plan take it as
/// `--units layers|halves`; the planner picks per configuration.
enum class PartitionUnits { Layers, Halves };

/// "layers", "halves".
const char *partitionUnitsName(PartitionUnits units);
std::optional<PartitionUnits> parsePartitionUnits(std::string_view name);

/// K contiguous chunks of L layers. Chunk k holds layers
/// [starts[k], starts[k+1]) (the last one up to L).
struct Partition {
  std::vector<int64_t> starts; ///< First layer of each chunk; starts[0] == 0.
  int64_t numLayers = 0;
  std::vector<double> chunkCosts; ///< Sum of the layer costs of each chunk.
  double maxCost = 0;             ///< The most expensive chunk.

  int64_t numChunks() const { return static_cast<int64_t>(starts.size()); }
  int64_t firstLayer(int64_t chunk) const { return starts[chunk]; }
  /// Inclusive.
  int64_t lastLayer(int64_t chunk) const {
    return chunk + 1 < numChunks() ? starts[chunk + 1] - 1 : numLayers - 1;
  }
  /// The chunk that holds `layer`.
  int64_t chunkOf(int64_t layer) const;
  /// maxCost over the mean chunk cost: 1 is a perfect balance; 1 when every
  /// cost is zero.
  double imbalance() const;
};

/// Cuts `layerCosts` into `numChunks` contiguous non-empty chunks minimising
/// the maximum chunk cost (exact: a dynamic programme in O(K * L) time).
///
/// Ties: many cuts often reach the same optimum (a cheap layer can sit on
/// either side of a boundary). Among them the one returned spreads the
/// slack: its chunk costs, sorted from largest to smallest, are
/// lexicographically smallest (after the largest, the second largest is as
/// small as possible, and so on). Cuts with exactly the same sorted costs
/// go to the lexicographically smallest `starts`. This second step is a
/// dynamic programme in O(K^2 * L * w) time for chunks of at most w layers
/// (w <= L), O(K * L) memory. Only chunk costs (differences of the prefix
/// sums) are compared, never sums of them, so the choice is deterministic
/// and exact.
///
/// Fails when there are no layers, numChunks < 1, numChunks > L, or a cost is
/// negative or not finite.
Result<Partition> balancePartition(const std::vector<double> &layerCosts,
                                   int64_t numChunks);

/// The partition whose chunks start at layer 0 and at each of `boundaries`
/// (the first layers of chunks 1..K-1). Fails unless the boundaries are
/// strictly increasing and each lies in [1, L-1], or on bad costs as above.
Result<Partition> partitionAt(const std::vector<double> &layerCosts,
                              const std::vector<int64_t> &boundaries);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_PARTITION_H
