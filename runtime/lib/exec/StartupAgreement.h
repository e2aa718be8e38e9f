//===- StartupAgreement.h - Ranks stop together at start-up -----*- C++ -*-===//
//
// Start-up checks (the data file, the checkpoint, output directories) run on
// every rank, and may fail on some ranks only. Before anyone goes on, the
// ranks agree: if any failed, all return the failure, so that every process
// of the job exits non-zero with no rank left waiting for the others. The
// message is printed once, by the lowest rank that failed.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_STARTUPAGREEMENT_H
#define BITPIPE_RUNTIME_EXEC_STARTUPAGREEMENT_H

#include "comm/Communicator.h"
#include "core/Status.h"

#include <string>
#include <vector>

namespace bitpipe::runtime {

/// Collective over the world. True on every rank iff \p local is ok on
/// every rank; otherwise the lowest failing rank prints
/// "bitpipe: rank R: error: MESSAGE" to stderr and all return false.
bool agreeAllOk(Communicator &comm, const Status &local);

/// Collective over the world: every rank's \p mine, indexed by rank, on
/// every rank (one all-reduce of world-size int32 over the host transport).
/// A transport failure aborts the job, naming \p what.
std::vector<int32_t> gatherFromEveryRank(Communicator &comm, int32_t mine,
                                         const std::string &what);

/// Prints "bitpipe: rank R: error: MESSAGE" to stderr.
void printError(int rank, const std::string &message);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_STARTUPAGREEMENT_H
