//===- ModelConfig.cpp - Reading model configurations ---------------------===//
//
// Two input schemas (ConfigSchemas.h lists their keys):
//   * bitpipe's own: {"family", "layers", "hidden", "heads", "vocab",
//     "max_positions", "seq_len", "microbatch_size", optional
//     "layer_norm_epsilon", "name" and (BERT) "layer_norm_position"};
//   * a Hugging Face config.json of a `model_type` bitpipe builds (gpt2,
//     bert, llama, mistral). Such a file has no sequence length or
//     micro-batch size: the sequence length defaults to the maximum number
//     of positions and the micro-batch size to 1, unless given on the
//     command line. Its fields that change the graph must have the values
//     bitpipe builds.
// LLaMA configs add their own sizes (readLlamaFields; docs/llama.md).
// Every size and the epsilon are then held to ModelLimits.h's ranges.
// docs/models.md describes the rules.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Import/ModelConfig.h"
#include "bitpipe/Support/TextGuard.h"

#include "ConfigSchemas.h"

#include "bitpipe/base/Spelling.h"

#include "bitpipe/Dialect/NN/IR/ModelLimits.h"
#include "bitpipe/base/JsonTree.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace bitpipe;
using llvm::json::Object;

namespace {
/// The families bitpipe builds, by the names a config or the command line
/// gives them (the first name of each is its canonical one).
struct FamilyName {
  llvm::StringLiteral name;
  ModelFamily family;
};
constexpr FamilyName kFamilyNames[] = {{"gpt", ModelFamily::GPT},
                                       {"bert", ModelFamily::BERT},
                                       {"llama", ModelFamily::LLaMA},
                                       {"gpt2", ModelFamily::GPT}};
} // namespace

llvm::StringRef bitpipe::stringifyModelFamily(ModelFamily family) {
  for (const FamilyName &f : kFamilyNames)
    if (f.family == family)
      return f.name;
  llvm_unreachable("every family has a name");
}

std::optional<ModelFamily> bitpipe::parseModelFamily(llvm::StringRef name) {
  for (const FamilyName &f : kFamilyNames)
    if (f.name == name)
      return f.family;
  return std::nullopt;
}

std::string bitpipe::modelFamilyList() {
  llvm::SmallVector<llvm::StringRef> names;
  for (const FamilyName &f : kFamilyNames)
    names.push_back(f.name);
  std::string out;
  for (auto [i, name] : llvm::enumerate(names))
    out += (i == 0                  ? ""
            : i + 1 == names.size() ? " or "
                                    : ", ") +
           ("\"" + name + "\"").str();
  return out;
}

namespace {
constexpr std::pair<llvm::StringLiteral, NormPosition> kNormPositionNames[] = {
    {"pre", NormPosition::Pre}, {"post", NormPosition::Post}};
} // namespace

llvm::StringRef bitpipe::stringifyNormPosition(NormPosition position) {
  for (const auto &[name, p] : kNormPositionNames)
    if (p == position)
      return name;
  llvm_unreachable("every norm position has a name");
}

std::optional<NormPosition> bitpipe::parseNormPosition(llvm::StringRef name) {
  for (const auto &[n, p] : kNormPositionNames)
    if (n == name)
      return p;
  return std::nullopt;
}

namespace {
constexpr std::pair<llvm::StringLiteral, GeluForm> kGeluFormNames[] = {
    {"tanh", GeluForm::Tanh}, {"erf", GeluForm::Erf}};
} // namespace

llvm::StringRef bitpipe::stringifyGeluForm(GeluForm form) {
  for (const auto &[name, f] : kGeluFormNames)
    if (f == form)
      return name;
  llvm_unreachable("every GELU form has a name");
}

std::optional<GeluForm> bitpipe::parseGeluForm(llvm::StringRef name) {
  for (const auto &[n, f] : kGeluFormNames)
    if (n == name)
      return f;
  return std::nullopt;
}

namespace {

/// Reads fields of one JSON object, reporting errors as "<file>: field
/// '<name>': <what>".
class FieldReader {
public:
  FieldReader(llvm::StringRef path, const Object &object)
      : path(path), object(object) {}

  bool has(llvm::StringRef key) const { return object.get(key) != nullptr; }
  const llvm::json::Value *get(llvm::StringRef key) const {
    return object.get(key);
  }

