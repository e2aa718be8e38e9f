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
  // Groups and ranks are pipeline ranks: one rank entry per program.
  ASSERT_EQ(m->groups.size(), 2u);
  EXPECT_EQ(m->groups[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(m->groups[1], (std::vector<int>{0}));
  ASSERT_EQ(m->ranks.size(), 2u);
  ASSERT_EQ(m->ranks[0].buckets.size(), 2u);
  EXPECT_EQ(m->ranks[0].buckets[0].group, 1);
  // Saved and counted once by the lowest rank holding it.
  EXPECT_EQ(m->ownerRank(m->findParam("embed.tokens")), 0);
  EXPECT_EQ(m->ownerRank(m->findParam("hidden.bias")), 0);
}

// World rank w = copy * devices + pipeline rank (program.h).
TEST(ExecManifest, MapsWorldRanksToPipelineRanksAndCopies) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(m->pipelineRanks(), 2);
  const int pipeline[] = {0, 1, 0, 1}, copy[] = {0, 0, 1, 1};
  for (int w = 0; w < 4; ++w) {
    EXPECT_EQ(m->pipelineRank(w), pipeline[w]) << w;
    EXPECT_EQ(m->copyOf(w), copy[w]) << w;
    EXPECT_EQ(m->worldRank(copy[w], pipeline[w]), w);
    // Every copy of a pipeline rank reads that rank's entry.
    EXPECT_EQ(&m->rankSpec(w), &m->ranks[pipeline[w]]) << w;
  }
  // The groups' world ranks: every copy of their pipeline ranks, sorted.
  EXPECT_EQ(m->worldGroup(0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(m->worldGroup(1), (std::vector<int>{0, 2}));
  // The owner of a parameter is in copy 0: copies > 0 save nothing.
  EXPECT_EQ(m->ownerRank(m->findParam("embed.tokens")), 0);
}

TEST(ExecManifest, WorldGroupsInterleaveCopiesOfSeveralPipelineRanks) {
  // D = 4, K = 3: group {1, 3} is {1, 3, 5, 7, 9, 11}.
  Manifest m;
  m.schedule.devices = 4;
  m.schedule.dataParallel = 3;
  m.schedule.worldSize = 12;
  m.groups = {{1, 3}};
  EXPECT_EQ(m.worldGroup(0), (std::vector<int>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(m.pipelineRank(11), 3);
  EXPECT_EQ(m.copyOf(11), 2);
  EXPECT_EQ(m.worldRank(2, 1), 9);
}

/// The error message of parsing \p text (empty if it parses).
std::string errorOf(const std::string &text) {
  Expected<Manifest> m = parseManifest(text);
  return m.isOk() ? "" : m.status().message();
}

TEST(ExecManifest, ReadsTheGradientSyncAndWhichGroupsTakeTwoLevels) {
  Expected<Manifest> flat = parseManifest(pipeDpManifest());
  ASSERT_TRUE(flat.isOk()) << flat.status().message();
  EXPECT_EQ(flat->schedule.gradientSync, BP_GRADIENT_SYNC_FLAT);
  EXPECT_FALSE(flat->syncsInTwoLevels(0));
  EXPECT_FALSE(flat->syncsInTwoLevels(1));

  Expected<Manifest> m = parseManifest(pipeDpManifest("hierarchical"));
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(m->schedule.gradientSync, BP_GRADIENT_SYNC_HIERARCHICAL);
  // Group 0 (pipeline ranks 0 and 1, two copies) has two levels; group 1
  // (pipeline rank 0 alone) has only the copies, and sums flat.
  EXPECT_TRUE(m->syncsInTwoLevels(0));
  EXPECT_FALSE(m->syncsInTwoLevels(1));
  EXPECT_EQ(m->twoLevelGroups(0).withinCopy,
            (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(m->twoLevelGroups(0).acrossCopies,
            (std::vector<std::vector<int>>{{0, 2}, {1, 3}}));

  // D = 4, K = 3: group {1, 3}.
  Manifest wide;
  wide.schedule.devices = 4;
  wide.schedule.dataParallel = 3;
  wide.schedule.gradientSync = BP_GRADIENT_SYNC_HIERARCHICAL;
  wide.groups = {{1, 3}};
  EXPECT_TRUE(wide.syncsInTwoLevels(0));
  EXPECT_EQ(wide.twoLevelGroups(0).withinCopy,
            (std::vector<std::vector<int>>{{1, 3}, {5, 7}, {9, 11}}));
  EXPECT_EQ(wide.twoLevelGroups(0).acrossCopies,
            (std::vector<std::vector<int>>{{1, 5, 9}, {3, 7, 11}}));

  EXPECT_NE(errorOf(pipeDpManifest("tree")).find("gradient_sync"),
            std::string::npos)
      << errorOf(pipeDpManifest("tree"));
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
      // World ranks are MPI's ints.
      {"\"world_size\": 4", "\"world_size\": 4294967296",
       "schedule.world_size: 4294967296 is more ranks than an MPI job has "
       "(at most 2147483647)"},
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
       "ranks[1].buckets[0].params: pipeline rank 1 does not hold "
       "'embed.pos'"},
      // Rank 0's bucket for group 0 now differs from rank 1's.
      {"\"hidden.bias\", \"embed.pos\"]},{\"group\": 0, \"params\": "
       "[\"embed.tokens\"]}",
       "\"hidden.bias\"]},{\"group\": 0, \"params\": [\"embed.tokens\", "
       "\"embed.pos\"]}",
       "pipeline ranks 0 and 1 list different buckets for group 0"},
      // Rank 1 is not in group 1 (pipeline rank 0 alone).
      {"\"buckets\": [{\"group\": 0, \"params\": [\"embed.tokens\"]}]}]",
       "\"buckets\": [{\"group\": 1, \"params\": [\"embed.tokens\"]}]}]",
       "ranks[1].buckets[0].group: pipeline rank 1 is not a member of group "
       "1"},
      // Groups are pipeline ranks: distinct, increasing, below devices.
      {"[[0, 1], [0]]", "[[0, 0], [0]]", "groups[0]: rank 0 is listed twice"},
      {"[[0, 1], [0]]", "[[1, 0], [0]]",
       "groups[0]: rank 0 after rank 1: pipeline ranks must be in increasing "
       "order"},
      {"[[0, 1], [0]]", "[[0, 2], [0]]",
       "groups[0]: rank 2 is not a pipeline rank (below devices 2)"},
      {"[[0, 1], [0]]", "[[0, 1], []]",
       "groups[1]: a group needs at least one pipeline rank"},
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

  EXPECT_EQ(cpu->target.gradientDType(), DType::F64);

  // A parameter gradient's slot holds the target's accumulator: float64 on
  // the CPU, fp32 on CUDA; a manifest that says otherwise is named.
  std::string cuda = replaced(pipeDpManifest(), "\"name\": \"cpu\"",
                              "\"name\": \"cuda\"");
  EXPECT_NE(errorOf(cuda).find("functions[1].results[0]: parameter "
                               "'embed.tokens' is [32, 16] f32 (its "
                               "gradient's accumulator on this target), not "
                               "[32, 16] f64"),
            std::string::npos)
      << errorOf(cuda);
  for (size_t at; (at = cuda.find("\"f64\"")) != std::string::npos;)
    cuda.replace(at, 5, "\"f32\"");
  Expected<Manifest> m = parseManifest(cuda);
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(m->target.kind, TargetKind::Cuda);
  EXPECT_EQ(m->target.gradientDType(), DType::F32);
  // f64 is a parameter gradient's only.
  std::string f64Activation =
      replaced(pipeDpManifest(), FAKE_R("output", "", FAKE_ACT, "f32"),
               FAKE_R("output", "", FAKE_ACT, "f64"));
  EXPECT_NE(errorOf(f64Activation)
                .find("f64 for a 'output' (only a backward's parameter "
                      "gradient"),
            std::string::npos)
      << errorOf(f64Activation);

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

TEST(ExecManifest, ReadsTheTransferStreamsAndChannels) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  EXPECT_EQ(m->schedule.transferStreams, TransferStreams::Channel);
  EXPECT_EQ(m->schedule.channels,
            (std::vector<Channel>{{0, 1}, {1, 0}}));
  // Every copy's own pipeline ranks, copy by copy.
  EXPECT_EQ(m->worldChannels(),
            (std::vector<Channel>{{0, 1}, {1, 0}, {2, 3}, {3, 2}}));

  std::string shared = replaced(pipeDpManifest(), "\"channel\"",
                                "\"shared\"");
  Expected<Manifest> s = parseManifest(shared);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  EXPECT_EQ(s->schedule.transferStreams, TransferStreams::Shared);
  EXPECT_STREQ(transferStreamsName(s->schedule.transferStreams), "shared");

  // A program that transfers nothing lists no channel.
  std::string none = replaced(pipeDpManifest(), "[[0, 1], [1, 0]]", "[]");
  Expected<Manifest> n = parseManifest(none);
  ASSERT_TRUE(n.isOk()) << n.status().message();
  EXPECT_TRUE(n->worldChannels().empty());
}

TEST(ExecManifest, WorldChannelsRepeatInEveryCopy) {
  // D = 3, K = 2: the ring's channels in copy 0, then in copy 1.
  Manifest m;
  m.schedule.devices = 3;
  m.schedule.dataParallel = 2;
  m.schedule.worldSize = 6;
  m.schedule.channels = {{0, 1}, {1, 2}, {2, 0}};
  EXPECT_EQ(m.worldChannels(), (std::vector<Channel>{{0, 1},
                                                     {1, 2},
                                                     {2, 0},
                                                     {3, 4},
                                                     {4, 5},
                                                     {5, 3}}));
}

TEST(ExecManifest, NamesWhatIsWrongWithTheChannels) {
  const std::string good = pipeDpManifest();
  const std::string list = "[[0, 1], [1, 0]]";
  struct Case {
    std::string from, to, message;
  } cases[] = {
      {"\"channel\"", "\"channels\"",
       "manifest: schedule.transfer_streams: unknown transfer streams "
       "'channels' (expected one of channel, shared)"},
      {"\"transfer_streams\": \"channel\", ", "",
       "manifest: schedule: missing \"transfer_streams\""},
      {", \"channels\": " + list, "",
       "manifest: schedule: missing \"channels\""},
      {list, "{\"0\": 1}", "manifest: schedule.channels: expected a list"},
      {list, "[[0, 1], [1]]",
       "manifest: schedule.channels[1]: expected a [sender, receiver] pair "
       "of pipeline ranks"},
      {list, "[[0, 1], [1, 0.5]]",
       "manifest: schedule.channels[1]: expected a [sender, receiver] pair"},
      {list, "[[0, 1], \"1 0\"]",
       "manifest: schedule.channels[1]: expected a [sender, receiver] pair"},
      {list, "[[0, 1], [1, 2]]",
       "manifest: schedule.channels[1]: rank 2 is not a pipeline rank (in "
       "[0, devices 2))"},
      {list, "[[-1, 1]]",
       "manifest: schedule.channels[0]: rank -1 is not a pipeline rank"},
      {list, "[[0, 1], [1, 1]]",
       "manifest: schedule.channels[1]: a channel from pipeline rank 1 to "
       "itself; expected two distinct ranks"},
      {list, "[[1, 0], [0, 1]]",
       "manifest: schedule.channels[1]: [0, 1] after [1, 0]: channels must "
       "be distinct and sorted ascending"},
      {list, "[[0, 1], [0, 1]]",
       "manifest: schedule.channels[1]: [0, 1] after [0, 1]: channels must "
       "be distinct and sorted ascending"},
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

// One entry per pipeline rank, not per world rank: a manifest listing
// every world rank (version 2's) is refused naming both numbers.
TEST(ExecManifest, RanksAreOnePerPipelineRank) {
  const std::string good = pipeDpManifest();
  const std::string extra = "{\"num_values\": 11, \"params\": [], "
                            "\"buckets\": []},";
  std::string three = replaced(good, "\"ranks\": [", "\"ranks\": [" + extra);
  ASSERT_NE(three, good);
  EXPECT_NE(errorOf(three).find("manifest: ranks: lists 3 ranks, but there is "
                                "one per pipeline rank: schedule.devices is 2"),
            std::string::npos)
      << errorOf(three);
  std::string four = replaced(three, "\"ranks\": [", "\"ranks\": [" + extra);
  EXPECT_NE(errorOf(four).find("lists 4 ranks, but there is one per pipeline "
                               "rank: schedule.devices is 2"),
            std::string::npos)
      << errorOf(four);
  // No "dp_copy": the copy is the world rank's (Manifest::copyOf).
  EXPECT_EQ(good.find("dp_copy"), std::string::npos);
}

// A group of one pipeline rank all-reduces across the copies: a world
// group of data_parallel ranks, so it needs data_parallel > 1.
TEST(ExecManifest, AOneMemberGroupNeedsSeveralCopies) {
  const std::string good = pipeDpManifest();
  ASSERT_TRUE(parseManifest(good).isOk()) << errorOf(good); // K = 2
  std::string single = replaced(good, "\"data_parallel\": 2, \"world_size\": 4",
                                "\"data_parallel\": 1, \"world_size\": 2");
  ASSERT_NE(single, good);
  EXPECT_NE(errorOf(single).find("manifest: groups[1]: pipeline rank 0 alone, "
                                 "with data_parallel 1, is a group of one "
                                 "world rank; a group needs at least 2"),
            std::string::npos)
      << errorOf(single);
}

// A dropout_key input is the micro-batch's key, 4 int32 whatever the
// model's sizes (core/Dropout.h); ids are microbatch_size x seq_len.
TEST(ExecManifest, ADropoutKeyInputIsFourWords) {
  const std::string good = dropoutKeyManifest();
  Expected<Manifest> m = parseManifest(good);
  ASSERT_TRUE(m.isOk()) << m.status().message();
  const StageFunction &fwd = m->functions[kStage0Fwd];
  ASSERT_EQ(fwd.args.size(), 6u);
  EXPECT_EQ(fwd.args[4].input, InputKind::Tokens);
  EXPECT_EQ(fwd.args[5].kind, RoleKind::Input);
  EXPECT_EQ(fwd.args[5].input, InputKind::DropoutKey);
  EXPECT_EQ(fwd.args[5].numel, 4);
  EXPECT_EQ(fwd.args[5].dtype, DType::I32);
  for (const char *shape : {"[2, 8]", "[3]", "[8]"}) {
    const std::string bad = dropoutKeyManifest(shape);
    EXPECT_NE(errorOf(bad).find(std::string("a dropout key is 4 int32, not ") +
                                shape + " i32"),
              std::string::npos)
        << errorOf(bad);
  }
}

} // namespace
