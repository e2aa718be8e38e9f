//===- InputLoader.h - Micro-batches for bp_rt_load_input -------*- C++ -*-===//
//
// What bitpipe.load_input reads: the tokens or the targets/labels of one
// micro-batch of the current step, for this rank's data-parallel copy, or
// its dropout key.
//
// The sample is chosen by the global micro-batch index (TokenDataset.h):
// micro-batch mb of copy c in step s is global (s * K + c) * N + mb for K
// copies of N micro-batches. One process running N * K micro-batches per
// step covers exactly the same indices (s * N * K + m, m = c * N + mb), so
// data parallelism changes who reads a sample, never which samples a step
// trains on. GPT: tokens and next-token targets; BERT: the masked inputs and
// their labels (MaskedLM.h), both rebuilt from the same rows, so the rank
// holding the first stage and the one holding the last agree without
// talking. A micro-batch's dropout key is the seed and that same global
// index (core/Dropout.h), so whichever rank runs a stage of it draws the
// same masks, under every schedule and data-parallel width.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_INPUTLOADER_H
#define BITPIPE_RUNTIME_EXEC_INPUTLOADER_H

#include "Manifest.h"
#include "train/MaskedLM.h"
#include "train/TokenDataset.h"

#include <memory>
#include <vector>

namespace bitpipe::runtime {

class InputLoader {
public:
  /// Opens \p path and checks that it fits the model: long enough for one
  /// sample, every token below the vocabulary (one pass over the file at
  /// start-up, so that a bad id is a start-up error, not a crash at step
  /// 10000).
  static Expected<std::unique_ptr<InputLoader>>
  open(const Manifest &manifest, const std::string &path, TokenDType dtype,
       uint64_t seed, SamplingMode mode);

  /// Fills \p out with the \p count int32 of \p kind of micro-batch \p mb
  /// (numbered within the copy's step) of step \p step of data-parallel
  /// copy \p dpCopy (Manifest::copyOf): its ids (count = microbatch_size x
  /// seq_len), or its dropout key (count = kDropoutKeyWords, from the seed
  /// the loader was opened with).
  Status load(int64_t step, int dpCopy, int64_t mb, InputKind kind,
              int32_t *out, int64_t count) const;

private:
  InputLoader(const Manifest &manifest) : manifest_(manifest) {}

  const Manifest &manifest_;
  std::unique_ptr<TokenDataset> data_;
  std::unique_ptr<BatchSampler> sampler_;
  MaskedLMConfig mask_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_INPUTLOADER_H