  /// A required positive integer.
  llvm::Expected<int64_t> positive(llvm::StringRef key) const {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return error(key, "is missing (a positive integer is required)");
    std::optional<int64_t> n = value->getAsInteger();
    if (!n || *n <= 0)
      return error(key, llvm::formatv("expected a positive integer, got {0}",
                                      *value)
                            .str());
    return *n;
  }

  /// An optional positive integer.
  llvm::Expected<std::optional<int64_t>>
  optionalPositive(llvm::StringRef key) const {
    if (!has(key))
      return std::nullopt;
    llvm::Expected<int64_t> n = positive(key);
    if (!n)
      return n.takeError();
    return std::optional<int64_t>(*n);
  }

  /// An optional boolean.
  llvm::Expected<std::optional<bool>> optionalBool(llvm::StringRef key) const {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return std::nullopt;
    std::optional<bool> b = value->getAsBoolean();
    if (!b)
      return error(key, llvm::formatv("expected true or false, got {0}",
                                      *value)
                            .str());
    return std::optional<bool>(*b);
  }

  /// An optional string.
  llvm::Expected<std::optional<std::string>>
  optionalString(llvm::StringRef key) const {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return std::nullopt;
    std::optional<llvm::StringRef> s = value->getAsString();
    if (!s)
      return error(key, llvm::formatv("expected a string, got {0}", *value)
                            .str());
    return std::optional<std::string>(s->str());
  }

  llvm::Error error(llvm::StringRef key, llvm::StringRef what) const {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("{0}: field '{1}' {2}", path, key, what));
  }

private:
  llvm::StringRef path;
  const Object &object;
};

} // namespace

/// "\"a\", \"b\"" for a list of names.
static std::string quotedList(llvm::ArrayRef<llvm::StringRef> names) {
  std::string out;
  for (llvm::StringRef name : names)
    out += (out.empty() ? "\"" : ", \"") + name.str() + "\"";
  return out;
}

/// The schema a Hugging Face file names with `model_type`, or (without one)
/// the one whose signature key it has; null for bitpipe's own schema.
static llvm::Expected<const HuggingFaceSchema *>
findHuggingFaceSchema(const FieldReader &read, const Object &object) {
  if (const llvm::json::Value *type = object.get("model_type")) {
    std::optional<llvm::StringRef> name = type->getAsString();
    for (const HuggingFaceSchema &hf : kHuggingFaceSchemas)
      if (name && *name == hf.modelType)
        return &hf;
    llvm::SmallVector<llvm::StringRef> accepted;
    for (const HuggingFaceSchema &hf : kHuggingFaceSchemas)
      accepted.push_back(hf.modelType);
    return read.error("model_type",
                      llvm::formatv("is {0}, but bitpipe builds only the "
                                    "Hugging Face model types {1}",
                                    *type, quotedList(accepted))
                          .str());
  }
  // From the end: see HuggingFaceSchema::signatureKey.
  for (const HuggingFaceSchema &hf : llvm::reverse(kHuggingFaceSchemas))
    if (read.has(hf.signatureKey))
      return &hf;
  return nullptr;
}

/// Refuses a field that would change the graph to one bitpipe does not
/// build.
static llvm::Error checkGraphFields(const FieldReader &read,
                                    const Object &object,
                                    const ConfigSchema &schema,
                                    int64_t hidden, int64_t heads) {
  for (const GraphField &field : schema.graphFields) {
    const llvm::json::Value *value = object.get(field.key);
    if (!value)
      continue;
    std::string text = llvm::formatv("{0}", *value).str();
    llvm::SmallVector<std::string> accepted;
    bool ok = false;
    for (llvm::StringRef a : field.accepted) {
      std::string want = a == kFourTimesHidden ? std::to_string(4 * hidden)
                         : a == kHeadDim       ? std::to_string(hidden / heads)
                                               : a.str();
      ok |= text == want;
      accepted.push_back(want);
    }
    if (ok)
      continue;
    std::string list;
    for (const std::string &a : accepted)
      list += (list.empty() ? "" : " or ") + a;
    return read.error(field.key,
                      llvm::formatv("is {0}, but bitpipe builds only {1} ({2})",
                                    text, list, field.why)
                          .str());
  }
  return llvm::Error::success();
}

