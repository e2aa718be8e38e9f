//===- KernelThreads.h - How many threads a rank's kernels use --*- C++ -*-===//
//
// `--threads N` (docs/launching.md, "Threads"), or else what the launcher
// gives the rank: OMP_NUM_THREADS or OPENBLAS_NUM_THREADS when set (the
// variables users already set for BLAS and PyTorch), else the CPUs of the
// rank's affinity mask, shared with the other ranks of the node when the
// mask is the whole machine (mpirun --bind-to none, or no launcher).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_KERNELTHREADS_H
#define BITPIPE_RUNTIME_EXEC_KERNELTHREADS_H

#include "core/Status.h"

#include <optional>
#include <string>

namespace bitpipe::runtime {

/// What the count is chosen from; each part may be absent.
struct ThreadsContext {
  int64_t flag = 0;                   // --threads (0: not given)
  std::optional<std::string> ompEnv;  // OMP_NUM_THREADS
  std::optional<std::string> blasEnv; // OPENBLAS_NUM_THREADS
  int affinityCpus = 1;               // CPUs this process may run on
  int onlineCpus = 1;                 // CPUs of the machine
  int localRanks = 1;                 // ranks of the run on this node
};

/// The thread count, and where it came from ("--threads",
/// "OMP_NUM_THREADS", ...), for the run summary. Fails, naming the flag or
/// the variable, on a count that is not a whole number from 1 to 4096.
struct KernelThreads {
  int threads = 1;
  std::string source;
};
Expected<KernelThreads> chooseKernelThreads(const ThreadsContext &context);

/// The context of this process: the flag, the environment, its affinity
/// mask and the machine; localRanks as given.
ThreadsContext currentThreadsContext(int64_t flag, int localRanks);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_KERNELTHREADS_H
