//===- ModelLimits.cpp - The model sizes the compiler can build -----------===//
//
// The products checked are those the compiler forms from a model's sizes:
// the element count and f32 bytes of its largest tensors, its parameter,
// gradient and Adam-state bytes, and an upper bound on the FLOPs of one
// micro-batch's forward and backward as NNCost.cpp counts them (per layer
// at most M*H*(72 H + 12 T + 256) for M = microbatch_size * seq_len tokens;
// the embedding and head at most M*(6 H V + 8 V + 6 H^2 + 256 H)). When
// these fit in int64, so does every partial sum the cost model, the
// partitioner and the simulator form from them. docs/models.md, "Limits".
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/NN/IR/ModelLimits.h"

#include "bitpipe/abi/Dropout.h"
#include "bitpipe/base/CheckedArithmetic.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace bitpipe;
using namespace bitpipe::nn;

namespace {

constexpr llvm::StringLiteral kInt64Limit = "2^63-1 (9223372036854775807)";

/// Multiplies named sizes and constants, keeping the first overflow's
/// message.
class ProductChecker {
public:
  explicit ProductChecker(const ModelSizes &sizes) : sizes(sizes) {}

  /// The product of `factors` (a constant has an empty name); 0 after an
  /// overflow, which is then reported as `what`.
  int64_t product(llvm::StringRef what,
                  std::initializer_list<NamedSize> factors) {
    llvm::SmallVector<int64_t> values;
    for (const NamedSize &f : factors)
      values.push_back(f.value);
    std::optional<int64_t> result = checkedProduct(values);
    return result ? *result : fail(what, factors);
  }

  /// A sum or product over several sizes that left int64; the message lists
  /// all the model's sizes.
  int64_t overflow(llvm::StringRef what) { return fail(what, {}); }

  std::optional<std::string> error;

private:
  int64_t fail(llvm::StringRef what, std::initializer_list<NamedSize> factors) {
    if (error)
      return 0;
    std::string expression, values;
    llvm::raw_string_ostream exp(expression), val(values);
    llvm::StringRef sep = "";
    for (const NamedSize &f : factors) {
      exp << sep << (f.name.empty() ? std::to_string(f.value) : f.name.str());
      sep = " * ";
    }
    sep = "";
    const NamedSize *all[] = {
        &sizes.layers,       &sizes.hidden, &sizes.heads,         &sizes.vocab,
        &sizes.maxPositions, &sizes.seqLen, &sizes.microbatchSize};
    for (const NamedSize *s : all) {
      bool used = factors.size() == 0;
      for (const NamedSize &f : factors)
        used |= !f.name.empty() && f.name == s->name;
      if (!used)
        continue;
      val << sep << s->name << " = " << s->value;
      sep = ", ";
    }
    error = llvm::formatv("{0}{1} exceeds {2}, with {3}", what,
                          expression.empty() ? "" : ", " + expression + ",",
                          kInt64Limit, values)
                .str();
    return 0;
  }

  const ModelSizes &sizes;
};

} // namespace