/// The LLaMA family's fields (ConfigSchema: kvHeads ... tieEmbeddings); in
/// a config of another family they are refused, since they would change a
/// graph that family does not have.
static llvm::Error readLlamaFields(const FieldReader &read,
                                   const ConfigSchema &schema,
                                   ModelConfig &config) {
  const char *llamaKeys[] = {schema.kvHeads, schema.intermediateSize,
                             schema.ropeTheta, schema.tieEmbeddings};
  if (config.family != ModelFamily::LLaMA) {
    for (const char *key : llamaKeys)
      if (key && read.has(key))
        return read.error(key, ("applies to the llama family only, but the "
                                "config describes a " +
                                stringifyModelFamily(config.family) +
                                " model")
                                   .str());
    return llvm::Error::success();
  }
  llvm::Expected<std::optional<int64_t>> kvHeads =
      read.optionalPositive(schema.kvHeads);
  if (!kvHeads)
    return kvHeads.takeError();
  config.kvHeads = kvHeads->value_or(config.heads);
  llvm::Expected<int64_t> intermediate =
      read.positive(schema.intermediateSize);
  if (!intermediate)
    return intermediate.takeError();
  config.intermediateSize = *intermediate;
  if (const llvm::json::Value *theta = read.get(schema.ropeTheta)) {
    std::optional<double> d = theta->getAsNumber();
    if (!d)
      return read.error(schema.ropeTheta,
                        llvm::formatv("expected a number (the rotary base), "
                                      "got {0}",
                                      *theta)
                            .str());
    if (std::optional<std::string> bad = nn::checkRopeTheta(*d))
      return read.error(schema.ropeTheta, *bad);
    config.ropeTheta = *d;
  }
  llvm::Expected<std::optional<bool>> tie =
      read.optionalBool(schema.tieEmbeddings);
  if (!tie)
    return tie.takeError();
  config.tieEmbeddings = tie->value_or(false);
  return llvm::Error::success();
}

/// Where the BERT family's norms sit: bitpipe's schema may say (pre by
/// default); a Hugging Face model type has its own graph's. The other
/// families have one graph each (pre-norm), so the key is refused there.
static llvm::Error readNormPosition(const FieldReader &read,
                                    const ConfigSchema &schema,
                                    const HuggingFaceSchema *hf,
                                    ModelConfig &config) {
  config.normPosition = hf ? hf->normPosition : kBitpipeNormPosition;
  // bitpipe's key in a Hugging Face file: refused rather than ignored, as
  // the file's graph is fixed by its model type.
  if (hf && read.has(kBitpipeSchema.normPosition))
    return read.error(kBitpipeSchema.normPosition,
                      ("is a key of bitpipe's own configs; a Hugging Face "
                       "'" +
                       hf->modelType + "' config builds " +
                       stringifyNormPosition(hf->normPosition) +
                       "-norm layers, the graph of that model type")
                          .str());
  if (!schema.normPosition || !read.has(schema.normPosition))
    return llvm::Error::success();
  if (config.family != ModelFamily::BERT)
    return read.error(schema.normPosition,
                      ("applies to the bert family only (gpt and llama "
                       "models are pre-norm), but the config describes a " +
                       stringifyModelFamily(config.family) + " model")
                          .str());
  const llvm::json::Value *value = read.get(schema.normPosition);
  std::optional<llvm::StringRef> name = value->getAsString();
  std::optional<NormPosition> position =
      name ? parseNormPosition(*name) : std::nullopt;
  if (!position)
    return read.error(
        schema.normPosition,
        llvm::formatv("expected \"pre\" or \"post\", got {0}", *value).str());
  config.normPosition = *position;
  return llvm::Error::success();
}

