//===- Training.cpp - The training loop of a compiled program ---*- C++ -*-===//

#include "Training.h"

#include "bitpipe/base/GradientSyncGroups.h"

#include "Backend.h"
#include "Executor.h"
#include "HuggingFaceCheckpoint.h"
#include "KernelThreads.h"
#include "ModelCheckpoint.h"
#include "Options.h"
#include "StartupAgreement.h"
#include "comm/mpi/MpiCommunicator.h"
#include "train/KernelProfileReport.h"
#include "train/StepLog.h"
#include "train/Trace.h"

#include "bitpipe/runtime.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

namespace bitpipe::runtime {

namespace {

/// Whether a launcher started this process. Open MPI hands every rank a
/// pseudo-terminal as stdout, even when mpirun's own output goes to a file,
/// so isatty() cannot tell a log file from a terminal there.
bool launchedByMpirun() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK",
                          "SLURM_PROCID"})
    if (std::getenv(var))
      return true;
  return false;
}

/// What a training step left in the executor, kept before an evaluation
/// runs the program again.
struct StepOutcome {
  double lossSum = 0;
  int64_t lossCount = 0;
  double gradNorm = 0;
  bool nonFiniteGradNorm = false;
  bool skippedUpdate = false;

  static StepOutcome of(const bp_rt_context &ctx) {
    return {ctx.lossSum(), ctx.lossCount(), ctx.gradNorm(),
            ctx.nonFiniteGradNorm(), ctx.skippedUpdate()};
  }
};

/// What each rank reports to rank 0 after a step.
struct StepReport {
  double lossSum = 0;
  int64_t lossCount = 0;
  double bubble = 0;
  double gradNorm = 0;
  /// The evaluation after the step, if one ran (evalLossCount > 0 on the
  /// ranks of the last stage).
  bool evaluated = false;
  double evalLossSum = 0;
  int64_t evalLossCount = 0;
};

/// Rank 0 says, once, that a pre-LN BERT is another function of Hugging
/// Face's weights (docs/huggingface.md, "Pre-LN BERT"); a post-LN BERT is
/// BertForMaskedLM's graph.
void warnIfBertLayoutDiffers(const TrainOptions &o, const Manifest &manifest,
                             int rank, bool loadsHuggingFace) {
  if (rank != 0 || manifest.model.family != ModelFamily::Bert ||
      (!loadsHuggingFace && o.saveHfDir.empty()))
    return;
  // A model the mapping cannot describe is refused by --load and --save-hf
  // themselves.
  Expected<HfModelSizes> sizes = manifestHfSizes(manifest);
  if (!sizes.isOk() || sizes->normPosition == HfNormPosition::Post)
    return;
  std::fflush(stdout);
  std::fprintf(stderr,
               "bitpipe: warning: %s: this BERT is pre-LN and Hugging "
               "Face's post-LN: the weights correspond, but the two models "
               "compute different functions of them; a model compiled with "
               "\"layer_norm_position\": \"post\" is Hugging Face's "
               "(docs/huggingface.md)\n",
               loadsHuggingFace ? "--load" : "--save-hf");
}

