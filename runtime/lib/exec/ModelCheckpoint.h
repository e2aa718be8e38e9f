//===- ModelCheckpoint.h - One checkpoint file for the whole model -*- C++ -*-===//
//
// A pipeline run keeps each parameter on the ranks of its stage, but its
// checkpoint is one safetensors file for the whole model, in Checkpoint.h's
// format: "<name>" (fp32 weights), "optim.m.<name>", "optim.v.<name>" for
// every parameter of the manifest, in manifest order, and __metadata__
// {format: bitpipe-v2, step, seed, fingerprint, crc32c.*} (Checkpoint.h;
// docs/runtime-abi.md, "Checkpoints"). The fingerprint is that of
// the whole model (names and shapes), not of a partition, so a checkpoint
// written by a 4-rank run resumes on 1 rank or 8, and a checkpoint of a
// different model is refused by name.
//
// Saving: rank 0 gathers each parameter once, from the lowest rank holding
// it (replicas are identical), and writes atomically (temp file + rename):
// an interrupted save leaves the previous checkpoint whole. Loading: each
// rank reads only the parameters it holds.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_MODELCHECKPOINT_H
#define BITPIPE_RUNTIME_EXEC_MODELCHECKPOINT_H

#include "Manifest.h"
#include "ParamStore.h"
#include "comm/Communicator.h"
#include "train/Checkpoint.h"

#include <string>
#include <vector>

namespace bitpipe::runtime {

/// The fingerprint of the whole model of \p manifest.
std::string manifestFingerprint(const Manifest &manifest);

/// The whole model's state on rank 0, by manifest index.
struct GatheredModel {
  std::vector<std::vector<float>> weights, m, v; // m, v: with moments only
};

/// Collective: rank 0 receives every parameter's weights (and, with
/// \p moments, AdamW's moments) from its lowest holder (replicas are
/// identical); other ranks send theirs and return ok.
Status gatherModelState(Communicator &comm, const Manifest &manifest,
                        ParamStore &store, bool moments, GatheredModel *out);

/// Collective. Rank 0 writes \p path; the returned status is rank 0's write
/// (other ranks return ok once their part is sent): agree on it.
Status saveModelCheckpoint(Communicator &comm, const Manifest &manifest,
                           ParamStore &store, const std::string &path,
                           const CheckpointInfo &info);

/// Loads this rank's parameters and moments from \p path into the host
/// image of \p store (the caller moves them to the target), checking the
/// fingerprint; \p info receives the step and seed.
Status loadModelCheckpoint(const Manifest &manifest, ParamStore &store,
                           const std::string &path, CheckpointInfo *info);

/// Writes \p path with the parameters \p store holds (no moments), for
/// tests that compare every rank's copy. Collective over every rank (a
/// target that shards the master weights gathers them first).
Status dumpRankParams(Communicator &comm, const Manifest &manifest,
                      ParamStore &store, const std::string &path, int64_t step);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_MODELCHECKPOINT_H
