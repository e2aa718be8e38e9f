//===- HuggingFaceTest.cpp - Hugging Face names, layouts, files -----------===//
//
// train/HuggingFace.h against files the tests write: bitpipe -> Hugging
// Face -> bitpipe bit-exact for every family, the layouts element by
// element (GPT-2's Conv1D transposed, q/k/v stacked, BERT's folded token
// type row), sharded indexes, base-model names, BF16 and F16 tensors, and
// the errors for a missing, mis-shaped or unknown tensor.
//
//===----------------------------------------------------------------------===//

#include "train/HuggingFace.h"
#include "TempDir.h"
#include "core/Json.h"
#include "core/Tensor.h"
#include "train/Checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>

using namespace bitpipe::runtime;
using bitpipe::runtime::testing::readBytes;
using bitpipe::runtime::testing::safetensorsBytes;
using bitpipe::runtime::testing::TempDir;
using bitpipe::runtime::testing::writeBytes;

namespace {

void expectContains(const Status &s, const std::string &needle) {
  ASSERT_FALSE(s.isOk()) << "expected an error containing: " << needle;
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message: " << s.message() << "\nexpected to contain: " << needle;
}

HfModelSizes gpt2Sizes() {
  HfModelSizes s;
  s.type = HfModelType::Gpt2;
  s.layers = 2, s.hidden = 8, s.heads = 2, s.vocab = 11, s.maxPositions = 5;
  return s;
}

HfModelSizes bertSizes() {
  HfModelSizes s = gpt2Sizes();
  s.type = HfModelType::Bert;
  return s;
}

HfModelSizes postLnBertSizes() {
  HfModelSizes s = bertSizes();
  s.normPosition = HfNormPosition::Post;
  return s;
}

HfModelSizes llamaSizes(bool tied) {
  HfModelSizes s;
  s.type = HfModelType::Llama;
  s.layers = 2, s.hidden = 8, s.heads = 4, s.kvHeads = 2, s.vocab = 11;
  s.maxPositions = 16, s.intermediate = 12, s.tiedHead = tied;
  s.normEpsilon = 1e-6, s.ropeTheta = 500000;
  return s;
}

/// Random values for every parameter of \p m, distinct per element.
std::map<std::string, std::vector<float>> randomParams(const HfMapping &m) {
  std::mt19937 gen(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::map<std::string, std::vector<float>> out;
  for (const HfParamMapping &p : m.params) {
    std::vector<float> v(static_cast<size_t>(numElements(p.shape)));
    for (float &x : v)
      x = normal(gen);
    out[p.param] = std::move(v);
  }
  return out;
}

Status write(const std::string &dir, const HfModelSizes &sizes,
             const HfMapping &m,
             const std::map<std::string, std::vector<float>> &params) {
  return writeHuggingFace(
      dir, m,
      [&](const std::string &name) -> const float * {
        auto it = params.find(name);
        return it == params.end() ? nullptr : it->second.data();
      },
      huggingFaceConfigJson(sizes));
}

/// Opens and checks \p path against \p m, then reads every parameter and
/// expects \p params bit for bit.
void expectLoadsExactly(const std::string &path, const HfMapping &m,
                        const std::map<std::string, std::vector<float>> &params) {
  Expected<std::unique_ptr<HfCheckpoint>> c = HfCheckpoint::open(path);
  ASSERT_TRUE(c.isOk()) << c.status().message();
  Status checked = (*c)->check(m);
  ASSERT_TRUE(checked.isOk()) << checked.message();
  for (const HfParamMapping &p : m.params) {
    std::vector<float> got(static_cast<size_t>(numElements(p.shape)), -1.0f);
    Status s = (*c)->read(m, p, got.data());
    ASSERT_TRUE(s.isOk()) << s.message();
    const std::vector<float> &want = params.at(p.param);
    EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)),
              0)
        << p.param << " differs after the round trip";
  }
}

