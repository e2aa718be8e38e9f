//===- ConfigSchemas.h - The config kinds the importer accepts --*- C++ -*-===//
//
// The one table of what a config file may describe: bitpipe's own schema and
// the Hugging Face model types whose graph bitpipe builds, each with its
// JSON keys and the fields that would change the graph, with the values
// bitpipe builds (docs/models.md, "Hugging Face configs"). Supporting a new
// Hugging Face model type is one row in kHuggingFaceSchemas (and its graph
// in ModelBuilder.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_IMPORT_CONFIGSCHEMAS_H
#define BITPIPE_LIB_IMPORT_CONFIGSCHEMAS_H

#include "bitpipe/Import/ModelConfig.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace bitpipe {

/// A field that changes the graph, and the values bitpipe builds, as JSON
/// text ("true", "null", "\"gelu_new\""); kFourTimesHidden stands for the
/// number 4 * hidden, kHeadDim for hidden / heads. An absent field means
/// bitpipe's graph.
struct GraphField {
  llvm::StringLiteral key;
  llvm::ArrayRef<llvm::StringLiteral> accepted;
  llvm::StringLiteral why; ///< What bitpipe builds, for the message.
};
constexpr llvm::StringLiteral kFourTimesHidden = "4*hidden";
constexpr llvm::StringLiteral kHeadDim = "hidden/heads";

/// The JSON keys of one schema (null: the schema has no such key).
struct ConfigSchema {
  const char *family, *layers, *hidden, *heads, *vocab, *maxPositions;
  const char *seqLen, *microbatchSize, *epsilon;
  llvm::ArrayRef<GraphField> graphFields;
  // The LLaMA family's sizes (docs/llama.md): key/value heads (optional,
  // default: heads), the MLP width (required), the rotary base (optional,
  // default 10000), whether the output projection is tied (optional,
  // default false), and Mistral's sliding window (optional; a window that
  // covers the sequence is full causal attention, any other is refused).
  const char *kvHeads = nullptr, *intermediateSize = nullptr,
             *ropeTheta = nullptr, *tieEmbeddings = nullptr,
             *slidingWindow = nullptr;
  // The BERT family's norm position, "pre" or "post" (optional, default:
  // the schema's; docs/models.md). Only bitpipe's schema has the key: a
  // Hugging Face model type has one graph (HuggingFaceSchema).
  const char *normPosition = nullptr;
  // The GPT and BERT families' GELU: bitpipe's "gelu" ("tanh" or "erf"),
  // or a Hugging Face activation name (kHuggingFaceGelus). Optional; the
  // default is the schema's (HuggingFaceSchema::gelu).
  const char *gelu = nullptr;
  // Dropout probabilities (optional; ModelConfig::embeddingDropout ...):
  // after the embeddings, on the attention probabilities, on each
  // sublayer's output. One key may stand for two (BERT's
  // hidden_dropout_prob); a null key is a dropout the schema's graph has
  // not.
  const char *embeddingDropout = nullptr, *attentionDropout = nullptr,
             *residualDropout = nullptr;
  // The model's name (optional; ModelLimits.h's rule; without it, the
  // file's stem). Only bitpipe's schema has the key.
  const char *name = nullptr;
};

/// The Hugging Face activation names of a GELU (transformers' ACT2FN) and
/// the form each one computes.
struct HuggingFaceGelu {
  llvm::StringLiteral name;
  GeluForm form;
};
inline constexpr HuggingFaceGelu kHuggingFaceGelus[] = {
    {"gelu_new", GeluForm::Tanh},
    {"gelu_pytorch_tanh", GeluForm::Tanh},
    {"gelu", GeluForm::Erf},
};

inline constexpr ConfigSchema kBitpipeSchema = {"family",
                                                "layers",
                                                "hidden",
                                                "heads",
                                                "vocab",
                                                "max_positions",
                                                "seq_len",
                                                "microbatch_size",
                                                "layer_norm_epsilon",
                                                {},
                                                "kv_heads",
                                                "intermediate_size",
                                                "rope_theta",
                                                "tie_embeddings",
                                                nullptr,
                                                "layer_norm_position",
                                                "gelu",
                                                "embedding_dropout",
                                                "attention_dropout",
                                                "residual_dropout",
                                                "name"};
/// bitpipe's own BERT configs: pre-LN unless they say otherwise.
inline constexpr NormPosition kBitpipeNormPosition = NormPosition::Pre;