/// "1,234,567".
std::string withThousands(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

/// Rank 0's first lines: what is trained, how, and where it goes.
void printRunSummary(const TrainOptions &o, const Manifest &m) {
  int64_t params = 0;
  for (const ParamSpec &p : m.params)
    params += p.numel;
  const ScheduleSpec &s = m.schedule;
  int64_t tokensPerMicrobatch = m.model.microbatchSize * m.model.seqLen;
  // The CPU's kernels run on the rank's threads; a device's on the device.
  std::string threads =
      m.target.kind == TargetKind::Cpu
          ? formatString(
                ", %lld %s per rank (%s)", static_cast<long long>(o.threads),
                o.threads == 1 ? "thread" : "threads", o.threadsSource.c_str())
          : "";
  std::printf(
      "bitpipe: model %s, %s parameters; schedule %s on %lld ranks (%lld "
      "pipeline devices x %lld data-parallel %s); %lld micro-batches of "
      "%lld x %lld tokens per copy, %s tokens per step; %s on the %s "
      "target%s\n",
      m.model.name.c_str(), withThousands(params).c_str(), s.name.c_str(),
      static_cast<long long>(s.worldSize), static_cast<long long>(s.devices),
      static_cast<long long>(s.dataParallel),
      s.dataParallel == 1 ? "copy" : "copies",
      static_cast<long long>(s.microbatches),
      static_cast<long long>(m.model.microbatchSize),
      static_cast<long long>(m.model.seqLen),
      withThousands(s.microbatches * s.dataParallel * tokensPerMicrobatch)
          .c_str(),
      precisionName(m.target.precision), targetKindName(m.target.kind),
      threads.c_str());
  // Which groups sum in two levels: the schedule's choice, applied where it
  // has two levels to use (docs/data-parallel.md, "Two levels").
  if (s.dataParallel > 1) {
    int twoLevel = 0;
    for (size_t g = 0; g < m.groups.size(); ++g)
      twoLevel += m.syncsInTwoLevels(static_cast<int>(g)) ? 1 : 0;
    std::printf("bitpipe: gradient sync: %s; %d of %zu all-reduce groups in "
                "two levels\n",
                bp_gradient_sync_names[s.gradientSync], twoLevel,
                m.groups.size());
  }
  std::string outputs;
  auto add = [&](const std::string &what) {
    outputs += (outputs.empty() ? "" : ", ") + what;
  };
  if (!o.savePath.empty())
    add("checkpoint " + o.savePath +
        (o.saveEvery > 0 ? formatString(" (every %lld steps and at the end)",
                                        static_cast<long long>(o.saveEvery))
                         : std::string(" (at the end)")));
  if (!o.saveHfDir.empty())
    add("Hugging Face model " + o.saveHfDir + "/");
  if (!o.metricsPath.empty())
    add("metrics " + o.metricsPath);
  if (!o.tracePath.empty())
    add("trace " + o.tracePath);
  if (!o.dumpRankParamsDir.empty())
    add("rank parameters " + o.dumpRankParamsDir + "/");
  std::printf("bitpipe: outputs: %s\n",
              outputs.empty() ? "none (no --save: the trained weights are "
                                "not kept)"
                              : outputs.c_str());
}

/// Rank 0 warns that a resume changes what the checkpoint trained with.
void warnOfChangedSettings(const TrainOptions &o, int rank,
                           const std::vector<std::string> &changes) {
  if (rank != 0 || changes.empty())
    return;
  std::fflush(stdout);
  for (const std::string &change : changes)
    std::fprintf(stderr,
                 "bitpipe: warning: --load %s: resuming with %s; the other "
                 "optimizer settings are the checkpoint's\n",
                 o.loadPath.c_str(), change.c_str());
}

/// Start-up checks that may fail on some ranks: the data, the checkpoint,
/// the output paths. Fills \p inputs and, with --load, the parameters;
/// \p resumed says whether --load continued a bitpipe run (a Hugging Face
/// checkpoint starts a new one at step 0, docs/huggingface.md).
/// \p settings receives the optimizer's settings: the flags', completed by
/// a resumed checkpoint's (resolveOptimizerSettings).
Status startUpChecks(const TrainOptions &o, const Manifest &manifest, int rank,
                     ParamStore &store, AdamW &adam,
                     OptimizerSettings *settings, uint64_t *seed,
                     std::unique_ptr<InputLoader> *inputs, bool *resumed) {
  *seed = o.seed;
  *resumed = false;
  std::optional<OptimizerSettings> stored;
  // --save-hf's model must map to Hugging Face's before any step runs.
  if (!o.saveHfDir.empty()) {
    Expected<HfMapping> mapping = manifestHfMapping(manifest);
    if (!mapping.isOk())
      return Status::error(mapping.status().code(),
                           "--save-hf: " + mapping.status().message());
  }
  Expected<bool> huggingFace =
      o.loadPath.empty() || manifest.params.empty()
          ? Expected<bool>(false)
          : isHuggingFaceCheckpoint(o.loadPath, manifest.params[0].name);
  if (!huggingFace.isOk())
    return Status::error(huggingFace.status().code(),
                         "--load: " + huggingFace.status().message());
  warnIfBertLayoutDiffers(o, manifest, rank, *huggingFace);
  if (*huggingFace) {
    Status s = loadHuggingFaceWeights(manifest, store, o.loadPath);
    if (!s.isOk())
      return Status::error(s.code(), "--load: " + s.message());
  } else if (!o.loadPath.empty()) {
    *resumed = true;
    CheckpointInfo info;
    Status s = loadModelCheckpoint(manifest, store, o.loadPath, &info);
    if (!s.isOk())
      return Status::error(s.code(), "--load: " + s.message());
    // The sampler and the masks are functions of the seed: resuming with
    // another one would silently change the data order.
    if (o.seedGiven && info.seed != o.seed)
      return Status::error(
          ErrorCode::InvalidArgument,
          formatString("--load %s was trained with seed %llu, but --seed is "
                       "%llu (drop --seed to continue with the checkpoint's)",
                       o.loadPath.c_str(),
                       static_cast<unsigned long long>(info.seed),
                       static_cast<unsigned long long>(o.seed)));
    *seed = info.seed;
    adam.setStepCount(info.step);
    stored = info.optimizer;
    if (rank == 0 && !info.unverifiedReason.empty()) {
      std::fflush(stdout);
      std::fprintf(stderr, "bitpipe: warning: --load: %s\n",
                   info.unverifiedReason.c_str());
    }
  }
  std::vector<std::string> changes;
  Expected<OptimizerSettings> resolved =
      resolveOptimizerSettings(o, stored, &changes);
  if (!resolved.isOk())
    return resolved.status();
  *settings = *resolved;
  adam.setConfig(settings->adam);
  warnOfChangedSettings(o, rank, changes);
  Expected<std::unique_ptr<InputLoader>> in = InputLoader::open(
      manifest, o.dataPath, o.dataDType, *seed, o.sampling);
  if (!in.isOk())
    return Status::error(in.status().code(),
                         "--data: " + in.status().message());
  *inputs = in.take();
  return checkOutputTargets(o, rank);
}

/// DDP's start, after a --load: every replica takes the parameters of its
/// group's first rank. They are identical already (a checkpoint loads the
/// same values on every holder), so this is a safety net that costs one
/// broadcast per bucket at start-up. A fresh start needs none: the draws
/// are a pure function of (seed, name, element) on every target. Groups go
/// in manifest order and buckets in rank order (identical on all members),
/// a total order of collectives, so overlapping groups cannot deadlock.
Status broadcastInitialParams(Communicator &comm, const Manifest &manifest,
                              ParamStore &store,
                              const std::vector<GroupId> &groupIds) {
  const RankSpec &spec = manifest.rankSpec(comm.rank());
  for (size_t g = 0; g < manifest.groups.size(); ++g)
    for (size_t b = 0; b < spec.buckets.size(); ++b) {
      if (spec.buckets[b].group != static_cast<int>(g))
        continue;
      const ElementRange &range = store.bucketRange(static_cast<int>(b));
      Status s = comm.hostCommunicator().broadcast(
          store.hostParamsData() + range.offset, range.count, DType::F32,
          groupIds[g]);
      if (!s.isOk())
        return s;
    }
  return Status::ok();
}

/// The page faults this process has taken (minor and major).
int64_t pageFaultCount() {
  struct rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0)
    return 0;
  return static_cast<int64_t>(usage.ru_minflt) +
         static_cast<int64_t>(usage.ru_majflt);
}

/// What --shard-optimizer shards (docs/data-parallel.md, "Sharded
/// optimizer"): "moments of N of M parameters sharded over 2 to 4 ranks
/// each": the parameters in a bucket, over their group's world ranks.
std::string describeSharding(const Manifest &m) {
  std::vector<int> shards(m.params.size(), 0);
  for (const RankSpec &rank : m.ranks)
    for (const BucketSpec &b : rank.buckets)
      for (int p : b.params)
        shards[p] = static_cast<int>(base::optimizerShards(
            static_cast<int64_t>(m.groups[b.group].size()),
            m.schedule.dataParallel));
  int sharded = 0, fewest = 0, most = 0;
  for (int n : shards) {
    if (n == 0)
      continue;
    fewest = sharded == 0 ? n : std::min(fewest, n);
    most = std::max(most, n);
    ++sharded;
  }
  if (sharded == 0)
    return formatString("moments of 0 of %zu parameters sharded (no "
                        "parameter has a replica)",
                        m.params.size());
  std::string over = fewest == most ? std::to_string(most)
                                    : formatString("%d to %d", fewest, most);
  return formatString("moments of %d of %zu parameters sharded over %s ranks "
                      "each",
                      sharded, m.params.size(), over.c_str());
}

