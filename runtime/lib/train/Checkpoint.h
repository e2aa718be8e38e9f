//===- Checkpoint.h - Training checkpoints in safetensors -------*- C++ -*-===//
//
// A checkpoint is one safetensors file (the caller picks the path and the
// parameters: the executor writes the whole model into one file, gathered
// on rank 0, see exec/ModelCheckpoint.h) holding, for every parameter:
//   <name>            the fp32 master weights
//   optim.m.<name>    AdamW's first moment
//   optim.v.<name>    AdamW's second moment
// and in __metadata__: step (AdamW's step counter, which also drives bias
// correction), seed, the model fingerprint, format = "bitpipe-v2", and the
// integrity data: "crc32c.<tensor>" for every tensor (CRC-32C of its data
// bytes, core/Crc32c.h) and "crc32c.__metadata__" (of the other metadata
// entries). With the seed and step, the data sampler and BERT masking
// continue where they stopped (they are functions of the global
// micro-batch index), so resume is exact.
//
// What a checkpoint may hold is checked both ways (docs/runtime-abi.md,
// "Checkpoints"; docs/training-semantics.md, "Non-finite values"): every
// weight and moment finite, every second moment >= 0, the step a decimal
// integer in [0, 2^62], the seed a decimal uint64. Saving refuses state
// that breaks this (the old file stays as it was); loading refuses a file
// that breaks it, or whose checksums do not match, naming the tensor and
// the first bad element. "bitpipe-v1" files (before checksums) still load,
// unverified, and say so in CheckpointInfo::unverifiedReason.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_CHECKPOINT_H
#define BITPIPE_RUNTIME_TRAIN_CHECKPOINT_H

#include "core/Status.h"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "train/OptimizerSettings.h"

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
  /// The settings the run trained with (metadata "optimizer.<name>",
  /// forEachOptimizerSetting); none in files written before they were
  /// stored.
  std::optional<OptimizerSettings> optimizer;
  /// Set by loadCheckpoint when the file carries no checksums (a
  /// "bitpipe-v1" file): why its data could not be verified, for a warning.
  std::string unverifiedReason;
};

/// The largest step a checkpoint may hold: far beyond any run, and small
/// enough that step arithmetic (step + 1, step * micro-batches) cannot wrap.
constexpr int64_t kMaxCheckpointStep = int64_t(1) << 62;

/// The format this build writes, and every format it reads.
extern const char *const kCheckpointFormat;

/// The three arrays a checkpoint holds per parameter.
enum class StateArray { Weights, FirstMoments, SecondMoments };

/// The checkpoint's name of \p param's \p array: "<name>",
/// "optim.m.<name>", "optim.v.<name>".
std::string stateTensorName(const std::string &param, StateArray array);

/// Whether \p x may stand in \p array of a checkpoint: finite, and >= 0 in
/// the second moments.
inline bool isCheckpointValue(float x, StateArray array) {
  return std::isfinite(x) && !(array == StateArray::SecondMoments && x < 0.0f);
}

/// An element that a checkpoint may not hold: which array, its index in
/// the tensor, its value.
struct InvalidState {
  StateArray array = StateArray::Weights;
  int64_t index = 0;
  float value = 0.0f;
};

/// The first element among \p n weights \p w, first moments \p m and
/// second moments \p v, in that order (all of \p w first), that a
/// checkpoint may not hold; none when every one may.
std::optional<InvalidState> firstInvalidState(const float *w, const float *m,
                                              const float *v, int64_t n);

/// The error checkCheckpointValues reports for \p param holding \p bad
/// (wherever that was found: the CUDA target finds it on the device).
Status invalidStateError(const std::string &param, const InvalidState &bad);

/// Whether \p p's weights and moments are what a checkpoint may hold
/// (finite; second moments >= 0). The error names the tensor as the file
/// names it ("<name>", "optim.m.<name>", "optim.v.<name>"), the first bad
/// element's index and its value.
Status checkCheckpointValues(const CheckpointParam &p);

/// A stable fingerprint of a model's parameters (names and shapes, in
/// order): a checkpoint of another model, or of another partition of this
/// one, is refused at load instead of loading garbage.
std::string modelFingerprint(const std::vector<CheckpointParam> &params);

/// Refuses (writing nothing) when checkCheckpointValues fails for a
/// parameter or the step is out of range.
Status saveCheckpoint(const std::string &path,
                      const std::vector<CheckpointParam> &params,
                      const CheckpointInfo &info);

/// Loads every parameter and its state, after checking the format, the
/// metadata's checksum and the fingerprint against \p expectedFingerprint
/// (skipped if empty); each tensor is checked against its checksum and by
/// checkCheckpointValues. \p info receives the step, seed and fingerprint
/// stored in the file. On failure the buffers may hold part of the file.
Status loadCheckpoint(const std::string &path,
                      const std::vector<CheckpointParam> &params,
                      const std::string &expectedFingerprint,
                      CheckpointInfo *info);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_CHECKPOINT_H
