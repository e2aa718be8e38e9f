//===- HostNcclCalls.h - NcclDeviceCalls over MPI, in host memory -*- C++
//-*-===//
//
// Test-only: the NCCL communicator's device layer played by MPI on host
// memory, so that the executor runs its NCCL path (channels, batches as
// groups, device waits, their drain, the host communicator for host
// memory) under mpirun on a machine without a GPU.
//
// Each communicator (the world's, each split: MPI_Comm_split) has a stream
// of its own: a queue of units, a unit being a group's operations or one
// operation issued outside a group. A pair's transfers on a communicator
// match in posting order (one tag for all), as NCCL's do. An event is
// every unit its stream was given so far; inside a group, nothing of the
// group is on the stream yet (as before ncclGroupEnd). The fake device
// computes synchronously on the host (hostComputes): a stream waiting for
// compute waits for nothing, and compute waiting for an event is a host
// wait. A stream waiting for another's event (streamWaitsForEvent) holds
// every unit issued on it afterwards until the event's units are done, and
// an event recorded on it afterwards covers them too, as a CUDA stream's
// wait does. A reduce-scatter goes through a scratch buffer of its unit
// (MPI's in-place form leaves the result at the buffer's start, NCCL's at
// the rank's shard), copied into place when the unit is done; an
// all-gather is MPI's in place.
//
// Two sets of rules:
//  - strict (the default) plays NCCL's: a send is MPI_Issend, done only once
//    its receive is matched; a unit's operations are posted together and
//    the unit is done when all of them are; a stream posts a unit only once
//    the unit before it is done. A program that deadlocks under NCCL
//    deadlocks here (and times out with the communicator's deadline);
//  - loose: a send is MPI_Isend and a unit is
//    posted as soon as it is on its stream, so units of one stream do not
//    wait for each other. An event still covers every earlier unit of its
//    stream, sends included, and MPI completes a large MPI_Isend only once
//    it is matched: loose relaxes the streams' order, not the rendezvous
//    (the CPU runtime's MpiCommunicator is MPI's rules). Nor does it relax
//    a wait for another stream's event: what follows the wait is posted
//    only once the event's units are done, under both rules.
// Who makes the calls chooses the rules from an environment variable
// (hostNcclRulesFromEnv): FakeDeviceBackend.cpp from
// BITPIPE_FAKE_DEVICE_NCCL (unset: no NCCL at all), HostNcclTarget.cpp
// from BITPIPE_FAKE_NCCL (unset: strict).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_EXEC_HOSTNCCLCALLS_H
#define BITPIPE_RUNTIME_UNITTESTS_EXEC_HOSTNCCLCALLS_H

#include "comm/nccl/NcclDeviceCalls.h"

#include <memory>
#include <optional>

namespace bitpipe::runtime {

enum class HostNcclRules { Strict, Loose };

std::unique_ptr<NcclDeviceCalls> createHostNcclCalls(HostNcclRules rules);

/// The rules environment variable \p var names: `1` or `strict`, or
/// `loose`; none when it is unset or empty; an error naming the variable
/// and the accepted words for anything else.
Expected<std::optional<HostNcclRules>> hostNcclRulesFromEnv(const char *var);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_UNITTESTS_EXEC_HOSTNCCLCALLS_H
