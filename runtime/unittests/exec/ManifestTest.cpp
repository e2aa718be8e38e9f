//===- ManifestTest.cpp - Parsing and validating the manifest -------------===//

#include "Manifest.h"
#include "TestManifests.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::testing;

namespace {

TEST(ExecManifest, ParsesTheFakePipelineWithDataParallelism) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(m->model.family, ModelFamily::Gpt);
  EXPECT_EQ(m->model.vocab, 32);
  EXPECT_EQ(m->schedule.worldSize, 4);
  EXPECT_EQ(m->schedule.dataParallel, 2);
  ASSERT_EQ(m->params.size(), 4u);
  EXPECT_EQ(m->params[3].init, InitKind::Zeros);
  EXPECT_FALSE(m->params[3].decay);
  ASSERT_EQ(m->functions.size(), 6u);
  const StageFunction &bwd = m->functions[kStage0Bwd];
  EXPECT_EQ(bwd.kind, FunctionKind::Backward);
  ASSERT_EQ(bwd.args.size(), 5u);
  EXPECT_EQ(bwd.args[1].kind, RoleKind::ForwardArg);
  EXPECT_EQ(bwd.args[1].index, 4);
  EXPECT_EQ(bwd.args[1].dtype, DType::I32);
  EXPECT_EQ(bwd.results[2].param, m->findParam("hidden.weight"));
  const StageFunction &fwd1 = m->functions[kStage1Fwd];
  EXPECT_TRUE(fwd1.results[0].isScalarF32()); // the loss
  EXPECT_FALSE(fwd1.results[1].isScalarF32());
  EXPECT_EQ(m->functions[kStage1BwdWeight].args[1].kind, RoleKind::Stash);
  ASSERT_EQ(m->groups.size(), 2u);
  EXPECT_EQ(m->groups[1], (std::vector<int>{0, 2}));
  ASSERT_EQ(m->ranks.size(), 4u);
  EXPECT_EQ(m->ranks[3].dpCopy, 1);
  ASSERT_EQ(m->ranks[0].buckets.size(), 2u);
  EXPECT_EQ(m->ranks[0].buckets[0].group, 1);
  // Saved and counted once by the lowest rank holding it.
  EXPECT_EQ(m->ownerRank(m->findParam("embed.tokens")), 0);
  EXPECT_EQ(m->ownerRank(m->findParam("hidden.bias")), 0);
}

/// The error message of parsing \p text (empty if it parses).
std::string errorOf(const std::string &text) {
  Expected<Manifest> m = parseManifest(text);
  return m.isOk() ? "" : m.status().message();
}

TEST(ExecManifest, NamesWhatIsWrongAndWhere) {
  const std::string good = pipeDpManifest();
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"\"role\": \"saved\"", "\"role\": \"kept\"",
       "manifest: functions[0].results[1].role: unknown role 'kept'"},
      {"\"param\": \"hidden.bias\", \"shape\"",
       "\"param\": \"hidden.b\", \"shape\"", "'hidden.b' is not in \"params\""},
      {"\"param\": \"embed.pos\", \"shape\": [8, 16]",
       "\"param\": \"embed.pos\", \"shape\": [8, 15]",
       "parameter 'embed.pos' is [8, 16] f32, not [8, 15] f32"},
      {"\"world_size\": 4", "\"world_size\": 3",
       "world_size 3 is not devices 2 x data_parallel 2"},
      {"\"family\": \"gpt\"", "\"family\": \"bert\"",
       "a bert model needs \"mask_token\""},
      // A forward cannot take a stash.
      {"\"role\": \"activation\"", "\"role\": \"stash\", \"index\": 0",
       "a argument of a forward function cannot have role 'stash'"},
      // Rank 1 holds only the embedding.
      {"\"params\": [\"embed.tokens\"], \"buckets\": [{\"group\": 0, "
       "\"params\": [\"embed.tokens\"]",
       "\"params\": [\"embed.tokens\"], \"buckets\": [{\"group\": 0, "
       "\"params\": [\"embed.pos\"]",
       "ranks[1].buckets[0].params: rank 1 does not hold 'embed.pos'"},
      // Rank 0's buckets for group 1 now differ from rank 2's.
      {"\"hidden.bias\", \"embed.pos\"]}", "\"embed.pos\", \"hidden.bias\"]}",
       "ranks 0 and 2 list different buckets for group 1"},
      {"[[0, 1, 2, 3], [0, 2]]", "[[0, 1, 2, 3], [0, 0]]",
       "groups[1]: rank 0 is listed twice"},
      {"\"dp_copy\": 1", "\"dp_copy\": 2",
       "ranks[2].dp_copy: 2 is not below data_parallel 2"},
      {"{\"version\"", "[{\"version\"", "manifest: JSON:"},
      {"\"name\": \"cpu\"", "\"name\": \"tpu\"",
       "manifest: target.name: unknown target 'tpu' (expected one of cpu, "
       "cuda)"},
      {"\"precision\": \"fp32\"", "\"precision\": \"bf16\"",
       "manifest: target.precision: bf16 needs the cuda target, not cpu"},
      {"\"target\": {", "\"targets\": {", "manifest: missing \"target\""},
      {"\"saved\", \"index\": 0, \"shape\": [2, 8, 16], \"dtype\": \"f32\"",
       "\"saved\", \"index\": 0, \"shape\": [2, 8, 16], \"dtype\": \"bf16\"",
       "functions[0].results[1].dtype: bf16 under the target's precision "
       "fp32"},
  };
  for (const Case &c : cases) {
    std::string text = replaced(good, c.from, c.to);
    ASSERT_NE(text, good) << "the test's pattern is not in the manifest: "
                          << c.from;
    std::string message = errorOf(text);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "expected \"" << c.message << "\" in \"" << message << "\"";
  }
}

