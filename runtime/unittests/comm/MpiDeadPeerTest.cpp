//===- MpiDeadPeerTest.cpp - A dead or stuck peer must not hang the job ---===//
//
// Two ranks. Rank 0 waits for a message rank 1 never sends:
//   stall: rank 1 sleeps far longer than the timeout (a hung peer);
//   kill:  rank 1 kills itself with SIGKILL (a crashed peer).
// Rank 0's wait must return ErrorCode::Timeout after BITPIPE_COMM_TIMEOUT
// seconds, printing the rank, peer and operation; rank 0 then aborts, and
// mpirun must exit non-zero, killing rank 1. The ctest wrapper
// (expect-abort.sh) checks the exit code, the message and the time taken.
// Exiting 0 (the wait "succeeding") fails the test.
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtil.h"

#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <unistd.h>

using namespace bitpipe::runtime;

int main(int argc, char **argv) {
  auto c = MpiCommunicator::create(&argc, &argv);
  if (!c.isOk())
    return 1;
  Communicator &comm = **c;
  bool kill = argc > 1 && std::strcmp(argv[1], "kill") == 0;
  // The timeout comes from BITPIPE_COMM_TIMEOUT (set by the test).
  Status s = comm.barrier(kWorldGroup); // both ranks are up
  if (!s.isOk())
    comm.abort(4, s.message());

  if (comm.rank() == 1) {
    if (kill)
      std::raise(SIGKILL);
    std::this_thread::sleep_for(std::chrono::seconds(40));
    return 0;
  }
  float buf[16];
  auto h = comm.recv(buf, 16, DType::F32, 1, 7);
  if (!h.isOk())
    comm.abort(5, h.status().message());
  auto start = std::chrono::steady_clock::now();
  s = comm.wait(*h);
  double waited = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (s.isOk()) {
    std::fprintf(stderr, "rank 0: recv from a dead peer completed?\n");
    return 0; // the wrapper fails on exit code 0
  }
  // Report, then take the whole job down: the abort path under test.
  comm.abort(s.code() == ErrorCode::Timeout ? 3 : 6,
             formatString("giving up after %.1f s: %s", waited,
                          s.message().c_str()));
}