class Trainer {
public:
  Trainer(const CompiledProgram &program, Communicator &comm, Backend &backend,
          const TrainOptions &o, const Manifest &m,
          std::chrono::steady_clock::time_point started)
      : program_(program), comm_(comm), backend_(backend), o_(o), manifest_(m),
        rank_(comm.rank()), store_(m, comm.rank(), o.shardOptimizer),
        adam_(o.optimizer.adam), started_(started) {}

  int run();

private:
  /// Collective: an error on every rank unless every rank was given
  /// --shard-optimizer alike (the replicas' layouts must match).
  Status sameShardingOnEveryRank();
  Status save(const std::string &path, int64_t step);
  /// Collective: --eval-data's batches through the program, with the
  /// update off (Executor::setEvaluationInputs); adds this rank's losses
  /// to \p report.
  Status evaluate(bp_rt_context &ctx, bp_rank_program_t program,
                  StepReport *report);
  /// Rank 0 says what it has written: "bitpipe: saved WHAT".
  void saved(const std::string &what);
  bool stepIsFinite(int64_t step, const StepOutcome &done);
  bool stateIsFinite(int64_t step, const std::string &known);
  void report(int64_t step, double seconds, const StepReport &mine);
  Status reportMemory(const Executor &executor);
  /// Collective: rank 0 prints where each rank's steps went (StepShares).
  Status reportStepShares();
  /// Collective: rank 0 prints every rank's --profile table.
  Status reportKernelProfile();

  const CompiledProgram &program_;
  Communicator &comm_;
  Backend &backend_;
  const TrainOptions &o_;
  const Manifest &manifest_;
  int rank_;
  ParamStore store_;
  AdamW adam_;
  /// What the run trains with (startUpChecks); adam_'s learning rate is set
  /// from it before each step.
  OptimizerSettings settings_;
  TraceRecorder trace_;
  uint64_t seed_ = 0;
  std::unique_ptr<MetricsLog> metrics_; // rank 0's --metrics
  std::unique_ptr<StepLogger> logger_;
  // --eval-data, opened at start-up.
  std::unique_ptr<InputLoader> evalInputs_;
  // --skip-nonfinite-steps: updates skipped in a row now, and in all.
  int64_t skippedInARow_ = 0;
  int64_t skipped_ = 0;
  // The steps' shares (StepShares), summed over the steps run.
  StepShares sharesSum_;
  int64_t sharesSteps_ = 0;
  // --profile: the steps it covers (all but the first, when there are
  // two or more) and their wall time.
  RankKernelProfile profile_;
  int64_t profileFirstStep_ = 0;
  // Start-up: when runTraining began, and how long the parameters took to
  // initialise (printed before the first step).
  std::chrono::steady_clock::time_point started_;
  double initSeconds_ = 0.0;
};

Status Trainer::save(const std::string &path, int64_t step) {
  CheckpointInfo info{step, seed_, manifestFingerprint(manifest_)};
  info.optimizer = settings_;
  Status s = saveModelCheckpoint(comm_, manifest_, store_, path, info);
  if (!s.isOk())
    return Status::error(s.code(), "--save: " + s.message());
  if (rank_ == 0)
    saved(formatString("the checkpoint of step %lld to %s",
                       static_cast<long long>(step), path.c_str()));
  return s;
}

Status Trainer::evaluate(bp_rt_context &ctx, bp_rank_program_t program,
                         StepReport *report) {
  ctx.setEvaluationInputs(evalInputs_.get());
  Status s = Status::ok();
  for (int64_t batch = 0; batch < o_.evalIters && s.isOk(); ++batch) {
    ctx.beginStep(batch);
    ctx.run(program);
    s = ctx.endStep();
    report->evalLossSum += ctx.lossSum();
    report->evalLossCount += ctx.lossCount();
  }
  ctx.setEvaluationInputs(nullptr);
  report->evaluated = true;
  return s;
}

void Trainer::saved(const std::string &what) {
  // On stdout with the step lines; the progress bar, cleared, is drawn
  // again by the next step's line.
  if (logger_)
    logger_->finish();
  std::printf("bitpipe: saved %s\n", what.c_str());
  std::fflush(stdout);
}

// Non-finite values (docs/training-semantics.md, "Non-finite values").
// Each step checks what it has computed anyway: the loss (on the ranks of
// the last stage) and the global gradient norm (all-reduced, so the same on
// every rank, whether or not clipping or --metrics use it), and the ranks
// agree on the result with one all-reduce of one int32 per rank. The
// updated parameters are not scanned every step: that is a pass over every
// weight (and a device-to-host copy on CUDA) per step, while an update
// that overflows (--lr 1e30: the weights reach 1e31, then Inf) makes the
// next step's forward, and so its loss and gradient norm, non-finite at no
// cost. The last step's update has no next step: the end of training
// scans the state once, and saveCheckpoint refuses non-finite values in
// any case, so no checkpoint ever holds them.
enum : int32_t { kLossNonFinite = 1, kGradNormNonFinite = 2 };

