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

std::vector<InvalidElement> findInvalidOnHost(const ParamLayout &layout,
                                              const float *params,
                                              const float *m, const float *v) {
  std::vector<InvalidElement> found(layout.all.size());
  for (size_t s = 0; s < layout.all.size(); ++s) {
    const ParamSegment &seg = layout.all[s];
    for (auto [array, data] : {std::pair{StateArray::Weights, params},
                               std::pair{StateArray::FirstMoments, m},
                               std::pair{StateArray::SecondMoments, v}}) {
      const float *begin = data + seg.offset, *end = begin + seg.count;
      const float *bad = std::find_if(begin, end, [array = array](float x) {
        return !isCheckpointValue(x, array);
      });
      if (bad != end) {
        found[s] = {true, array, bad - begin, *bad};
        break;
      }
    }
  }
  return found;
}

} // namespace bitpipe::runtime