/// The tensor \p name of \p file.
std::vector<float> tensor(const std::string &file, const std::string &name) {
  Expected<std::unique_ptr<SafetensorsReader>> r =
      SafetensorsReader::open(file);
  EXPECT_TRUE(r.isOk());
  const SafetensorsEntry *e = (*r)->find(name);
  EXPECT_NE(e, nullptr) << name;
  if (!e)
    return {};
  std::vector<float> out(static_cast<size_t>(numElements(e->shape)));
  EXPECT_TRUE((*r)->readF32(name, e->shape, out.data()).isOk());
  return out;
}

/// Rewrites \p file keeping the tensors \p keep says yes to, renamed by
/// \p rename, and reshaped by \p reshape where given.
void rewrite(const std::string &from, const std::string &to,
             const std::function<bool(const std::string &)> &keep,
             const std::function<std::string(const std::string &)> &rename,
             const std::map<std::string, std::vector<int64_t>> &reshape = {}) {
  Expected<std::unique_ptr<SafetensorsReader>> r =
      SafetensorsReader::open(from);
  ASSERT_TRUE(r.isOk());
  std::vector<std::vector<float>> data;
  std::vector<SafetensorsTensor> tensors;
  for (const SafetensorsEntry &e : (*r)->tensors()) {
    if (!keep(e.name))
      continue;
    data.push_back(tensor(from, e.name));
    auto it = reshape.find(e.name);
    std::vector<int64_t> shape = it == reshape.end() ? e.shape : it->second;
    data.back().resize(static_cast<size_t>(numElements(shape)));
    tensors.push_back({rename(e.name), nullptr, shape});
  }
  for (size_t i = 0; i < tensors.size(); ++i)
    tensors[i].data = data[i].data();
  ASSERT_TRUE(writeSafetensors(to, tensors, {{"format", "pt"}}).isOk());
}

bool all(const std::string &) { return true; }
std::string same(const std::string &n) { return n; }

TEST(HuggingFaceTest, RoundTripIsBitExactForEveryFamily) {
  for (HfModelSizes sizes : {gpt2Sizes(), bertSizes(), postLnBertSizes(),
                             llamaSizes(true), llamaSizes(false)}) {
    SCOPED_TRACE(hfModelTypeName(sizes.type));
    TempDir dir;
    Expected<HfMapping> m = huggingFaceMapping(sizes);
    ASSERT_TRUE(m.isOk()) << m.status().message();
    auto params = randomParams(*m);
    ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
    expectLoadsExactly(dir.file("model.safetensors"), *m, params);
    // transformers refuses a file without this metadata.
    Expected<std::unique_ptr<SafetensorsReader>> r =
        SafetensorsReader::open(dir.file("model.safetensors"));
    ASSERT_TRUE(r.isOk());
    ASSERT_NE((*r)->metadataValue("format"), nullptr);
    EXPECT_EQ(*(*r)->metadataValue("format"), "pt");
  }
}

TEST(HuggingFaceTest, Gpt2NamesAndConv1DLayout) {
  TempDir dir;
  HfModelSizes sizes = gpt2Sizes();
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  auto params = randomParams(*m);
  ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
  // bitpipe's [out, in] qkv is c_attn [in, out] transposed: element
  // (r, c) of the one is (c, r) of the other.
  std::vector<float> cAttn = tensor(dir.file("model.safetensors"),
                                    "transformer.h.1.attn.c_attn.weight");
  const std::vector<float> &qkv = params["layers.1.attn.qkv.weight"];
  ASSERT_EQ(cAttn.size(), size_t(3 * 8 * 8));
  for (int64_t r = 0; r < 24; ++r)
    for (int64_t c = 0; c < 8; ++c)
      ASSERT_EQ(qkv[r * 8 + c], cAttn[c * 24 + r]) << r << "," << c;
  EXPECT_EQ(tensor(dir.file("model.safetensors"), "transformer.ln_f.bias"),
            params["final_ln.bias"]);
  EXPECT_EQ(tensor(dir.file("model.safetensors"), "transformer.wpe.weight"),
            params["embed.positions"]);
}