bool Trainer::stepIsFinite(int64_t step, const StepOutcome &done) {
  int32_t mine = 0;
  if (done.lossCount > 0 && !std::isfinite(done.lossSum))
    mine |= kLossNonFinite;
  if (done.nonFiniteGradNorm)
    mine |= kGradNormNonFinite;
  int32_t any = 0;
  for (int32_t flags : gatherFromEveryRank(
           comm_, mine,
           formatString("step %lld's loss and gradient-norm check",
                        static_cast<long long>(step))))
    any |= flags;
  if (any == 0) {
    skippedInARow_ = 0;
    return true;
  }
  // A skipped update (the same on every rank: the norm is global) with
  // --skip-nonfinite-steps; its loss is as non-finite as its gradients.
  if (done.skippedUpdate) {
    ++skippedInARow_;
    ++skipped_;
    if (rank_ == 0) {
      std::fflush(stdout);
      std::fprintf(stderr,
                   "bitpipe: warning: step %lld: the global gradient norm is "
                   "%g: its update is skipped (%lld in a row, at most %lld "
                   "with --skip-nonfinite-steps; %lld in all)\n",
                   static_cast<long long>(step), done.gradNorm,
                   static_cast<long long>(skippedInARow_),
                   static_cast<long long>(o_.skipNonFiniteSteps),
                   static_cast<long long>(skipped_));
      std::fflush(stderr);
    }
    return true;
  }
  std::string known;
  if (any & kLossNonFinite)
    known = "the loss is not finite";
  if (any & kGradNormNonFinite)
    known += formatString("%sthe global gradient norm is %g",
                          known.empty() ? "" : " and ", done.gradNorm);
  if (skippedInARow_ > 0)
    known += formatString(" after %lld skipped updates in a row "
                          "(--skip-nonfinite-steps %lld)",
                          static_cast<long long>(skippedInARow_),
                          static_cast<long long>(o_.skipNonFiniteSteps));
  stateIsFinite(step, known);
  return false;
}

/// Collective. Scans the weights and moments each rank holds, in model
/// order, for the first parameter that is not what a checkpoint may hold
/// (checkCheckpointValues: non-finite, or a negative second moment); the
/// ranks agree on the first one in model order. When one is found, or
/// \p known says what else went non-finite, the lowest rank holding that
/// parameter (else rank 0) prints one message, and every rank returns
/// false.
bool Trainer::stateIsFinite(int64_t step, const std::string &known) {
  int32_t first = INT32_MAX;
  std::string detail;
  Expected<std::pair<int, Status>> invalid = store_.firstInvalidParam();
  if (!invalid.isOk()) {
    detail =
        "the parameters could not be checked: " + invalid.status().message();
  } else if (invalid->first >= 0) {
    first = static_cast<int32_t>(invalid->first);
    detail = invalid->second.message();
  }
  std::vector<int32_t> firsts =
      gatherFromEveryRank(comm_, first,
                          formatString("step %lld's parameter check",
                                       static_cast<long long>(step)));
  int printer = 0;
  for (size_t r = 0; r < firsts.size(); ++r)
    if (firsts[r] < firsts[printer])
      printer = static_cast<int>(r);
  if (firsts[printer] == INT32_MAX && known.empty())
    return true;
  if (rank_ == printer) {
    std::string message =
        formatString("step %lld: ", static_cast<long long>(step)) +
        (known.empty() ? "the update made the parameters non-finite" : known);
    if (first != INT32_MAX)
      message += "; the first parameter (in model order) that went "
                 "non-finite is '" +
                 manifest_.params[first].name + "' (" + detail + ")";
    else if (!detail.empty())
      message += "; " + detail;
    message += "; training stops: nothing is saved, an existing --save "
               "file is left as it was";
    printError(rank_, message);
  }
  return false;
}

/// Prints, on rank 0, per rank: the saved activations in flight at their
/// peak, measured, next to what the compiler predicted from the schedule
/// (the two must agree: the executor runs the schedule's order), and the
/// peak of all tensor memory (activations, gradients in transit, kernel
/// scratch: the pool of runtime.h) with what the pool holds, plus the
/// parameter store's arrays (weights, gradients, moments), which live the
/// whole run beside it: the rank's peak.
Status Trainer::reportMemory(const Executor &executor) {
  int64_t mine[5] = {executor.peakHandles(), executor.peakSavedBytes(), 0, 0,
                     store_.targetBytes()};
  bp_memory_stats(nullptr, &mine[2], &mine[3]);
  std::string bytes(sizeof mine, '\0');
  std::memcpy(bytes.data(), mine, sizeof mine);
  std::vector<std::string> all;
  Status s = comm_.gatherBytes(bytes, 0, &all);
  if (!s.isOk() || rank_ != 0)
    return s;
  const double MiB = 1048576.0;
  std::string saved = "saved activations in flight, peak per rank:";
  // The tensors' peak (what the pool held at most) and the parameter
  // store's arrays, which live the whole run beside them.
  std::string pool = "memory, peak per rank, MiB: tensors (the pool's peak in "
                     "use (what it held)) + parameters, gradients and "
                     "optimizer state = total:";
  bool asScheduled = true;
  for (size_t r = 0; r < all.size(); ++r) {
    int64_t v[5] = {0, 0, 0, 0, 0};
    if (all[r].size() == sizeof v)
      std::memcpy(v, all[r].data(), sizeof v);
    const RankSpec &spec = manifest_.rankSpec(static_cast<int>(r));
    saved += formatString(" r%zu %lld (%.2f MiB)", r, (long long)v[0],
                          v[1] / MiB);
    if (spec.peakHandles >= 0 &&
        (v[0] != spec.peakHandles || v[1] != spec.peakSavedBytes)) {
      saved += formatString(" [schedule: %lld, %.2f MiB]",
                            (long long)spec.peakHandles,
                            spec.peakSavedBytes / MiB);
      asScheduled = false;
    }
    pool += formatString(" r%zu %.1f (%.1f) + %.1f = %.1f", r, v[2] / MiB,
                         v[3] / MiB, v[4] / MiB, (v[2] + v[4]) / MiB);
  }
  bool predicted = !manifest_.ranks.empty() &&
                   manifest_.ranks[0].peakHandles >= 0;
  std::printf("%s%s\n%s\n", saved.c_str(),
              !predicted     ? ""
              : asScheduled ? " - as the schedule predicts"
                            : " - DIFFERS from the schedule's prediction",
              pool.c_str());
  return Status::ok();
}

