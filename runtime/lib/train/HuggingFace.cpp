//===- HuggingFace.cpp - Hugging Face checkpoints: names and layouts ------===//

#include "HuggingFace.h"

#include "bitpipe/base/AtomicFile.h"
#include "core/Json.h"
#include "core/Tensor.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

namespace bitpipe::runtime {

const char *hfModelTypeName(HfModelType type) {
  switch (type) {
  case HfModelType::Gpt2:
    return "gpt2";
  case HfModelType::Bert:
    return "bert";
  case HfModelType::Llama:
    return "llama";
  }
  return "?";
}

const HfParamMapping *HfMapping::find(const std::string &param) const {
  for (const HfParamMapping &m : params)
    if (m.param == param)
      return &m;
  return nullptr;
}

//===----------------------------------------------------------------------===//
// The correspondence (docs/huggingface.md has it as a table)
//===----------------------------------------------------------------------===//

namespace {

/// Builds a mapping entry by entry.
struct MappingBuilder {
  HfMapping m;

  /// \p param is the Hugging Face tensor \p hf, same shape.
  void same(const std::string &param, const std::string &hf,
            std::vector<int64_t> shape) {
    m.params.push_back({param, shape, {{hf, shape, false}}, std::nullopt});
  }
  /// \p param [out, in] is the Conv1D weight \p hf [in, out], transposed.
  void conv1d(const std::string &param, const std::string &hf, int64_t out,
              int64_t in) {
    m.params.push_back({param, {out, in}, {{hf, {in, out}, true}},
                        std::nullopt});
  }
  /// \p param stacks the rows of \p parts.
  void stacked(const std::string &param, std::vector<HfPart> parts) {
    int64_t rows = 0;
    for (const HfPart &p : parts)
      rows += p.rows();
    std::vector<int64_t> shape = parts.front().shape;
    shape[0] = rows;
    m.params.push_back({param, shape, std::move(parts), std::nullopt});
  }
  /// A norm (or linear layer) with weight and bias.
  void withBias(const std::string &param, const std::string &hf,
                std::vector<int64_t> weightShape) {
    same(param + ".weight", hf + ".weight", weightShape);
    same(param + ".bias", hf + ".bias", {weightShape[0]});
  }
};

void gpt2(const HfModelSizes &s, MappingBuilder &b) {
  const int64_t H = s.hidden;
  const std::string t = "transformer.";
  b.m.prefix = t;
  b.same("embed.tokens", t + "wte.weight", {s.vocab, H});
  b.same("embed.positions", t + "wpe.weight", {s.maxPositions, H});
  for (int64_t i = 0; i < s.layers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    std::string h = t + "h." + std::to_string(i) + ".";
    b.withBias(p + "ln1", h + "ln_1", {H});
    // c_attn's output columns are q, k, v, each heads of d consecutive
    // columns: bitpipe's qkv rows exactly (docs/models.md).
    b.conv1d(p + "attn.qkv.weight", h + "attn.c_attn.weight", 3 * H, H);
    b.same(p + "attn.qkv.bias", h + "attn.c_attn.bias", {3 * H});
    b.conv1d(p + "attn.proj.weight", h + "attn.c_proj.weight", H, H);
    b.same(p + "attn.proj.bias", h + "attn.c_proj.bias", {H});
    b.withBias(p + "ln2", h + "ln_2", {H});
    b.conv1d(p + "mlp.fc.weight", h + "mlp.c_fc.weight", 4 * H, H);
    b.same(p + "mlp.fc.bias", h + "mlp.c_fc.bias", {4 * H});
    b.conv1d(p + "mlp.proj.weight", h + "mlp.c_proj.weight", H, 4 * H);
    b.same(p + "mlp.proj.bias", h + "mlp.c_proj.bias", {H});
    // The causal masks older checkpoints store as buffers.
    b.m.ignored.insert(h + "attn.bias");
    b.m.ignored.insert(h + "attn.masked_bias");
  }
  b.withBias("final_ln", t + "ln_f", {H});
  b.m.ignored.insert("lm_head.weight"); // tied to wte
}

/// One BERT layer's q/k/v projections, stacked by rows as bitpipe's
/// fused attn.qkv.
void bertQkv(const std::string &param, const std::string &layer, int64_t H,
             MappingBuilder &b) {
  for (const char *w : {"weight", "bias"}) {
    std::vector<int64_t> shape = std::string(w) == "weight"
                                     ? std::vector<int64_t>{H, H}
                                     : std::vector<int64_t>{H};
    std::vector<HfPart> parts;
    for (const char *proj : {"query", "key", "value"})
      parts.push_back(
          {layer + "attention.self." + proj + "." + w, shape, false});
    b.stacked(param + "." + w, std::move(parts));
  }
}

void bert(const HfModelSizes &s, MappingBuilder &b) {
  const int64_t H = s.hidden;
  const std::string e = "bert.embeddings.";
  const bool post = s.normPosition == HfNormPosition::Post;
  b.m.prefix = "bert.";
  b.same("embed.tokens", e + "word_embeddings.weight", {s.vocab, H});
  b.same("embed.positions", e + "position_embeddings.weight",
         {s.maxPositions, H});
  b.m.params.back().foldedRow =
      HfPart{e + "token_type_embeddings.weight", {2, H}, false};
  // In the manifest's order (ModelBuilder.cpp): a post-LN model's norms
  // follow their sublayers.
  if (post)
    b.withBias("embed.ln", e + "LayerNorm", {H});
  auto layer = [](int64_t i) {
    return "bert.encoder.layer." + std::to_string(i) + ".";
  };
  for (int64_t i = 0; i < s.layers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    std::string l = layer(i);
    // Post-LN: the same graph, each norm the one after the same residual
    // add. Pre-LN (bitpipe's own BERT): each bitpipe norm takes the
    // Hugging Face norm in front of the same sublayer, another function of
    // the same weights (docs/huggingface.md, "BERT").
    if (!post)
      b.withBias(p + "ln1",
                 i == 0 ? e + "LayerNorm" : layer(i - 1) + "output.LayerNorm",
                 {H});
    bertQkv(p + "attn.qkv", l, H, b);
    b.withBias(p + "attn.proj", l + "attention.output.dense", {H, H});
    b.withBias(p + (post ? "ln1" : "ln2"), l + "attention.output.LayerNorm",
               {H});
    b.withBias(p + "mlp.fc", l + "intermediate.dense", {4 * H, H});
    b.withBias(p + "mlp.proj", l + "output.dense", {H, 4 * H});
    if (post)
      b.withBias(p + "ln2", l + "output.LayerNorm", {H});
  }
  if (!post)
    b.withBias("final_ln", layer(s.layers - 1) + "output.LayerNorm", {H});
  b.withBias("head.dense", "cls.predictions.transform.dense", {H, H});
  b.withBias("head.ln", "cls.predictions.transform.LayerNorm", {H});
  b.same("head.bias", "cls.predictions.bias", {s.vocab});
  for (const char *name :
       {"bert.embeddings.position_ids", "bert.pooler.dense.weight",
        "bert.pooler.dense.bias", "cls.predictions.decoder.weight",
        "cls.predictions.decoder.bias", "cls.seq_relationship.weight",
        "cls.seq_relationship.bias"})
    b.m.ignored.insert(name);
}

void llama(const HfModelSizes &s, MappingBuilder &b) {
  const int64_t H = s.hidden, d = s.hidden / s.heads, I = s.intermediate;
  const std::string m = "model.";
  b.m.prefix = m;
  b.same("embed.tokens", m + "embed_tokens.weight", {s.vocab, H});
  for (int64_t i = 0; i < s.layers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    std::string l = m + "layers." + std::to_string(i) + ".";
    b.same(p + "ln1.weight", l + "input_layernorm.weight", {H});
    // q, k, v stacked by rows; both sides use rotate_half's layout, so no
    // permutation (docs/llama.md).
    b.stacked(p + "attn.qkv.weight",
              {{l + "self_attn.q_proj.weight", {s.heads * d, H}, false},
               {l + "self_attn.k_proj.weight", {s.kvHeads * d, H}, false},
               {l + "self_attn.v_proj.weight", {s.kvHeads * d, H}, false}});
    b.same(p + "attn.proj.weight", l + "self_attn.o_proj.weight", {H, H});
    b.same(p + "ln2.weight", l + "post_attention_layernorm.weight", {H});
    b.same(p + "mlp.gate.weight", l + "mlp.gate_proj.weight", {I, H});
    b.same(p + "mlp.up.weight", l + "mlp.up_proj.weight", {I, H});
    b.same(p + "mlp.down.weight", l + "mlp.down_proj.weight", {H, I});
    b.m.ignored.insert(l + "self_attn.rotary_emb.inv_freq");
  }
  b.same("final_ln.weight", m + "norm.weight", {H});
  if (s.tiedHead)
    b.m.ignored.insert("lm_head.weight");
  else
    b.same("head.weight", "lm_head.weight", {s.vocab, H});
}

Status badSize(const char *what, int64_t value, const std::string &expected) {
  return Status::error(ErrorCode::InvalidArgument,
                       formatString("Hugging Face mapping: %s is %lld; "
                                    "expected %s",
                                    what, static_cast<long long>(value),
                                    expected.c_str()));
}

} // namespace

Expected<HfMapping> huggingFaceMapping(const HfModelSizes &s) {
  for (auto [what, value] : {std::pair<const char *, int64_t>{"layers",
                                                              s.layers},
                             {"hidden", s.hidden},
                             {"heads", s.heads},
                             {"vocab", s.vocab}})
    if (value <= 0)
      return badSize(what, value, "a positive size");
  if (s.hidden % s.heads != 0)
    return badSize("heads", s.heads,
                   formatString("a divisor of hidden (%lld)",
                                static_cast<long long>(s.hidden)));
  if (s.type != HfModelType::Llama && s.maxPositions <= 0)
    return badSize("max_positions", s.maxPositions, "a positive size");
  if (s.type == HfModelType::Llama) {
    if (s.kvHeads <= 0 || s.heads % s.kvHeads != 0)
      return badSize("kv_heads", s.kvHeads,
                     formatString("a divisor of heads (%lld)",
                                  static_cast<long long>(s.heads)));
    if (s.intermediate <= 0)
      return badSize("intermediate_size", s.intermediate, "a positive size");
  }
  MappingBuilder b;
  b.m.type = s.type;
  switch (s.type) {
  case HfModelType::Gpt2:
    gpt2(s, b);
    break;
  case HfModelType::Bert:
    bert(s, b);
    break;
  case HfModelType::Llama:
    llama(s, b);
    break;
  }
  return std::move(b.m);
}

//===----------------------------------------------------------------------===//
// config.json
//===----------------------------------------------------------------------===//

namespace {

/// A JSON object written member by member, in order.
class JsonObject {
public:
  JsonObject &raw(const std::string &key, const std::string &value) {
    text_ += (text_.empty() ? "{\n  " : ",\n  ") + jsonQuote(key) + ": " +
             value;
    return *this;
  }
  JsonObject &str(const std::string &key, const std::string &v) {
    return raw(key, jsonQuote(v));
  }
  JsonObject &integer(const std::string &key, int64_t v) {
    return raw(key, std::to_string(v));
  }
  JsonObject &number(const std::string &key, double v) {
    // The shortest text that reads back as \p v; for a value that is a
    // float (the IR's epsilons are f32), as that float: 1e-05, not
    // 9.9999997473787516e-06. A decimal point so that Python reads a float.
    bool isFloat = static_cast<double>(static_cast<float>(v)) == v;
    std::string s;
    if (v == static_cast<double>(static_cast<int64_t>(v)) &&
        std::fabs(v) < 1e15) // a whole number: 500000.0, not 5e+05
      return raw(key, formatString("%.1f", v));
    for (int digits = 1; digits <= 17; ++digits) {
      s = formatString("%.*g", digits, v);
      double back = std::strtod(s.c_str(), nullptr);
      if (isFloat ? static_cast<float>(back) == static_cast<float>(v)
                  : back == v)
        break;
    }
    if (s.find_first_of(".eEn") == std::string::npos)
      s += ".0";
    return raw(key, s);
  }
  JsonObject &boolean(const std::string &key, bool v) {
    return raw(key, v ? "true" : "false");
  }
  std::string done() const { return text_ + "\n}\n"; }

private:
  std::string text_;
};

} // namespace

std::string huggingFaceConfigJson(const HfModelSizes &s) {
  JsonObject j;
  switch (s.type) {
  case HfModelType::Gpt2:
    // bitpipe's GPT (docs/models.md): tied head. No special
    // tokens: bitpipe does not know the tokenizer's, and GPT2Config's
    // defaults (50256) lie outside most vocabularies it trains.
    j.raw("architectures", "[\"GPT2LMHeadModel\"]")
        .str("model_type", "gpt2")
        .integer("vocab_size", s.vocab)
        .integer("n_positions", s.maxPositions)
        .integer("n_ctx", s.maxPositions)
        .integer("n_embd", s.hidden)
        .integer("n_layer", s.layers)
        .integer("n_head", s.heads)
        .raw("n_inner", "null")
        .str("activation_function", s.geluName)
        .number("layer_norm_epsilon", s.normEpsilon)
        .number("resid_pdrop", s.residualDropout)
        .number("embd_pdrop", s.embeddingDropout)
        .number("attn_pdrop", s.attentionDropout)
        .boolean("scale_attn_weights", true)
        .boolean("scale_attn_by_inverse_layer_idx", false)
        .raw("bos_token_id", "null")
        .raw("eos_token_id", "null")
        .boolean("tie_word_embeddings", true);
    break;
  case HfModelType::Bert:
    j.raw("architectures", "[\"BertForMaskedLM\"]")
        .str("model_type", "bert")
        .integer("vocab_size", s.vocab)
        .integer("hidden_size", s.hidden)
        .integer("num_hidden_layers", s.layers)
        .integer("num_attention_heads", s.heads)
        .integer("intermediate_size", 4 * s.hidden)
        .str("hidden_act", s.geluName)
        .integer("max_position_embeddings", s.maxPositions)
        .integer("type_vocab_size", 2)
        .number("layer_norm_eps", s.normEpsilon)
        .number("hidden_dropout_prob", s.residualDropout)
        .number("attention_probs_dropout_prob", s.attentionDropout)
        .str("position_embedding_type", "absolute")
        .boolean("is_decoder", false)
        .boolean("tie_word_embeddings", true);
    break;
  case HfModelType::Llama:
    j.raw("architectures", "[\"LlamaForCausalLM\"]")
        .str("model_type", "llama")
        .integer("vocab_size", s.vocab)
        .integer("hidden_size", s.hidden)
        .integer("intermediate_size", s.intermediate)
        .integer("num_hidden_layers", s.layers)
        .integer("num_attention_heads", s.heads)
        .integer("num_key_value_heads", s.kvHeads)
        .integer("head_dim", s.hidden / s.heads)
        .integer("max_position_embeddings", s.maxPositions)
        .number("rms_norm_eps", s.normEpsilon)
        .number("rope_theta", s.ropeTheta)
        .number("attention_dropout", s.attentionDropout)
        .raw("rope_scaling", "null")
        .str("hidden_act", "silu")
        .boolean("attention_bias", false)
        .boolean("mlp_bias", false)
        .integer("pretraining_tp", 1)
        // As for GPT-2: LlamaConfig's defaults (1, 2) name tokens bitpipe
        // cannot know to be special.
        .raw("bos_token_id", "null")
        .raw("eos_token_id", "null")
        .boolean("tie_word_embeddings", s.tiedHead);
    break;
  }
  return j.str("torch_dtype", "float32").done();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Expected<std::string> readWholeFile(const std::string &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return Status::error(errno == ENOENT ? ErrorCode::NotFound
                                         : ErrorCode::IoError,
                         "cannot open '" + path + "': " +
                             std::strerror(errno));
  std::string text;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    text.append(buf, n);
  bool failed = std::ferror(f);
  std::fclose(f);
  if (failed)
    return Status::error(ErrorCode::IoError, "cannot read '" + path + "'");
  return text;
}

Status indexError(const std::string &path, const std::string &what) {
  return Status::error(ErrorCode::FormatError,
                       "safetensors index '" + path + "': " + what);
}

} // namespace

Expected<std::unique_ptr<HfCheckpoint>>
HfCheckpoint::open(const std::string &path) {
  std::unique_ptr<HfCheckpoint> c(new HfCheckpoint());
  c->path_ = path;
  auto addFile = [&](const std::string &file) -> Expected<size_t> {
    for (size_t i = 0; i < c->files_.size(); ++i)
      if (c->files_[i]->path() == file)
        return i;
    Expected<std::unique_ptr<SafetensorsReader>> r =
        SafetensorsReader::open(file);
    if (!r.isOk())
      return r.status();
    c->files_.push_back(r.take());
    return c->files_.size() - 1;
  };
  if (!endsWith(path, ".index.json")) {
    Expected<size_t> f = addFile(path);
    if (!f.isOk())
      return f.status();
    for (const SafetensorsEntry &e : c->files_[0]->tensors())
      c->fileOf_[e.name] = 0;
    return std::move(c);
  }
  Expected<std::string> text = readWholeFile(path);
  if (!text.isOk())
    return text.status();
  Expected<JsonValue> json = parseJson(*text);
  if (!json.isOk())
    return indexError(path, json.status().message());
  const JsonValue *map = json->kind == JsonValue::Kind::Object
                             ? json->get("weight_map")
                             : nullptr;
  if (!map || map->kind != JsonValue::Kind::Object)
    return indexError(path, "no \"weight_map\" object (expected "
                            "{\"weight_map\": {tensor: shard file}})");
  for (const auto &[name, shard] : map->object) {
    if (shard.kind != JsonValue::Kind::String || shard.string.empty() ||
        shard.string.find('/') != std::string::npos)
      return indexError(path, "weight_map[\"" + name +
                                  "\"] is not a file name in the index's "
                                  "directory");
    Expected<size_t> f = addFile(directoryOf(path) + "/" + shard.string);
    if (!f.isOk())
      return indexError(path, "weight_map[\"" + name +
                                  "\"]: " + f.status().message());
    if (!c->files_[*f]->find(name))
      return indexError(path, "weight_map puts tensor '" + name + "' in '" +
                                  c->files_[*f]->path() +
                                  "', which has no such tensor");
    c->fileOf_[name] = *f;
  }
  return std::move(c);
}

std::vector<std::string> HfCheckpoint::names() const {
  std::vector<std::string> out;
  for (const auto &kv : fileOf_)
    out.push_back(kv.first);
  return out;
}

const SafetensorsEntry *
HfCheckpoint::find(const HfMapping &mapping, const std::string &name,
                   const SafetensorsReader **file) const {
  auto it = fileOf_.find(name);
  if (it == fileOf_.end() && name.compare(0, mapping.prefix.size(),
                                          mapping.prefix) == 0)
    it = fileOf_.find(name.substr(mapping.prefix.size()));
  if (it == fileOf_.end())
    return nullptr;
  *file = files_[it->second].get();
  return (*file)->find(it->first);
}

Status HfCheckpoint::check(const HfMapping &mapping) const {
  std::set<std::string> known = mapping.ignored;
  std::vector<std::pair<const HfPart *, const HfParamMapping *>> parts;
  for (const HfParamMapping &m : mapping.params) {
    for (const HfPart &p : m.parts)
      parts.push_back({&p, &m});
    if (m.foldedRow)
      parts.push_back({&*m.foldedRow, &m});
  }
  for (const auto &[part, m] : parts)
    known.insert(part->name);
  for (const auto &[name, file] : fileOf_)
    if (!known.count(name) && !known.count(mapping.prefix + name))
      return Status::error(
          ErrorCode::FormatError,
          "'" + files_[file]->path() + "': tensor '" + name +
              "' is not a tensor of bitpipe's " +
              hfModelTypeName(mapping.type) +
              " (expected the names of docs/huggingface.md; a checkpoint "
              "of another model or model type?)");
  for (const auto &[part, m] : parts) {
    const SafetensorsReader *file = nullptr;
    const SafetensorsEntry *e = find(mapping, part->name, &file);
    if (!e)
      return Status::error(ErrorCode::NotFound,
                           "'" + path_ + "': no tensor '" + part->name +
                               "' (bitpipe's '" + m->param +
                               "'), expected shape " +
                               shapeToString(part->shape));
    if (e->shape != part->shape)
      return Status::error(ErrorCode::FormatError,
                           "'" + file->path() + "': tensor '" + e->name +
                               "' has shape " + shapeToString(e->shape) +
                               ", expected " + shapeToString(part->shape) +
                               " (bitpipe's '" + m->param + "' " +
                               shapeToString(m->shape) + ")");
    if (e->dtype != "F32" && e->dtype != "BF16" && e->dtype != "F16")
      return Status::error(ErrorCode::FormatError,
                           "'" + file->path() + "': tensor '" + e->name +
                               "' is " + e->dtype +
                               ", expected F32, BF16 or F16");
  }
  return Status::ok();
}

Status HfCheckpoint::read(const HfMapping &mapping, const HfParamMapping &m,
                          float *out) const {
  const int64_t cols = m.shape.size() > 1 ? m.shape[1] : 1;
  int64_t row = 0;
  std::vector<float> buffer;
  for (const HfPart &part : m.parts) {
    const SafetensorsReader *file = nullptr;
    const SafetensorsEntry *e = find(mapping, part.name, &file);
    if (!e)
      return Status::error(ErrorCode::NotFound, "'" + path_ +
                                                    "': no tensor '" +
                                                    part.name + "'");
    float *dst = out + row * cols;
    if (!part.transposed) {
      BP_TRY(file->readAsF32(e->name, part.shape, dst));
    } else {
      // The file holds [in, out]: element (i, o) goes to row o, column i.
      const int64_t in = part.shape[0], outRows = part.shape[1];
      buffer.resize(static_cast<size_t>(in * outRows));
      BP_TRY(file->readAsF32(e->name, part.shape, buffer.data()));
      for (int64_t i = 0; i < in; ++i)
        for (int64_t o = 0; o < outRows; ++o)
          dst[o * cols + i] = buffer[i * outRows + o];
    }
    row += part.rows();
  }
  if (m.foldedRow) {
    const SafetensorsReader *file = nullptr;
    const SafetensorsEntry *e = find(mapping, m.foldedRow->name, &file);
    if (!e)
      return Status::error(ErrorCode::NotFound, "'" + path_ +
                                                    "': no tensor '" +
                                                    m.foldedRow->name + "'");
    buffer.resize(static_cast<size_t>(numElements(m.foldedRow->shape)));
    BP_TRY(file->readAsF32(e->name, m.foldedRow->shape, buffer.data()));
    for (int64_t r = 0; r < row; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[r * cols + c] += buffer[c];
  }
  return Status::ok();
}

Expected<bool> isHuggingFaceCheckpoint(const std::string &path,
                                       const std::string &firstParam) {
  if (endsWith(path, ".index.json"))
    return true;
  Expected<std::unique_ptr<SafetensorsReader>> r =
      SafetensorsReader::open(path);
  if (!r.isOk())
    return r.status();
  const std::string *format = (*r)->metadataValue("format");
  if (format && format->rfind("bitpipe-", 0) == 0)
    return false;
  return (*r)->find(firstParam) == nullptr;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

Status writeHuggingFace(const std::string &dir, const HfMapping &mapping,
                        const std::function<const float *(
                            const std::string &param)> &paramData,
                        const std::string &configJson) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return Status::error(ErrorCode::IoError, "cannot create directory '" +
                                                 dir + "': " +
                                                 std::strerror(errno));
  // Every part's floats, then one file (the inverse of HfCheckpoint::read).
  std::vector<std::vector<float>> data;
  std::vector<SafetensorsTensor> tensors;
  for (const HfParamMapping &m : mapping.params) {
    const float *src = paramData(m.param);
    if (!src)
      return Status::error(ErrorCode::InvalidArgument,
                           "Hugging Face checkpoint: no data for parameter '" +
                               m.param + "'");
    const int64_t cols = m.shape.size() > 1 ? m.shape[1] : 1;
    int64_t row = 0;
    for (const HfPart &part : m.parts) {
      std::vector<float> t(static_cast<size_t>(numElements(part.shape)));
      const float *rows = src + row * cols;
      if (!part.transposed) {
        std::copy(rows, rows + t.size(), t.begin());
      } else {
        const int64_t in = part.shape[0], outRows = part.shape[1];
        for (int64_t i = 0; i < in; ++i)
          for (int64_t o = 0; o < outRows; ++o)
            t[i * outRows + o] = rows[o * cols + i];
      }
      row += part.rows();
      data.push_back(std::move(t));
      tensors.push_back({part.name, nullptr, part.shape});
    }
    if (m.foldedRow) {
      data.emplace_back(static_cast<size_t>(numElements(m.foldedRow->shape)),
                        0.0f);
      tensors.push_back({m.foldedRow->name, nullptr, m.foldedRow->shape});
    }
  }
  for (size_t i = 0; i < tensors.size(); ++i)
    tensors[i].data = data[i].data();
  BP_TRY(writeSafetensors(dir + "/model.safetensors", tensors,
                          {{"format", "pt"}}));
  Expected<base::AtomicFileWriter> w =
      base::AtomicFileWriter::open(dir + "/config.json");
  if (!w.isOk())
    return w.status();
  BP_TRY(w->write(configJson.data(), configJson.size()));
  return w->commit();
}

} // namespace bitpipe::runtime
