//===- Agree.cpp - All ranks stop together on a start-up error --*- C++ -*-===//

#include "Agree.h"

#include <cstdio>
#include <vector>

namespace bitpipe::runtime {

void printError(int rank, const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "bitpipe: rank %d: error: %s\n", rank, message.c_str());
  std::fflush(stderr);
}

bool agreeAllOk(Communicator &comm, const Status &local) {
  // One slot per rank, summed: afterwards every rank knows who failed.
  std::vector<int32_t> failed(static_cast<size_t>(comm.size()), 0);
  failed[comm.rank()] = local.isOk() ? 0 : 1;
  // Host memory: the host transport's (the MPI bootstrap under NCCL).
  Communicator &host = comm.hostCommunicator();
  Expected<RequestHandle> r = host.allReduceStart(
      failed.data(), static_cast<int64_t>(failed.size()), DType::I32,
      kWorldGroup);
  Status s = r.isOk() ? host.allReduceWait(*r) : r.status();
  if (!s.isOk())
    comm.abort(1, "start-up checks could not be agreed on: " + s.message() +
                      (local.isOk() ? "" : "; this rank's error: " +
                                               local.message()));
  for (size_t k = 0; k < failed.size(); ++k)
    if (failed[k]) {
      if (static_cast<int>(k) == comm.rank())
        printError(comm.rank(), local.message());
      return false;
    }
  return true;
}

} // namespace bitpipe::runtime