TEST(HuggingFaceTest, LlamaStacksQKVByRowsAndKeepsAnUntiedHead) {
  TempDir dir;
  HfModelSizes sizes = llamaSizes(false);
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  auto params = randomParams(*m);
  ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
  std::string file = dir.file("model.safetensors");
  const std::vector<float> &qkv = params["layers.0.attn.qkv.weight"];
  // q: 4 heads of 2 rows, then k and v: 2 heads of 2 rows each; 8 columns.
  std::vector<float> q = tensor(file, "model.layers.0.self_attn.q_proj.weight");
  std::vector<float> k = tensor(file, "model.layers.0.self_attn.k_proj.weight");
  std::vector<float> v = tensor(file, "model.layers.0.self_attn.v_proj.weight");
  ASSERT_EQ(q.size(), 64u);
  ASSERT_EQ(k.size(), 32u);
  ASSERT_EQ(v.size(), 32u);
  EXPECT_TRUE(std::equal(q.begin(), q.end(), qkv.begin()));
  EXPECT_TRUE(std::equal(k.begin(), k.end(), qkv.begin() + 64));
  EXPECT_TRUE(std::equal(v.begin(), v.end(), qkv.begin() + 96));
  EXPECT_EQ(tensor(file, "lm_head.weight"), params["head.weight"]);
  EXPECT_EQ(tensor(file, "model.norm.weight"), params["final_ln.weight"]);
}

TEST(HuggingFaceTest, BertFoldsTheTokenTypeRowIntoThePositions) {
  TempDir dir;
  HfModelSizes sizes = bertSizes();
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  auto params = randomParams(*m);
  ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
  std::string file = dir.file("model.safetensors");
  // Written as zeros, [type_vocab_size 2, H].
  EXPECT_EQ(tensor(file, "bert.embeddings.token_type_embeddings.weight"),
            std::vector<float>(16, 0.0f));
  // The norm in front of each sublayer (docs/huggingface.md, "BERT").
  EXPECT_EQ(tensor(file, "bert.embeddings.LayerNorm.weight"),
            params["layers.0.ln1.weight"]);
  EXPECT_EQ(tensor(file, "bert.encoder.layer.0.output.LayerNorm.bias"),
            params["layers.1.ln1.bias"]);
  EXPECT_EQ(tensor(file, "bert.encoder.layer.1.output.LayerNorm.weight"),
            params["final_ln.weight"]);
  EXPECT_EQ(tensor(file, "bert.encoder.layer.1.attention.self.key.bias"),
            std::vector<float>(params["layers.1.attn.qkv.bias"].begin() + 8,
                               params["layers.1.attn.qkv.bias"].begin() + 16));

  // A token type row of 1s: every position row gains 1.
  std::string typed = dir.file("typed.safetensors");
  Expected<std::unique_ptr<SafetensorsReader>> r =
      SafetensorsReader::open(file);
  ASSERT_TRUE(r.isOk());
  std::vector<std::vector<float>> data;
  std::vector<SafetensorsTensor> tensors;
  for (const SafetensorsEntry &e : (*r)->tensors()) {
    data.push_back(tensor(file, e.name));
    if (e.name == "bert.embeddings.token_type_embeddings.weight")
      std::fill(data.back().begin(), data.back().begin() + 8, 1.0f);
    tensors.push_back({e.name, nullptr, e.shape});
  }
  for (size_t i = 0; i < tensors.size(); ++i)
    tensors[i].data = data[i].data();
  ASSERT_TRUE(writeSafetensors(typed, tensors, {}).isOk());
  Expected<std::unique_ptr<HfCheckpoint>> c = HfCheckpoint::open(typed);
  ASSERT_TRUE(c.isOk());
  std::vector<float> positions(40);
  ASSERT_TRUE(
      (*c)->read(*m, *m->find("embed.positions"), positions.data()).isOk());
  for (size_t i = 0; i < positions.size(); ++i)
    EXPECT_EQ(positions[i], params["embed.positions"][i] + 1.0f);
}