/// The GELU of the GPT and BERT families: bitpipe's "gelu" names the form,
/// a Hugging Face config the activation (kHuggingFaceGelus), and without
/// the key the schema's default applies. LLaMA's MLP has no GELU, and its
/// hidden_act is a graph field (silu).
static llvm::Error readGelu(const FieldReader &read, const ConfigSchema &schema,
                            const HuggingFaceSchema *hf, ModelConfig &config) {
  config.gelu = hf ? hf->gelu : GeluForm::Tanh;
  if (!schema.gelu || !read.has(schema.gelu))
    return llvm::Error::success();
  if (config.family == ModelFamily::LLaMA)
    return read.error(schema.gelu,
                      "applies to the gpt and bert families only (llama "
                      "models use SwiGLU), but the config describes a llama "
                      "model");
  const llvm::json::Value *value = read.get(schema.gelu);
  std::optional<llvm::StringRef> name = value->getAsString();
  if (!hf) {
    std::optional<GeluForm> form = name ? parseGeluForm(*name) : std::nullopt;
    if (!form)
      return read.error(
          schema.gelu,
          llvm::formatv("expected \"tanh\" or \"erf\", got {0}", *value).str());
    config.gelu = *form;
    return llvm::Error::success();
  }
  std::string names;
  for (const HuggingFaceGelu &gelu : kHuggingFaceGelus) {
    if (name && *name == gelu.name) {
      config.gelu = gelu.form;
      return llvm::Error::success();
    }
    names += (names.empty() ? "\"" : ", \"") + gelu.name.str() + "\"";
  }
  return read.error(schema.gelu,
                    llvm::formatv("is {0}, but bitpipe builds only the GELUs "
                                  "{1} (tanh or erf form)",
                                  *value, names)
                        .str());
}

/// The dropout probabilities (ConfigSchema: embeddingDropout ...), each in
/// [0, 1); one the config does not give is the model type's default. The
/// LLaMA family drops only attention probabilities, and only without
/// grouping (the grouped-query kernels have no dropout).
static llvm::Error readDropout(const FieldReader &read,
                               const ConfigSchema &schema,
                               const HuggingFaceSchema *hf,
                               ModelConfig &config) {
  bool llama = config.family == ModelFamily::LLaMA;
  struct {
    const char *key;
    double *slot;
    bool inGraph; ///< The family's graph has this dropout.
  } fields[] = {{schema.embeddingDropout, &config.embeddingDropout, !llama},
                {schema.attentionDropout, &config.attentionDropout, true},
                {schema.residualDropout, &config.residualDropout, !llama}};
  for (auto &field : fields) {
    if (!field.key)
      continue;
    const llvm::json::Value *value = read.get(field.key);
    if (!value) {
      *field.slot = field.inGraph && hf ? hf->dropout : 0.0;
      continue;
    }
    if (!field.inGraph)
      return read.error(field.key, "applies to the gpt and bert families "
                                   "only (a llama model drops only attention "
                                   "probabilities), but the config describes "
                                   "a llama model");
    std::optional<double> p = value->getAsNumber();
    if (!p)
      return read.error(
          field.key,
          llvm::formatv("expected a number (a dropout probability), got {0}",
                        *value)
              .str());
    if (std::optional<std::string> error = nn::checkDropoutProbability(*p))
      return read.error(field.key, *error);
    *field.slot = *p;
  }
  if (config.attentionDropout > 0 && config.kvHeads != config.heads && llama) {
    std::string message;
    llvm::raw_string_ostream(message)
        << "is " << llvm::format("%g", config.attentionDropout)
        << ", but bitpipe drops attention probabilities only without "
           "grouping, and the config has "
        << config.kvHeads << " key/value heads for " << config.heads
        << " heads";
    return read.error(schema.attentionDropout, message);
  }
  return llvm::Error::success();
}

/// Mistral's sliding window: attention to the last `sliding_window`
/// positions only. bitpipe builds full causal attention, which is the same
/// graph when the window covers the whole sequence; any other window is
/// refused.
static llvm::Error checkSlidingWindow(const FieldReader &read,
                                      const Object &object,
                                      const ConfigSchema &schema,
                                      const ModelConfig &config,
                                      llvm::StringRef seqName) {
  if (!schema.slidingWindow)
    return llvm::Error::success();
  const llvm::json::Value *value = object.get(schema.slidingWindow);
  if (!value || value->getAsNull())
    return llvm::Error::success();
  std::optional<int64_t> window = value->getAsInteger();
  if (!window || *window <= 0)
    return read.error(schema.slidingWindow,
                      llvm::formatv("expected null or a positive integer, got "
                                    "{0}",
                                    *value)
                          .str());
  if (*window >= config.seqLen)
    return llvm::Error::success();
  return read.error(
      schema.slidingWindow,
      llvm::formatv("is {0}, but bitpipe builds only full causal attention, "
                    "which is the same graph only when the window covers the "
                    "sequence: '{1}' is {2}; use a sequence length of at most "
                    "{0} (--seq-len)",
                    *window, seqName, config.seqLen)
          .str());
}

