//===- Evaluate.cpp - What one configuration costs ------------------------===//
//
// One candidate of the search: the registry's schedule for it, stage costs
// from the model's profile, the simulator on the cluster, rankMemory.
// docs/planning.md, "The cost model".
//
//===----------------------------------------------------------------------===//

#include "EvaluateImpl.h"

#include "bitpipe/Plan/Report.h"

#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"

#include <algorithm>
#include <set>

namespace bitpipe::plan {

namespace {

/// Element bytes of activations under `precision` over those of the
/// model IR, which is f32 throughout (docs/planning.md, "Limits").
double activationScale(sched::ComputePrecision precision) {
  return precision == sched::ComputePrecision::Bf16 ? 0.5 : 1.0;
}

/// The seconds a stage's forward and the two halves of its backward take
/// on one of \p cluster's GPUs (\p splitBackward: the halves run as
/// separate steps): by kernel shape where the profile has its work (at the
/// cluster's measured rates, if it has them), else its FLOPs at the
/// cluster's one rate, B and W half the backward each.
sched::ComputeTimes stageTimes(const sched::Cluster &cluster,
                               const StageProfile &st, bool splitBackward) {
  if (!st.work.empty())
    return cluster.computeTimes(st.work, splitBackward);
  const double rate = cluster.achievableFlops();
  return {st.forwardFlops / rate, st.backwardFlops / 2 / rate,
          st.backwardFlops / 2 / rate};
}

/// The memory a rank may use, for messages.
std::string budgetText(double budget) {
  return "the budget of " + formatBytes(budget) +
         " (the cap less the headroom)";
}

} // namespace

double modelFlopsUtilization(double modelFlops, double stepTime, int gpus,
                             double peakFlopsPerGpu) {
  if (!(stepTime > 0) || gpus < 1 || !(peakFlopsPerGpu > 0))
    return 0;
  return modelFlops / stepTime / (gpus * peakFlopsPerGpu);
}

double memoryCap(const PlanRequest &request, const sched::Cluster &cluster) {
  return request.memoryCapBytes > 0 ? request.memoryCapBytes
                                    : cluster.gpuMemoryBytes;
}

double memoryHeadroom(const PlanRequest &request,
                      const sched::Cluster &cluster) {
  return request.memoryHeadroomBytes +
         request.memoryHeadroomFraction * memoryCap(request, cluster);
}

double modelFlopsPerMicrobatch(const ModelProfile &model) {
  double flops = 0;
  for (const LayerProfile &layer : model.layers)
    flops += layer.forwardFlops + layer.backwardFlops;
  return flops;
}

const char *rejectionName(Rejection reason) {
  switch (reason) {
  case Rejection::Stages:
    return "stages";
  case Rejection::Schedule:
    return "schedule";
  case Rejection::Model:
    return "model";
  case Rejection::MemoryStates:
    return "memory-states";
  case Rejection::Memory:
    return "memory";
  case Rejection::Simulation:
    return "simulation";
  }
  return "?";
}

const char *rejectionMeaning(Rejection reason) {
  switch (reason) {
  case Rejection::Stages:
    return "more pipeline stages than the model has partition units";
  case Rejection::Schedule:
    return "the schedule registry or generator refuses D, N or the chunks";
  case Rejection::Model:
    return "the model cannot be built at that micro-batch size";
  case Rejection::MemoryStates:
    return "weights, gradients, optimizer state and buffers exceed the "
           "budget";
  case Rejection::Memory:
    return "with the activations in flight, a rank exceeds the budget";
  case Rejection::Simulation:
    return "the simulator failed or found a deadlock";
  }
  return "?";
}

std::string describe(const PlanConfig &c) {
  std::string text = c.schedule + " D=" + std::to_string(c.devices) +
                     " dp=" + std::to_string(c.dataParallel);
  if (c.chunks)
    text += " v=" + std::to_string(c.chunks);
  text += " mb=" + std::to_string(c.microbatchSize);
  // Before its micro-batch count is known (too many to count), none.
  if (c.microbatches)
    text += " N=" + std::to_string(c.microbatches);
  if (c.recompute != sched::Recompute::None)
    text += std::string(" recompute=") + sched::recomputeName(c.recompute);
  if (c.units != sched::PartitionUnits::Layers)
    text += std::string(" units=") + sched::partitionUnitsName(c.units);
  return text;
}

sched::Result<sched::ScheduleOptions> scheduleRequest(const PlanConfig &c) {
  sched::ScheduleOptions request;
  request.schedule = c.schedule;
  request.devices = c.devices;
  request.microbatches = c.microbatches;
  request.dataParallel = c.dataParallel;
  if (c.chunks)
    request.chunksPerDevice = c.chunks;
  return sched::validate(request);
}

sched::Result<Estimate>
evaluateStages(PlanConfig config, const ModelProfile &model,
               const std::vector<StageProfile> &stages,
               const sched::Placement &placement, const sched::Cluster &cluster,
               const PlanRequest &request, double memoryBudget,
               Rejection *reason, Timeline *timeline) {
  using R = sched::Result<Estimate>;
  auto reject = [&](Rejection why, const std::string &message) {
    if (reason)
      *reason = why;
    return R::failure(describe(config) + ": " + message);
  };
  const int D = config.devices, dp = config.dataParallel;
  const int S = placement.numStages;

  // What each device holds, and whom it talks to: without a schedule,
  // from the placement alone, so that a configuration whose weights do not
  // fit is rejected before it is generated and simulated.
  std::vector<std::set<int>> held(D), peers(D);
  for (const sched::Pipeline &pipe : placement.pipelines)
    for (int s = 0; s < S; ++s) {
      int d = pipe.stageDevice[s];
      held[d].insert(s);
      if (s + 1 < S && pipe.stageDevice[s + 1] != d) {
        peers[d].insert(pipe.stageDevice[s + 1]);
        peers[pipe.stageDevice[s + 1]].insert(d);
      }
    }
  std::vector<std::vector<int>> replicas = placement.replicaGroups();
  std::vector<double> parameters(D, 0), optimizerParameters(D, 0),
      buffers(D, 0);
  for (int d = 0; d < D; ++d) {
    int ringPeers = 0;
    for (int s : held[d]) {
      parameters[d] += stages[s].parameters;
      int group = static_cast<int>(replicas[s].size()) * dp;
      optimizerParameters[d] += request.shardOptimizer
                                    ? stages[s].parameters / group
                                    : stages[s].parameters;
      ringPeers = std::max(ringPeers, std::min(2, group - 1));
    }
    buffers[d] = kCommBufferBytesPerPeer *
                 static_cast<double>(peers[d].size() + ringPeers);
    sched::RankMemory states =
        sched::rankMemory(parameters[d], optimizerParameters[d],
                          request.precision, 0, buffers[d]);
    if (states.total() > memoryBudget)
      return reject(Rejection::MemoryStates,
                    "rank " + std::to_string(d) + " holds " +
                        std::to_string(static_cast<long long>(parameters[d])) +
                        " parameters: weights, gradients, optimizer state and "
                        "buffers take " +
                        formatBytes(states.total()) + ", over " +
                        budgetText(memoryBudget));
  }

  sched::Result<sched::ScheduleOptions> options = scheduleRequest(config);
  if (!options)
    return reject(Rejection::Schedule, options.error);
  sched::Result<sched::Schedule> schedule = sched::generateSchedule(*options);
  if (!schedule)
    return reject(Rejection::Schedule, schedule.error);
  // BitPipe's and Chimera's generators place their all-reduces; the
  // others get bitpipe-insert-allreduce's, so that data parallelism costs
  // every schedule what it costs in the compiled program.
  *schedule = sched::withGradientSync(std::move(*schedule));

  sched::CostModel cost;
  const double scale = activationScale(request.precision);
  // What a stage keeps per micro-batch in flight and what its backward
  // computes, under the configuration's recomputation (docs/recompute.md);
  // under full it keeps only its input (what the previous stage sent; the
  // token ids for the first).
  const double tokenBytes = static_cast<double>(config.microbatchSize) *
                            static_cast<double>(model.seqLen) *
                            sizeof(int32_t); // i32 token ids
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageProfile &st = stages[s];
    sched::StageKeeping keeping;
    keeping.forwardFlops = st.forwardFlops;
    keeping.backwardFlops = st.backwardFlops;
    // Statistics stay f32 in every precision; the activations scale.
    keeping.statisticBytes = st.statisticBytes;
    keeping.statisticFlops = st.statisticFlops;
    keeping.keptBytes =
        (st.activationBytes - st.statisticBytes) * scale + st.statisticBytes;
    keeping.inputBytes =
        s == 0 ? tokenBytes : stages[s - 1].boundaryBytes * scale;
    sched::RecomputedStage recomputed =
        sched::recomputedStage(config.recompute, keeping);
    const sched::ComputeTimes t =
        stageTimes(cluster, st, schedule->splitBackward);
    // What recomputation adds is forward work again, at the stage's
    // forward rate, before the input gradients (B) can start.
    const double again = st.forwardFlops > 0
                             ? (recomputed.backwardFlops - st.backwardFlops) *
                                   t.forward / st.forwardFlops
                             : 0;
    cost.forward.push_back(t.forward);
    if (schedule->splitBackward) {
      cost.backward.push_back(t.inputGrad + again);
      cost.weightGrad.push_back(t.weightGrad);
    } else {
      cost.backward.push_back(t.backward() + again);
      cost.weightGrad.push_back(0);
    }
    cost.boundaryBytes.push_back(st.boundaryBytes * scale);
    cost.stashBytes.push_back(recomputed.keptBytes);
    // Gradients are fp32 accumulators in every precision (Memory.h).
    cost.gradientBytes.push_back(st.parameters * 4);
  }
  cost.deployment = sched::Deployment{cluster, sched::World{D, dp}, 0};
  cost.transport = request.transport;
  cost.gradientSync = request.gradientSync;
  sched::Result<sched::SimResult> sim = sched::simulate(*schedule, cost);
  if (!sim)
    return reject(Rejection::Simulation, sim.error);
  if (sim->deadlocked)
    return reject(Rejection::Simulation, sim->deadlockReport());

