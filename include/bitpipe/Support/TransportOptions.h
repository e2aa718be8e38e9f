//===- TransportOptions.h - Transport and stream layouts as options -*- C++ -*-===//
//
// The values of an llvm::cl flag or an MLIR pass option of type
// sched::Transport or sched::TransferStreams, named as the schedule library
// names them (Transport.h), so that bitpipe-compile's flags, the passes'
// options, the IR attribute and the manifest spell them alike.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_TRANSPORTOPTIONS_H
#define BITPIPE_SUPPORT_TRANSPORTOPTIONS_H

#include "bitpipe/Schedule/Transport.h"

#include "llvm/Support/CommandLine.h"

namespace bitpipe {

inline llvm::cl::ValuesClass transportValues() {
  using sched::Transport;
  using llvm::cl::OptionEnumValue;
  return llvm::cl::ValuesClass{
      OptionEnumValue{sched::transportName(Transport::Mpi),
                      static_cast<int>(Transport::Mpi),
                      "MPI's: a send never waits for its receive"},
      OptionEnumValue{sched::transportName(Transport::Nccl),
                      static_cast<int>(Transport::Nccl),
                      "NCCL's: rendezvous sends, batches as units, each "
                      "stream in order"}};
}

inline llvm::cl::ValuesClass transferStreamsValues() {
  using sched::TransferStreams;
  using llvm::cl::OptionEnumValue;
  return llvm::cl::ValuesClass{
      OptionEnumValue{sched::transferStreamsName(TransferStreams::Channel),
                      static_cast<int>(TransferStreams::Channel),
                      "one NCCL communicator and stream per directed channel; "
                      "each hand-off its own batch"},
      OptionEnumValue{sched::transferStreamsName(TransferStreams::Shared),
                      static_cast<int>(TransferStreams::Shared),
                      "one communicator and stream per rank; a batch holds "
                      "the transfers between two compute steps"}};
}

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_TRANSPORTOPTIONS_H
