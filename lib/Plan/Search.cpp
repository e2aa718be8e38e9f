//===- Search.cpp - The planner's search ----------------------------------===//
//
// Enumerates the configurations (docs/planning.md, "What is searched"),
// evaluates each (Evaluate.cpp), ranks what fits and counts what does not.
//
//===----------------------------------------------------------------------===//

#include "EvaluateImpl.h"

#include "bitpipe/Plan/Report.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/base/Spelling.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <thread>
#include <tuple>

namespace bitpipe::plan {

namespace {

std::string field(const char *prefix, const char *name) {
  return std::string(prefix) + name;
}

/// The chunk counts to try for a schedule: none (0) where the placement
/// fixes them, its one count, or its range up to the request's maximum.
std::vector<int> chunkChoices(const sched::ScheduleInfo &info, int maxChunks) {
  if (!info.takesChunks())
    return {0};
  if (!info.choosesChunks())
    return {info.minChunks};
  std::vector<int> out;
  int most =
      std::min({info.maxChunks, maxChunks, sched::limit::kMaxChunksPerDevice});
  for (int v = info.minChunks; v <= most; ++v)
    out.push_back(v);
  return out;
}

int scheduleOrder(const std::string &name) {
  const std::vector<std::string> &names = sched::scheduleNames();
  return static_cast<int>(std::find(names.begin(), names.end(), name) -
                          names.begin());
}

/// One configuration of the search and what became of it.
struct Candidate {
  PlanConfig config;
  /// Set when the cheap checks passed: what evaluateStages needs.
  const ModelProfile *model = nullptr;
  const std::vector<StageProfile> *stages = nullptr;
  std::optional<sched::Placement> placement;
  sched::Result<Estimate> outcome =
      sched::Result<Estimate>::failure("not evaluated");
  Rejection reason = Rejection::Simulation;
};

/// Runs body(0) .. body(n-1) on `jobs` threads (0: one per hardware
/// thread); each index once.
void forEachInParallel(size_t n, int jobs,
                       const std::function<void(size_t)> &body) {
  unsigned threads = jobs > 0
                         ? unsigned(jobs)
                         : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, n));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++)
      body(i);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread &t : pool)
    t.join();
}

bool faster(const Estimate &a, const Estimate &b) {
  auto key = [](const Estimate &e) {
    const PlanConfig &c = e.config;
    return std::make_tuple(e.stepTime, e.peakMemory.total(), c.gpus(),
                           scheduleOrder(c.schedule), c.devices, c.chunks,
                           c.microbatchSize);
  };
  return key(a) < key(b);
}

} // namespace

std::string checkRequest(const PlanRequest &request,
                         const sched::Cluster &cluster, const char *prefix) {
  if (request.globalBatch < 1)
    return field(prefix, "global-batch") +
           " must be a positive number of sequences, got " +
           std::to_string(request.globalBatch);
  if (!(request.memoryCapBytes >= 0) || request.memoryCapBytes > 1e18)
    return field(prefix, "memory-cap") +
           " must be a number of bytes in (0, 1e18] (0: the cluster's "
           "gpu.memory_bytes), got " +
           std::to_string(request.memoryCapBytes);
  if (!(request.memoryHeadroomBytes >= 0) ||
      request.memoryHeadroomBytes > 1e18 ||
      !(request.memoryHeadroomFraction >= 0) ||
      !(request.memoryHeadroomFraction < 1))
    return field(prefix, "memory-headroom") +
           " must be a number of bytes in [0, 1e18] or a share of the memory "
           "in [0%, 100%), got " +
           std::to_string(request.memoryHeadroomBytes) + " bytes and " +
           std::to_string(request.memoryHeadroomFraction * 100) + "%";
  if (double cap = memoryCap(request, cluster),
      headroom = memoryHeadroom(request, cluster);
      headroom >= cap)
    return field(prefix, "memory-headroom") + " of " + formatBytes(headroom) +
           " leaves nothing of the " + formatBytes(cap) +
           " of memory per GPU (expected less than it)";
  if (request.gpus < 0 || request.gpus > cluster.size())
    return field(prefix, "gpus") + " must be in [1, " +
           std::to_string(cluster.size()) + "] (the GPUs of cluster '" +
           cluster.name + "'), got " + std::to_string(request.gpus);
  for (const std::string &name : request.schedules)
    if (!sched::findSchedule(name))
      return field(prefix, "schedules") + ": unknown schedule '" + name + "'" +
             base::didYouMean(name, sched::scheduleNames()) +
             " (expected some of " + sched::scheduleNameList() + ")";
  for (int d : request.devices)
    if (d < 1)
      return field(prefix, "devices") +
             " must be positive pipeline depths, got " + std::to_string(d);
  if (request.microbatchSizes.empty())
    return field(prefix, "microbatch-sizes") + " must name at least one size";
  for (int64_t size : request.microbatchSizes)
    if (size < 1)
      return field(prefix, "microbatch-sizes") +
             " must be positive numbers of sequences, got " +
             std::to_string(size);
  if (request.maxChunks < 1 ||
      request.maxChunks > sched::limit::kMaxChunksPerDevice)
    return field(prefix, "max-chunks") + " must be in [1, " +
           std::to_string(sched::limit::kMaxChunksPerDevice) + "], got " +
           std::to_string(request.maxChunks);
  if (request.jobs < 0 || request.jobs > 1024)
    return field(prefix, "jobs") +
           " must be in [0, 1024] (0: one per hardware thread), got " +
           std::to_string(request.jobs);
  return {};
}

