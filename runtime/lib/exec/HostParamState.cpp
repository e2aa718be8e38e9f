//===- HostParamState.cpp - Initial state and its check, in host memory ---===//

#include "HostParamState.h"

#include "train/Init.h"

#include <algorithm>

namespace bitpipe::runtime {

void initializeHostWeights(const ParamLayout &layout, uint64_t seed,
                           float *params) {
  std::fill(params, params + layout.numFloats, 0.0f);
  for (const ParamSegment &seg : layout.all) {
    float *out = params + seg.offset;
    switch (seg.init) {
    case InitKind::Normal:
      initNormal(out, seg.count, seg.stddev, seed, seg.name);
      break;
    case InitKind::Zeros:
      break;
    case InitKind::Ones:
      initOnes(out, seg.count);
      break;
    }
  }
}

/// findInvalidOnHost of a sharded optimizer's arrays: every weight held,
/// and the moments of the owned parts (compact), their indices the
/// parameter's.
static std::vector<std::optional<InvalidState>>
findInvalidSharded(const ParamLayout &layout, const float *params,
                   const float *m, const float *v) {
  std::vector<std::optional<InvalidState>> found(layout.all.size());
  for (size_t k = 0; k < layout.all.size(); ++k) {
    const float *w = params + layout.all[k].offset;
    for (int64_t i = 0; i < layout.all[k].count && !found[k]; ++i)
      if (!isCheckpointValue(w[i], StateArray::Weights))
        found[k] = InvalidState{StateArray::Weights, i, w[i]};
  }
  // A segment has at most one owned part (a shard is contiguous).
  for (const OptimizerPart &part : layout.owned) {
    std::optional<InvalidState> &slot = found[part.segment];
    if (slot)
      continue;
    slot = firstInvalidState(params + part.offset, m + part.moment,
                             v + part.moment, part.count);
    if (slot)
      slot->index += part.offset - layout.all[part.segment].offset;
  }
  return found;
}

std::vector<std::optional<InvalidState>>
findInvalidOnHost(const ParamLayout &layout, const float *params,
                  const float *m, const float *v) {
  std::vector<std::optional<InvalidState>> found;
  if (layout.shardedOptimizer)
    return findInvalidSharded(layout, params, m, v);
  for (const ParamSegment &seg : layout.all)
    found.push_back(firstInvalidState(params + seg.offset, m + seg.offset,
                                      v + seg.offset, seg.count));
  return found;
}

} // namespace bitpipe::runtime