std::optional<std::string> nn::checkModelSizes(const ModelSizes &s) {
  for (const NamedSize *size : {&s.layers, &s.hidden, &s.heads, &s.vocab,
                                &s.maxPositions, &s.seqLen, &s.microbatchSize})
    if (size->value < 1)
      return llvm::formatv("'{0}' must be a positive integer, got {1}",
                           size->name, size->value)
          .str();
  if (s.layers.value > kMaxLayers)
    return llvm::formatv("'{0}' must be at most {1}, got {2}", s.layers.name,
                         kMaxLayers, s.layers.value)
        .str();
  if (s.hidden.value % s.heads.value != 0)
    return llvm::formatv("'{0}' ({1}) must divide '{2}' ({3})", s.heads.name,
                         s.heads.value, s.hidden.name, s.hidden.value)
        .str();
  if (s.llama) {
    const NamedSize &kv = s.llama->kvHeads, &mlp = s.llama->intermediateSize;
    for (const NamedSize *size : {&kv, &mlp})
      if (size->value < 1)
        return llvm::formatv("'{0}' must be a positive integer, got {1}",
                             size->name, size->value)
            .str();
    if (s.heads.value % kv.value != 0)
      return llvm::formatv("'{0}' ({1}) must divide '{2}' ({3}): each "
                           "key/value head serves a whole group of query "
                           "heads",
                           kv.name, kv.value, s.heads.name, s.heads.value)
          .str();
    int64_t headDim = s.hidden.value / s.heads.value;
    if (headDim % 2 != 0)
      return llvm::formatv("the head dimension '{0}' / '{1}' ({2} / {3} = {4}) "
                           "must be even: the rotary embedding rotates pairs "
                           "of features",
                           s.hidden.name, s.heads.name, s.hidden.value,
                           s.heads.value, headDim)
          .str();
  }
  if (s.seqLen.value > s.maxPositions.value)
    return llvm::formatv("'{0}' ({1}) must not exceed '{2}' ({3})",
                         s.seqLen.name, s.seqLen.value, s.maxPositions.name,
                         s.maxPositions.value)
        .str();

  ProductChecker check(s);
  const NamedSize four{"", 4};
  const NamedSize &B = s.microbatchSize, &T = s.seqLen, &H = s.hidden,
                  &V = s.vocab, &P = s.maxPositions, &L = s.layers;
  // The largest tensors, in f32 bytes (the element counts are smaller).
  check.product("the token embedding's bytes", {four, V, H});
  check.product("the position embedding's bytes", {four, P, H});
  check.product("the MLP weight's bytes", {four, four, H, H});
  check.product("the MLP activation's bytes", {four, B, T, four, H});
  check.product("the logits' bytes", {four, B, T, V});
  check.product("the attention scores' bytes", {four, B, s.heads, T, T});
  if (s.llama) {
    const NamedSize &I = s.llama->intermediateSize;
    check.product("the MLP weight's bytes", {four, I, H});
    check.product("the MLP activation's bytes", {four, B, T, I});
  }
  if (check.error)
    return check.error;
  if (s.llama) {
    // LLaMA's MLP: 3 H I parameters per layer, 16 bytes each (as below),
    // and 6 FLOPs per parameter and token (forward and backward). The rest
    // of a layer is within the GPT sums below.
    std::optional<int64_t> mlpParams = checkedProduct(
        {L.value, 3, H.value, s.llama->intermediateSize.value});
    if (!mlpParams || !checkedProduct({16, *mlpParams}) ||
        !checkedProduct({6, B.value, T.value, *mlpParams})) {
      check.overflow("the MLP's parameter bytes or FLOPs (3 * hidden * "
                     "intermediate_size per layer)");
      return check.error;
    }
  }

  // Parameters: embeddings, L layers of 12 H^2 + 13 H, the final norm, and
  // BERT's head; 16 bytes each (weight, gradient, two Adam moments).
  int64_t h = H.value, tokens = B.value * T.value;
  std::optional<int64_t> perLayer =
      checkedSum({12 * h * h, 13 * h}); // 16 H^2 fits: checked above.
  std::optional<int64_t> layersParams =
      perLayer ? checkedProduct({L.value, *perLayer}) : std::nullopt;
  std::optional<int64_t> params =
      layersParams ? checkedSum({(V.value + P.value) * h, *layersParams, 2 * h,
                                 s.maskedLMHead ? h * h + 3 * h + V.value : 0})
                   : std::nullopt;
  if (!params || !checkedProduct({16, *params})) {
    check.overflow("the parameter, gradient and Adam-state bytes (16 per "
                   "parameter)");
    return check.error;
  }

  // FLOPs of one micro-batch, forward and backward (bounded as above).
  std::optional<int64_t> layerFlops =
      checkedProduct({tokens, h, 72 * h + 12 * T.value + 256});
  std::optional<int64_t> allLayers =
      layerFlops ? checkedProduct({L.value, *layerFlops}) : std::nullopt;
  std::optional<int64_t> hv = checkedProduct({6, h, V.value});
  std::optional<int64_t> headPerToken =
      hv ? checkedSum({*hv, 8 * V.value, 6 * h * h, 256 * h}) : std::nullopt;
  std::optional<int64_t> headFlops =
      headPerToken ? checkedProduct({tokens, *headPerToken}) : std::nullopt;
  if (!allLayers || !headFlops || !checkedSum({*allLayers, *headFlops})) {
    check.overflow("the FLOPs of one micro-batch's forward and backward");
    return check.error;
  }
  return std::nullopt;
}

std::optional<std::string> nn::checkLayerNormEpsilon(double epsilon) {
  // The ops hold it as an f32, so its f32 rounding must be in range too.
  float asF32 = static_cast<float>(epsilon);
  if (std::isfinite(epsilon) && epsilon > 0 && epsilon < 1 && asF32 > 0 &&
      asF32 < 1)
    return std::nullopt;
  std::string message;
  llvm::raw_string_ostream(message)
      << "expected a finite number in (0, 1) (also as an f32), got "
      << llvm::format("%g", epsilon);
  return message;
}

static bool isNameChar(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '-' || c == '.';
}

std::optional<std::string> nn::checkModelName(llvm::StringRef name) {
  if (!name.empty() && name.size() <= kMaxModelNameLength &&
      (llvm::isAlpha(name.front()) || name.front() == '_') &&
      llvm::all_of(name, isNameChar))
    return std::nullopt;
  std::string message;
  llvm::raw_string_ostream os(message);
  os << "expected a name of 1 to " << kMaxModelNameLength
     << " letters, digits, '_', '-' and '.', the first a letter or '_', got "
     << '"';
  llvm::printEscapedString(name.take_front(kMaxModelNameLength), os);
  os << (name.size() > kMaxModelNameLength ? "...\"" : "\"");
  return message;
}

std::string nn::toModelName(llvm::StringRef text) {
  std::string name;
  if (text.empty() || !(llvm::isAlpha(text.front()) || text.front() == '_'))
    name = text.empty() ? "model" : "_";
  for (char c : text)
    name.push_back(isNameChar(c) ? c : '_');
  if (name.size() > kMaxModelNameLength)
    name.resize(kMaxModelNameLength);
  return name;
}

std::optional<std::string> nn::checkRopeTheta(double theta) {
  if (theta >= kMinRopeTheta && theta <= kMaxRopeTheta)
    return std::nullopt;
  std::string message;
  llvm::raw_string_ostream(message)
      << "expected a number from " << llvm::format("%g", kMinRopeTheta)
      << " to " << llvm::format("%g", kMaxRopeTheta)
      << " (the rotary base), got " << llvm::format("%g", theta);
  return message;
}

std::optional<std::string> nn::checkDropoutProbability(double p) {
  float asF32 = static_cast<float>(p);
  if (p >= 0 && p < 1 && asF32 < 1)
    return std::nullopt;
  std::string message;
  llvm::raw_string_ostream(message)
      << "expected a probability in [0, 1) (also as an f32), got "
      << llvm::format("%g", p);
  return message;
}

// A model numbers its dropout sites 0 to 3 * layers
// (docs/training-semantics.md, "Dropout"), below the ABI's limit whatever
// its size.
static_assert(3 * nn::kMaxLayers + 1 <= BP_DROPOUT_MAX_SITES,
              "kMaxLayers layers need more dropout sites than the ABI has");
