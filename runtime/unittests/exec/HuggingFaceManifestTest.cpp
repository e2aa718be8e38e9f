//===- HuggingFaceManifestTest.cpp - A manifest's Hugging Face sizes ------===//
//
// exec/HuggingFaceCheckpoint.h: the sizes and mapping of a manifest's model
// (family and "model" fields, the parameters' shapes), and the refusals of
// models the mapping cannot describe; the manifest's new "model" fields.
//
//===----------------------------------------------------------------------===//

#include "HuggingFaceCheckpoint.h"
#include "TestManifests.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::testing;

namespace {

void add(Manifest &m, const std::string &name, std::vector<int64_t> shape) {
  ParamSpec p;
  p.name = name;
  p.shape = std::move(shape);
  p.numel = 1;
  for (int64_t d : p.shape)
    p.numel *= d;
  m.params.push_back(std::move(p));
}

/// The parameters bitpipe-import declares for GPT (lib/Import/ModelBuilder.cpp).
Manifest gptManifest(int64_t layers, int64_t H, int64_t V, int64_t P) {
  Manifest m;
  m.model.family = ModelFamily::Gpt;
  m.model.vocab = V;
  m.model.heads = 4;
  m.model.maxPositions = P;
  m.model.normEpsilon = 1e-5;
  m.model.gelu = GeluForm::Tanh;
  add(m, "embed.tokens", {V, H});
  add(m, "embed.positions", {P, H});
  for (int64_t i = 0; i < layers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    add(m, p + "ln1.weight", {H});
    add(m, p + "ln1.bias", {H});
    add(m, p + "attn.qkv.weight", {3 * H, H});
    add(m, p + "attn.qkv.bias", {3 * H});
    add(m, p + "attn.proj.weight", {H, H});
    add(m, p + "attn.proj.bias", {H});
    add(m, p + "ln2.weight", {H});
    add(m, p + "ln2.bias", {H});
    add(m, p + "mlp.fc.weight", {4 * H, H});
    add(m, p + "mlp.fc.bias", {4 * H});
    add(m, p + "mlp.proj.weight", {H, 4 * H});
    add(m, p + "mlp.proj.bias", {H});
  }
  add(m, "final_ln.weight", {H});
  add(m, "final_ln.bias", {H});
  return m;
}

/// BERT's parameters (lib/Import/ModelBuilder.cpp): pre-LN, GPT's and the
/// masked-LM head; post-LN, embed.ln for final_ln and each layer's norms
/// after its sublayers.
Manifest bertManifest(bool post) {
  const int64_t H = 16, V = 32, P = 8;
  Manifest m = gptManifest(2, H, V, P);
  m.model.family = ModelFamily::Bert;
  m.model.normPosition = post ? NormPosition::Post : NormPosition::Pre;
  if (post) {
    for (const char *field : {"weight", "bias"}) {
      std::string f = field;
      m.params[m.findParam("final_ln." + f)].name = "embed.ln." + f;
    }
  }
  add(m, "head.dense.weight", {H, H});
  add(m, "head.dense.bias", {H});
  add(m, "head.ln.weight", {H});
  add(m, "head.ln.bias", {H});
  add(m, "head.bias", {V});
  return m;
}

/// LLaMA: 4 heads of 4 features, 2 key/value heads, I = 24.
Manifest llamaManifest(bool tied) {
  const int64_t H = 16, V = 32, I = 24, L = 3;
  Manifest m;
  m.model.family = ModelFamily::Llama;
  m.model.vocab = V;
  m.model.heads = 4;
  m.model.maxPositions = 128;
  m.model.normEpsilon = 1e-6;
  m.model.ropeTheta = 500000;
  add(m, "embed.tokens", {V, H});
  for (int64_t i = 0; i < L; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    add(m, p + "ln1.weight", {H});
    add(m, p + "attn.qkv.weight", {(4 + 2 * 2) * 4, H});
    add(m, p + "attn.proj.weight", {H, H});
    add(m, p + "ln2.weight", {H});
    add(m, p + "mlp.gate.weight", {I, H});
    add(m, p + "mlp.up.weight", {I, H});
    add(m, p + "mlp.down.weight", {H, I});
  }
  add(m, "final_ln.weight", {H});
  if (!tied)
    add(m, "head.weight", {V, H});
  return m;
}

TEST(ExecHuggingFace, GptSizesComeFromTheManifestAndTheShapes) {
  Expected<HfModelSizes> s = manifestHfSizes(gptManifest(2, 16, 32, 8));
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_EQ(s->type, HfModelType::Gpt2);
  EXPECT_EQ(s->layers, 2);
  EXPECT_EQ(s->hidden, 16);
  EXPECT_EQ(s->heads, 4);
  EXPECT_EQ(s->vocab, 32);
  EXPECT_EQ(s->maxPositions, 8);
  EXPECT_TRUE(manifestHfMapping(gptManifest(2, 16, 32, 8)).isOk());
}

TEST(ExecHuggingFace, LlamaKvHeadsAndIntermediateSizeFromTheWeights) {
  for (bool tied : {false, true}) {
    Expected<HfModelSizes> s = manifestHfSizes(llamaManifest(tied));
    ASSERT_TRUE(s.isOk()) << s.status().message();
    EXPECT_EQ(s->type, HfModelType::Llama);
    EXPECT_EQ(s->layers, 3);
    EXPECT_EQ(s->kvHeads, 2);
    EXPECT_EQ(s->intermediate, 24);
    EXPECT_EQ(s->tiedHead, tied);
    EXPECT_EQ(s->normEpsilon, 1e-6);
    EXPECT_EQ(s->ropeTheta, 500000.0);
    EXPECT_EQ(s->maxPositions, 128);
    Expected<HfMapping> m = manifestHfMapping(llamaManifest(tied));
    ASSERT_TRUE(m.isOk()) << m.status().message();
    EXPECT_EQ(m->find("head.weight") != nullptr, !tied);
  }
}

TEST(ExecHuggingFace, BertNormPositionFromTheManifest) {
  for (bool post : {false, true}) {
    Expected<HfModelSizes> s = manifestHfSizes(bertManifest(post));
    ASSERT_TRUE(s.isOk()) << s.status().message();
    EXPECT_EQ(s->type, HfModelType::Bert);
    EXPECT_EQ(s->layers, 2);
    EXPECT_EQ(s->normPosition,
              post ? HfNormPosition::Post : HfNormPosition::Pre);
    Expected<HfMapping> m = manifestHfMapping(bertManifest(post));
    ASSERT_TRUE(m.isOk()) << m.status().message();
    EXPECT_EQ(m->find("embed.ln.weight") != nullptr, post);
    EXPECT_EQ(m->find("final_ln.weight") != nullptr, !post);
  }
  // Both the embeddings' norm and a final one: not a BERT either form
  // describes, whichever the manifest says.
  for (bool post : {false, true}) {
    Manifest both = bertManifest(post);
    add(both, post ? "final_ln.weight" : "embed.ln.weight", {16});
    add(both, post ? "final_ln.bias" : "embed.ln.bias", {16});
    std::string extra = post ? "final_ln.weight" : "embed.ln.weight";
    EXPECT_NE(manifestHfMapping(both).status().message().find(
                  "the model's parameter '" + extra +
                  "' has no Hugging Face counterpart"),
              std::string::npos)
        << manifestHfMapping(both).status().message();
  }
}

TEST(ExecHuggingFace, GeluNameFromTheManifestsForm) {
  Manifest tanh = gptManifest(1, 16, 32, 8);
  Expected<HfModelSizes> t = manifestHfSizes(tanh);
  ASSERT_TRUE(t.isOk()) << t.status().message();
  EXPECT_EQ(t->geluName, "gelu_new");
  Manifest erf = bertManifest(true);
  erf.model.gelu = GeluForm::Erf;
  Expected<HfModelSizes> e = manifestHfSizes(erf);
  ASSERT_TRUE(e.isOk()) << e.status().message();
  EXPECT_EQ(e->geluName, "gelu");
  // No form (GELUs of both forms, or none): no activation to name.
  Manifest none = bertManifest(true);
  none.model.gelu.reset();
  EXPECT_NE(manifestHfSizes(none).status().message().find(
                "the manifest's model names no \"gelu\" form"),
            std::string::npos)
      << manifestHfSizes(none).status().message();
}

TEST(ExecHuggingFace, ModelsTheMappingCannotDescribeAreRefused) {
  Manifest noHeads = gptManifest(1, 16, 32, 8);
  noHeads.model.heads = 0;
  EXPECT_NE(manifestHfSizes(noHeads).status().message().find(
                "the manifest's model has no \"heads\""),
            std::string::npos);

  Manifest extra = gptManifest(1, 16, 32, 8);
  add(extra, "adapter.weight", {4, 16});
  EXPECT_NE(manifestHfMapping(extra).status().message().find(
                "the model's parameter 'adapter.weight' has no Hugging Face "
                "counterpart"),
            std::string::npos)
      << manifestHfMapping(extra).status().message();

  Manifest wide = gptManifest(1, 16, 32, 8);
  wide.params[wide.findParam("layers.0.mlp.fc.weight")].shape = {48, 16};
  EXPECT_NE(manifestHfMapping(wide).status().message().find(
                "has parameter 'layers.0.mlp.fc.weight' [64, 16], but the "
                "model has it as [48, 16]"),
            std::string::npos)
      << manifestHfMapping(wide).status().message();
}

TEST(ExecHuggingFace, ManifestCarriesTheConfigFields) {
  std::string text = replaced(
      pipeDpManifest(), "\"microbatch_size\": 2",
      "\"microbatch_size\": 2, \"heads\": 2, \"max_positions\": 8, "
      "\"norm_epsilon\": 1e-06, \"rope_theta\": 10000.0, \"gelu\": \"erf\"");
  ASSERT_NE(text, pipeDpManifest());
  Expected<Manifest> m = parseManifest(text);
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(m->model.heads, 2);
  EXPECT_EQ(m->model.maxPositions, 8);
  EXPECT_EQ(m->model.normEpsilon, 1e-6);
  EXPECT_EQ(m->model.ropeTheta, 10000.0);
  EXPECT_EQ(m->model.gelu, GeluForm::Erf);
  // Absent (a manifest of hand-written IR): zero, no form.
  Expected<Manifest> plain = parseManifest(pipeDpManifest());
  ASSERT_TRUE(plain.isOk());
  EXPECT_EQ(plain->model.heads, 0);
  EXPECT_FALSE(plain->model.gelu.has_value());
  Expected<Manifest> relu =
      parseManifest(replaced(pipeDpManifest(), "\"microbatch_size\": 2",
                             "\"microbatch_size\": 2, \"gelu\": \"relu\""));
  ASSERT_FALSE(relu.isOk());
  EXPECT_NE(relu.status().message().find("relu"), std::string::npos)
      << relu.status().message();
  Expected<Manifest> bad =
      parseManifest(replaced(pipeDpManifest(), "\"microbatch_size\": 2",
                             "\"microbatch_size\": 2, \"heads\": 0"));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find("model.heads: 0 is below 1"),
            std::string::npos)
      << bad.status().message();
}

} // namespace
