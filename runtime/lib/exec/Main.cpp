//===- Main.cpp - main() of a compiled training executable ------*- C++ -*-===//
//
// libBitPipeRuntimeMain: linked into every executable bitpipe-compile
// produces, next to the model object that defines the symbols of
// bitpipe/program.h. All the work is in runTraining (testable without a
// compiled model). The backend is the linked target library's
// createTargetBackend (Backend.h): referenced here, from the first library
// of the link line, so that the target library listed after it supplies it.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "Training.h"
#include "bitpipe/base/MemoryReuse.h"

#include "bitpipe/program.h"

int main(int argc, char **argv) {
  // MPI's non-blocking all-reduce allocates a temporary the size of its
  // bucket on every call; without this, glibc returns it to the kernel and
  // the next steps fault it in again (bitpipe/base/MemoryReuse.h).
  bitpipe::keepFreedMemoryForReuse();
  bitpipe::runtime::CompiledProgram program;
  program.stageEntries = bitpipe_stage_entries;
  program.numStageEntries = bitpipe_num_stage_entries;
  program.rankPrograms = bitpipe_rank_programs;
  program.numRanks = bitpipe_num_ranks;
  program.manifest = bitpipe_manifest;
  program.manifestSize = bitpipe_manifest_size;
  return bitpipe::runtime::runTraining(
      program, bitpipe::runtime::createTargetBackend, argc, argv);
}