Status Trainer::reportStepShares() {
  const double n = sharesSteps_ > 0 ? static_cast<double>(sharesSteps_) : 1;
  const StepShares &t = sharesSum_;
  double mine[6] = {t.compute / n,   t.recv / n,  t.send / n,
                    t.allReduce / n, t.other / n, t.untracked / n};
  std::string bytes(reinterpret_cast<const char *>(mine), sizeof mine);
  std::vector<std::string> all;
  Status s = comm_.gatherBytes(bytes, 0, &all);
  if (!s.isOk() || rank_ != 0)
    return s;
  // The schedule's own bubble, as the compiler simulated it, beside the
  // measured one: what the measurement adds is time outside the schedule's
  // idle slots (transfers, the all-reduce, the executor).
  bool predicted = false;
  for (const RankSpec &spec : manifest_.ranks)
    predicted |= spec.predictedBubble >= 0;
  std::printf("bitpipe: where the steps went, mean share of each rank's step "
              "(docs/launching.md, \"What a run prints\"):\n"
              "  rank  compute  recv-wait  send  all-reduce  other  "
              "untracked  bubble%s\n",
              predicted ? "  predicted" : "");
  for (size_t r = 0; r < all.size(); ++r) {
    double v[6] = {};
    if (all[r].size() == sizeof v)
      std::memcpy(v, all[r].data(), sizeof v);
    std::string line =
        formatString("  r%-4zu %7.2f %10.2f %5.2f %11.2f %6.2f %10.2f %7.2f", r,
                     v[0], v[1], v[2], v[3], v[4], v[5], 1.0 - v[0]);
    double p = manifest_.rankSpec(static_cast<int>(r)).predictedBubble;
    if (predicted)
      line += p >= 0 ? formatString(" %10.2f", p) : std::string("          -");
    std::printf("%s\n", line.c_str());
  }
  if (predicted)
    std::printf("  predicted: the bubble the schedule itself leaves, "
                "simulated at compile time from the stages' FLOPs with free "
                "communication; a measured bubble above it is the waits, "
                "the all-reduce and the executor's work in the columns "
                "before\n");
  return Status::ok();
}

Status Trainer::reportKernelProfile() {
  kernel_profile::enable(false);
  profile_.totals = kernel_profile::totals();
  std::vector<std::string> all;
  Status s = comm_.gatherBytes(serializeKernelProfile(profile_), 0, &all);
  if (!s.isOk() || rank_ != 0)
    return s;
  for (size_t r = 0; r < all.size(); ++r)
    if (std::optional<RankKernelProfile> p = parseKernelProfile(all[r]))
      std::printf(
          "%s", formatKernelProfile(*p, static_cast<int>(r), profileFirstStep_)
                    .c_str());
  return Status::ok();
}

void Trainer::report(int64_t step, double seconds, const StepReport &mine) {
  std::string bytes(reinterpret_cast<const char *>(&mine), sizeof mine);
  std::vector<std::string> all;
  Status s = comm_.gatherBytes(bytes, 0, &all);
  if (!s.isOk())
    comm_.abort(3, formatString("step %lld: gathering the step's losses: %s",
                                static_cast<long long>(step),
                                s.message().c_str()));
  if (rank_ != 0)
    return;
  StepStats stats;
  stats.step = step;
  stats.seconds = seconds;
  stats.tokens = manifest_.schedule.microbatches *
                 manifest_.schedule.dataParallel *
                 manifest_.model.microbatchSize * manifest_.model.seqLen;
  // The losses of the ranks that hold the last stage, of the step and of
  // the evaluation after it (if any).
  double lossSum = 0, evalLossSum = 0;
  int64_t lossCount = 0, evalLossCount = 0;
  for (const std::string &b : all) {
    StepReport r;
    std::memcpy(&r, b.data(), sizeof r);
    lossSum += r.lossSum;
    lossCount += r.lossCount;
    evalLossSum += r.evalLossSum;
    evalLossCount += r.evalLossCount;
    stats.bubble.push_back(r.bubble);
  }
  stats.loss = lossCount ? lossSum / static_cast<double>(lossCount) : 0;
  stats.lr = adam_.config().lr;
  const double evalLoss =
      evalLossCount ? evalLossSum / static_cast<double>(evalLossCount) : 0;
  if (step % o_.logInterval == 0 || step == o_.steps)
    logger_->log(stats);
  if (mine.evaluated) {
    // Every rank evaluates at the same steps: this rank's flag is theirs.
    logger_->finish();
    std::printf("eval at step %lld | loss %.4f | %lld micro-batches of "
                "%s\n",
                static_cast<long long>(step), evalLoss,
                static_cast<long long>(evalLossCount), o_.evalDataPath.c_str());
    std::fflush(stdout);
  }
  if (metrics_) {
    MetricsLine line;
    line.step = step;
    line.loss = stats.loss;
    line.gradNorm = mine.gradNorm;
    line.lr = stats.lr;
    line.tokensPerSecond = seconds > 0 ? stats.tokens / seconds : 0.0;
    line.seconds = seconds;
    line.bubble = stats.bubble;
    if (mine.evaluated)
      line.evalLoss = evalLoss;
    Status written = metrics_->append(formatMetricsLine(line));
    // A full disk now would fail the checkpoint too: stop the job at once.
    if (!written.isOk())
      comm_.abort(1, formatString("step %lld: --metrics: %s",
                                  static_cast<long long>(step),
                                  written.message().c_str()));
  }
}

/// The communicator's groups of the manifest's, collectively (every rank
/// in the same order): each group as the world group of every copy of its
/// pipeline ranks (Manifest::worldGroup), in manifest order, into
/// \p groupIds; then, for each group that sums in two levels, its two
/// partitions (docs/data-parallel.md, "Two levels"), in manifest order
/// again, into \p twoLevel. After every manifest group, so that those keep
/// the ids a flat run gives them.
Status createGroups(Communicator &comm, const Manifest &manifest,
                    std::vector<GroupId> *groupIds,
                    std::vector<std::optional<TwoLevelGroup>> *twoLevel) {
  const int numGroups = static_cast<int>(manifest.groups.size());
  for (int g = 0; g < numGroups; ++g) {
    BP_ASSIGN(id, comm.createGroup(manifest.worldGroup(g)));
    groupIds->push_back(id);
  }
  twoLevel->assign(manifest.groups.size(), std::nullopt);
  for (int g = 0; g < numGroups; ++g) {
    if (!manifest.syncsInTwoLevels(g))
      continue;
    const base::TwoLevelGroups parts = manifest.twoLevelGroups(g);
    BP_ASSIGN(within, comm.createPartition(parts.withinCopy));
    BP_ASSIGN(across, comm.createPartition(parts.acrossCopies));
    (*twoLevel)[g] = TwoLevelGroup{(*groupIds)[g], within, across};
  }
  return Status::ok();
}

