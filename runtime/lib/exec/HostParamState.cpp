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

std::vector<std::optional<InvalidState>>
findInvalidOnHost(const ParamLayout &layout, const float *params,
                  const float *m, const float *v) {
  std::vector<std::optional<InvalidState>> found;
  for (const ParamSegment &seg : layout.all)
    found.push_back(firstInvalidState(params + seg.offset, m + seg.offset,
                                      v + seg.offset, seg.count));
  return found;
}

} // namespace bitpipe::runtime