TEST(HuggingFaceTest, PostLnBertNormsAreTheNormsAfterEachResidualAdd) {
  TempDir dir;
  HfModelSizes sizes = postLnBertSizes();
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  // BertForMaskedLM's graph: the embeddings' norm, two per layer, no final
  // norm, in the order the model uses them (ModelBuilder.cpp).
  std::vector<std::string> norms;
  for (const HfParamMapping &p : m->params)
    if (p.param.find("ln") != std::string::npos &&
        p.param.find(".weight") != std::string::npos)
      norms.push_back(p.param);
  EXPECT_EQ(norms, (std::vector<std::string>{
                       "embed.ln.weight", "layers.0.ln1.weight",
                       "layers.0.ln2.weight", "layers.1.ln1.weight",
                       "layers.1.ln2.weight", "head.ln.weight"}));
  EXPECT_EQ(m->find("final_ln.weight"), nullptr);

  auto params = randomParams(*m);
  ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
  std::string file = dir.file("model.safetensors");
  EXPECT_EQ(tensor(file, "bert.embeddings.LayerNorm.weight"),
            params["embed.ln.weight"]);
  EXPECT_EQ(tensor(file, "bert.embeddings.LayerNorm.bias"),
            params["embed.ln.bias"]);
  for (int i = 0; i < 2; ++i) {
    std::string l = "bert.encoder.layer." + std::to_string(i) + ".";
    std::string p = "layers." + std::to_string(i) + ".";
    for (const char *w : {"weight", "bias"}) {
      EXPECT_EQ(tensor(file, l + "attention.output.LayerNorm." + w),
                params[p + "ln1." + w]);
      EXPECT_EQ(tensor(file, l + "output.LayerNorm." + w),
                params[p + "ln2." + w]);
    }
  }
  // The rest is pre-LN's: q/k/v stacked, the token type row folded.
  EXPECT_EQ(tensor(file, "bert.encoder.layer.0.attention.self.value.weight"),
            std::vector<float>(params["layers.0.attn.qkv.weight"].begin() + 128,
                               params["layers.0.attn.qkv.weight"].end()));
  EXPECT_EQ(tensor(file, "bert.embeddings.token_type_embeddings.weight"),
            std::vector<float>(16, 0.0f));

  // Pre- and post-LN BERT read the same Hugging Face tensors.
  Expected<HfMapping> pre = huggingFaceMapping(bertSizes());
  ASSERT_TRUE(pre.isOk());
  Expected<std::unique_ptr<HfCheckpoint>> c = HfCheckpoint::open(file);
  ASSERT_TRUE(c.isOk());
  Status checked = (*c)->check(*pre);
  EXPECT_TRUE(checked.isOk()) << checked.message();
}

TEST(HuggingFaceTest, PostLnBertMissingAndMisshapedNormsAreNamed) {
  TempDir dir;
  HfModelSizes sizes = postLnBertSizes();
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  ASSERT_TRUE(write(dir.path(), sizes, *m, randomParams(*m)).isOk());
  std::string whole = dir.file("model.safetensors");
  auto checkOf = [&](const std::string &path) {
    Expected<std::unique_ptr<HfCheckpoint>> c = HfCheckpoint::open(path);
    EXPECT_TRUE(c.isOk());
    return c.isOk() ? (*c)->check(*m) : c.status();
  };
  rewrite(
      whole, dir.file("missing.safetensors"),
      [](const std::string &n) {
        return n != "bert.embeddings.LayerNorm.bias";
      },
      same);
  Status s = checkOf(dir.file("missing.safetensors"));
  expectContains(s, "missing.safetensors");
  expectContains(s, "no tensor 'bert.embeddings.LayerNorm.bias' (bitpipe's "
                    "'embed.ln.bias'), expected shape [8]");

  rewrite(whole, dir.file("shape.safetensors"), all, same,
          {{"bert.encoder.layer.1.output.LayerNorm.weight", {7}}});
  s = checkOf(dir.file("shape.safetensors"));
  expectContains(s, "shape.safetensors");
  expectContains(s, "tensor 'bert.encoder.layer.1.output.LayerNorm.weight' "
                    "has shape [7], expected [8] (bitpipe's "
                    "'layers.1.ln2.weight' [8])");
}

