//===- SegmentTable.h - The CUDA kernels' view of the param store -*- C++ -*-===//
//
// Host-side translations from the parameter store's layout and the
// optimizer's constants to what bitpipe/cuda.h's multi-tensor kernels take:
// built once (segments) or once per step (constants) on the host, and
// testable without a device (runtime/unittests/exec/CudaBookkeepingTest).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_BACKEND_SEGMENTTABLE_H
#define BITPIPE_RUNTIME_CUDA_BACKEND_SEGMENTTABLE_H

#include "Backend.h"
#include "train/AdamW.h"

#include "bitpipe/cuda.h"

#include <climits>
#include <cstdint>
#include <optional>
#include <vector>

namespace bitpipe::runtime {

/// One bp_cuda_segment per parameter, in layout order, each whole in every
/// array (its master weights and moments at its offset).
inline std::vector<bp_cuda_segment>
cudaSegments(const std::vector<ParamSegment> &segments) {
  std::vector<bp_cuda_segment> out;
  out.reserve(segments.size());
  for (const ParamSegment &s : segments)
    out.push_back({s.offset, s.count, s.offset, s.offset, s.decay ? 1 : 0, 0});
  return out;
}

/// Whether a store of \p layout under \p precision keeps its fp32 master
/// weights sharded as its moments are: under bf16 the stage functions read
/// the bf16 copy, so a rank needs fp32 weights only where it updates them
/// (its owned parts); under fp32 the master weights are what the stage
/// functions read, whole on every replica.
inline bool masterWeightsSharded(const ParamLayout &layout,
                                 Precision precision) {
  return layout.shardedOptimizer && precision == Precision::Bf16;
}

/// Elements of the store's arrays: the gradients and the bf16 copy span
/// the layout; the moments only the owned parts when sharded, and the
/// master weights too when masterWeightsSharded.
struct StoreSizes {
  int64_t whole = 0, master = 0, moments = 0;
};
inline StoreSizes cudaStoreSizes(const ParamLayout &layout,
                                 bool compactMaster) {
  const int64_t moments =
      layout.shardedOptimizer ? layout.numMoments : layout.numFloats;
  return {layout.numFloats, compactMaster ? moments : layout.numFloats,
          moments};
}

/// What bp_cuda_adamw_step updates and bp_cuda_find_invalid checks: one
/// segment per parameter of the layout or, under a sharded optimizer, per
/// part the rank owns (ParamLayout::owned), with the parameter each
/// belongs to, so that a check's findings name the parameter and the index
/// in it.
struct OptimizerTable {
  std::vector<bp_cuda_segment> segments;
  /// Per segment: its parameter's index in ParamLayout::all, and the
  /// parameter's element where the segment starts.
  std::vector<int> param;
  std::vector<int64_t> firstElement;
};

/// \p compactMaster: the master weights lie with the moments, compactly
/// (masterWeightsSharded).
inline OptimizerTable cudaOptimizerTable(const ParamLayout &layout,
                                         bool compactMaster) {
  OptimizerTable t;
  if (!layout.shardedOptimizer) {
    t.segments = cudaSegments(layout.all);
    for (size_t k = 0; k < layout.all.size(); ++k) {
      t.param.push_back(static_cast<int>(k));
      t.firstElement.push_back(0);
    }
    return t;
  }
  for (const OptimizerPart &p : layout.owned) {
    const ParamSegment &s = layout.all[p.segment];
    t.segments.push_back({p.offset, p.count,
                          compactMaster ? p.moment : p.offset, p.moment,
                          s.decay ? 1 : 0, 0});
    t.param.push_back(p.segment);
    t.firstElement.push_back(p.offset - s.offset);
  }
  return t;
}

/// A state check's finding about one parameter: the array, the index in
/// the parameter, and where the value lies (the table's segment and the
/// element within it), to be read for the message.
struct StateFinding {
  StateArray array = StateArray::Weights;
  int64_t index = 0;
  int segment = 0;
  int64_t element = 0;
};

/// The value a finding points at, in a store whose fp32 master weights
/// and moments are \p master, \p m and \p v (each as the table's
/// segments address them).
template <typename T>
T *findingValue(const OptimizerTable &table, const StateFinding &f, T *master,
                T *m, T *v) {
  const bp_cuda_segment &seg = table.segments[f.segment];
  switch (f.array) {
  case StateArray::Weights:
    return master + seg.master + f.element;
  case StateArray::FirstMoments:
    return m + seg.moment + f.element;
  case StateArray::SecondMoments:
    break;
  }
  return v + seg.moment + f.element;
}

/// Per parameter of a layout of \p numParams, from bp_cuda_find_invalid's
/// \p first over \p table (3 per segment): the first finding in
/// checkCheckpointValues' order (a weight before a first moment before a
/// second moment) of the first segment of the parameter that has one.
/// Under a sharded optimizer a rank checks the parts it owns: every
/// element has one owner, and the ranks agree on the first parameter.
inline std::vector<std::optional<StateFinding>>
stateFindings(const OptimizerTable &table, size_t numParams,
              const std::vector<int64_t> &first) {
  const StateArray arrays[3] = {StateArray::Weights, StateArray::FirstMoments,
                                StateArray::SecondMoments};
  std::vector<std::optional<StateFinding>> found(numParams);
  for (size_t s = 0; s < table.segments.size(); ++s) {
    std::optional<StateFinding> &slot = found[table.param[s]];
    for (int k = 0; k < 3 && !slot; ++k) {
      const int64_t at = first[3 * s + k];
      if (at != INT64_MAX)
        slot = StateFinding{arrays[k], table.firstElement[s] + at,
                            static_cast<int>(s), at};
    }
  }
  return found;
}

/// The same constants the CPU loop applies (AdamW::beginStep), field by
/// field.
inline bp_cuda_adamw_constants cudaConstants(const AdamWConstants &c) {
  bp_cuda_adamw_constants out;
  out.grad_scale = c.gradScale;
  out.beta1 = c.beta1;
  out.beta2 = c.beta2;
  out.one_minus_beta1 = c.oneMinusBeta1;
  out.one_minus_beta2 = c.oneMinusBeta2;
  out.eps = c.eps;
  out.step_size = c.stepSize;
  out.root_bc2 = c.rootBc2;
  out.decay_factor = c.decayFactor;
  return out;
}

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CUDA_BACKEND_SEGMENTTABLE_H