Status Trainer::sameShardingOnEveryRank() {
  std::vector<int32_t> all = gatherFromEveryRank(
      comm_, o_.shardOptimizer ? 1 : 0, "the --shard-optimizer check");
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] != all[0])
      return Status::error(
          ErrorCode::InvalidArgument,
          formatString("--shard-optimizer was given to rank %d but not to "
                       "rank %d; every rank must run with the same flags",
                       all[0] ? 0 : static_cast<int>(r),
                       all[0] ? static_cast<int>(r) : 0));
  return Status::ok();
}

int Trainer::run() {
  // Groups first: creating one is collective over every rank, in order.
  std::vector<GroupId> groupIds;
  std::vector<std::optional<TwoLevelGroup>> twoLevel;
  Status groups = createGroups(comm_, manifest_, &groupIds, &twoLevel);
  if (!groups.isOk())
    comm_.abort(1, "creating the manifest's groups: " + groups.message());
  // Then the channels, as world ranks, before anything else transfers: a
  // device transport connects them here (Communicator::openChannels).
  Status channels = comm_.openChannels(manifest_.schedule.transferStreams,
                                       manifest_.worldChannels());
  if (!channels.isOk())
    comm_.abort(1, "opening the program's channels: " + channels.message());

  if (!agreeAllOk(comm_, sameShardingOnEveryRank()))
    return 1;
  store_.useGroups(groupIds, twoLevel);
  if (o_.shardOptimizer && rank_ == 0)
    std::printf("bitpipe: optimizer: %s\n",
                describeSharding(manifest_).c_str());

  // The parameters are initialised where they live (on a device, drawn
  // there: no host image). Only a --load passes through the host image:
  // read into it, broadcast, and moved to the target once.
  if (!agreeAllOk(comm_, store_.attach(backend_)))
    return 1;
  const double initStart = trace_.nowUs();
  if (!agreeAllOk(comm_, store_.initialize(o_.seed)))
    return 1;
  initSeconds_ = (trace_.nowUs() - initStart) * 1e-6;
  const bool loading = !o_.loadPath.empty();
  if (loading && !agreeAllOk(comm_, store_.toHost()))
    return 1;
  std::unique_ptr<InputLoader> inputs;
  bool resumed = false;
  if (!agreeAllOk(comm_, startUpChecks(o_, manifest_, rank_, store_, adam_,
                                       &settings_, &seed_, &inputs, &resumed)))
    return 1;
  // The CUDA target's kernels run on streams, after their host calls
  // return: host timers would measure the launches.
  if (o_.profile && backend_.target() != TargetKind::Cpu &&
      !agreeAllOk(comm_,
                  Status::error(ErrorCode::InvalidArgument,
                                "--profile times the CPU target's kernels; "
                                "on the CUDA target, --trace records each "
                                "stage call's time on the device")))
    return 1;
  if (!o_.evalDataPath.empty()) {
    // In order from the file's start, the same batches at every
    // evaluation (the seed only draws BERT's masks and dropout's).
    Expected<std::unique_ptr<InputLoader>> eval =
        InputLoader::open(manifest_, o_.evalDataPath, o_.dataDType, seed_,
                          SamplingMode::Sequential);
    if (!agreeAllOk(comm_, eval.isOk()
                               ? Status::ok()
                               : Status::error(eval.status().code(),
                                               "--eval-data: " +
                                                   eval.status().message())))
      return 1;
    evalInputs_ = eval.take();
  }
  Status s = Status::ok();
  if (loading) {
    s = broadcastInitialParams(comm_, manifest_, store_, groupIds);
    if (!s.isOk())
      comm_.abort(1, "broadcasting the loaded parameters: " + s.message());
    if (!agreeAllOk(comm_, store_.toTarget()))
      return 1;
  }

  // Outputs are opened only now: a run that fails its checks overwrites
  // nothing. A resumed run appends to the metrics of the run it continues.
  Status opened = Status::ok();
  if (rank_ == 0 && !o_.metricsPath.empty()) {
    Expected<std::unique_ptr<MetricsLog>> log =
        MetricsLog::open(o_.metricsPath, /*append=*/resumed);
    if (log.isOk())
      metrics_ = log.take();
    else
      opened = Status::error(log.status().code(),
                             "--metrics: " + log.status().message());
  }
  if (!agreeAllOk(comm_, opened))
    return 1;
  if (rank_ == 0)
    logger_ = std::make_unique<StepLogger>(
        stdout, o_.steps, o_.progress ? 1 : launchedByMpirun() ? 0 : -1);

  ExecutorParts parts;
  parts.manifest = &manifest_;
  parts.entries = program_.stageEntries;
  parts.comm = &comm_;
  parts.backend = &backend_;
  parts.params = &store_;
  parts.inputs = inputs.get();
  parts.optimizer = &adam_;
  parts.trace = &trace_;
  parts.groupIds = groupIds;
  parts.twoLevelGroups = twoLevel;
  bp_rt_context ctx(std::move(parts));
  // Every data-parallel copy runs its pipeline rank's program.
  bp_rank_program_t program =
      program_.rankPrograms[manifest_.pipelineRank(rank_)];

  // Each stage function once, where the target asks (Backend::warmsUp):
  // its first-use work then happens before any peer waits on this rank.
  if (o_.warmUp == WarmUp::On ||
      (o_.warmUp == WarmUp::Auto && backend_.warmsUp())) {
    const double warmStart = trace_.nowUs();
    Expected<int64_t> calls = ctx.warmUp();
    if (!agreeAllOk(comm_, calls.status()))
      return 1;
    if (rank_ == 0)
      std::printf("bitpipe: warm-up: %lld stage calls in %.2f s before the "
                  "first step\n",
                  static_cast<long long>(*calls),
                  (trace_.nowUs() - warmStart) * 1e-6);
  }

  // One time base for the trace on every rank (Trace.h).
  s = comm_.barrier(kWorldGroup);
  if (!s.isOk())
    comm_.abort(1, "start-up barrier: " + s.message());
  trace_.resetEpoch();

  int64_t first = adam_.stepCount();
  if (rank_ == 0)
    printRunSummary(o_, manifest_);
  // Everything before the first step (MPI, the device, communicators,
  // parameters, inputs), as rank 0 saw it after the start-up barrier.
  if (rank_ == 0 && first < o_.steps)
    std::printf("bitpipe: start-up %.2f s to the first step (parameters "
                "initialised on the target in %.2f s)\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                              started_)
                    .count(),
                initSeconds_);
  if (!o_.loadPath.empty() && rank_ == 0)
    std::printf(resumed ? "bitpipe: resumed from %s at step %lld\n"
                        : "bitpipe: started from the Hugging Face weights of "
                          "%s at step %lld\n",
                o_.loadPath.c_str(), static_cast<long long>(first));
  if (rank_ == 0 && first < o_.steps)
    std::printf("bitpipe: optimizer: %s\n",
                describeOptimizer(settings_).c_str());
  if (first >= o_.steps && rank_ == 0)
    std::printf("bitpipe: already at step %lld (--steps %lld): nothing to "
                "train\n",
                static_cast<long long>(first),
                static_cast<long long>(o_.steps));
  for (int64_t step = first; step < o_.steps; ++step) {
    double start = trace_.nowUs();
    ctx.setSkipNonFiniteUpdate(skippedInARow_ < o_.skipNonFiniteSteps);
    adam_.setLearningRate(learningRateAt(settings_, step + 1));
    // The profile leaves out the first step of a run of two or more,
    // where memory is touched and caches are filled for the first time.
    if (o_.profile && (step == first + 1 || o_.steps - first == 1)) {
      kernel_profile::reset();
      kernel_profile::enable(true);
      profileFirstStep_ = step + 1;
    }
    const int64_t faultsBefore =
        kernel_profile::enabled() ? pageFaultCount() : 0;
    ctx.beginStep(step);
    ctx.run(program);
    s = ctx.endStep();
    if (!s.isOk())
      ctx.fatal(ctx.describeCall("end of the step: " + s.message()));
    double end = trace_.nowUs();
    if (kernel_profile::enabled()) {
      ++profile_.steps;
      profile_.seconds += (end - start) * 1e-6;
      profile_.pageFaults += pageFaultCount() - faultsBefore;
    }
    StepShares shares = stepShares(trace_.events(), start, end);
    sharesSum_ += shares;
    ++sharesSteps_;
    // The step's marker, on a row of its own (its name's number is an
    // int in the trace's format).
    if (step + 1 <= INT_MAX)
      trace_.record(
          formatString(trace::kStepFormat, static_cast<int>(step + 1)),
          TraceCategory::Other, start, end - start, kStepRow);
    const StepOutcome done = StepOutcome::of(ctx);
    StepReport mine{done.lossSum, done.lossCount, 1.0 - shares.compute,
                    done.gradNorm};
    // After the update, on the parameters it made; the same steps on
    // every rank.
    if (evalInputs_ &&
        (step + 1 == o_.steps ||
         (o_.evalInterval > 0 && (step + 1) % o_.evalInterval == 0))) {
      // Not a training step: its kernels stay out of the profile.
      const bool profiling = kernel_profile::enabled();
      kernel_profile::enable(false);
      s = evaluate(ctx, program, &mine);
      kernel_profile::enable(profiling);
      if (!s.isOk())
        ctx.fatal(ctx.describeCall("evaluation after step " +
                                   std::to_string(step + 1) + ": " +
                                   s.message()));
    }
    if (o_.tracePath.empty())
      trace_.clear(); // keep memory flat on long runs
    report(step + 1, (end - start) * 1e-6, mine);
    if (!stepIsFinite(step + 1, done))
      return 1;
    if (o_.saveEvery > 0 && (step + 1) % o_.saveEvery == 0 &&
        step + 1 != o_.steps && !o_.savePath.empty())
      if (!agreeAllOk(comm_, save(o_.savePath, step + 1)))
        return 1;
  }
  if (logger_)
    logger_->finish();
  if (skipped_ > 0 && rank_ == 0)
    std::printf("bitpipe: %lld of %lld steps skipped their update "
                "(non-finite gradients, --skip-nonfinite-steps)\n",
                static_cast<long long>(skipped_),
                static_cast<long long>(o_.steps - first));
  // The last update has no next step to show it (see stepIsFinite).
  if (first < o_.steps && !stateIsFinite(o_.steps, ""))
    return 1;
  // Nothing was measured when no step ran (--steps 0, or a resume already
  // at --steps): no report, rather than one that "differs" from the
  // schedule. Every rank takes the same branch (the step count is global).
  if (first < o_.steps && !agreeAllOk(comm_, reportMemory(ctx)))
    return 1;
  if (first < o_.steps && !agreeAllOk(comm_, reportStepShares()))
    return 1;
  if (o_.profile && first < o_.steps &&
      !agreeAllOk(comm_, reportKernelProfile()))
    return 1;
  Status closed = metrics_ ? metrics_->close() : Status::ok();
  metrics_.reset();
  if (!agreeAllOk(comm_, closed.isOk() ? closed
                                       : Status::error(closed.code(),
                                                       "--metrics: " +
                                                           closed.message())))
    return 1;
  if (rank_ == 0 && !o_.metricsPath.empty() && first < o_.steps)
    saved("the metrics of every step to " + o_.metricsPath);

  int64_t last = adam_.stepCount();
  if (!o_.savePath.empty() && !agreeAllOk(comm_, save(o_.savePath, last)))
    return 1;
  if (!o_.saveHfDir.empty()) {
    Status h = saveHuggingFace(comm_, manifest_, store_, o_.saveHfDir);
    if (!agreeAllOk(comm_, h.isOk() ? h
                                    : Status::error(h.code(),
                                                    "--save-hf: " +
                                                        h.message())))
      return 1;
    if (rank_ == 0)
      saved("the Hugging Face model to " + o_.saveHfDir +
            "/model.safetensors and " + o_.saveHfDir + "/config.json");
  }
  if (!o_.tracePath.empty()) {
    Status t = gatherAndWriteChromeTrace(comm_, trace_, o_.tracePath);
    if (!agreeAllOk(comm_, t.isOk() ? t
                                    : Status::error(t.code(),
                                                    "--trace: " +
                                                        t.message())))
      return 1;
    if (rank_ == 0)
      saved("the trace of every rank to " + o_.tracePath);
  }
  if (!o_.dumpRankParamsDir.empty()) {
    Status d = dumpRankParams(comm_, manifest_, store_,
                              rankParamsPath(o_, rank_), last);
    if (!agreeAllOk(comm_, d.isOk() ? d
                                    : Status::error(d.code(),
                                                    "--dump-rank-params: " +
                                                        d.message())))
      return 1;
    if (rank_ == 0)
      saved(formatString("every rank's parameters to %s/rank<R>.safetensors",
                         o_.dumpRankParamsDir.c_str()));
  }
  return 0;
}

} // namespace

