//===- HuggingFace.h - Hugging Face checkpoints: names and layouts -*- C++ -*-===//
//
// The one definition of how bitpipe's parameters correspond to the tensors
// of a Hugging Face checkpoint of GPT-2 (GPT2LMHeadModel), BERT
// (BertForMaskedLM) and LLaMA / Mistral (LlamaForCausalLM), used both to
// load one (--load) and to write one (--save-hf); docs/huggingface.md
// lists the correspondence and what does not carry over.
//
// A mapping gives, for every bitpipe parameter, the Hugging Face tensors it
// is made of: their rows stacked in order (the fused q/k/v projection from
// separate q, k and v; GPT-2's fused c_attn is one part), each part
// transposed when the file stores it [in, out] (GPT-2's Conv1D), plus, for
// BERT's position table, the token-type row that bitpipe folds into it.
// Loading assembles a parameter from its parts; writing splits it into
// them, so a round trip bitpipe -> Hugging Face -> bitpipe is bit-exact.
//
// Names are held as the *ForCausalLM / *ForMaskedLM classes write them
// ("transformer.h.0.attn.c_attn.weight", "model.layers.0...", "bert...");
// a file written by the base model class (GPT2Model, LlamaModel, BertModel,
// as the hub's gpt2 checkpoint is) names them without that prefix, which
// HfCheckpoint accepts too.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_HUGGINGFACE_H
#define BITPIPE_RUNTIME_TRAIN_HUGGINGFACE_H

#include "Safetensors.h"
#include "core/Status.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace bitpipe::runtime {

/// The Hugging Face model types bitpipe maps ("model_type" of config.json).
enum class HfModelType { Gpt2, Bert, Llama };

const char *hfModelTypeName(HfModelType type);

/// Where a BERT's layer norms sit (docs/models.md): pre-LN is bitpipe's
/// own BERT, a different function of Hugging Face's weights; post-LN is
/// BertForMaskedLM's graph.
enum class HfNormPosition { Pre, Post };

/// The sizes the correspondence and config.json need.
struct HfModelSizes {
  HfModelType type = HfModelType::Gpt2;
  /// BERT only; GPT-2 and LLaMA are pre-norm on both sides.
  HfNormPosition normPosition = HfNormPosition::Pre;
  int64_t layers = 0, hidden = 0, heads = 0, kvHeads = 0, vocab = 0,
          maxPositions = 0, intermediate = 0;
  /// LLaMA: the output projection is the token embedding (no head.weight).
  /// GPT-2 and BERT always tie it.
  bool tiedHead = true;
  double normEpsilon = 1e-5;
  double ropeTheta = 10000; // LLaMA
  /// GPT-2 and BERT: transformers' name of the model's GELU, "gelu_new"
  /// (tanh form) or "gelu" (erf form); the importer reads the same names
  /// (lib/Import/ConfigSchemas.h).
  std::string geluName = "gelu_new";
  /// The dropout probabilities (docs/models.md, "Dropout"), 0: none;
  /// GPT-2's three, BERT's hidden (embedding and residual, one in BERT)
  /// and attention, LLaMA's attention.
  double embeddingDropout = 0, attentionDropout = 0, residualDropout = 0;
};

/// One Hugging Face tensor that makes up (part of) a bitpipe parameter.
struct HfPart {
  std::string name;           // as the *For... class writes it
  std::vector<int64_t> shape; // as the file holds it
  bool transposed = false;    // stored [in, out] (GPT-2's Conv1D)
  /// The rows of the bitpipe parameter this part gives.
  int64_t rows() const { return transposed ? shape[1] : shape[0]; }
};

struct HfParamMapping {
  std::string param;          // bitpipe's name
  std::vector<int64_t> shape; // bitpipe's shape
  std::vector<HfPart> parts;  // stacked by rows, in order
  /// BERT's token_type_embeddings [2, H]: bitpipe has one segment, so row 0
  /// is added to every row of the position table on load; written as zeros.
  std::optional<HfPart> foldedRow;
};

struct HfMapping {
  HfModelType type = HfModelType::Gpt2;
  /// The base model's prefix ("transformer.", "bert.", "model."), which a
  /// base-model file leaves out.
  std::string prefix;
  std::vector<HfParamMapping> params;
  /// Tensors a Hugging Face file may hold that bitpipe has no use for:
  /// buffers (GPT-2's causal masks, rotary inv_freq, position ids), tied
  /// copies of the token embedding, BERT's pooler and next-sentence head.
  std::set<std::string> ignored;

  const HfParamMapping *find(const std::string &param) const;
};

/// The correspondence for \p sizes. Fails, naming the size, when the sizes
/// cannot describe the model (heads not dividing hidden, kv_heads not
/// dividing heads...).
Expected<HfMapping> huggingFaceMapping(const HfModelSizes &sizes);

/// config.json for \p sizes, as `transformers` reads it for the model type
/// (docs/huggingface.md lists the fields).
std::string huggingFaceConfigJson(const HfModelSizes &sizes);

/// A Hugging Face checkpoint: one safetensors file, or the index
/// "*.safetensors.index.json" ({"weight_map": {tensor: shard file}}) and
/// its shards, named relative to the index's directory.
class HfCheckpoint {
public:
  /// Opens \p path (an index when its name ends in ".index.json") and
  /// every shard the index names, reading their headers.
  static Expected<std::unique_ptr<HfCheckpoint>> open(const std::string &path);

  const std::string &path() const { return path_; }
  /// Every tensor name of the checkpoint.
  std::vector<std::string> names() const;
  /// The tensor \p name (as the *For... class writes it, or without the
  /// mapping's prefix), or null; \p file receives the file holding it.
  const SafetensorsEntry *find(const HfMapping &mapping,
                               const std::string &name,
                               const SafetensorsReader **file) const;

  /// Checks the whole checkpoint against \p mapping, reading headers only:
  /// every tensor is mapped or ignored, every part is present with its
  /// shape and a float dtype (F32, BF16, F16). Each error names the file,
  /// the tensor and, for a shape, the one expected and the one found.
  Status check(const HfMapping &mapping) const;

  /// Reads bitpipe parameter \p m into \p out (numElements(m.shape) floats).
  Status read(const HfMapping &mapping, const HfParamMapping &m,
              float *out) const;

private:
  HfCheckpoint() = default;
  std::string path_;
  std::vector<std::unique_ptr<SafetensorsReader>> files_;
  std::map<std::string, size_t> fileOf_; // tensor -> index into files_
};

/// Writes \p mapping's tensors to DIR/model.safetensors (metadata
/// {"format": "pt"}, which transformers requires) and \p configJson to
/// DIR/config.json, each atomically (docs/files.md), creating DIR (one
/// level) if missing. \p paramData gives each bitpipe parameter's floats.
Status writeHuggingFace(const std::string &dir, const HfMapping &mapping,
                        const std::function<const float *(
                            const std::string &param)> &paramData,
                        const std::string &configJson);

/// Whether \p path names a Hugging Face checkpoint rather than a bitpipe
/// one: an index file, or a safetensors file that is neither of a bitpipe
/// format ("format": "bitpipe-v...") nor holds the tensor \p firstParam
/// (bitpipe's first parameter; docs/huggingface.md).
Expected<bool> isHuggingFaceCheckpoint(const std::string &path,
                                       const std::string &firstParam);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_HUGGINGFACE_H
