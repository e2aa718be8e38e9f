//===- TransferStreams.h - Which transfers share a queue --------*- C++ -*-===//
//
// The manifest's schedule.transfer_streams and schedule.channels (program.h),
// as the transports take them (Communicator::openChannels). Here, in comm/,
// so that the manifest's reader (exec/) and the transports share one type
// without comm/ knowing the manifest.
//
// Under MPI's rules a send never waits for its receive, so how transfers
// are queued does not matter. Under NCCL's a send completes only once its
// receive is posted, a group completes as one unit, and one communicator
// runs its units in issue order: which transfers share a communicator (and
// its stream) decides whether a program deadlocks. The compiler chooses
// the layout and says so in the manifest; docs/runtime-abi.md,
// "Communication on each target", says what each means on the CUDA target.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_TRANSFERSTREAMS_H
#define BITPIPE_RUNTIME_COMM_TRANSFERSTREAMS_H

#include <utility>

namespace bitpipe::runtime {

/// program.h's bp_transfer_streams (the manifest's words "channel",
/// "shared"); the values are its (Communicator.cpp checks them: program.h
/// is not included here, as its words clash with bitpipe/comm.h's, which
/// the C API includes with this).
enum class TransferStreams {
  /// One communicator and stream per directed channel sender -> receiver:
  /// a batch holds one channel's transfers.
  Channel = 0,
  /// Every transfer of a rank on the world's communicator and one stream:
  /// a batch is the transfers between two compute steps.
  Shared = 1,
};

const char *transferStreamsName(TransferStreams streams);

/// A directed channel {sender, receiver}: of pipeline ranks in the
/// manifest, of world ranks where a transport takes it.
using Channel = std::pair<int, int>;

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_TRANSFERSTREAMS_H
