//===- ModelProfile.h - What a model costs, layer by layer ------*- C++ -*-===//
//
// The numbers the planner needs of a model at one micro-batch size, per
// partition unit (the `nn.layer` groups bitpipe-partition cuts between:
// the embedding, each transformer layer, the head), as the cost analysis
// of the IR reports them (include/bitpipe/Analysis/CostModel.h, the same
// numbers bitpipe-annotate-cost writes), and the values that cross from one
// unit to a later one. Plain C++: the MLIR side that fills it is
// ProfileFromIR.h; tests build profiles by hand. docs/planning.md.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_PLAN_MODELPROFILE_H
#define BITPIPE_PLAN_MODELPROFILE_H

#include "bitpipe/Schedule/ComputeWork.h"
#include "bitpipe/Schedule/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::plan {

/// One partition unit, for one micro-batch.
struct LayerProfile {
  std::string kind; ///< "embedding", "transformer" or "head".
  double forwardFlops = 0;
  double backwardFlops = 0;
  double parameters = 0;      ///< Parameter elements the unit reads.
  double activationBytes = 0; ///< Kept from its forward for its backward,
                              ///< at the IR's element types.
  /// Of activationBytes, the ops' statistics (f32 in every precision), and
  /// the forward FLOPs of the ops that have them (sched::StageKeeping).
  double statisticBytes = 0;
  double statisticFlops = 0;
  /// The FLOPs above by kernel shape (sched::ComputeWork; its sums are
  /// forwardFlops and backwardFlops), which a cluster's measured rates
  /// time. Hand-built profiles may leave it empty: their FLOPs then run at
  /// the cluster's one rate, a split backward's B and W taking half each.
  sched::ComputeWork work;
};

/// A value defined in unit `defLayer` and last used in unit `lastUseLayer`
/// (> defLayer): a stage cut between them sends it.
struct CrossingValue {
  int defLayer = 0;
  int lastUseLayer = 0;
  double bytes = 0; ///< At the IR's element types.
};

struct ModelProfile {
  std::string name;
  int64_t seqLen = 0;               ///< Tokens per sequence.
  int64_t microbatchSize = 0;       ///< Sequences per micro-batch.
  std::vector<LayerProfile> layers; ///< Partition units, in order.
  std::vector<CrossingValue> crossings;
};

/// One pipeline stage: a contiguous run of units.
struct StageProfile {
  int firstLayer = 0, lastLayer = 0; ///< Unit indices, inclusive.
  double forwardFlops = 0;
  double backwardFlops = 0;
  double parameters = 0;
  double activationBytes = 0;
  double statisticBytes = 0;
  double statisticFlops = 0;
  sched::ComputeWork work; ///< Its units' work, summed.
  /// What the stage sends on: the values it defines that a later stage
  /// uses (a stage function's results, which bitpipe-simulate sizes).
  double boundaryBytes = 0;
};

/// The stages bitpipe-partition{chunks=S} cuts the model into: the same
/// balanced cut (sched::balancePartition) of the same unit costs, forward +
/// backward FLOPs (lib/Transforms/Partition.cpp). Fails when S is not in
/// [1, units].
sched::Result<std::vector<StageProfile>>
stageProfiles(const ModelProfile &model, int stages);

} // namespace bitpipe::plan

#endif // BITPIPE_PLAN_MODELPROFILE_H
