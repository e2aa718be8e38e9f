//===- HostNcclCalls.h - NcclDeviceCalls over MPI, in host memory -*- C++ -*-===//
//
// Test-only: the NCCL communicator's device layer played by MPI on host
// memory, so that the executor runs its NCCL path (batches as groups,
// device waits, their drain, the host communicator for host memory) under
// mpirun on a machine without a GPU. It keeps NCCL's semantics where they
// differ from the MPI communicator's: a batch's transfers are posted only
// at its group's end, a pair's transfers match in posting order (one tag
// for all), an event is "every operation of its lane posted so far".
// The fake device computes synchronously on the host, so a stream waiting
// for compute waits for nothing, and compute waiting for an event is a
// host wait.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_EXEC_HOSTNCCLCALLS_H
#define BITPIPE_RUNTIME_UNITTESTS_EXEC_HOSTNCCLCALLS_H

#include "comm/nccl/NcclDeviceCalls.h"

#include <memory>

namespace bitpipe::runtime {

std::unique_ptr<NcclDeviceCalls> createHostNcclCalls();

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_UNITTESTS_EXEC_HOSTNCCLCALLS_H
