//===- DropoutSites.h - Where a model's dropouts are ------------*- C++ -*-===//
//
// The numbering of a GPT/BERT/LLaMA model's dropout sites
// (docs/training-semantics.md, "Dropout"): the importer gives each dropout
// its number, and the manifest writer reads the model's probabilities back
// from the numbers (for a Hugging Face config.json), so both use this one
// definition. A site's number keys its mask: two sites of one model never
// share one.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_IR_DROPOUTSITES_H
#define BITPIPE_DIALECT_NN_IR_DROPOUTSITES_H

#include <cstdint>

namespace bitpipe::nn {

/// What a site drops: the embeddings' output, a layer's attention
/// probabilities, or the output of one of its two sublayers before the
/// residual add.
enum class DropoutSiteKind { Embedding, Attention, AttentionOutput, MlpOutput };

inline int64_t embeddingDropoutSite() { return 0; }
inline int64_t attentionDropoutSite(int64_t layer) { return 3 * layer + 1; }
inline int64_t attentionOutputDropoutSite(int64_t layer) {
  return 3 * layer + 2;
}
inline int64_t mlpOutputDropoutSite(int64_t layer) { return 3 * layer + 3; }

/// The kind of site \p site (>= 0).
inline DropoutSiteKind dropoutSiteKind(int64_t site) {
  if (site == 0)
    return DropoutSiteKind::Embedding;
  switch ((site - 1) % 3) {
  case 0:
    return DropoutSiteKind::Attention;
  case 1:
    return DropoutSiteKind::AttentionOutput;
  default:
    return DropoutSiteKind::MlpOutput;
  }
}

} // namespace bitpipe::nn

#endif // BITPIPE_DIALECT_NN_IR_DROPOUTSITES_H