TEST(HuggingFaceTest, ConfigJsonHasTheFieldsTransformersReads) {
  Expected<JsonValue> llama =
      parseJson(huggingFaceConfigJson(llamaSizes(false)));
  ASSERT_TRUE(llama.isOk());
  EXPECT_EQ(llama->get("model_type")->string, "llama");
  EXPECT_EQ(llama->get("num_key_value_heads")->integer, 2);
  EXPECT_EQ(llama->get("num_attention_heads")->integer, 4);
  EXPECT_EQ(llama->get("intermediate_size")->integer, 12);
  EXPECT_EQ(llama->get("max_position_embeddings")->integer, 16);
  EXPECT_EQ(llama->get("rms_norm_eps")->number, 1e-6);
  EXPECT_EQ(llama->get("rope_theta")->number, 500000.0);
  EXPECT_FALSE(llama->get("tie_word_embeddings")->boolean);
  // An f32 epsilon (as the IR holds it) is written as the float it is.
  HfModelSizes f32Epsilon = gpt2Sizes();
  f32Epsilon.normEpsilon = static_cast<double>(1e-5f);
  EXPECT_NE(huggingFaceConfigJson(f32Epsilon).find(
                "\"layer_norm_epsilon\": 1e-05,"),
            std::string::npos)
      << huggingFaceConfigJson(f32Epsilon);
  EXPECT_NE(huggingFaceConfigJson(llamaSizes(true)).find(
                "\"rope_theta\": 500000.0,"),
            std::string::npos);
  Expected<JsonValue> gpt2 = parseJson(huggingFaceConfigJson(gpt2Sizes()));
  ASSERT_TRUE(gpt2.isOk());
  EXPECT_EQ(gpt2->get("model_type")->string, "gpt2");
  EXPECT_EQ(gpt2->get("n_head")->integer, 2);
  EXPECT_EQ(gpt2->get("n_positions")->integer, 5);
  EXPECT_EQ(gpt2->get("activation_function")->string, "gelu_new");
  // No special tokens named (GPT2Config's default 50256 would lie outside
  // the vocabulary); LLaMA's likewise.
  for (const JsonValue *config : {&*gpt2, &*llama})
    for (const char *key : {"bos_token_id", "eos_token_id"}) {
      ASSERT_NE(config->get(key), nullptr) << key;
      EXPECT_EQ(config->get(key)->kind, JsonValue::Kind::Null) << key;
    }
  Expected<JsonValue> bert = parseJson(huggingFaceConfigJson(bertSizes()));
  ASSERT_TRUE(bert.isOk());
  EXPECT_EQ(bert->get("model_type")->string, "bert");
  EXPECT_EQ(bert->get("intermediate_size")->integer, 32);
  EXPECT_EQ(bert->get("hidden_act")->string, "gelu_new");
  HfModelSizes erf = bertSizes();
  erf.geluName = "gelu";
  Expected<JsonValue> bertErf = parseJson(huggingFaceConfigJson(erf));
  ASSERT_TRUE(bertErf.isOk());
  EXPECT_EQ(bertErf->get("hidden_act")->string, "gelu");
}

