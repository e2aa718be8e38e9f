//===- Search.cpp - The planner's search ----------------------------------===//
//
// Enumerates the configurations (docs/planning.md, "What is searched"),
// evaluates each (Evaluate.cpp), ranks what fits and counts what does not.
//
//===----------------------------------------------------------------------===//

#include "EvaluateImpl.h"

#include "bitpipe/Schedule/Placement.h"

#include <algorithm>
#include <map>
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
  std::vector<int> out;
  for (int v = info.minChunks;
       v <= std::min({info.maxChunks, maxChunks, sched::limit::kMaxChunksPerDevice});
       ++v)
    out.push_back(v);
  if (out.empty() && !info.choosesChunks())
    out.push_back(info.minChunks);
  return out;
}

int scheduleOrder(const std::string &name) {
  const std::vector<std::string> &names = sched::scheduleNames();
  return static_cast<int>(std::find(names.begin(), names.end(), name) -
                          names.begin());
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
  if (request.gpus < 0 || request.gpus > cluster.size())
    return field(prefix, "gpus") + " must be in [1, " +
           std::to_string(cluster.size()) + "] (the GPUs of cluster '" +
           cluster.name + "'), got " + std::to_string(request.gpus);
  for (const std::string &name : request.schedules)
    if (!sched::findSchedule(name))
      return field(prefix, "schedules") + ": unknown schedule '" + name +
             "' (expected some of " + sched::scheduleNameList() + ")";
  if (request.microbatchSizes.empty())
    return field(prefix, "microbatch-sizes") + " must name at least one size";
  for (int64_t size : request.microbatchSizes)
    if (size < 1)
      return field(prefix, "microbatch-sizes") +
             " must be positive numbers of sequences, got " +
             std::to_string(size);
  if (request.maxChunks < 1 || request.maxChunks > sched::limit::kMaxChunksPerDevice)
    return field(prefix, "max-chunks") + " must be in [1, " +
           std::to_string(sched::limit::kMaxChunksPerDevice) + "], got " +
           std::to_string(request.maxChunks);
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
  result.memoryCapBytes = request.memoryCapBytes > 0 ? request.memoryCapBytes
                                                     : cluster.gpuMemoryBytes;
  for (int r = 0; r < kNumRejections; ++r)
    result.rejections.push_back({static_cast<Rejection>(r), 0, {}});
  auto count = [&](Rejection reason, const std::string &why) {
    RejectionCount &c = result.rejections[static_cast<int>(reason)];
    if (c.count++ == 0)
      c.example = why;
    ++result.considered;
  };

  std::vector<const sched::ScheduleInfo *> schedules;
  for (const sched::ScheduleInfo &info : sched::schedules())
    if (request.schedules.empty() ||
        std::count(request.schedules.begin(), request.schedules.end(),
                   info.name))
      schedules.push_back(&info);
  std::vector<int64_t> sizes = request.microbatchSizes;
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());

  // The profiles, and the cuts of each into S stages, once each.
  std::map<int64_t, sched::Result<ModelProfile>> profiles;
  auto profileAt = [&](int64_t size) -> const sched::Result<ModelProfile> & {
    auto it = profiles.find(size);
    if (it == profiles.end()) {
      it = profiles.emplace(size, profile(size)).first;
      if (it->second)
        result.seqLen = it->second->seqLen;
    }
    return it->second;
  };
  std::map<std::pair<int64_t, int>, sched::Result<std::vector<StageProfile>>>
      cuts;

  const int gpus = result.gpus;
  for (int dp = 1; dp <= gpus; ++dp) {
    if (request.globalBatch % dp != 0)
      continue;
    const int64_t perCopy = request.globalBatch / dp;
    for (int D = 1; D * dp <= gpus; ++D) {
      if (!request.allowIdleGpus && D * dp != gpus)
        continue;
      for (const sched::ScheduleInfo *info : schedules)
        for (int v : chunkChoices(*info, request.maxChunks))
          for (int64_t size : sizes) {
            if (perCopy % size != 0)
              continue;
            PlanConfig config;
            config.schedule = info->name;
            config.devices = D;
            config.dataParallel = dp;
            config.chunks = info->takesChunks() && info->choosesChunks() ? v : 0;
            config.microbatchSize = size;
            if (perCopy / size > sched::limit::kMaxMicrobatches) {
              count(Rejection::Schedule,
                    describe(config) + ": more micro-batches than " +
                        std::to_string(sched::limit::kMaxMicrobatches));
              continue;
            }
            config.microbatches = static_cast<int>(perCopy / size);

            sched::Result<sched::ScheduleOptions> options =
                scheduleRequest(config);
            sched::Result<sched::Placement> placement =
                options ? sched::schedulePlacement(*options)
                        : sched::Result<sched::Placement>::failure(
                              options.error);
            if (!placement) {
              count(Rejection::Schedule,
                    describe(config) + ": " + placement.error);
              continue;
            }
            const sched::Result<ModelProfile> &model = profileAt(size);
            if (!model) {
              count(Rejection::Model, describe(config) + ": " + model.error);
              continue;
            }
            const int S = placement->numStages;
            auto cut = cuts.find({size, S});
            if (cut == cuts.end())
              cut = cuts.emplace(std::make_pair(size, S),
                                 stageProfiles(*model, S))
                        .first;
            if (!cut->second) {
              count(Rejection::Stages,
                    describe(config) + ": " + cut->second.error);
              continue;
            }
            Rejection reason = Rejection::Simulation;
            sched::Result<Estimate> estimate =
                evaluateStages(config, *model, *cut->second, *placement,
                               cluster, request, result.memoryCapBytes,
                               &reason);
            if (!estimate) {
              count(reason, estimate.error);
              continue;
            }
            result.ranked.push_back(std::move(*estimate));
            ++result.considered;
          }
    }
  }
  std::sort(result.ranked.begin(), result.ranked.end(), faster);
  return R::success(std::move(result));
}

} // namespace bitpipe::plan