namespace detail {
inline constexpr llvm::StringLiteral kTrue[] = {"true"};
inline constexpr llvm::StringLiteral kFalse[] = {"false"};
inline constexpr llvm::StringLiteral kNullOrFourTimes[] = {"null",
                                                           kFourTimesHidden};
inline constexpr llvm::StringLiteral kFourTimes[] = {kFourTimesHidden};
inline constexpr llvm::StringLiteral kAbsolute[] = {"\"absolute\""};
inline constexpr llvm::StringLiteral kSilu[] = {"\"silu\""};
inline constexpr llvm::StringLiteral kNull[] = {"null"};
inline constexpr llvm::StringLiteral kOne[] = {"1"};
inline constexpr llvm::StringLiteral kNullOrHeadDim[] = {"null", kHeadDim};

inline constexpr GraphField kGpt2GraphFields[] = {
    {"n_inner", kNullOrFourTimes, "an MLP of 4 * n_embd"},
    {"tie_word_embeddings", kTrue,
     "the output projection tied to the token embedding"},
    {"scale_attn_weights", kTrue, "attention scores scaled by 1/sqrt(d)"},
    {"scale_attn_by_inverse_layer_idx", kFalse,
     "no per-layer scaling of attention scores"},
    {"add_cross_attention", kFalse, "no cross-attention"},
};
inline constexpr GraphField kBertGraphFields[] = {
    {"intermediate_size", kFourTimes, "an MLP of 4 * hidden_size"},
    {"tie_word_embeddings", kTrue,
     "the output projection tied to the token embedding"},
    {"position_embedding_type", kAbsolute, "learned absolute positions"},
    {"is_decoder", kFalse, "an encoder"},
    {"add_cross_attention", kFalse, "no cross-attention"},
};
inline constexpr GraphField kLlamaGraphFields[] = {
    {"hidden_act", kSilu, "SwiGLU, silu(gate) * up"},
    {"attention_bias", kFalse, "q/k/v and output projections without bias"},
    {"mlp_bias", kFalse, "MLP projections without bias"},
    {"rope_scaling", kNull, "unscaled rotary positions"},
    {"pretraining_tp", kOne, "unsliced projections"},
    {"head_dim", kNullOrHeadDim, "heads of hidden_size / num_attention_heads"},
};
inline constexpr GraphField kMistralGraphFields[] = {
    {"hidden_act", kSilu, "SwiGLU, silu(gate) * up"},
    {"rope_scaling", kNull, "unscaled rotary positions"},
    {"head_dim", kNullOrHeadDim, "heads of hidden_size / num_attention_heads"},
};
} // namespace detail

/// A Hugging Face `model_type` bitpipe builds.
struct HuggingFaceSchema {
  llvm::StringLiteral modelType;
  ModelFamily family;
  /// A key this model type's configs have and those of the rows before it
  /// do not, for a file without `model_type`: the table is searched from
  /// its end (LLaMA configs have BERT's num_hidden_layers, Mistral configs
  /// LLaMA's rms_norm_eps).
  llvm::StringLiteral signatureKey;
  ConfigSchema schema;
  /// Where this model type's graph puts its norms: BertForMaskedLM is
  /// post-LN, the decoders pre-norm.
  NormPosition normPosition = NormPosition::Pre;
  /// The GELU when the config names none: transformers' default for the
  /// model type (GPT2Config: gelu_new; BertConfig: gelu, the erf form).
  GeluForm gelu = GeluForm::Tanh;
  /// A dropout probability the config does not give: transformers' default
  /// for the model type (GPT2Config's and BertConfig's 0.1, LlamaConfig's
  /// and MistralConfig's 0), since `save_pretrained` leaves defaults out.
  double dropout = 0;
};

inline constexpr HuggingFaceSchema kHuggingFaceSchemas[] = {
    {"gpt2",
     ModelFamily::GPT,
     "n_layer",
     {"model_type",
      "n_layer",
      "n_embd",
      "n_head",
      "vocab_size",
      "n_positions",
      nullptr,
      nullptr,
      "layer_norm_epsilon",
      detail::kGpt2GraphFields,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      "activation_function",
      "embd_pdrop",
      "attn_pdrop",
      "resid_pdrop"},
     NormPosition::Pre,
     GeluForm::Tanh,
     /*dropout=*/0.1},
    {"bert",
     ModelFamily::BERT,
     "num_hidden_layers",
     {"model_type",
      "num_hidden_layers",
      "hidden_size",
      "num_attention_heads",
      "vocab_size",
      "max_position_embeddings",
      nullptr,
      nullptr,
      "layer_norm_eps",
      detail::kBertGraphFields,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      "hidden_act",
      "hidden_dropout_prob",
      "attention_probs_dropout_prob",
      "hidden_dropout_prob"},
     NormPosition::Post,
     GeluForm::Erf,
     /*dropout=*/0.1},
    {"llama",
     ModelFamily::LLaMA,
     "rms_norm_eps",
     {"model_type",
      "num_hidden_layers",
      "hidden_size",
      "num_attention_heads",
      "vocab_size",
      "max_position_embeddings",
      nullptr,
      nullptr,
      "rms_norm_eps",
      detail::kLlamaGraphFields,
      "num_key_value_heads",
      "intermediate_size",
      "rope_theta",
      "tie_word_embeddings",
      nullptr,
      nullptr,
      nullptr,
      nullptr,
      "attention_dropout",
      nullptr}},
    // Mistral is LLaMA's graph with a sliding attention window: the same
    // graph where the window covers the whole sequence.
    {"mistral",
     ModelFamily::LLaMA,
     "sliding_window",
     {"model_type",
      "num_hidden_layers",
      "hidden_size",
      "num_attention_heads",
      "vocab_size",
      "max_position_embeddings",
      nullptr,
      nullptr,
      "rms_norm_eps",
      detail::kMistralGraphFields,
      "num_key_value_heads",
      "intermediate_size",
      "rope_theta",
      "tie_word_embeddings",
      "sliding_window",
      nullptr,
      nullptr,
      nullptr,
      "attention_dropout",
      nullptr}},
};

} // namespace bitpipe

#endif // BITPIPE_LIB_IMPORT_CONFIGSCHEMAS_H
