//===- ModelConfig.h - Transformer model configurations ---------*- C++ -*-===//
//
// The hyper-parameters of a GPT-, BERT- or LLaMA-style model, read from
// bitpipe's own JSON schema or from a Hugging Face `config.json` of a model
// type bitpipe builds (lib/Import/ConfigSchemas.h lists them).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_IMPORT_MODELCONFIG_H
#define BITPIPE_IMPORT_MODELCONFIG_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>

namespace bitpipe {

enum class ModelFamily { GPT, BERT, LLaMA };

/// "gpt" / "bert" / "llama" (and "gpt2" for GPT when parsing).
llvm::StringRef stringifyModelFamily(ModelFamily family);
std::optional<ModelFamily> parseModelFamily(llvm::StringRef name);
/// The names parseModelFamily accepts, for messages: "\"gpt\", ... or ...".
std::string modelFamilyList();

/// Where a GPT/BERT layer's layer norms sit (docs/models.md). Pre: in front
/// of each sublayer, with a final norm (GPT-2, bitpipe's own BERT). Post:
/// after each residual add, with one after the embeddings and no final norm
/// (the original BERT, Hugging Face's BertForMaskedLM).
enum class NormPosition { Pre, Post };

/// "pre" / "post".
llvm::StringRef stringifyNormPosition(NormPosition position);
std::optional<NormPosition> parseNormPosition(llvm::StringRef name);

/// Which GELU a GPT/BERT MLP (and BERT's masked-LM head) applies
/// (docs/models.md): the tanh approximation (GPT-2's "gelu_new", bitpipe's
/// default) or the exact erf form (Hugging Face BERT's "gelu"). It becomes
/// nn.gelu's form.
enum class GeluForm { Tanh, Erf };

/// "tanh" / "erf".
llvm::StringRef stringifyGeluForm(GeluForm form);
std::optional<GeluForm> parseGeluForm(llvm::StringRef name);

struct ModelConfig {
  std::string name;           ///< For the function name and messages.
  ModelFamily family = ModelFamily::GPT;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t vocab = 0;
  int64_t maxPositions = 0;
  int64_t seqLen = 0;         ///< Tokens per sample.
  int64_t microbatchSize = 0; ///< Samples per micro-batch.
  /// The norms' epsilon: layer norms (GPT, BERT) or RMS norms (LLaMA).
  double layerNormEpsilon = 1e-5;
  /// BERT only: bitpipe's own configs say (default pre), a Hugging Face
  /// BERT is post-LN. GPT and LLaMA are pre-norm.
  NormPosition normPosition = NormPosition::Pre;
  /// GPT and BERT: bitpipe's own configs say (default tanh); Hugging Face
  /// configs by their activation's name. LLaMA's MLP is SwiGLU instead.
  GeluForm gelu = GeluForm::Tanh;
  /// Dropout probabilities, each in [0, 1); 0 is no dropout there
  /// (docs/models.md, "Dropout"): after the embeddings, on the attention
  /// probabilities, and on each sublayer's output before its residual add.
  /// LLaMA configs have only the attention's.
  double embeddingDropout = 0, attentionDropout = 0, residualDropout = 0;
  bool hasDropout() const {
    return embeddingDropout > 0 || attentionDropout > 0 || residualDropout > 0;
  }

  // LLaMA only (docs/llama.md); the other families ignore them.
  int64_t kvHeads = 0;          ///< Key/value heads; < heads: grouped-query.
  int64_t intermediateSize = 0; ///< Width of the SwiGLU MLP.
  double ropeTheta = 10000.0;   ///< The rotary embedding's base.
  bool tieEmbeddings = false;   ///< Output projection = the token embedding.
};

/// Values given on the command line; they override the file's.
struct ModelConfigOverrides {
  std::optional<ModelFamily> family;
  std::optional<int64_t> seqLen;
  std::optional<int64_t> microbatchSize;
};

/// Parses `contents` (the text of `path`, which is used only in messages)
/// as bitpipe's schema or as a Hugging Face config.json, and checks every
/// field against docs/models.md's rules and limits. Errors name the file
/// and the field. Never crashes on any text (the fuzz target calls it).
llvm::Expected<ModelConfig>
parseModelConfig(llvm::StringRef path, llvm::StringRef contents,
                 const ModelConfigOverrides &overrides = {});

/// Reads and parses the file at `path`.
llvm::Expected<ModelConfig>
loadModelConfig(llvm::StringRef path,
                const ModelConfigOverrides &overrides = {});

} // namespace bitpipe

#endif // BITPIPE_IMPORT_MODELCONFIG_H
