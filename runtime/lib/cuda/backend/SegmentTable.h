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

#include <vector>

namespace bitpipe::runtime {

/// One bp_cuda_segment per parameter, in layout order.
inline std::vector<bp_cuda_segment>
cudaSegments(const std::vector<ParamSegment> &segments) {
  std::vector<bp_cuda_segment> out;
  out.reserve(segments.size());
  for (const ParamSegment &s : segments)
    out.push_back({s.offset, s.count, s.decay ? 1 : 0, 0});
  return out;
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
