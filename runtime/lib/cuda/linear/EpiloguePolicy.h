//===- EpiloguePolicy.h - Whether the linear layers fuse epilogues -*- C++
//-*-=//
//
// The linear layers use cuBLASLt's bias and GELU epilogues where they are
// valid (Linear.cpp says where) and their own element-wise kernels
// elsewhere. Both paths must be right, and a device only ever takes the one
// its shapes select, so the tests switch the epilogues off to run the other
// path too, and read the counts to check that valid shapes were fused.
// Process-wide; not part of the C ABI.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_LINEAR_EPILOGUEPOLICY_H
#define BITPIPE_RUNTIME_CUDA_LINEAR_EPILOGUEPOLICY_H

#include <cstdint>

namespace bitpipe::runtime::cuda::linear {

/// True (the default): use cuBLASLt's epilogues where valid. False: always
/// the plain product followed by the project's own kernels.
void setEpilogueFusion(bool enabled);
bool epilogueFusion();

/// How many calls that had epilogue work (a bias, a GELU or its gradient)
/// did all of it inside cuBLASLt, and how many ran a kernel of their own
/// for it, since the process started.
struct EpilogueCounts {
  int64_t fused = 0;
  int64_t unfused = 0;
};
EpilogueCounts epilogueCounts();

} // namespace bitpipe::runtime::cuda::linear

#endif // BITPIPE_RUNTIME_CUDA_LINEAR_EPILOGUEPOLICY_H
