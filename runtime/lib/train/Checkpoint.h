//===- Checkpoint.h - Training checkpoints in safetensors -------*- C++ -*-===//
//
// A checkpoint is one safetensors file (the caller picks the path and the
// parameters: the executor writes the whole model into one file, gathered
// on rank 0, see exec/ModelCheckpoint.h) holding, for every parameter:
//   <name>            the fp32 master weights
//   optim.m.<name>    AdamW's first moment
//   optim.v.<name>    AdamW's second moment
// and in __metadata__: step (AdamW's step counter, which also drives bias
// correction), seed, the model fingerprint, and format = "bitpipe-v1".
// With the seed and step, the data sampler and BERT masking continue where
// they stopped (they are functions of the global micro-batch index), so
// resume is exact.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_CHECKPOINT_H
#define BITPIPE_RUNTIME_TRAIN_CHECKPOINT_H

#include "core/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::runtime {

/// One parameter and its optimizer state, numElements(shape) floats each.
/// Saving reads the buffers; loading writes them.
struct CheckpointParam {
  std::string name;
  std::vector<int64_t> shape;
  float *param = nullptr;
  float *m = nullptr;
  float *v = nullptr;
};

struct CheckpointInfo {
  int64_t step = 0;
  uint64_t seed = 0;
  std::string fingerprint;
};

/// A stable fingerprint of a model's parameters (names and shapes, in
/// order): a checkpoint of another model, or of another partition of this
/// one, is refused at load instead of loading garbage.
std::string modelFingerprint(const std::vector<CheckpointParam> &params);

Status saveCheckpoint(const std::string &path,
                      const std::vector<CheckpointParam> &params,
                      const CheckpointInfo &info);

/// Loads every parameter and its state, after checking the fingerprint
/// against \p expectedFingerprint (skipped if empty). \p info receives the
/// step, seed and fingerprint stored in the file.
Status loadCheckpoint(const std::string &path,
                      const std::vector<CheckpointParam> &params,
                      const std::string &expectedFingerprint,
                      CheckpointInfo *info);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_CHECKPOINT_H
