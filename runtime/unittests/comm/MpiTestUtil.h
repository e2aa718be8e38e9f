//===- MpiTestUtil.h - Checks for multi-process tests -----------*- C++ -*-===//
//
// A failed check aborts the whole job through the communicator (MPI_Abort),
// so mpirun exits non-zero and ctest sees the failure from any rank.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_MPI_MPITESTUTIL_H
#define BITPIPE_RUNTIME_UNITTESTS_MPI_MPITESTUTIL_H

#include "comm/mpi/MpiCommunicator.h"

#include <cstdio>
#include <cstdlib>

#define MPI_TEST_CHECK(comm, cond, ...)                                        \
  do {                                                                         \
    if (!(cond))                                                               \
      (comm).abort(2, ::bitpipe::runtime::formatString(                        \
                          "%s:%d: check failed: %s: ", __FILE__, __LINE__,     \
                          #cond) +                                             \
                          ::bitpipe::runtime::formatString(__VA_ARGS__));      \
  } while (0)

#define MPI_TEST_OK(comm, expr)                                                \
  do {                                                                         \
    ::bitpipe::runtime::Status s_ = (expr);                                    \
    MPI_TEST_CHECK(comm, s_.isOk(), "%s", s_.message().c_str());               \
  } while (0)

/// The communicator of a test program, or exit(1) if MPI does not start.
inline std::unique_ptr<bitpipe::runtime::MpiCommunicator>
startMpi(int *argc, char ***argv) {
  auto c = bitpipe::runtime::MpiCommunicator::create(argc, argv);
  if (!c.isOk()) {
    std::fprintf(stderr, "%s\n", c.status().message().c_str());
    std::exit(1);
  }
  // Tests are small: a hang is a bug, report it fast.
  (*c)->setTimeout(20);
  return c.take();
}

#endif // BITPIPE_RUNTIME_UNITTESTS_MPI_MPITESTUTIL_H