TEST(ExecManifest, ReadsOnlyItsOwnVersionAndNamesBoth) {
  const std::string good = pipeDpManifest();
  const std::string ours =
      "\"version\": " + std::to_string(BP_MANIFEST_VERSION);
  for (int other : {0, BP_MANIFEST_VERSION + 1, 1000}) {
    std::string text =
        replaced(good, ours, "\"version\": " + std::to_string(other));
    ASSERT_NE(text, good);
    std::string want = "manifest: version: the program's manifest is version " +
                       std::to_string(other) +
                       ", but this runtime reads version " +
                       std::to_string(BP_MANIFEST_VERSION) + " only";
    EXPECT_NE(errorOf(text).find(want), std::string::npos)
        << "expected \"" << want << "\" in \"" << errorOf(text) << "\"";
  }
  // Checked before anything else: a manifest of another version whose
  // other fields this runtime cannot read is still reported by version.
  const std::string next = std::to_string(BP_MANIFEST_VERSION + 1);
  std::string future = replaced(good, ours, "\"version\": " + next);
  future = replaced(future, "\"role\": \"saved\"", "\"role\": \"kept\"");
  EXPECT_NE(errorOf(future).find("is version " + next), std::string::npos)
      << errorOf(future);
  std::string missing = replaced(good, ours + ",", "");
  EXPECT_NE(errorOf(missing).find("missing \"version\""), std::string::npos)
      << errorOf(missing);
}

TEST(ExecManifest, ReadsTheTarget) {
  Expected<Manifest> cpu = parseManifest(pipeDpManifest());
  ASSERT_TRUE(cpu.isOk()) << cpu.status().message();
  EXPECT_EQ(cpu->target.kind, TargetKind::Cpu);
  EXPECT_EQ(cpu->target.precision, Precision::Fp32);
  EXPECT_EQ(cpu->target.computeDType(), DType::F32);

  std::string cuda = replaced(pipeDpManifest(), "\"name\": \"cpu\"",
                              "\"name\": \"cuda\"");
  Expected<Manifest> m = parseManifest(cuda);
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(m->target.kind, TargetKind::Cuda);

  // Under bf16 the stage functions read bf16 weights: an f32 parameter
  // argument is named with what it should be.
  std::string bf16 =
      replaced(cuda, "\"precision\": \"fp32\"", "\"precision\": \"bf16\"");
  EXPECT_NE(errorOf(bf16).find("functions[0].args[0]: parameter "
                               "'embed.tokens' is [32, 16] bf16, not [32, 16] "
                               "f32"),
            std::string::npos)
      << errorOf(bf16);
}

TEST(ExecManifest, RanksMustMatchTheWorldSize) {
  std::string text = replaced(pipeDpManifest(), "\"world_size\": 4",
                              "\"world_size\": 2");
  text = replaced(text, "\"devices\": 2", "\"devices\": 1");
  text = replaced(text, "[[0, 1, 2, 3], [0, 2]]", "[[0, 1], [0, 1]]");
  EXPECT_NE(errorOf(text).find("lists 4 ranks, world_size is 2"),
            std::string::npos)
      << errorOf(text);
}

} // namespace
