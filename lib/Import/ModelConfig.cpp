//===- ModelConfig.cpp - Reading model configurations ---------------------===//
//
// Two input schemas:
//   * bitpipe's own: {"family", "layers", "hidden", "heads", "vocab",
//     "max_positions", "seq_len", "microbatch_size", optional
//     "layer_norm_epsilon" and "name"};
//   * Hugging Face config.json: GPT-2 keys (n_layer n_embd n_head
//     n_positions vocab_size) or BERT keys (num_hidden_layers hidden_size
//     num_attention_heads max_position_embeddings vocab_size). Such a file
//     has no sequence length or micro-batch size: the sequence length
//     defaults to the maximum number of positions and the micro-batch size to
//     1, unless given on the command line.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Import/ModelConfig.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace bitpipe;
using llvm::json::Object;

llvm::StringRef bitpipe::stringifyModelFamily(ModelFamily family) {
  return family == ModelFamily::GPT ? "gpt" : "bert";
}

std::optional<ModelFamily> bitpipe::parseModelFamily(llvm::StringRef name) {
  if (name == "gpt" || name == "gpt2")
    return ModelFamily::GPT;
  if (name == "bert")
    return ModelFamily::BERT;
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

  /// An optional positive number.
  llvm::Expected<std::optional<double>>
  optionalPositiveNumber(llvm::StringRef key) const {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return std::nullopt;
    std::optional<double> d = value->getAsNumber();
    if (!d || *d <= 0)
      return error(key, llvm::formatv("expected a positive number, got {0}",
                                      *value)
                            .str());
    return d;
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

/// The JSON keys of one schema.
struct Schema {
  const char *family, *layers, *hidden, *heads, *vocab, *maxPositions;
  const char *seqLen, *microbatchSize, *epsilon;
};
constexpr Schema bitpipeSchema = {"family",        "layers",   "hidden",
                                  "heads",         "vocab",    "max_positions",
                                  "seq_len",       "microbatch_size",
                                  "layer_norm_epsilon"};
constexpr Schema gpt2Schema = {"model_type", "n_layer",   "n_embd",
                               "n_head",     "vocab_size", "n_positions",
                               nullptr,      nullptr,     "layer_norm_epsilon"};
constexpr Schema bertSchema = {
    "model_type",          "num_hidden_layers", "hidden_size",
    "num_attention_heads", "vocab_size",        "max_position_embeddings",
    nullptr,               nullptr,             "layer_norm_eps"};

} // namespace

llvm::Expected<ModelConfig>
bitpipe::parseModelConfig(llvm::StringRef path, llvm::StringRef contents,
                          const ModelConfigOverrides &overrides) {
  auto fail = [&](const llvm::Twine &what) -> llvm::Error {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   path + ": " + what);
  };
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(contents);
  if (!json)
    return fail("not valid JSON: " + llvm::toString(json.takeError()));
  const Object *object = json->getAsObject();
  if (!object)
    return fail("expected a JSON object at the top level");
  FieldReader read(path, *object);

  // Which schema: bitpipe's, or a Hugging Face one recognised by its keys.
  const Schema *schema = &bitpipeSchema;
  std::optional<ModelFamily> schemaFamily;
  if (read.has("n_layer")) {
    schema = &gpt2Schema;
    schemaFamily = ModelFamily::GPT;
  } else if (read.has("num_hidden_layers")) {
    schema = &bertSchema;
    schemaFamily = ModelFamily::BERT;
  }

  ModelConfig config;
  llvm::Expected<std::optional<std::string>> familyName =
      read.optionalString(schema->family);
  if (!familyName)
    return familyName.takeError();
  std::optional<ModelFamily> family = schemaFamily;
  if (*familyName && schema == &bitpipeSchema) {
    family = parseModelFamily(**familyName);
    if (!family)
      return read.error(schema->family,
                        "expected \"gpt\" or \"bert\", got \"" + **familyName +
                            "\"");
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
                      "is missing (\"gpt\" or \"bert\"; or name the family on "
                      "the command line)");
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

  // Sequence length and micro-batch size: command line, then file, then the
  // Hugging Face defaults.
  auto sizeField = [&](const char *key, std::optional<int64_t> override,
                       int64_t hfDefault) -> llvm::Expected<int64_t> {
    if (override)
      return *override;
    if (!key)
      return hfDefault;
    return read.positive(key);
  };
  llvm::Expected<int64_t> seq =
      sizeField(schema->seqLen, overrides.seqLen, config.maxPositions);
  if (!seq)
    return seq.takeError();
  config.seqLen = *seq;
  llvm::Expected<int64_t> mbs =
      sizeField(schema->microbatchSize, overrides.microbatchSize, 1);
  if (!mbs)
    return mbs.takeError();
  config.microbatchSize = *mbs;

  llvm::Expected<std::optional<double>> eps =
      read.optionalPositiveNumber(schema->epsilon);
  if (!eps)
    return eps.takeError();
  if (*eps)
    config.layerNormEpsilon = **eps;

  llvm::Expected<std::optional<std::string>> name =
      schema == &bitpipeSchema ? read.optionalString("name")
                               : llvm::Expected<std::optional<std::string>>(
                                     std::nullopt);
  if (!name)
    return name.takeError();
  config.name = *name ? **name : llvm::sys::path::stem(path).str();

  // Consistency between fields.
  if (config.hidden % config.heads != 0)
    return read.error(schema->heads,
                      llvm::formatv("({0}) must divide the hidden size ({1})",
                                    config.heads, config.hidden)
                          .str());
  if (config.seqLen > config.maxPositions)
    return fail(llvm::formatv("sequence length {0} exceeds the model's {1} "
                              "positions (field '{2}')",
                              config.seqLen, config.maxPositions,
                              schema->maxPositions));
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