sched::Result<PlanResult> search(const PlanRequest &request,
                                 const sched::Cluster &cluster,
                                 const ProfileSource &profile) {
  using R = sched::Result<PlanResult>;
  if (std::string error = checkRequest(request, cluster); !error.empty())
    return R::failure(error);

  PlanResult result;
  result.gpus = request.gpus ? request.gpus : cluster.size();
  result.memoryCapBytes = memoryCap(request, cluster);
  result.gradientSync = request.gradientSync;
  result.memoryHeadroomBytes = memoryHeadroom(request, cluster);
  std::vector<RejectionCount> noRejections;
  for (int r = 0; r < kNumRejections; ++r)
    noRejections.push_back({static_cast<Rejection>(r), 0, {}});
  result.rejections = noRejections;

  std::vector<const sched::ScheduleInfo *> schedules;
  for (const sched::ScheduleInfo &info : sched::schedules())
    if (request.schedules.empty() ||
        std::count(request.schedules.begin(), request.schedules.end(),
                   info.name)) {
      schedules.push_back(&info);
      result.schedules.push_back({info.name, 0, -1, noRejections});
    }
  std::vector<int64_t> sizes = request.microbatchSizes;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());

  // The profiles, and the cuts of each into S stages, once each (map
  // nodes stay put: the candidates point into them).
  std::map<std::pair<int64_t, sched::PartitionUnits>,
           sched::Result<ModelProfile>>
      profiles;
  auto profileAt = [&](int64_t size, sched::PartitionUnits units =
                                         sched::PartitionUnits::Layers)
      -> const sched::Result<ModelProfile> & {
    auto it = profiles.find({size, units});
    if (it == profiles.end()) {
      it = profiles.emplace(std::make_pair(size, units), profile(size, units))
               .first;
      if (it->second && !result.seqLen) {
        result.seqLen = it->second->seqLen;
        result.modelFlopsPerToken =
            modelFlopsPerMicrobatch(*it->second) /
            (static_cast<double>(size) * it->second->seqLen);
      }
    }
    return it->second;
  };
  std::map<std::tuple<int64_t, sched::PartitionUnits, int>,
           sched::Result<std::vector<StageProfile>>>
      cuts;
  std::vector<sched::PartitionUnits> unitChoices = request.units;
  if (unitChoices.empty())
    unitChoices.push_back(sched::PartitionUnits::Layers);
  // The sequence length, for the report, whether or not a candidate gets
  // as far as its profile.
  profileAt(sizes.front());

  // First every candidate, in a fixed order, with what the cheap checks
  // say; then the simulations, on every thread; then the counts, in the
  // candidates' order, so that the result does not depend on the threads.
  std::vector<Candidate> candidates;
  auto reject = [&](const PlanConfig &config, Rejection reason,
                    const std::string &why) {
    Candidate c;
    c.config = config;
    c.outcome = sched::Result<Estimate>::failure(describe(config) + ": " + why);
    c.reason = reason;
    candidates.push_back(std::move(c));
  };
  const int gpus = result.gpus;
  // What the filters below left, to say why when nothing is considered.
  int shapes = 0;     // (D, dp) pairs the GPUs, the batch and --devices allow
  bool sized = false; // a micro-batch size divides some copy's sequences
  for (int dp = 1; dp <= gpus; ++dp) {
    if (request.globalBatch % dp != 0)
      continue;
    const int64_t perCopy = request.globalBatch / dp;
    for (int D = 1; D * dp <= gpus; ++D) {
      if (!request.allowIdleGpus && D * dp != gpus)
        continue;
      if (!request.devices.empty() &&
          !std::count(request.devices.begin(), request.devices.end(), D))
        continue;
      ++shapes;
      for (const sched::ScheduleInfo *info : schedules)
        for (int v : chunkChoices(*info, request.maxChunks))
          for (int64_t size : sizes) {
            if (perCopy % size != 0)
              continue;
            sized = true;
            PlanConfig config;
            config.recompute = request.recompute;
            config.schedule = info->name;
            config.devices = D;
            config.dataParallel = dp;
            config.chunks =
                info->takesChunks() && info->choosesChunks() ? v : 0;
            config.microbatchSize = size;
            if (perCopy / size > sched::limit::kMaxMicrobatches) {
              reject(config, Rejection::Schedule,
                     std::to_string(perCopy / size) +
                         " micro-batches per copy, more than the " +
                         std::to_string(sched::limit::kMaxMicrobatches) +
                         " a schedule takes");
              continue;
            }
            config.microbatches = static_cast<int>(perCopy / size);

            sched::Result<sched::ScheduleOptions> options =
                scheduleRequest(config);
            sched::Result<sched::Placement> placement =
                options
                    ? sched::schedulePlacement(*options)
                    : sched::Result<sched::Placement>::failure(options.error);
            if (!placement) {
              reject(config, Rejection::Schedule, placement.error);
              continue;
            }
            // The units whose stages balance best: the cheapest most
            // expensive stage, the first of unitChoices (whole layers) on
            // a tie. A failure is the first choice's.
            const int S = placement->numStages;
            const ModelProfile *chosenModel = nullptr;
            const std::vector<StageProfile> *chosenStages = nullptr;
            double chosenMax = 0;
            Rejection failedAs = Rejection::Model;
            std::string failure;
            for (sched::PartitionUnits units : unitChoices) {
              const sched::Result<ModelProfile> &model = profileAt(size, units);
              if (!model) {
                if (failure.empty()) {
                  failedAs = Rejection::Model;
                  failure = model.error;
                }
                continue;
              }
              auto cut = cuts.find({size, units, S});
              if (cut == cuts.end())
                cut = cuts.emplace(std::make_tuple(size, units, S),
                                   stageProfiles(*model, S))
                          .first;
              if (!cut->second) {
                if (failure.empty()) {
                  failedAs = Rejection::Stages;
                  failure = cut->second.error;
                }
                continue;
              }
              double most = 0;
              for (const StageProfile &st : *cut->second)
                most = std::max(most, st.forwardFlops + st.backwardFlops);
              if (!chosenModel || most < chosenMax) {
                chosenModel = &*model;
                chosenStages = &*cut->second;
                chosenMax = most;
                config.units = units;
              }
            }
            if (!chosenModel) {
              reject(config, failedAs, failure);
              continue;
            }
            Candidate c;
            c.config = config;
            c.model = chosenModel;
            c.stages = chosenStages;
            c.placement = std::move(*placement);
            candidates.push_back(std::move(c));
          }
    }
  }

  // Nothing to consider is the request's fault: say which part of it.
  if (candidates.empty()) {
    std::string shape =
        "pipeline depth D and data-parallel width dp with D x dp " +
        std::string(request.allowIdleGpus ? "at most " : "= ") +
        std::to_string(gpus) + " GPUs and dp dividing the global batch " +
        std::to_string(request.globalBatch);
    if (shapes == 0)
      return R::failure("nothing to consider: no " + shape +
                        (request.devices.empty() ? std::string(" exists")
                                                 : " has D among --devices") +
                        (request.allowIdleGpus
                             ? ""
                             : " (--allow-idle-gpus also tries "
                               "fewer GPUs)"));
    if (!sized)
      return R::failure("nothing to consider: no size of --microbatch-sizes "
                        "divides the sequences of a copy (the global batch " +
                        std::to_string(request.globalBatch) +
                        " over dp) for any " + shape);
  }

  forEachInParallel(candidates.size(), request.jobs, [&](size_t i) {
    Candidate &c = candidates[i];
    if (!c.model)
      return;
    c.reason = Rejection::Simulation;
    c.outcome =
        evaluateStages(c.config, *c.model, *c.stages, *c.placement, cluster,
                       request, result.memoryBudgetBytes(), &c.reason);
    // Over the cap with its activations: with full recomputation it keeps
    // only its stages' inputs.
    if (!c.outcome && c.reason == Rejection::Memory && request.recomputeToFit &&
        c.config.recompute != sched::Recompute::Full) {
      PlanConfig again = c.config;
      again.recompute = sched::Recompute::Full;
      Rejection reason = Rejection::Simulation;
      sched::Result<Estimate> retry =
          evaluateStages(again, *c.model, *c.stages, *c.placement, cluster,
                         request, result.memoryBudgetBytes(), &reason);
      if (retry)
        c.outcome = std::move(retry);
    }
  });

  auto outcomeOf = [&](const std::string &name) -> ScheduleOutcome & {
    return *std::find_if(
        result.schedules.begin(), result.schedules.end(),
        [&](const ScheduleOutcome &o) { return o.schedule == name; });
  };
  for (Candidate &c : candidates) {
    ++result.considered;
    ScheduleOutcome &outcome = outcomeOf(c.config.schedule);
    ++outcome.considered;
    if (c.outcome) {
      result.ranked.push_back(std::move(*c.outcome));
      continue;
    }
    for (RejectionCount *count :
         {&result.rejections[static_cast<int>(c.reason)],
          &outcome.rejections[static_cast<int>(c.reason)]})
      if (count->count++ == 0)
        count->example = c.outcome.error;
  }
  std::sort(result.ranked.begin(), result.ranked.end(), faster);
  for (size_t i = result.ranked.size(); i-- > 0;)
    outcomeOf(result.ranked[i].config.schedule).best = static_cast<int>(i);
  return R::success(std::move(result));
}

} // namespace bitpipe::plan
