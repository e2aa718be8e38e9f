//===- Options.cpp - Command-line flags of a training executable ----------===//

#include "Options.h"

#include "core/FileCache.h"

#include "bitpipe/base/AtomicFile.h"
#include "bitpipe/base/OutputDestination.h"
#include "bitpipe/base/RunFlags.h"
#include "comm/Communicator.h"
#include "core/Flags.h"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>

namespace bitpipe::runtime {

namespace {

/// The table of flags, storing into \p o. One table for parsing and for
/// --help, so that the two cannot disagree.
FlagSet flags(TrainOptions &o) {
  FlagSet f;
  f.text("--data", "PATH", "flat token file (required)", &o.dataPath);
  f.add("--data-dtype", "u16|u32", "token type of --data (default u16)",
        [&o](const std::string &flag, const std::string &v) {
          if (v == "u16")
            o.dataDType = TokenDType::U16;
          else if (v == "u32")
            o.dataDType = TokenDType::U32;
          else
            return badFlagValue(flag, v, "u16 or u32");
          return Status::ok();
        });
  f.add("--sampling", "random|sequential",
        "random windows (default) or consecutive ones",
        [&o](const std::string &flag, const std::string &v) {
          if (v == "random")
            o.sampling = SamplingMode::Random;
          else if (v == "sequential")
            o.sampling = SamplingMode::Sequential;
          else
            return badFlagValue(flag, v, "random or sequential");
          return Status::ok();
        });
  f.integer("--steps", "N", "train until the step count reaches N (required)",
            &o.steps, 0);
  // The ranges are what a training run can mean: beyond them a value is a
  // typo that would train on infinities. The learning rate has none above:
  // a huge one is how the numeric-fault tests make training diverge on
  // purpose (test/EndToEnd/numeric-faults.sh), and the run then stops at
  // the first non-finite loss (docs/training-semantics.md). A resume takes
  // every optimizer setting whose flag is not given from the checkpoint.
  AdamWConfig &adam = o.optimizer.adam;
  LrSchedule &lr = o.optimizer.lr;
  f.number("--lr", "X",
           "AdamW's peak learning rate (default: a resumed checkpoint's, "
           "else 1e-3)",
           &adam.lr, 0, /*strict=*/true);
  f.integer("--lr-warmup-steps", "W",
            "raise the learning rate linearly over the first W updates "
            "(default 0)",
            &lr.warmupSteps, 0);
  f.add("--lr-decay-style", "constant|linear|cosine",
        "how the learning rate falls after the warm-up, to --min-lr at "
        "--lr-decay-steps (default constant)",
        [&lr](const std::string &flag, const std::string &v) {
          std::optional<LrDecayStyle> style = parseLrDecayStyle(v);
          if (!style)
            return badFlagValue(flag, v, "constant, linear or cosine");
          lr.decay = *style;
          return Status::ok();
        });
  f.integer("--lr-decay-steps", "D",
            "the update at which the decay reaches --min-lr (default "
            "--steps)",
            &lr.decaySteps, 1);
  f.number("--min-lr", "X", "the learning rate the decay ends at (default 0)",
           &lr.minLr, 0, /*strict=*/false);
  f.number("--adam-beta1", "X", "AdamW's beta1 (default 0.9)", &adam.beta1, 0,
           /*strict=*/false, /*max=*/1);
  f.number("--adam-beta2", "X", "AdamW's beta2 (default 0.999)", &adam.beta2, 0,
           /*strict=*/false, /*max=*/1);
  f.number("--adam-eps", "X", "AdamW's epsilon (default 1e-8)", &adam.eps, 0,
           /*strict=*/true, /*max=*/1);
  f.number("--weight-decay", "X",
           "AdamW weight decay (default 0.01), at most 10", &adam.weightDecay,
           0, /*strict=*/false, /*max=*/10);
  f.number("--max-grad-norm", "X",
           "clip the global gradient norm to X (default 0: no clipping), at "
           "most 1e6",
           &adam.maxGradNorm, 0, /*strict=*/false, /*max=*/1e6);
  f.add("--seed", "N",
        "seed of the initial weights and the sampling (default 0)",
        [&o](const std::string &flag, const std::string &v) {
          int64_t s = 0;
          Status st = parseIntFlag(flag, v, 0, &s);
          o.seed = static_cast<uint64_t>(s);
          o.seedGiven = true;
          return st;
        });
  f.text("--load", "PATH",
         "resume from this checkpoint (safetensors), or start from a "
         "Hugging Face model.safetensors or model.safetensors.index.json",
         &o.loadPath);
  f.text("--save", "PATH", "write the checkpoint here (at the end)",
         &o.savePath);
  f.integer("--save-every", "K", "also save every K steps", &o.saveEvery, 1);
  f.text("--save-hf", "DIR",
         "at the end, write DIR/model.safetensors and DIR/config.json in "
         "Hugging Face's layout",
         &o.saveHfDir);
  f.text("--eval-data", "PATH",
         "held-out token file (of --data-dtype) to report a validation "
         "loss on, at the end and every --eval-interval steps",
         &o.evalDataPath);
  f.integer("--eval-interval", "K",
            "evaluate every K steps too (default 0: at the end only)",
            &o.evalInterval, 0);
  f.integer("--eval-iters", "B",
            "step-sized batches per evaluation, the same ones each time, "
            "read in order from the file's start (default 4)",
            &o.evalIters, 1);
  f.text("--trace", "PATH", "Chrome trace of the run, all ranks", &o.tracePath);
  f.text("--metrics", "PATH",
         "JSON lines {step, loss, grad_norm, lr, tokens_per_s, seconds, "
         "bubble (per rank), and eval_loss after an evaluation}",
         &o.metricsPath);
  f.integer("--threads", "N",
            "threads of each rank's kernels and matrix products (CPU "
            "target; default: OMP_NUM_THREADS or OPENBLAS_NUM_THREADS, else "
            "the rank's CPUs)",
            &o.threads, 1);
  f.toggle("--profile",
           "time each kernel; at the end, print each rank's kernels by "
           "time per step, leaving out step 1 (CPU target)",
           &o.profile);
  f.integer("--log-interval", "K",
            "print the step line every K steps (default 1)", &o.logInterval, 1);
  f.toggle("--progress",
           "draw the progress bar under mpirun too (default: only when not "
           "launched by mpirun and the output is a terminal)",
           &o.progress);
  f.text("--dump-rank-params", "DIR",
         "at the end, each rank writes DIR/rank<R>.safetensors",
         &o.dumpRankParamsDir);
  f.number("--timeout", "SECONDS",
           "communication deadline (default $BITPIPE_COMM_TIMEOUT or 300), "
           "at most 1e6 (11.6 days)",
           &o.timeoutSeconds, 0, /*strict=*/true,
           /*max=*/kMaxCommTimeoutSeconds);
  f.text("--plan-cache", "DIR",
         "where the CUDA target keeps cuDNN's attention plans between runs, "
         "shared by the ranks of a node (default $XDG_CACHE_HOME/bitpipe, "
         "else ~/.cache/bitpipe; 'none': nowhere)",
         &o.planCache);
  f.add("--warm-up", "auto|on|off",
        "run each stage function once before the first step, so that "
        "first-use work (kernel loading, algorithm choice, plans, memory) "
        "happens before any peer waits (default auto: where the target "
        "needs it, CUDA)",
        [&o](const std::string &flag, const std::string &v) {
          if (v == "auto")
            o.warmUp = WarmUp::Auto;
          else if (v == "on")
            o.warmUp = WarmUp::On;
          else if (v == "off")
            o.warmUp = WarmUp::Off;
          else
            return badFlagValue(flag, v, "auto, on or off");
          return Status::ok();
        });
  f.add("--cuda-graphs", nullptr,
        "capture a steady training step into a CUDA graph and replay it "
        "(CUDA target; default off)",
        [&o](const std::string &, const std::string &) {
          o.cudaGraphs = true;
          return Status::ok();
        });
  f.add("--no-cuda-graphs", nullptr,
        "run every step eagerly, issuing each call's work (the default)",
        [&o](const std::string &, const std::string &) {
          o.cudaGraphs = false;
          return Status::ok();
        });
  f.integer("--skip-nonfinite-steps", "K",
            "skip the update of a step whose gradients are not finite, at "
            "most K steps in a row (default 0: stop at the first)",
            &o.skipNonFiniteSteps, 0);
  f.toggle(base::run_flag::kShardOptimizer,
           "shard AdamW's moments across the ranks that hold a replica of "
           "the same parameters, each updating its shard "
           "(docs/data-parallel.md, \"Sharded optimizer\"; CPU target)",
           &o.shardOptimizer);
  f.toggle("--help", "this text", &o.help);
  return f;
}

} // namespace

Expected<TrainOptions> parseTrainOptions(int argc, char **argv) {
  TrainOptions o;
  BP_TRY(flags(o).parse(argc, argv, nullptr, &o.given));
  if (o.help)
    return o;
  if (o.dataPath.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         "missing --data PATH (the token file)");
  if (o.steps < 0)
    return Status::error(ErrorCode::InvalidArgument,
                         "missing --steps N (the step count to reach)");
  if (o.saveEvery > 0 && o.savePath.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         "--save-every needs --save PATH");
  for (const char *flag : {"--eval-interval", "--eval-iters"})
    if (o.given.count(flag) && o.evalDataPath.empty())
      return Status::error(ErrorCode::InvalidArgument,
                           std::string(flag) +
                               " needs --eval-data PATH (the held-out tokens)");
  // Without a checkpoint to complete them, the flags must stand alone now;
  // with one, the run checks them once it has read it.
  if (o.loadPath.empty())
    BP_TRY(resolveOptimizerSettings(o, std::nullopt).status());
  return o;
}

Expected<OptimizerSettings>
resolveOptimizerSettings(const TrainOptions &o,
                         const std::optional<OptimizerSettings> &stored,
                         std::vector<std::string> *changes) {
  OptimizerSettings settings = o.optimizer;
  if (stored) {
    // The stored values as text (which reads back exactly), then the
    // same fields in the same order of the settings being resolved.
    std::vector<std::string> storedText;
    forEachOptimizerSetting(*stored,
                            [&](const char *, const char *, const auto &value) {
                              storedText.push_back(settingText(value));
                            });
    size_t i = 0;
    forEachOptimizerSetting(
        settings, [&](const char *, const char *flag, auto &value) {
          const std::string &old = storedText[i++];
          if (!o.given.count(flag)) {
            parseSetting(old, &value);
          } else if (settingText(value) != old && changes) {
            changes->push_back(std::string(flag) + " " + settingText(value) +
                               " (the checkpoint trained with " + old + ")");
          }
        });
  }
  if (settings.lr.decaySteps == 0)
    settings.lr.decaySteps = o.steps;
  BP_TRY(checkOptimizerSettings(settings));
  return settings;
}

std::string planCacheFolder(const TrainOptions &o) {
  if (o.planCache == "none")
    return "";
  return o.planCache.empty() ? FileCache::defaultDir() : o.planCache;
}

std::string rankParamsPath(const TrainOptions &o, int rank) {
  return o.dumpRankParamsDir + "/rank" + std::to_string(rank) + ".safetensors";
}

/// \p flag's \p path may be written (bitpipe/base/OutputDestination.h's rule).
/// Temporaries a killed run left next to it are removed now, with a note,
/// rather than at the first save, which may be hours away (docs/files.md).
static Status checkTarget(const char *flag, const std::string &path) {
  Expected<base::OutputKind> kind = base::checkOutputDestination(path);
  if (!kind.isOk())
    return Status::error(kind.status().code(),
                         std::string(flag) + ": " + kind.status().message());
  base::removeStaleTemporaries(path);
  return Status::ok();
}

/// Creates \p flag's directory \p dir (one level) if missing; fails unless
/// it is a directory then. Every rank may try: the losers of the race see
/// EEXIST.
static Status makeDirectory(const char *flag, const std::string &dir,
                            const char *contents) {
  if (::mkdir(dir.c_str(), 0777) != 0 && errno != EEXIST)
    return Status::error(ErrorCode::IoError,
                         std::string(flag) + ": cannot create directory '" +
                             dir + "': " + std::strerror(errno));
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::error(ErrorCode::InvalidArgument,
                         std::string(flag) + ": '" + dir +
                             "' is not a directory (expected the directory "
                             "to write " + contents + " into)");
  return Status::ok();
}

Status checkOutputTargets(const TrainOptions &o, int rank) {
  if (rank == 0)
    for (const auto &[flag, path] :
         {std::pair<const char *, const std::string &>{"--save", o.savePath},
          {"--trace", o.tracePath},
          {"--metrics", o.metricsPath}})
      if (!path.empty())
        BP_TRY(checkTarget(flag, path));
  if (rank == 0 && !o.saveHfDir.empty()) {
    BP_TRY(makeDirectory("--save-hf", o.saveHfDir,
                         "model.safetensors and config.json"));
    for (const char *file : {"/model.safetensors", "/config.json"})
      BP_TRY(checkTarget("--save-hf", o.saveHfDir + file));
  }
  if (o.dumpRankParamsDir.empty())
    return Status::ok();
  BP_TRY(makeDirectory("--dump-rank-params", o.dumpRankParamsDir,
                       "rank<R>.safetensors"));
  return checkTarget("--dump-rank-params", rankParamsPath(o, rank));
}

std::string trainUsage(const char *program) {
  TrainOptions o;
  return formatString(
             "usage: mpirun -np <world size> %s --data PATH --steps N [flags]\n"
             "\nTrains the compiled model pipeline-parallel.\n\nflags:\n",
             program) +
         flags(o).help();
}

} // namespace bitpipe::runtime
