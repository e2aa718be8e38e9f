//===- bench-train-step.cpp - Compiled executable vs. hand-written step ---===//
//
//   bench-train-step --config MODEL.json --exe COMPILED --data TOKENS.bin
//                    [--microbatches N] [--steps K] [--rounds R]
//
// Step time on one rank: a GPT compiled by bitpipe-compile (1 device, N
// micro-batches; COMPILED is its executable) against ReferenceGpt, the same
// model trained by hand on the same kernels. Both run in this one process
// tree, alternately, R rounds of K steps each, so machine noise hits both
// alike; the median step time of each (first step of a round skipped:
// start-up) and their ratio are printed. The losses of the two are printed
// too: same initialisation and data, so they agree up to summation order.
//
// OPENBLAS_NUM_THREADS applies to both (the executable inherits it).
//
//===----------------------------------------------------------------------===//

#include "ReferenceGpt.h"

#include "bitpipe/Schedule/ScheduleFlags.h"
#include "train/Json.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace bitpipe;
using namespace bitpipe::runtime;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "bench-train-step: %s\n", message.c_str());
  return 1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

bool readText(const std::string &path, std::string &out) {
  std::ifstream in(path);
  if (!in)
    return false;
  std::stringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

/// Runs the compiled executable for `steps` steps; appends its per-step
/// seconds (all but the first) and losses.
bool runCompiled(const std::string &exe, const std::string &data,
                 int steps, uint64_t seed, const std::string &metrics,
                 std::vector<double> &seconds, std::vector<double> &losses) {
  std::string cmd = "'" + exe + "' --data '" + data + "' --steps " +
                    std::to_string(steps) + " --seed " + std::to_string(seed) +
                    " --log-interval 1000000 --metrics '" + metrics +
                    "' > /dev/null";
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    std::fprintf(stderr, "bench-train-step: '%s' failed (%d)\n", cmd.c_str(),
                 rc);
    return false;
  }
  std::string text;
  if (!readText(metrics, text))
    return false;
  std::istringstream lines(text);
  std::string line;
  int index = 0;
  while (std::getline(lines, line)) {
    auto v = parseJson(line);
    if (!v.isOk())
      return false;
    const JsonValue *time = v->get("seconds"), *loss = v->get("loss");
    if (!time || !loss)
      return false;
    if (index++ > 0)
      seconds.push_back(time->number);
    losses.push_back(loss->number);
  }
  return index == steps;
}

} // namespace

int main(int argc, char **argv) {
  std::string configPath, exe, dataPath;
  int microbatches = 4, steps = 6, rounds = 2;
  uint64_t seed = 1234;
  const char *usage = "--config MODEL.json --exe COMPILED --data TOKENS.bin "
                      "[--microbatches N] [--steps K>=2] [--rounds R]";
  sched::FlagParser flags("bench-train-step", usage);
  flags.flag("--config", &configPath)
      .flag("--exe", &exe)
      .flag("--data", &dataPath)
      .flag(sched::flagName(sched::option::kMicrobatches), &microbatches, 1)
      .flag("--steps", &steps, 2)
      .flag("--rounds", &rounds, 1);
  if (!flags.parse(argc, argv))
    return 2;
  if (configPath.empty() || exe.empty() || dataPath.empty())
    return fail(std::string("usage: bench-train-step ") + usage);

  std::string text;
  if (!readText(configPath, text))
    return fail("cannot read " + configPath);
  auto config = parseJson(text);
  if (!config.isOk())
    return fail(configPath + ": " + config.status().message());
  bench::GptShape shape;
  struct {
    const char *key;
    int64_t *field;
  } fields[] = {{"layers", &shape.layers},
                {"hidden", &shape.hidden},
                {"heads", &shape.heads},
                {"vocab", &shape.vocab},
                {"max_positions", &shape.maxPositions},
                {"seq_len", &shape.seqLen},
                {"microbatch_size", &shape.microbatchSize}};
  for (auto &f : fields) {
    const JsonValue *v = config->get(f.key);
    if (!v || !v->isInteger)
      return fail(configPath + ": needs an integer \"" + f.key + "\"");
    *f.field = v->integer;
  }

  auto dataset = TokenDataset::open(dataPath, TokenDType::U16, shape.vocab);
  if (!dataset.isOk())
    return fail(dataset.status().message());
  SamplerConfig samplerConfig;
  samplerConfig.batchSize = shape.microbatchSize;
  samplerConfig.seqLen = shape.seqLen;
  samplerConfig.seed = seed;
  auto sampler = BatchSampler::create(**dataset, samplerConfig);
  if (!sampler.isOk())
    return fail(sampler.status().message());

  std::vector<double> refSeconds, refLosses, ourSeconds, ourLosses;
  std::string metrics = "bench-train-step.metrics.jsonl";
  int64_t numParams = 0;
  for (int round = 0; round < rounds; ++round) {
    AdamWConfig adam;
    bench::ReferenceGpt reference(shape, seed, adam);
    numParams = reference.numParameters();
    for (int s = 0; s < steps; ++s) {
      auto start = std::chrono::steady_clock::now();
      auto loss = reference.step(*sampler, s, microbatches);
      double dt = std::chrono::duration<double>(
                      std::chrono::steady_clock::now() - start)
                      .count();
      if (!loss.isOk())
        return fail(loss.status().message());
      if (s > 0)
        refSeconds.push_back(dt);
      if (round == 0)
        refLosses.push_back(*loss);
    }
    std::vector<double> losses;
    if (!runCompiled(exe, dataPath, steps, seed, metrics, ourSeconds, losses))
      return fail("the compiled executable's run or its --metrics failed");
    if (round == 0)
      ourLosses = losses;
  }
  std::remove(metrics.c_str());

  double tokens = double(microbatches) * shape.microbatchSize * shape.seqLen;
  double ref = median(refSeconds), ours = median(ourSeconds);
  std::printf("%s: %lld parameters, %d micro-batches of %lld x %lld tokens, "
              "%d rounds x %d steps\n",
              configPath.c_str(), (long long)numParams, microbatches,
              (long long)shape.microbatchSize, (long long)shape.seqLen,
              rounds, steps);
  std::printf("  loss step 0: compiled %.6f, reference %.6f; step %d: "
              "compiled %.6f, reference %.6f\n",
              ourLosses.front(), refLosses.front(), steps - 1,
              ourLosses.back(), refLosses.back());
  std::printf("  median step: compiled %.4f s (%.0f tokens/s), reference "
              "%.4f s (%.0f tokens/s); compiled / reference = %.3f\n",
              ours, tokens / ours, ref, tokens / ref, ours / ref);
  return 0;
}