// The model's dropout probabilities under each model type's keys
// (docs/models.md, "Dropout"), 0 where it has none.
TEST(HuggingFaceTest, ConfigJsonCarriesTheDropout) {
  HfModelSizes gpt2 = gpt2Sizes();
  gpt2.embeddingDropout = 0.125;
  gpt2.attentionDropout = 0.25;
  gpt2.residualDropout = 0.5;
  Expected<JsonValue> g = parseJson(huggingFaceConfigJson(gpt2));
  ASSERT_TRUE(g.isOk());
  EXPECT_EQ(g->get("embd_pdrop")->number, 0.125);
  EXPECT_EQ(g->get("attn_pdrop")->number, 0.25);
  EXPECT_EQ(g->get("resid_pdrop")->number, 0.5);
  HfModelSizes bert = bertSizes();
  bert.embeddingDropout = bert.residualDropout = 0.125;
  bert.attentionDropout = 0.25;
  Expected<JsonValue> b = parseJson(huggingFaceConfigJson(bert));
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(b->get("hidden_dropout_prob")->number, 0.125);
  EXPECT_EQ(b->get("attention_probs_dropout_prob")->number, 0.25);
  HfModelSizes llama = llamaSizes(false);
  llama.attentionDropout = 0.25;
  Expected<JsonValue> l = parseJson(huggingFaceConfigJson(llama));
  ASSERT_TRUE(l.isOk());
  EXPECT_EQ(l->get("attention_dropout")->number, 0.25);
  Expected<JsonValue> none = parseJson(huggingFaceConfigJson(gpt2Sizes()));
  ASSERT_TRUE(none.isOk());
  for (const char *key : {"embd_pdrop", "attn_pdrop", "resid_pdrop"})
    EXPECT_EQ(none->get(key)->number, 0.0) << key;
}

TEST(HuggingFaceTest, ShardedIndexLoadsAcrossShards) {
  TempDir dir, shards;
  HfModelSizes sizes = llamaSizes(false);
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  auto params = randomParams(*m);
  ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
  std::string whole = dir.file("model.safetensors");
  // Layer 1 and the head in shard 2, the rest in shard 1.
  auto second = [](const std::string &n) {
    return n.find("layers.1.") != std::string::npos || n == "lm_head.weight";
  };
  std::string a = "model-00001-of-00002.safetensors",
              b = "model-00002-of-00002.safetensors";
  rewrite(whole, shards.file(a), [&](auto &n) { return !second(n); }, same);
  rewrite(whole, shards.file(b), second, same);
  std::string index = "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {";
  Expected<std::unique_ptr<SafetensorsReader>> r =
      SafetensorsReader::open(whole);
  ASSERT_TRUE(r.isOk());
  bool first = true;
  for (const SafetensorsEntry &e : (*r)->tensors()) {
    index += (first ? "" : ", ") + jsonQuote(e.name) + ": " +
             jsonQuote(second(e.name) ? b : a);
    first = false;
  }
  index += "}}";
  writeBytes(shards.file("model.safetensors.index.json"), index.data(),
             index.size());
  expectLoadsExactly(shards.file("model.safetensors.index.json"), *m, params);

  // An index that puts a tensor in the wrong shard names both.
  std::string wrong = index;
  size_t at = wrong.find(b);
  wrong.replace(at, b.size(), a);
  writeBytes(shards.file("wrong.index.json"), wrong.data(), wrong.size());
  Expected<std::unique_ptr<HfCheckpoint>> c =
      HfCheckpoint::open(shards.file("wrong.index.json"));
  ASSERT_FALSE(c.isOk());
  expectContains(c.status(), "wrong.index.json");
  expectContains(c.status(), a);
  // A shard that is not there.
  std::string missing = "{\"weight_map\": {\"model.norm.weight\": "
                        "\"absent.safetensors\"}}";
  writeBytes(shards.file("missing.index.json"), missing.data(),
             missing.size());
  c = HfCheckpoint::open(shards.file("missing.index.json"));
  ASSERT_FALSE(c.isOk());
  expectContains(c.status(), "absent.safetensors");
}

