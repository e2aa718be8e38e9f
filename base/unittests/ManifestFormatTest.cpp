//===- ManifestFormatTest.cpp - The manifest, written and read ------------===//
//
// The writer's exact bytes for a small manifest (the compiler's modules
// embed them, so a change shows here first), the reader's view of them,
// and the reader's errors: each names the path, the key and what was
// expected.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/base/ManifestFormat.h"

#include <gtest/gtest.h>

#include <string>

using namespace bitpipe;
using namespace bitpipe::manifest;

namespace {

Role roleOf(bp_role_kind kind, std::vector<int64_t> shape, bp_dtype dtype) {
  Role r;
  r.kind = kind;
  r.shape = std::move(shape);
  r.dtype = dtype;
  return r;
}

/// One stage, one parameter, one rank: every kind of member once.
Manifest smallManifest() {
  Manifest m;
  m.model.name = "tiny";
  m.model.vocab = 16;
  m.model.seqLen = 4;
  m.model.microbatchSize = 2;
  m.model.maskToken = 15;
  m.model.heads = 2;
  m.model.maxPositions = 8;
  m.model.normEpsilon = 1e-5;
  m.model.gelu = BP_GELU_FORM_TANH;
  m.model.normPosition = BP_NORM_POSITION_PRE;
  m.schedule.name = "gpipe";
  m.schedule.microbatches = 2;
  m.schedule.devices = 1;
  m.schedule.worldSize = 1;
  Param w;
  w.name = "w";
  w.shape = {16, 8};
  w.stddev = 0.02;
  m.params.push_back(w);
  Function f;
  f.name = "tiny_stage0";
  Role param = roleOf(BP_ROLE_PARAM, {16, 8}, BP_DTYPE_F32);
  param.param = "w";
  Role tokens = roleOf(BP_ROLE_INPUT, {2, 4}, BP_DTYPE_I32);
  tokens.input = BP_INPUT_TOKENS;
  f.args = {param, tokens};
  Role saved = roleOf(BP_ROLE_SAVED, {2, 4, 8}, BP_DTYPE_F32);
  saved.index = 0;
  f.results = {roleOf(BP_ROLE_OUTPUT, {}, BP_DTYPE_F32), saved};
  m.functions.push_back(f);
  Rank r;
  r.numValues = 3;
  r.peakHandles = 1;
  r.peakSavedBytes = 256;
  r.params = {"w"};
  m.ranks.push_back(r);
  return m;
}

const char *const kSmallManifest =
    R"({"version":6,"target":{"name":"cpu","precision":"fp32"},)"
    R"("model":{"name":"tiny","family":"gpt","vocab":16,"seq_len":4,)"
    R"("microbatch_size":2,"mask_token":15,"heads":2,"max_positions":8,)"
    R"("norm_epsilon":1.0000000000000001e-05,"gelu":"tanh",)"
    R"("norm_position":"pre"},)"
    R"("schedule":{"name":"gpipe","microbatches":2,"devices":1,)"
    R"("data_parallel":1,"world_size":1,"transfer_streams":"channel",)"
    R"("channels":[],"gradient_sync":"flat"},)"
    R"("params":[{"name":"w","shape":[16,8],)"
    R"("init":{"kind":"normal","std":0.02},"decay":true}],)"
    R"("functions":[{"name":"tiny_stage0","kind":"forward","stage":0,)"
    R"("args":[{"role":"param","param":"w","shape":[16,8],"dtype":"f32"},)"
    R"({"role":"input","input":"tokens","shape":[2,4],"dtype":"i32"}],)"
    R"("results":[{"role":"output","shape":[],"dtype":"f32"},)"
    R"({"role":"saved","index":0,"shape":[2,4,8],"dtype":"f32"}]}],)"
    R"("groups":[],)"
    R"("ranks":[{"num_values":3,"peak_handles":1,"peak_saved_bytes":256,)"
    R"("params":["w"],"buckets":[]}]})";

TEST(ManifestFormatTest, WritesCompactJsonInProgramHsOrder) {
  static_assert(BP_MANIFEST_VERSION == 6,
                "kSmallManifest spells the version: update it with it");
  EXPECT_EQ(writeManifest(smallManifest()), kSmallManifest);
}

TEST(ManifestFormatTest, ReadsBackWhatItWrote) {
  base::Expected<Manifest> read = readManifest(kSmallManifest);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  const Manifest &m = *read;
  EXPECT_EQ(m.model.name, "tiny");
  EXPECT_EQ(m.model.maskToken, 15);
  EXPECT_EQ(m.model.normEpsilon, 1e-5);
  EXPECT_FALSE(m.model.ropeTheta.has_value());
  EXPECT_EQ(m.model.gelu, BP_GELU_FORM_TANH);
  ASSERT_EQ(m.params.size(), 1u);
  EXPECT_EQ(m.params[0].shape, (std::vector<int64_t>{16, 8}));
  EXPECT_EQ(m.params[0].stddev, 0.02);
  ASSERT_EQ(m.functions.size(), 1u);
  const Function &f = m.functions[0];
  ASSERT_EQ(f.args.size(), 2u);
  EXPECT_EQ(f.args[0].param, "w");
  EXPECT_EQ(f.args[1].input, BP_INPUT_TOKENS);
  EXPECT_EQ(f.args[1].dtype, BP_DTYPE_I32);
  ASSERT_EQ(f.results.size(), 2u);
  EXPECT_EQ(f.results[0].index, -1);
  EXPECT_EQ(f.results[1].index, 0);
  EXPECT_EQ(f.results[1].shape, (std::vector<int64_t>{2, 4, 8}));
  ASSERT_EQ(m.ranks.size(), 1u);
  EXPECT_EQ(m.ranks[0].peakSavedBytes, 256);
  EXPECT_EQ(writeManifest(m), kSmallManifest);
}

TEST(ManifestFormatTest, OptionalKeysStayAbsent) {
  Manifest m = smallManifest();
  m.model.maskToken.reset();
  m.model.heads.reset();
  m.model.normEpsilon.reset();
  m.model.gelu.reset();
  m.ranks[0].peakHandles.reset();
  std::string text = writeManifest(m);
  for (const char *key :
       {"mask_token", "heads", "norm_epsilon", "gelu", "peak_handles"})
    EXPECT_EQ(text.find(std::string("\"") + key + "\""), std::string::npos)
        << key;
  base::Expected<Manifest> read = readManifest(text);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  EXPECT_FALSE(read->model.maskToken.has_value());
  EXPECT_FALSE(read->ranks[0].peakHandles.has_value());
  EXPECT_EQ(writeManifest(*read), text);
}

TEST(ManifestFormatTest, PredictedBubbleIsAShare) {
  Manifest m = smallManifest();
  m.ranks[0].predictedBubble = 0.25;
  std::string text = writeManifest(m);
  EXPECT_NE(text.find(R"("peak_saved_bytes":256,"predicted_bubble":0.25,)"),
            std::string::npos)
      << text;
  base::Expected<Manifest> read = readManifest(text);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  EXPECT_EQ(read->ranks[0].predictedBubble, 0.25);
  EXPECT_EQ(writeManifest(*read), text);
  std::string wrong = text;
  wrong.replace(wrong.find("0.25"), 4, "1.5");
  base::Expected<Manifest> refused = readManifest(wrong);
  ASSERT_FALSE(refused.isOk());
  EXPECT_EQ(refused.status().message(),
            "manifest: ranks[0].predicted_bubble: expected a share in [0, "
            "1], got 1.500000");
}

/// The reader's message for \p text with \p from replaced by \p to.
std::string errorAfter(const std::string &from, const std::string &to) {
  std::string text = kSmallManifest;
  size_t at = text.find(from);
  if (at == std::string::npos)
    return "the test's pattern is not in the manifest: " + from;
  text.replace(at, from.size(), to);
  base::Expected<Manifest> read = readManifest(text);
  return read.isOk() ? "" : read.status().message();
}

TEST(ManifestFormatTest, ErrorsNameThePathTheKeyAndWhatWasExpected) {
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {R"("version":6)", R"("version":5)",
       "manifest: version: the program's manifest is version 5, but this "
       "runtime reads version 6 only"},
      {R"("gradient_sync":"flat")", R"("gradient_sync":"ring")",
       "manifest: schedule.gradient_sync: unknown gradient sync 'ring' "
       "(expected one of flat"},
      {R"("target":{)", R"("targets":{)", "manifest: missing \"target\""},
      {R"("vocab":16)", R"("vocab":"16")",
       "manifest: model.vocab: expected an integer"},
      {R"("seq_len":4)", R"("seq_len":0)",
       "manifest: model.seq_len: 0 is below 1"},
      {R"("family":"gpt")", R"("family":"t5")",
       "manifest: model.family: unknown model family 't5' (expected one of "
       "gpt"},
      {R"("channels":[])", R"("channels":[[0]])",
       "manifest: schedule.channels[0]: expected a [sender, receiver] pair"},
      {R"("std":0.02)", R"("std":-1)",
       "manifest: params[0].init.std: must be non-negative"},
      {R"("shape":[16,8],"init")", R"("shape":[16,0],"init")",
       "manifest: params[0].shape[1]: expected an integer >= 1"},
      {R"("role":"param","param":"w")", R"("role":"param","parameter":"w")",
       "manifest: functions[0].args[0]: missing \"param\""},
      {R"("input":"tokens")", R"("input":"images")",
       "manifest: functions[0].args[1].input: unknown input 'images'"},
      {R"("index":0)", R"("index":-1)",
       "manifest: functions[0].results[1].index: -1 is below 0"},
      {R"("role":"saved","index":0,)", R"("role":"saved",)",
       "manifest: functions[0].results[1]: missing \"index\""},
      {R"("dtype":"i32")", R"("dtype":"f16")",
       "manifest: functions[0].args[1].dtype: unknown dtype 'f16'"},
      {R"("groups":[])", R"("groups":[[0,-2]])",
       "manifest: groups[0][1]: expected an integer >= 0"},
      {R"("params":["w"])", R"("params":["w",7])",
       "manifest: ranks[0].params[1]: expected a parameter name"},
      {R"("buckets":[])", R"("buckets":[{"params":[]}])",
       "manifest: ranks[0].buckets[0]: missing \"group\""},
      {R"({"version")", R"([{"version")", "manifest: JSON:"},
  };
  for (const Case &c : cases) {
    std::string message = errorAfter(c.from, c.to);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "replacing " << c.from << "\n  got: " << message
        << "\n  want: " << c.message;
  }
}

TEST(ManifestFormatTest, RolesWithAnIndexAndWords) {
  EXPECT_TRUE(roleHasIndex(BP_ROLE_SAVED));
  EXPECT_TRUE(roleHasIndex(BP_ROLE_STASH));
  EXPECT_FALSE(roleHasIndex(BP_ROLE_ACTIVATION));
  EXPECT_FALSE(roleHasIndex(BP_ROLE_PARAM));
  EXPECT_EQ(findWord(bp_dtype_names, "bf16"), BP_DTYPE_BF16);
  EXPECT_EQ(findWord(bp_dtype_names, "f64"), BP_DTYPE_F64);
  EXPECT_EQ(findWord(bp_dtype_names, "f16"), -1);
}

} // namespace
