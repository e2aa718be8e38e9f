//===- Options.h - Command-line flags of a training executable --*- C++ -*-===//
//
// The flags every compiled training executable takes (--help lists them).
// Parsing is pure (no I/O, no MPI) so every rank, given the same argv, gets
// the same answer, and tests can call it directly.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_OPTIONS_H
#define BITPIPE_RUNTIME_EXEC_OPTIONS_H

#include "core/Status.h"
#include "train/OptimizerSettings.h"
#include "train/TokenDataset.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace bitpipe::runtime {

/// --warm-up: whether each stage function runs once before the first step
/// (Executor::warmUp). Auto: where the target asks (Backend::warmsUp).
enum class WarmUp { Auto, On, Off };

struct TrainOptions {
  std::string dataPath;
  TokenDType dataDType = TokenDType::U16;
  SamplingMode sampling = SamplingMode::Random;
  /// The step count to reach (a run resumed at step 3 with --steps 6 runs
  /// three more).
  int64_t steps = -1;
  /// AdamW's settings and the learning-rate schedule as the flags give
  /// them (resolveOptimizerSettings fills in the rest).
  OptimizerSettings optimizer;
  uint64_t seed = 0;
  bool seedGiven = false;
  std::string loadPath;
  std::string savePath;
  int64_t saveEvery = 0; // 0: only at the end
  /// --save-hf: at the end, the weights in Hugging Face's layout and a
  /// config.json in this directory (docs/huggingface.md).
  std::string saveHfDir;
  /// --eval-data: a held-out token file (of --data-dtype), evaluated every
  /// evalInterval steps (0: at the end only) over evalIters step-sized
  /// batches read in order from its start (docs/training-semantics.md,
  /// "Evaluation").
  std::string evalDataPath;
  int64_t evalInterval = 0;
  int64_t evalIters = 4;
  std::string tracePath;
  std::string metricsPath;
  /// --profile: time every CPU kernel and print the table of each rank's
  /// at the end (core/KernelProfile.h, docs/launching.md).
  bool profile = false;
  /// --threads: the threads of each rank's kernels; 0 until the start-up
  /// chooses them (exec/KernelThreads.h), with where the count came from.
  int64_t threads = 0;
  std::string threadsSource;
  std::string dumpRankParamsDir;
  int64_t logInterval = 1;
  /// Draw the progress bar even when launched by mpirun (whose rank
  /// output is a pseudo-terminal whatever mpirun's own output is).
  bool progress = false;
  double timeoutSeconds = 0; // 0: the communicator's default
  /// --plan-cache: where the target keeps what is slow to make between
  /// runs (CUDA: cuDNN's attention plans). "" until resolved by
  /// planCacheFolder (the default folder), "none" for nowhere.
  std::string planCache;
  WarmUp warmUp = WarmUp::Auto;
  /// --cuda-graphs / --no-cuda-graphs (the last given wins): capture a
  /// steady training step into a CUDA graph and replay it (CUDA target,
  /// docs/launching.md, "CUDA graphs"). Off by default.
  bool cudaGraphs = false;
  /// How many steps in a row may skip their update for non-finite
  /// gradients before training stops (0: none; docs/training-semantics.md,
  /// "Non-finite values").
  int64_t skipNonFiniteSteps = 0;
  /// --shard-optimizer: AdamW's state sharded across each bucket's
  /// replicas (docs/data-parallel.md, "Sharded optimizer"); the same on
  /// every rank (checked at start-up).
  bool shardOptimizer = false;
  bool help = false;
  /// The name of every flag given ("--lr", ...): a resume takes each
  /// optimizer setting from the checkpoint unless its flag is here.
  std::set<std::string> given;
};

/// Parses argv[1..argc-1]. "--flag value" and "--flag=value" both work.
/// Fails, naming the flag, on an unknown flag, a missing or malformed value,
/// or a missing required flag (--data, --steps), unless --help is given.
Expected<TrainOptions> parseTrainOptions(int argc, char **argv);

/// The settings a run trains with: \p o's flags, with every setting whose
/// flag was not given taken from \p stored (a resumed checkpoint's) when
/// there is one, and --lr-decay-steps defaulting to --steps. Each setting a
/// flag changes from \p stored goes to \p changes as "--lr 0.0002 (the
/// checkpoint trained with 0.001)". Fails, naming the flags, on settings
/// checkOptimizerSettings refuses.
Expected<OptimizerSettings>
resolveOptimizerSettings(const TrainOptions &o,
                         const std::optional<OptimizerSettings> &stored,
                         std::vector<std::string> *changes = nullptr);

/// The --help text.
std::string trainUsage(const char *program);

/// The folder --plan-cache names: its value, FileCache::defaultDir() when
/// not given, "" for "none" (no cache). Reads the environment.
std::string planCacheFolder(const TrainOptions &o);

/// Where --dump-rank-params puts \p rank's parameters: DIR/rank<R>.safetensors.
std::string rankParamsPath(const TrainOptions &o, int rank);

/// The output targets \p rank will write, checked before the first step so
/// that a typo costs a message, not a finished run (docs/files.md): rank 0's
/// --save, --trace and --metrics, --save-hf's two files (its directory is
/// created, one level, if missing), and every rank's file under
/// --dump-rank-params (whose directory is created, one level, if missing).
/// A directory, a missing or read-only parent directory, a symbolic link
/// (but to a device or a FIFO) or a block device is refused, naming the
/// flag. Not pure: it looks at the file system.
Status checkOutputTargets(const TrainOptions &o, int rank);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_OPTIONS_H
