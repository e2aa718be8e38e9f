//===- Transport.h - How a rank's transfers run: MPI's rules or NCCL's -*- C++ -*-===//
//
// Per-rank programs that are right in the abstract (every send matched, each
// channel in one order, no cycle of data dependencies) can still hang on a
// real transport. Two things decide it (docs/nccl-transfers.md):
//
//  - the rules. Under MPI a non-blocking send is posted and the program goes
//    on; nothing waits for the receiver until the step's end (buffered, as
//    far as a deadlock is concerned). Under NCCL a send larger than its
//    staging buffer completes only once its receive is posted (rendezvous),
//    the transfers of one ncclGroupStart/End run as one unit that completes
//    when all of them have, and one communicator's units run one after
//    another, in the order they were issued;
//  - the streams: which of a rank's transfers share a communicator (and its
//    stream), and so one queue.
//
// Transport says which rules a check or a simulation applies; TransferStreams
// is part of the programs themselves (the compiler chooses it and the CUDA
// runtime issues by it). Their names are the manifest's words
// (bitpipe/abi/ManifestKeys.def), so a flag, a pass option, an IR attribute
// and the runtime spell them alike.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_TRANSPORT_H
#define BITPIPE_SCHEDULE_TRANSPORT_H

#include <optional>
#include <string>
#include <string_view>

namespace bitpipe::sched {

/// The rules point-to-point transfers run under.
enum class Transport {
  /// MPI's: a send never waits for its receive (the CPU target).
  Mpi,
  /// NCCL's: rendezvous sends, batches as units, one queue per stream (the
  /// CUDA target with more than one rank).
  Nccl,
};

/// Which of a rank's transfers share an NCCL communicator and its stream.
enum class TransferStreams {
  /// One communicator and stream per directed channel (sender -> receiver):
  /// a batch is one hand-off. The compiler's choice: under NCCL's rules
  /// such programs run whenever they run with buffered sends.
  Channel,
  /// One communicator and stream for all of a rank's transfers; a batch is
  /// the transfers between two compute steps. Interleaved 1F1B, Chimera
  /// and bitpipe-zb deadlock so.
  Shared,
};

/// "mpi", "nccl".
const char *transportName(Transport transport);
/// "channel", "shared": the manifest's words.
const char *transferStreamsName(TransferStreams streams);
std::optional<TransferStreams> parseTransferStreams(std::string_view name);
/// "'channel' or 'shared'", for messages that list what is accepted.
std::string transferStreamsChoices();

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_TRANSPORT_H
