//===- HostParamState.h - Initial state and its check, in host memory -*- C++
//-*-===//
//
// ParamArrays::initialize and ::findInvalid (Backend.h) for arrays that
// live in host memory: the CPU target's, and the fake device's in tests.
// The CUDA target does the same on the device (cuda/InitParams.cu), with
// the same generator (core/Random.h) and the same order of the check.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_HOSTPARAMSTATE_H
#define BITPIPE_RUNTIME_EXEC_HOSTPARAMSTATE_H

#include "Backend.h"

#include <cstdint>
#include <vector>

namespace bitpipe::runtime {

/// The initial weights of \p layout into \p params (layout.numFloats
/// floats): each segment as its `init` says, the alignment gaps zero.
void initializeHostWeights(const ParamLayout &layout, uint64_t seed,
                           float *params);

/// Per segment of layout.all: its first element that a checkpoint may not
/// hold, in checkCheckpointValues' order.
std::vector<std::optional<InvalidState>>
findInvalidOnHost(const ParamLayout &layout, const float *params,
                  const float *m, const float *v);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_HOSTPARAMSTATE_H
