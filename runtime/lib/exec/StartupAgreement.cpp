//===- StartupAgreement.cpp - Ranks stop together at start-up -------------===//

#include "StartupAgreement.h"

#include <cstdio>
#include <vector>

namespace bitpipe::runtime {

void printError(int rank, const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "bitpipe: rank %d: error: %s\n", rank, message.c_str());
  std::fflush(stderr);
}

std::vector<int32_t> gatherFromEveryRank(Communicator &comm, int32_t mine,
                                         const std::string &what) {
  // One slot per rank, summed: afterwards every rank has every value.
  std::vector<int32_t> all(static_cast<size_t>(comm.size()), 0);
  all[comm.rank()] = mine;
  // Host memory: the host transport's (the MPI bootstrap under NCCL).
  Communicator &host = comm.hostCommunicator();
  Expected<RequestHandle> r = host.allReduceStart(
      all.data(), static_cast<int64_t>(all.size()), DType::I32, kWorldGroup);
  Status s = r.isOk() ? host.allReduceWait(*r) : r.status();
  if (!s.isOk())
    comm.abort(1, what + " could not be agreed on: " + s.message());
  return all;
}

bool agreeAllOk(Communicator &comm, const Status &local) {
  std::vector<int32_t> failed = gatherFromEveryRank(
      comm, local.isOk() ? 0 : 1,
      local.isOk()
          ? std::string("start-up checks")
          : "start-up checks (this rank's error: " + local.message() + ")");
  for (size_t k = 0; k < failed.size(); ++k)
    if (failed[k]) {
      if (static_cast<int>(k) == comm.rank())
        printError(comm.rank(), local.message());
      return false;
    }
  return true;
}

} // namespace bitpipe::runtime
