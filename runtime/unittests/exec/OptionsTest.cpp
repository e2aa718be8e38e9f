//===- OptionsTest.cpp - Flags of a training executable -------------------===//

#include "Options.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace bitpipe::runtime;

namespace {

Expected<TrainOptions> parse(std::vector<const char *> args) {
  args.insert(args.begin(), "train");
  return parseTrainOptions(static_cast<int>(args.size()),
                           const_cast<char **>(args.data()));
}

TEST(ExecOptions, ParsesEveryFlag) {
  Expected<TrainOptions> o = parse(
      {"--data", "t.bin", "--data-dtype=u32", "--steps", "7", "--lr", "3e-4",
       "--weight-decay", "0.1", "--max-grad-norm", "1", "--seed", "42",
       "--load", "a.st", "--save", "b.st", "--save-every", "2", "--trace",
       "t.json", "--log-interval", "5", "--metrics", "m.jsonl",
       "--dump-rank-params", "d", "--timeout", "2.5", "--sampling",
       "sequential"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_EQ(o->dataPath, "t.bin");
  EXPECT_EQ(o->dataDType, TokenDType::U32);
  EXPECT_EQ(o->steps, 7);
  EXPECT_DOUBLE_EQ(o->optimizer.adam.lr, 3e-4);
  EXPECT_DOUBLE_EQ(o->optimizer.adam.weightDecay, 0.1);
  EXPECT_DOUBLE_EQ(o->optimizer.adam.maxGradNorm, 1);
  EXPECT_EQ(o->seed, 42u);
  EXPECT_TRUE(o->seedGiven);
  EXPECT_EQ(o->loadPath, "a.st");
  EXPECT_EQ(o->savePath, "b.st");
  EXPECT_EQ(o->saveEvery, 2);
  EXPECT_EQ(o->tracePath, "t.json");
  EXPECT_EQ(o->logInterval, 5);
  EXPECT_EQ(o->metricsPath, "m.jsonl");
  EXPECT_EQ(o->dumpRankParamsDir, "d");
  EXPECT_DOUBLE_EQ(o->timeoutSeconds, 2.5);
  EXPECT_EQ(o->sampling, SamplingMode::Sequential);
}

TEST(ExecOptions, Defaults) {
  Expected<TrainOptions> o = parse({"--data", "t.bin", "--steps", "1"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_EQ(o->dataDType, TokenDType::U16);
  EXPECT_EQ(o->sampling, SamplingMode::Random);
  EXPECT_FALSE(o->seedGiven);
  EXPECT_EQ(o->optimizer.adam.maxGradNorm, 0);
  EXPECT_EQ(o->logInterval, 1);
}

TEST(ExecOptions, RejectsBadFlagsByName) {
  struct Case {
    std::vector<const char *> args;
    const char *message;
  } cases[] = {
      {{"--data", "t", "--steps", "1", "--nope"}, "unknown flag '--nope'"},
      {{"--data", "t", "--steps"}, "flag --steps needs a value (N)"},
      {{"--data", "t", "--steps", "-1"},
       "flag --steps: '-1' is not a non-negative integer"},
      {{"--data", "t", "--steps", "1", "--lr", "0"},
       "flag --lr: '0' is not a positive number"},
      // Each number has the range a run can mean.
      {{"--data", "t", "--steps", "1", "--weight-decay", "11"},
       "flag --weight-decay: '11' is not a number from 0 to 10"},
      {{"--data", "t", "--steps", "1", "--max-grad-norm", "1e308"},
       "flag --max-grad-norm: '1e308' is not a number from 0 to 1e+06"},
      {{"--data", "t", "--steps", "1", "--timeout", "1e300"},
       "flag --timeout: '1e300' is not a number above 0, at most 1e+06"},
      {{"--data", "t", "--steps", "1", "--sampling", "shuffled"},
       "'shuffled' is not random or sequential"},
      {{"--data", "t", "--steps", "1", "--help=1"},
       "flag --help takes no value"},
      {{"--steps", "1"}, "missing --data"},
      {{"--data", "t"}, "missing --steps"},
      {{"--data", "t", "--steps", "1", "--save-every", "2"},
       "--save-every needs --save PATH"},
  };
  for (const Case &c : cases) {
    Expected<TrainOptions> o = parse(c.args);
    ASSERT_FALSE(o.isOk()) << c.message;
    EXPECT_NE(o.status().message().find(c.message), std::string::npos)
        << o.status().message();
  }
}

TEST(ExecOptions, HelpNeedsNothingElseAndListsEveryFlag) {
  Expected<TrainOptions> o = parse({"--help"});
  ASSERT_TRUE(o.isOk());
  EXPECT_TRUE(o->help);
  std::string usage = trainUsage("train");
  for (const char *flag :
       {"--data", "--data-dtype", "--steps", "--lr", "--weight-decay",
        "--seed", "--load", "--save", "--save-every", "--trace",
        "--log-interval", "--metrics", "--dump-rank-params", "--timeout",
        "--sampling", "--max-grad-norm", "--progress", "--save-hf"})
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
}

TEST(ExecOptions, SkipNonFiniteStepsIsACountFromZero) {
  Expected<TrainOptions> o = parse({"--data", "t.bin", "--steps", "1"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_EQ(o->skipNonFiniteSteps, 0);
  o = parse({"--data", "t.bin", "--steps", "1", "--skip-nonfinite-steps", "3"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_EQ(o->skipNonFiniteSteps, 3);
  o = parse(
      {"--data", "t.bin", "--steps", "1", "--skip-nonfinite-steps", "-1"});
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find("--skip-nonfinite-steps"),
            std::string::npos)
      << o.status().message();
}

TEST(ExecOptions, TheOptimizerIsShardedOnlyWhenAsked) {
  Expected<TrainOptions> o = parse({"--data", "t.bin", "--steps", "1"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_FALSE(o->shardOptimizer);
  o = parse({"--data", "t.bin", "--steps", "1", "--shard-optimizer"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_TRUE(o->shardOptimizer);
  EXPECT_NE(trainUsage("train").find("--shard-optimizer"), std::string::npos);
}

TEST(ExecOptions, CudaGraphsAreOffUnlessAskedTheLastFlagWinning) {
  Expected<TrainOptions> o = parse({"--data", "t.bin", "--steps", "1"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_FALSE(o->cudaGraphs);
  o = parse({"--data", "t.bin", "--steps", "1", "--cuda-graphs"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_TRUE(o->cudaGraphs);
  o = parse(
      {"--data", "t.bin", "--steps", "1", "--cuda-graphs", "--no-cuda-graphs"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_FALSE(o->cudaGraphs);
  o = parse(
      {"--data", "t.bin", "--steps", "1", "--no-cuda-graphs", "--cuda-graphs"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_TRUE(o->cudaGraphs);
  // Switches, as --profile and --progress are.
  o = parse({"--data", "t.bin", "--steps", "1", "--cuda-graphs=on"});
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find("flag --cuda-graphs takes no value"),
            std::string::npos)
      << o.status().message();
  const std::string usage = trainUsage("train");
  EXPECT_NE(usage.find("--cuda-graphs"), std::string::npos);
  EXPECT_NE(usage.find("--no-cuda-graphs"), std::string::npos);
}

// A temporary that a killed run left next to an output target (no process
// has pid 999999999) is removed when the targets are checked, before the
// first step, not at the first save, which may be hours away.
TEST(ExecOptions, CheckingTargetsRemovesStaleTemporaries) {
  char dirTemplate[] = "/tmp/bitpipe-options-test.XXXXXX";
  ASSERT_NE(::mkdtemp(dirTemplate), nullptr);
  std::string dir = dirTemplate;
  std::string save = dir + "/ckpt.safetensors";
  std::string metrics = dir + "/metrics.jsonl";
  for (const std::string &target : {save, metrics})
    std::ofstream(target + ".tmp.999999999") << "partial";
  Expected<TrainOptions> o =
      parse({"--data", "t.bin", "--steps", "1", "--save", save.c_str(),
             "--metrics", metrics.c_str()});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  Status checked = checkOutputTargets(*o, /*rank=*/0);
  ASSERT_TRUE(checked.isOk()) << checked.message();
  for (const std::string &target : {save, metrics})
    EXPECT_NE(::access((target + ".tmp.999999999").c_str(), F_OK), 0)
        << target << "'s stale temporary is still there";
  ::rmdir(dir.c_str());
}

// --save-hf DIR: the directory is created up front (one level), and a
// file in its place is refused by flag before the first step.
TEST(ExecOptions, SaveHfDirectoryIsCreatedOrRefusedUpFront) {
  char dirTemplate[] = "/tmp/bitpipe-options-test.XXXXXX";
  ASSERT_NE(::mkdtemp(dirTemplate), nullptr);
  std::string dir = dirTemplate, hf = dir + "/hf", file = dir + "/file";
  Expected<TrainOptions> o =
      parse({"--data", "t.bin", "--steps", "1", "--save-hf", hf.c_str()});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_EQ(o->saveHfDir, hf);
  Status checked = checkOutputTargets(*o, /*rank=*/0);
  ASSERT_TRUE(checked.isOk()) << checked.message();
  EXPECT_EQ(::access(hf.c_str(), F_OK), 0) << "--save-hf made no directory";
  std::ofstream(file) << "not a directory";
  o = parse({"--data", "t.bin", "--steps", "1", "--save-hf", file.c_str()});
  ASSERT_TRUE(o.isOk());
  checked = checkOutputTargets(*o, /*rank=*/0);
  ASSERT_FALSE(checked.isOk());
  EXPECT_NE(checked.message().find("--save-hf: '" + file +
                                   "' is not a directory"),
            std::string::npos)
      << checked.message();
  ::rmdir(hf.c_str());
  std::remove(file.c_str());
  ::rmdir(dir.c_str());
}

} // namespace

namespace {

TEST(ExecOptions, LearningRateScheduleFlags) {
  Expected<TrainOptions> o = parse(
      {"--data", "t", "--steps", "50", "--lr", "2e-3", "--lr-warmup-steps", "5",
       "--lr-decay-style", "cosine", "--min-lr", "1e-4", "--adam-beta1", "0.8",
       "--adam-beta2", "0.95", "--adam-eps", "1e-6"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  const OptimizerSettings &s = o->optimizer;
  EXPECT_EQ(s.lr.warmupSteps, 5);
  EXPECT_EQ(s.lr.decay, LrDecayStyle::Cosine);
  EXPECT_EQ(s.lr.decaySteps, 0); // --steps, once resolved
  EXPECT_DOUBLE_EQ(s.lr.minLr, 1e-4);
  EXPECT_DOUBLE_EQ(s.adam.beta1, 0.8);
  EXPECT_DOUBLE_EQ(s.adam.beta2, 0.95);
  EXPECT_DOUBLE_EQ(s.adam.eps, 1e-6);
  EXPECT_TRUE(o->given.count("--lr-decay-style"));
  EXPECT_FALSE(o->given.count("--lr-decay-steps"));
  Expected<OptimizerSettings> resolved =
      resolveOptimizerSettings(*o, std::nullopt);
  ASSERT_TRUE(resolved.isOk()) << resolved.status().message();
  EXPECT_EQ(resolved->lr.decaySteps, 50);
}

TEST(ExecOptions, RefusesSchedulesThatCannotBeFollowed) {
  struct Case {
    std::vector<const char *> args;
    const char *message;
  } cases[] = {
      {{"--lr-decay-style", "cosin"},
       "flag --lr-decay-style: 'cosin' is not constant, linear or cosine"},
      {{"--lr-decay-style", "linear", "--min-lr", "0.5"},
       "--min-lr 0.5 is above --lr 0.001"},
      {{"--lr-decay-style", "cosine", "--lr-warmup-steps", "10"},
       "--lr-decay-style cosine decays until step 10 (--lr-decay-steps, else "
       "--steps), which is not after the 10 warm-up steps"},
      {{"--adam-beta2", "1"}, "--adam-beta2 is 1; expected a number in [0, 1)"},
      {{"--adam-eps", "0"}, "flag --adam-eps: '0' is not a number above 0"},
  };
  for (const Case &c : cases) {
    std::vector<const char *> args = {"--data", "t", "--steps", "10"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    Expected<TrainOptions> o = parse(args);
    ASSERT_FALSE(o.isOk()) << c.args[0];
    EXPECT_NE(o.status().message().find(c.message), std::string::npos)
        << o.status().message();
  }
}

TEST(ExecOptions, ResumeTakesTheCheckpointsSettingsUnlessAFlagIsGiven) {
  OptimizerSettings stored;
  stored.adam.lr = 6e-4;
  stored.adam.beta2 = 0.95;
  stored.adam.weightDecay = 0.1;
  stored.lr.warmupSteps = 2;
  stored.lr.decay = LrDecayStyle::Cosine;
  stored.lr.decaySteps = 8;
  stored.lr.minLr = 6e-5;
  // Resumed without optimizer flags: the checkpoint's, all of them, and
  // not the defaults (nor --steps for the decay's end).
  Expected<TrainOptions> plain =
      parse({"--data", "t", "--steps", "20", "--load", "c.st"});
  ASSERT_TRUE(plain.isOk()) << plain.status().message();
  std::vector<std::string> changes;
  Expected<OptimizerSettings> same =
      resolveOptimizerSettings(*plain, stored, &changes);
  ASSERT_TRUE(same.isOk()) << same.status().message();
  EXPECT_TRUE(changes.empty());
  EXPECT_EQ(describeOptimizer(*same), describeOptimizer(stored));
  // A flag that changes a setting wins, and is reported; one given with the
  // stored value is no change.
  Expected<TrainOptions> changed =
      parse({"--data", "t", "--steps", "20", "--load", "c.st", "--lr", "3e-4",
             "--weight-decay", "0.1"});
  ASSERT_TRUE(changed.isOk()) << changed.status().message();
  Expected<OptimizerSettings> mixed =
      resolveOptimizerSettings(*changed, stored, &changes);
  ASSERT_TRUE(mixed.isOk()) << mixed.status().message();
  EXPECT_DOUBLE_EQ(mixed->adam.lr, 3e-4);
  EXPECT_DOUBLE_EQ(mixed->adam.beta2, 0.95);
  EXPECT_EQ(mixed->lr.decaySteps, 8);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0], "--lr 0.0003 (the checkpoint trained with 0.0006)");
  // The merged settings are checked: a new peak under the stored minimum.
  Expected<TrainOptions> low =
      parse({"--data", "t", "--steps", "20", "--load", "c.st", "--lr", "1e-5"});
  ASSERT_TRUE(low.isOk());
  Expected<OptimizerSettings> refused = resolveOptimizerSettings(*low, stored);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("--min-lr 6e-05 is above --lr "
                                            "1e-05"),
            std::string::npos)
      << refused.status().message();
}

} // namespace

namespace {

TEST(ExecOptions, EvaluationFlags) {
  Expected<TrainOptions> o =
      parse({"--data", "t", "--steps", "9", "--eval-data", "v.bin",
             "--eval-interval", "3", "--eval-iters", "2"});
  ASSERT_TRUE(o.isOk()) << o.status().message();
  EXPECT_EQ(o->evalDataPath, "v.bin");
  EXPECT_EQ(o->evalInterval, 3);
  EXPECT_EQ(o->evalIters, 2);
  Expected<TrainOptions> defaults =
      parse({"--data", "t", "--steps", "9", "--eval-data", "v.bin"});
  ASSERT_TRUE(defaults.isOk());
  EXPECT_EQ(defaults->evalInterval, 0); // at the end only
  EXPECT_EQ(defaults->evalIters, 4);
  for (const char *flag : {"--eval-interval", "--eval-iters"}) {
    Expected<TrainOptions> alone =
        parse({"--data", "t", "--steps", "9", flag, "2"});
    ASSERT_FALSE(alone.isOk()) << flag;
    EXPECT_EQ(alone.status().message(),
              std::string(flag) +
                  " needs --eval-data PATH (the held-out tokens)");
  }
  Expected<TrainOptions> none = parse(
      {"--data", "t", "--steps", "9", "--eval-data", "v", "--eval-iters", "0"});
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("--eval-iters"), std::string::npos);
}

} // namespace