  Estimate e;
  config.splitBackward = schedule->splitBackward;
  config.stages = S;
  e.config = config;
  e.stepTime = sim->makespan;
  e.bubble = sim->bubbleRatio;
  e.allReduceOverlap = sim->allReduceOverlap;
  const double tokens = static_cast<double>(config.microbatchSize) *
                        config.microbatches * dp *
                        static_cast<double>(model.seqLen);
  e.tokensPerSecond = e.stepTime > 0 ? tokens / e.stepTime : 0;
  // Every micro-batch of every copy runs the whole model once: what the
  // schedule does not change, so MFU compares schedules by their step time.
  e.mfu = modelFlopsUtilization(
      modelFlopsPerMicrobatch(model) * config.microbatches * dp, e.stepTime,
      config.gpus(), cluster.peakBf16Flops);
  double allReduce = 0;
  for (const sched::RankStats &r : sim->ranks) {
    allReduce += r.allReduceBytesSent;
    e.allReduceInterNodeBytesPerRank =
        std::max(e.allReduceInterNodeBytesPerRank, r.allReduceInterNodeBytes);
  }
  e.p2pBytes = sim->totalBytesSent * dp;
  e.allReduceBytes = allReduce * dp;
  for (int d = 0; d < D; ++d) {
    sched::RankMemory m = sched::rankMemory(
        parameters[d], optimizerParameters[d], request.precision,
        sim->ranks[d].peakInFlightBytes, buffers[d]);
    if (d == 0 || m.total() > e.peakMemory.total()) {
      e.peakMemory = m;
      e.peakRank = d;
    }
  }
  if (e.peakMemory.total() > memoryBudget)
    return reject(Rejection::Memory,
                  "rank " + std::to_string(e.peakRank) + " needs " +
                      formatBytes(e.peakMemory.total()) + " (" +
                      formatBytes(e.peakMemory.activations) +
                      " of activations in flight), over " +
                      budgetText(memoryBudget));
  if (timeline) {
    timeline->schedule = std::move(*schedule);
    timeline->sim = std::move(*sim);
  }
  return R::success(std::move(e));
}

sched::Result<Estimate> evaluate(const PlanConfig &config,
                                 const ModelProfile &model,
                                 const sched::Cluster &cluster,
                                 const PlanRequest &request, Rejection *reason,
                                 Timeline *timeline) {
  using R = sched::Result<Estimate>;
  sched::Result<sched::ScheduleOptions> options = scheduleRequest(config);
  if (!options) {
    if (reason)
      *reason = Rejection::Schedule;
    return R::failure(describe(config) + ": " + options.error);
  }
  sched::Result<sched::Placement> placement =
      sched::schedulePlacement(*options);
  if (!placement) {
    if (reason)
      *reason = Rejection::Schedule;
    return R::failure(describe(config) + ": " + placement.error);
  }
  sched::Result<std::vector<StageProfile>> stages =
      stageProfiles(model, placement->numStages);
  if (!stages) {
    if (reason)
      *reason = Rejection::Stages;
    return R::failure(describe(config) + ": " + stages.error);
  }
  return evaluateStages(config, model, *stages, *placement, cluster, request,
                        memoryCap(request, cluster) -
                            memoryHeadroom(request, cluster),
                        reason, timeline);
}

} // namespace bitpipe::plan
