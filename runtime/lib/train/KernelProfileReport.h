//===- KernelProfileReport.h - The --profile table --------------*- C++ -*-===//
//
// A rank's kernel profile (core/KernelProfile.h) as the table `--profile`
// prints at the end of a run, the kernels by time, most first:
//
//   bitpipe: kernel profile, rank 0, per step (steps 2-5; step 1.412 s):
//     kernel              calls   ms/step   share   us/call
//     linear_bwd_weight      36     402.1   28.5%    11169
//     ...
//     all kernels           520    1336.2   94.6%
//     outside kernels                 75.8    5.4%   the executor: ...
//     page faults             0 per step
//
// and its bytes, so that every rank's reaches rank 0 (fixed size, host
// byte order: the ranks of a run are one build on one kind of machine).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_KERNELPROFILEREPORT_H
#define BITPIPE_RUNTIME_TRAIN_KERNELPROFILEREPORT_H

#include "core/KernelProfile.h"

#include <cstdint>
#include <optional>
#include <string>

namespace bitpipe::runtime {

/// A rank's profile over the steps it covers.
struct RankKernelProfile {
  KernelProfileTotals totals{};
  /// Steps profiled and their wall time, in seconds, together.
  int64_t steps = 0;
  double seconds = 0;
  /// Page faults the process took in those steps (getrusage's minor and
  /// major): memory reused from step to step takes none.
  int64_t pageFaults = 0;
};

std::string serializeKernelProfile(const RankKernelProfile &profile);
/// None when \p bytes are not what serializeKernelProfile writes.
std::optional<RankKernelProfile> parseKernelProfile(const std::string &bytes);

/// The table of \p rank's profile, \p firstStep the number of the first
/// step it covers; at most \p top kernels (the rest are counted in "all
/// kernels"). Kernels never called are left out.
std::string formatKernelProfile(const RankKernelProfile &profile, int rank,
                                int64_t firstStep, int top = 15);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_KERNELPROFILEREPORT_H
