//===- OwnedParts.cpp - A sharded optimizer's compact state, in host memory
//===//

#include "OwnedParts.h"

#include <algorithm>

namespace bitpipe::runtime {

void compactOwnedParts(const ParamLayout &layout, const float *whole,
                       float *compact) {
  for (const OptimizerPart &p : layout.owned)
    std::copy_n(whole + p.offset, p.count, compact + p.moment);
}

void expandOwnedParts(const ParamLayout &layout, const float *compact,
                      float *whole) {
  for (const OptimizerPart &p : layout.owned)
    std::copy_n(compact + p.moment, p.count, whole + p.offset);
}

} // namespace bitpipe::runtime