/// Every key \p schema names, in its fields' order.
static std::vector<std::string> schemaKeys(const ConfigSchema &schema) {
  std::vector<std::string> keys;
  for (const char *key : {schema.name,
                          schema.family,
                          schema.layers,
                          schema.hidden,
                          schema.heads,
                          schema.kvHeads,
                          schema.intermediateSize,
                          schema.vocab,
                          schema.maxPositions,
                          schema.seqLen,
                          schema.microbatchSize,
                          schema.epsilon,
                          schema.ropeTheta,
                          schema.tieEmbeddings,
                          schema.slidingWindow,
                          schema.normPosition,
                          schema.gelu,
                          schema.embeddingDropout,
                          schema.attentionDropout,
                          schema.residualDropout})
    if (key)
      keys.push_back(key);
  return keys;
}

llvm::Expected<ModelConfig>
bitpipe::parseModelConfig(llvm::StringRef path, llvm::StringRef contents,
                          const ModelConfigOverrides &overrides) {
  auto fail = [&](const llvm::Twine &what) -> llvm::Error {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + what);
  };
  if (std::optional<TextExcess> excess =
          findTextExcess(contents, TextSyntax::Json))
    return fail(llvm::formatv("JSON {0} (at byte {1}); a model config nests "
                              "a few",
                              excess->what, excess->offset));
  // The project's one JSON reader decides what is JSON: strict RFC 8259,
  // and a name given twice in an object is refused (llvm::json would keep
  // the last). The checked text is then read through llvm::json.
  // Its tree also gives the keys in the file's order, for the check of
  // unknown keys below.
  bitpipe::json::JsonValue tree;
  {
    std::string_view text(contents.data(), contents.size());
    bitpipe::json::JsonError error;
    if (!bitpipe::json::readJson(text, tree, error)) {
      auto [line, column] = bitpipe::json::lineAndColumn(text, error.offset);
      return fail(llvm::formatv("not valid JSON at line {0}, column {1}: {2}",
                                line, column, error.what));
    }
  }
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(contents);
  if (!json)
    return fail("not valid JSON: " + llvm::toString(json.takeError()));
  const Object *object = json->getAsObject();
  if (!object)
    return fail("expected a JSON object at the top level");
  FieldReader read(path, *object);

  // Which schema: a Hugging Face one, or bitpipe's.
  llvm::Expected<const HuggingFaceSchema *> hf =
      findHuggingFaceSchema(read, *object);
  if (!hf)
    return hf.takeError();
  const ConfigSchema *schema = *hf ? &(*hf)->schema : &kBitpipeSchema;
  // bitpipe's own schema is strict: a key it does not know is a typo
  // ("kv_head") or another schema's field ("num_layers"), and reading past
  // it would build another model than the file describes. (A Hugging Face
  // config holds many keys that do not change the graph; its schema
  // refuses the ones that would, graphFields.)
  if (!*hf) {
    std::vector<std::string> known = schemaKeys(kBitpipeSchema);
    for (const auto &[key, value] : tree.object)
      if (!llvm::is_contained(known, key))
        return read.error(
            key, "is not a key of bitpipe's model "
                 "configuration" +
                     base::didYouMean(key, known) + " (expected one of " +
                     llvm::join(known, ", ") + "; docs/models.md)");
  }

  ModelConfig config;
  std::optional<ModelFamily> family;
  if (*hf) {
    family = (*hf)->family;
  } else {
    llvm::Expected<std::optional<std::string>> familyName =
        read.optionalString(schema->family);
    if (!familyName)
      return familyName.takeError();
    if (*familyName) {
      family = parseModelFamily(**familyName);
      if (!family)
        return read.error(schema->family, "expected " + modelFamilyList() +
                                              ", got \"" + **familyName + "\"");
    }
  }
  if (overrides.family) {
    if (family && *family != *overrides.family)
      return fail(llvm::formatv("describes a {0} model, but {1} was asked for",
                                stringifyModelFamily(*family),
                                stringifyModelFamily(*overrides.family)));
    family = overrides.family;
  }
  if (!family)
    return read.error(schema->family,
                      "is missing (" + modelFamilyList() +
                          "; or name the family on the command line)");
  config.family = *family;

  struct {
    const char *key;
    int64_t *slot;
  } required[] = {{schema->layers, &config.layers},
                  {schema->hidden, &config.hidden},
                  {schema->heads, &config.heads},
                  {schema->vocab, &config.vocab},
                  {schema->maxPositions, &config.maxPositions}};
  for (auto &field : required) {
    llvm::Expected<int64_t> n = read.positive(field.key);
    if (!n)
      return n.takeError();
    *field.slot = *n;
  }

  if (llvm::Error e = readLlamaFields(read, *schema, config))
    return std::move(e);
  if (llvm::Error e = readNormPosition(read, *schema, *hf, config))
    return std::move(e);
  if (llvm::Error e = readGelu(read, *schema, *hf, config))
    return std::move(e);
  if (llvm::Error e = readDropout(read, *schema, *hf, config))
    return std::move(e);

  // Sequence length and micro-batch size: command line, then file, then the
  // Hugging Face defaults. Each is named as its source names it.
  auto sizeField = [&](const char *key, std::optional<int64_t> override,
                       llvm::StringRef flag, int64_t hfDefault,
                       llvm::StringRef hfDefaultName,
                       std::string &name) -> llvm::Expected<int64_t> {
    if (override) {
      name = flag.str();
      return *override;
    }
    if (!key) {
      name = hfDefaultName.str();
      return hfDefault;
    }
    name = key;
    return read.positive(key);
  };
  std::string seqName, mbsName;
  llvm::Expected<int64_t> seq =
      sizeField(schema->seqLen, overrides.seqLen, "--seq-len",
                config.maxPositions, schema->maxPositions, seqName);
  if (!seq)
    return seq.takeError();
  config.seqLen = *seq;
  llvm::Expected<int64_t> mbs =
      sizeField(schema->microbatchSize, overrides.microbatchSize,
                "--microbatch-size", 1, "--microbatch-size", mbsName);
  if (!mbs)
    return mbs.takeError();
  config.microbatchSize = *mbs;

  if (const llvm::json::Value *eps = object->get(schema->epsilon)) {
    std::optional<double> d = eps->getAsNumber();
    if (!d)
      return read.error(
          schema->epsilon,
          llvm::formatv("expected a number, got {0}", *eps).str());
    if (std::optional<std::string> error = nn::checkLayerNormEpsilon(*d))
      return read.error(schema->epsilon, *error);
    config.layerNormEpsilon = *d;
  }

  llvm::Expected<std::optional<std::string>> name =
      schema->name ? read.optionalString(schema->name)
                   : llvm::Expected<std::optional<std::string>>(std::nullopt);
  if (!name)
    return name.takeError();
  // A given name is checked; one taken from the file's name is made to fit
  // the rule (a user who names no model should not have to rename files).
  if (*name) {
    if (std::optional<std::string> bad = nn::checkModelName(**name))
      return read.error(schema->name, *bad);
    config.name = **name;
  } else {
    config.name = nn::toModelName(llvm::sys::path::stem(path));
  }

  // Sizes within what the compiler can build; the products of the sizes
  // within int64 (ModelLimits.h).
  nn::ModelSizes sizes{{schema->layers, config.layers},
                       {schema->hidden, config.hidden},
                       {schema->heads, config.heads},
                       {schema->vocab, config.vocab},
                       {schema->maxPositions, config.maxPositions},
                       {seqName, config.seqLen},
                       {mbsName, config.microbatchSize},
                       /*maskedLMHead=*/config.family == ModelFamily::BERT};
  if (config.family == ModelFamily::LLaMA) {
    sizes.llama = nn::LlamaSizes{{schema->kvHeads, config.kvHeads},
                                 {schema->intermediateSize,
                                  config.intermediateSize}};
  }
  if (std::optional<std::string> error = nn::checkModelSizes(sizes))
    return fail(*error);
  if (llvm::Error e = checkSlidingWindow(read, *object, *schema, config,
                                         seqName))
    return std::move(e);

  if (llvm::Error e = checkGraphFields(read, *object, *schema, config.hidden,
                                      config.heads))
    return std::move(e);
  return config;
}

llvm::Expected<ModelConfig>
bitpipe::loadModelConfig(llvm::StringRef path,
                         const ModelConfigOverrides &overrides) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!buffer)
    return llvm::createStringError(buffer.getError(),
                                   path + ": cannot read: " +
                                       buffer.getError().message());
  return parseModelConfig(path, (*buffer)->getBuffer(), overrides);
}