TEST(HuggingFaceTest, BaseModelNamesWithoutThePrefixLoad) {
  // GPT2Model (the hub's gpt2 file) writes "h.0..." for
  // "transformer.h.0...", plus its causal-mask buffers.
  TempDir dir;
  HfModelSizes sizes = gpt2Sizes();
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  auto params = randomParams(*m);
  ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
  rewrite(dir.file("model.safetensors"), dir.file("base.safetensors"), all,
          [](const std::string &n) {
            return n.rfind("transformer.", 0) == 0 ? n.substr(12) : n;
          });
  expectLoadsExactly(dir.file("base.safetensors"), *m, params);
}

TEST(HuggingFaceTest, TellsHuggingFaceFilesFromBitpipeCheckpoints) {
  TempDir dir;
  HfModelSizes sizes = gpt2Sizes();
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  auto params = randomParams(*m);
  ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
  auto isHf = [](const std::string &path, const std::string &first) {
    Expected<bool> hf = isHuggingFaceCheckpoint(path, first);
    EXPECT_TRUE(hf.isOk()) << hf.status().message();
    return hf.isOk() && *hf;
  };
  EXPECT_TRUE(isHf(dir.file("model.safetensors"), "embed.tokens"));
  EXPECT_TRUE(isHf(dir.file("x.safetensors.index.json"), "embed.tokens"));
  // A bitpipe checkpoint: by its format, whatever its parameters' names,
  // and a plain file of bitpipe's names by its first parameter.
  std::vector<float> w = params["embed.tokens"], zeros(w.size(), 0.0f);
  std::vector<CheckpointParam> ckpt = {
      {"wte", {11, 8}, w.data(), zeros.data(), zeros.data()}};
  ASSERT_TRUE(saveCheckpoint(dir.file("ckpt.safetensors"), ckpt,
                             {0, 1, modelFingerprint(ckpt)})
                  .isOk());
  EXPECT_FALSE(isHf(dir.file("ckpt.safetensors"), "embed.tokens"));
  ASSERT_TRUE(writeSafetensors(dir.file("plain.safetensors"),
                               {{"embed.tokens", w.data(), {11, 8}}}, {})
                  .isOk());
  EXPECT_FALSE(isHf(dir.file("plain.safetensors"), "embed.tokens"));
  Expected<bool> missing =
      isHuggingFaceCheckpoint(dir.file("absent.safetensors"), "embed.tokens");
  ASSERT_FALSE(missing.isOk());
  expectContains(missing.status(), "absent.safetensors");
}

TEST(HuggingFaceTest, MissingMisshapedAndUnknownTensorsAreNamed) {
  TempDir dir;
  HfModelSizes sizes = llamaSizes(false);
  Expected<HfMapping> m = huggingFaceMapping(sizes);
  ASSERT_TRUE(m.isOk());
  auto params = randomParams(*m);
  ASSERT_TRUE(write(dir.path(), sizes, *m, params).isOk());
  std::string whole = dir.file("model.safetensors");
  auto checkOf = [&](const std::string &path) {
    Expected<std::unique_ptr<HfCheckpoint>> c = HfCheckpoint::open(path);
    EXPECT_TRUE(c.isOk());
    return c.isOk() ? (*c)->check(*m) : c.status();
  };

  rewrite(whole, dir.file("missing.safetensors"),
          [](const std::string &n) {
            return n != "model.layers.1.mlp.up_proj.weight";
          },
          same);
  Status s = checkOf(dir.file("missing.safetensors"));
  expectContains(s, "missing.safetensors");
  expectContains(s, "no tensor 'model.layers.1.mlp.up_proj.weight'");
  expectContains(s, "layers.1.mlp.up.weight");

  rewrite(whole, dir.file("shape.safetensors"), all, same,
          {{"model.layers.0.self_attn.k_proj.weight", {8, 8}}});
  s = checkOf(dir.file("shape.safetensors"));
  expectContains(s, "shape.safetensors");
  expectContains(s, "'model.layers.0.self_attn.k_proj.weight' has shape "
                    "[8, 8], expected [4, 8]");

  rewrite(whole, dir.file("unknown.safetensors"), all,
          [](const std::string &n) {
            return n == "model.norm.weight" ? "model.final_norm.weight" : n;
          });
  s = checkOf(dir.file("unknown.safetensors"));
  expectContains(s, "unknown.safetensors");
  expectContains(s, "tensor 'model.final_norm.weight' is not a tensor of "
                    "bitpipe's llama");

  // Another model's sizes: a GPT-2 file is all unknown names to LLaMA.
  TempDir other;
  Expected<HfMapping> g = huggingFaceMapping(gpt2Sizes());
  ASSERT_TRUE(g.isOk());
  ASSERT_TRUE(write(other.path(), gpt2Sizes(), *g, randomParams(*g)).isOk());
  expectContains(checkOf(other.file("model.safetensors")),
                 "is not a tensor of bitpipe's llama");
}

