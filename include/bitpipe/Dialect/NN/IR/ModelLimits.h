//===- ModelLimits.h - The model sizes the compiler can build ---*- C++ -*-===//
//
// One definition of the ranges a model's sizes, layer-norm epsilon and
// dropout probabilities must lie in, shared by the importer (on a config
// file) and the nn verifiers (on `#nn.model`, `nn.layer_norm` and
// `#nn.dropout`), so IR that did not come from the importer is held to the
// same limits. docs/models.md ("Limits") explains each one.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_IR_MODELLIMITS_H
#define BITPIPE_DIALECT_NN_IR_MODELLIMITS_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace bitpipe::nn {

/// The families whose graph bitpipe builds, as `#nn.model` and the manifest
/// name them (the importer maps its config names onto these).
inline constexpr llvm::StringLiteral kModelFamilies[] = {"gpt", "bert",
                                                         "llama"};

/// At most this many transformer layers: each becomes about 30 IR ops and
/// function arguments, so the limit keeps an import within memory and
/// seconds (docs/models.md, "Limits").
constexpr int64_t kMaxLayers = 100000;

/// One size and the name its source gives it (a config field, an attribute
/// parameter), for messages.
struct NamedSize {
  llvm::StringRef name;
  int64_t value;
};

/// The sizes only a LLaMA model has (docs/llama.md).
struct LlamaSizes {
  NamedSize kvHeads, intermediateSize;
};

/// A model's sizes, named as their source names them.
struct ModelSizes {
  NamedSize layers, hidden, heads, vocab, maxPositions, seqLen, microbatchSize;
  bool maskedLMHead = false; ///< BERT's head (dense, norm, bias) is counted.
  std::optional<LlamaSizes> llama; ///< Set for a LLaMA model.
};

/// Nothing when every size is a positive integer within its limit, `heads`
/// divides `hidden`, for LLaMA `kvHeads` divides `heads` and the head
/// dimension is even (rotary pairs), and every product the compiler forms
/// from the sizes
/// (tensor elements and bytes, parameter and optimizer-state bytes, the
/// FLOPs of one micro-batch) fits in int64; otherwise a message naming the
/// size or the product, its value and the limit.
std::optional<std::string> checkModelSizes(const ModelSizes &sizes);

/// Nothing when `epsilon` is finite and in (0, 1), also once rounded to an
/// f32; otherwise "expected a finite number in (0, 1) ..., got <value>".
std::optional<std::string> checkLayerNormEpsilon(double epsilon);

/// A model's name names its IR function, the stage functions made from it
/// and the symbols of the executable: 1 to kMaxModelNameLength characters,
/// letters, digits, '_', '-' and '.', the first a letter or '_'.
constexpr size_t kMaxModelNameLength = 128;

/// Nothing when `name` follows the rule above; otherwise "expected a name
/// of 1 to 128 letters, ..., got <quoted name>".
std::optional<std::string> checkModelName(llvm::StringRef name);

/// `text` made into a name by the rule: other characters become '_', a
/// leading digit, '-' or '.' gets a '_' in front, an empty text is
/// "model"; cut to kMaxModelNameLength. For names derived from a file's
/// stem rather than given.
std::string toModelName(llvm::StringRef text);

/// The rotary base (Hugging Face's `rope_theta`) a model may have: 10000 in
/// LLaMA-1/2, 500000 in LLaMA-3, up to the 1e8 of long-context variants;
/// a value beyond is a typo, and the angles it gives lose all precision.
constexpr double kMinRopeTheta = 1, kMaxRopeTheta = 1e10;

/// Nothing when `theta` is a rotary base in [kMinRopeTheta, kMaxRopeTheta];
/// otherwise "expected a number from 1 to 1e+10 (the rotary base), got
/// <value>".
std::optional<std::string> checkRopeTheta(double theta);

/// Nothing when `p` is a dropout probability the kernels can draw with:
/// in [0, 1), also once rounded to an f32 (the kernels take an f32, and
/// 0.9999999999 rounds to 1); otherwise "expected a number in [0, 1) ...".
std::optional<std::string> checkDropoutProbability(double p);

} // namespace bitpipe::nn

#endif // BITPIPE_DIALECT_NN_IR_MODELLIMITS_H
