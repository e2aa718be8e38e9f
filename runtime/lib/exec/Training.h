//===- Training.h - The training loop of a compiled program -----*- C++ -*-===//
//
// runTraining is the whole life of one rank of a training job: MPI, flags,
// the manifest, start-up checks (every failure a message and a non-zero
// exit on every rank, nothing overwritten), initial or loaded parameters,
// the steps (the rank program once per step), the per-step log line and
// metrics, checkpoints, the trace. Main.cpp (libBitPipeRuntimeMain) calls
// it with the symbols a compiled model object defines; tests call it with
// hand-written programs.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_TRAINING_H
#define BITPIPE_RUNTIME_EXEC_TRAINING_H

#include "bitpipe/program.h"

#include <cstdint>
#include <memory>

namespace bitpipe::runtime {

/// The symbols of program.h, as pointers and sizes.
struct CompiledProgram {
  const bp_stage_entry_t *stageEntries = nullptr;
  int32_t numStageEntries = 0;
  /// One per pipeline rank (program.h): numRanks = schedule.devices.
  const bp_rank_program_t *rankPrograms = nullptr;
  int32_t numRanks = 0;
  const char *manifest = nullptr;
  int64_t manifestSize = 0;
};

class Backend;
/// Makes the backend of the target the program was linked for (Backend.h's
/// createTargetBackend).
using BackendFactory = std::unique_ptr<Backend> (*)();

/// Runs one rank of the job (the process's MPI rank) on the target
/// \p createBackend makes. Returns the process exit code: 0 on success and
/// for --help, 2 for bad flags, 1 for any other start-up or I/O failure
/// (a manifest for another target is one). Failures during a step abort
/// the job instead.
int runTraining(const CompiledProgram &program, BackendFactory createBackend,
                int argc, char **argv);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_TRAINING_H