int runTraining(const CompiledProgram &program, BackendFactory createBackend,
                int argc, char **argv) {
  const auto started = std::chrono::steady_clock::now();
  Expected<std::unique_ptr<MpiCommunicator>> c =
      MpiCommunicator::create(&argc, &argv);
  if (!c.isOk()) {
    std::fprintf(stderr, "bitpipe: error: %s\n",
                 c.status().message().c_str());
    return 1;
  }
  // The bootstrap: flags, start-up agreement, host memory. The steps'
  // transport is the target's (createCommunicator, below).
  MpiCommunicator &mpi = **c;
  const int rank = mpi.rank();
  const char *self = argc > 0 ? argv[0] : "bitpipe-train";

  // Everything up to the world-size check depends only on argv and the
  // compiled program, identical on every rank: every rank takes the same
  // branch, and rank 0 alone speaks.
  Expected<TrainOptions> o = parseTrainOptions(argc, argv);
  if (!o.isOk()) {
    if (rank == 0)
      std::fprintf(stderr, "bitpipe: error: %s\n",
                   o.status().message().c_str());
    return 2;
  }
  if (o->help) {
    if (rank == 0)
      std::printf("%s", trainUsage(self).c_str());
    return 0;
  }
  Expected<Manifest> m = parseManifest(
      std::string_view(program.manifest,
                       static_cast<size_t>(program.manifestSize)));
  if (!m.isOk()) {
    if (rank == 0)
      printError(rank, "the compiled program's " + m.status().message());
    return 1;
  }
  if (program.numStageEntries != static_cast<int32_t>(m->functions.size()) ||
      program.numRanks != m->pipelineRanks()) {
    // One rank program per pipeline rank, not per world rank (program.h).
    if (rank == 0)
      printError(rank,
                 formatString("the compiled program is inconsistent: %d stage "
                              "entries and %d rank programs "
                              "(bitpipe_num_ranks), but its manifest lists "
                              "%zu functions and %d pipeline ranks "
                              "(schedule.devices)",
                              program.numStageEntries, program.numRanks,
                              m->functions.size(), m->pipelineRanks()));
    return 1;
  }
  if (mpi.size() != m->schedule.worldSize) {
    if (rank == 0)
      printError(rank, formatString("compiled for %lld ranks, started with "
                                    "%d: run with mpirun -np %lld",
                                    static_cast<long long>(
                                        m->schedule.worldSize),
                                    mpi.size(),
                                    static_cast<long long>(
                                        m->schedule.worldSize)));
    return 1;
  }
  // The target: the stage functions were compiled for one runtime library,
  // and this executable links one (Backend.h); they must be the same.
  std::unique_ptr<Backend> backend = createBackend();
  if (m->target.kind != backend->target()) {
    if (rank == 0)
      printError(rank,
                 formatString("the program was compiled for the %s target, "
                              "but this executable links the %s runtime: "
                              "link it with runtime-%s.rsp (bitpipe-compile "
                              "--target %s does)",
                              targetKindName(m->target.kind),
                              targetKindName(backend->target()),
                              targetKindName(m->target.kind),
                              targetKindName(m->target.kind)));
    return 1;
  }
  // --timeout, or else BITPIPE_COMM_TIMEOUT, which the communicator read:
  // a value it could not use is refused, not replaced by its default.
  if (o->timeoutSeconds > 0) {
    mpi.setTimeout(o->timeoutSeconds);
  } else {
    Expected<std::optional<double>> env = commTimeoutFromEnvironment();
    if (!agreeAllOk(mpi, env.isOk() ? Status::ok() : env.status()))
      return 1;
  }
  // The device before anything is made on it, then the target's set-up,
  // then its transport (NCCL on CUDA: collective, on the backend's stream).
  if (!agreeAllOk(mpi, backend->placeRank(mpi)))
    return 1;
  // The kernels' threads, before the target's set-up: the CPU's pool
  // starts here.
  Expected<NodeRanks> node = nodeRanks(rank);
  if (!agreeAllOk(mpi, node.status()))
    return 1;
  Expected<KernelThreads> threads =
      chooseKernelThreads(currentThreadsContext(o->threads, node->localSize));
  if (!agreeAllOk(mpi, threads.status()))
    return 1;
  o->threads = threads->threads;
  o->threadsSource = threads->source;
  backend->useThreads(threads->threads);
  backend->usePlanCache(planCacheFolder(*o));
  if (!agreeAllOk(mpi, backend->configure(*m)))
    return 1;
  if (rank == 0)
    if (std::string plans = backend->planReport(); !plans.empty())
      std::printf("bitpipe: %s\n", plans.c_str());
  // --cuda-graphs: the target says here only what holds for the whole run
  // on every rank; the CUDA target's ranks agree at the first step.
  StepGraphRequest graphs;
  graphs.enabled = o->cudaGraphs;
  graphs.trace = !o->tracePath.empty();
  if (std::string notice = backend->useStepGraphs(graphs);
      !notice.empty() && rank == 0) {
    std::fflush(stdout);
    std::fprintf(stderr, "bitpipe: %s\n", notice.c_str());
    std::fflush(stderr);
  }
  Expected<std::unique_ptr<Communicator>> device =
      backend->createCommunicator(mpi);
  if (!device.isOk())
    mpi.abort(1, "creating the " +
                     std::string(targetKindName(backend->target())) +
                     " target's communicator: " + device.status().message());
  std::unique_ptr<Communicator> transport = device.take();
  Communicator &comm = transport ? *transport : mpi;
  comm.setTimeout(mpi.timeout());
  Trainer trainer(program, comm, *backend, *o, *m, started);
  return trainer.run();
}

} // namespace bitpipe::runtime
