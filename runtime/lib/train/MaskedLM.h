//===- MaskedLM.h - BERT masked-LM batches ----------------------*- C++ -*-===//
//
// BERT's masking (Devlin et al. 2019, as Megatron and HF's collator): each
// position is selected with probability maskProb (0.15); a selected token is
// replaced by the mask token 80% of the time, by a uniformly random token 10%,
// and kept 10%; its label is the original token. Unselected positions get
// the label BP_IGNORE_INDEX (-100), which the cross-entropy kernel skips.
//
// Every decision is drawn from (seed, global micro-batch index, position), so
// the masks of a micro-batch are the same whichever rank builds them, and a
// resumed run masks exactly as the uninterrupted one would have.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_MASKEDLM_H
#define BITPIPE_RUNTIME_TRAIN_MASKEDLM_H

#include "core/Status.h"

#include <cstdint>
#include <vector>

namespace bitpipe::runtime {

struct MaskedLMConfig {
  int64_t vocabSize = 0;
  int32_t maskTokenId = 0; // [MASK]; must be in [0, vocabSize)
  double maskProb = 0.15;
  uint64_t seed = 0;
  /// Ids never selected (e.g. [CLS], [SEP], [PAD]).
  std::vector<int32_t> specialTokens;
};

/// Builds inputs and labels (both [n] int32) from the \p n tokens of one
/// micro-batch (all its rows, flattened). \p inputs may alias \p tokens.
Status buildMaskedLMBatch(const int32_t *tokens, int64_t n,
                          uint64_t microBatch, const MaskedLMConfig &config,
                          int32_t *inputs, int32_t *labels);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_MASKEDLM_H