TEST(HuggingFaceTest, SizesTheMappingCannotDescribeAreRefused) {
  HfModelSizes s = llamaSizes(true);
  s.kvHeads = 3;
  expectContains(huggingFaceMapping(s).status(),
                 "kv_heads is 3; expected a divisor of heads (4)");
  s = gpt2Sizes();
  s.heads = 3;
  expectContains(huggingFaceMapping(s).status(),
                 "heads is 3; expected a divisor of hidden (8)");
}

TEST(SafetensorsReadAsF32Test, ConvertsBF16AndF16Exactly) {
  TempDir dir;
  // F16: 1, -2, 2^-24 (the smallest subnormal), 65504 (the largest), inf.
  // BF16: 1, -0.5, 3.
  std::string f16("\x00\x3c\x00\xc0\x01\x00\xff\x7b\x00\x7c", 10);
  std::string bf16("\x80\x3f\x00\xbf\x40\x40", 6);
  std::string header =
      "{\"h\":{\"dtype\":\"F16\",\"shape\":[5],\"data_offsets\":[0,10]},"
      "\"b\":{\"dtype\":\"BF16\",\"shape\":[3],\"data_offsets\":[10,16]},"
      "\"i\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[16,20]}}";
  std::string bytes =
      safetensorsBytes(header, f16 + bf16 + std::string("\0\0\0\0", 4));
  writeBytes(dir.file("h.safetensors"), bytes.data(), bytes.size());
  Expected<std::unique_ptr<SafetensorsReader>> r =
      SafetensorsReader::open(dir.file("h.safetensors"));
  ASSERT_TRUE(r.isOk()) << r.status().message();
  float h[5], b[3], i[1];
  ASSERT_TRUE((*r)->readAsF32("h", {5}, h).isOk());
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -2.0f);
  EXPECT_EQ(h[2], std::ldexp(1.0f, -24));
  EXPECT_EQ(h[3], 65504.0f);
  EXPECT_TRUE(std::isinf(h[4]) && h[4] > 0);
  ASSERT_TRUE((*r)->readAsF32("b", {3}, b).isOk());
  EXPECT_EQ(b[0], 1.0f);
  EXPECT_EQ(b[1], -0.5f);
  EXPECT_EQ(b[2], 3.0f);
  expectContains((*r)->readAsF32("i", {1}, i),
                 "tensor 'i' is I32, expected F32, BF16 or F16");
  expectContains((*r)->readAsF32("b", {4}, b),
                 "tensor 'b' has shape [3], expected [4]");
  // readF32 stays F32 only (bitpipe's own checkpoints).
  expectContains((*r)->readF32("b", {3}, b), "is BF16, expected F32");
}

} // namespace
