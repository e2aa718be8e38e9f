//===- Transport.cpp - Transport and stream names -------------------------===//
//
// The stream layouts are spelled as the manifest spells them (program.h's
// table, built from bitpipe/abi/ManifestKeys.def): the compiler's flags
// and attributes and the runtime read one word.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Transport.h"

#include "bitpipe/program.h"

namespace bitpipe::sched {

static_assert(static_cast<int>(TransferStreams::Channel) ==
                      BP_TRANSFER_STREAMS_CHANNEL &&
                  static_cast<int>(TransferStreams::Shared) ==
                      BP_TRANSFER_STREAMS_SHARED &&
                  BP_NUM_TRANSFER_STREAMS == 2,
              "TransferStreams must number the layouts as program.h does");

const char *transportName(Transport transport) {
  return transport == Transport::Mpi ? "mpi" : "nccl";
}

const char *transferStreamsName(TransferStreams streams) {
  return bp_transfer_streams_names[static_cast<int>(streams)];
}

std::optional<TransferStreams> parseTransferStreams(std::string_view name) {
  for (TransferStreams s : {TransferStreams::Channel, TransferStreams::Shared})
    if (name == transferStreamsName(s))
      return s;
  return std::nullopt;
}

std::string transferStreamsChoices() {
  return std::string("'") + transferStreamsName(TransferStreams::Channel) +
         "' or '" + transferStreamsName(TransferStreams::Shared) + "'";
}

} // namespace bitpipe::sched
