//===- Pipeline.cpp - The bitpipe-pipeline pass pipeline ------------------===//
//
// The passes in the order docs/architecture.md draws them, grouped by phase:
//
//   model          annotate-cost, partition, generate-backward
//   schedule       place, schedule
//   communication  insert-transfers, insert-allreduce
//   verification   the library verifier on the finished programs, under
//                  NCCL's rules
//
// The programs keep their repeated runs as loops from bitpipe-schedule on:
// schedule and insert-transfers write them rolled, insert-allreduce peels
// a repetition where a bucket must start, and the verifier reads them as
// the straight programs they run (docs/repetition.md). `loops=false`
// writes straight programs throughout.
//
// The pipeline decides nothing the schedule registry does not already
// define: the request is checked and completed there (sched::validate), the
// placement (and so the number of chunks) is the entry's
// (sched::schedulePlacement), and the backward is split when the entry says
// the schedule has weight-gradient steps. Nothing is generated here:
// bitpipe-schedule generates the schedule, once.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Transforms/Pipeline.h"
#include "bitpipe/Support/PassOptionNames.h"

#include "PassOptionUtil.h"

#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;
using namespace bitpipe;

namespace {

/// Stands for a pipeline whose options are wrong: reports them when run.
/// (A pipeline builder cannot fail, and silently building a different
/// pipeline would be worse.)
struct PipelineOptionsErrorPass
    : public PassWrapper<PipelineOptionsErrorPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PipelineOptionsErrorPass)

  explicit PipelineOptionsErrorPass(std::string message)
      : message(std::move(message)) {}
  StringRef getArgument() const override {
    return "bitpipe-pipeline-options-error";
  }
  void runOnOperation() override {
    getOperation().emitError() << "bitpipe-pipeline: " << message;
    signalPassFailure();
  }

  std::string message;
};

/// What the request implies for the individual passes.
struct Plan {
  sched::ScheduleOptions request; ///< Validated: no default left open.
  sched::PlacementKind placement = sched::PlacementKind::Loop;
  int stages = 0;
  int chunksPerDevice = 1;
  bool splitBackward = false;
  sched::Recompute recompute = sched::Recompute::None;
};

FailureOr<Plan> derive(const PipelineConfig &config, std::string &error) {
  sched::Result<sched::ScheduleOptions> request =
      sched::validate(config.request);
  if (!request) {
    error = request.error;
    return failure();
  }
  sched::Result<sched::Placement> placement =
      sched::schedulePlacement(*request);
  if (!placement) {
    error = placement.error;
    return failure();
  }
  const sched::ScheduleInfo &info = *sched::findSchedule(request->schedule);
  Plan plan;
  plan.request = *request;
  plan.placement = placement->kind;
  plan.stages = placement->numStages;
  plan.chunksPerDevice = placement->numStages / placement->numDevices;
  plan.splitBackward = info.splitsBackward || request->splitBackward;
  plan.recompute = config.recompute;
  return plan;
}

//===----------------------------------------------------------------------===//
// Phases
//===----------------------------------------------------------------------===//

/// Costs, stages and their backward functions: what the model is.
void addModelPasses(OpPassManager &pm, const Plan &plan) {
  pm.addPass(createAnnotateCost());
  PartitionOptions partition;
  partition.chunks = plan.stages;
  pm.addPass(createPartition(partition));
  GenerateBackwardOptions backward;
  backward.split = plan.splitBackward;
  backward.recompute = plan.recompute;
  pm.addPass(createGenerateBackward(backward));
}

/// Which rank runs what, in which order.
void addSchedulePasses(OpPassManager &pm, const Plan &plan, bool loops) {
  PlaceOptions place;
  place.placement = sched::placementKindName(plan.placement);
  place.devices = plan.request.devices;
  // The loop placement's chunk count; the others fix theirs (1 here means
  // "not given" to bitpipe-place).
  place.chunksPerDevice =
      plan.placement == sched::PlacementKind::Loop ? plan.chunksPerDevice : 1;
  place.dataParallel = plan.request.dataParallel;
  pm.addPass(createPlace(place));
  ScheduleOptions schedule;
  schedule.schedule = plan.request.schedule;
  schedule.microbatches = *plan.request.microbatches;
  // The completed request's cap (D when none was given): only the
  // schedules that take one have it; 0 tells bitpipe-schedule "none".
  schedule.maxInFlight = plan.request.maxInFlight.value_or(0);
  schedule.loops = loops;
  // Checked once, at the end (addCommunicationPasses says why).
  schedule.checkResult = false;
  pm.addPass(createSchedule(schedule));
}

/// The data that moves between ranks: activations and gradients between
/// stages, then the gradient all-reduces.
void addCommunicationPasses(OpPassManager &pm, const PipelineConfig &config) {
  // Transfers first: the all-reduces then start after the sends of their
  // sync step. Neither checks its own result: the pipeline ends with
  // bitpipe-verify, or the lowering verifies (PipelineConfig::verify), and
  // both check everything these would.
  InsertTransfersOptions transfers;
  transfers.checkResult = false;
  transfers.loops = config.loops;
  transfers.streams = config.streams;
  pm.addPass(createInsertTransfers(transfers));
  InsertAllReduceOptions allReduce;
  allReduce.bucketMb = config.bucketMb;
  allReduce.checkResult = false;
  allReduce.sync = config.gradientSync;
  pm.addPass(createInsertAllReduce(allReduce));
}

/// The finished programs are a valid training step.
void addVerificationPasses(OpPassManager &pm) {
  // The whole module at once: matching transfers in order, all-reduce
  // groups that agree, no deadlock (the schedule library's verifier and
  // simulator on the programs as written).
  // The all-reduces are in by now: a replicated stage without one is a
  // bug, not a program waiting for them.
  VerifyOptions verify;
  verify.requireAllReduce = true;
  // Under NCCL's rules, the stricter: programs that pass run on either
  // target (docs/nccl-transfers.md).
  verify.transport = sched::Transport::Nccl;
  pm.addPass(createVerify(verify));
}

} // namespace

bitpipe::PipelineConfig bitpipe::PipelineOptions::toConfig() const {
  PipelineConfig config;
  config.request.schedule = schedule;
  config.request.devices = devices;
  config.request.microbatches = givenValue(microbatches, 0);
  config.request.chunksPerDevice = givenValue(chunksPerDevice, 0);
  config.request.maxInFlight = givenValue(maxInFlight, 0);
  config.request.dataParallel = dataParallel;
  config.bucketMb = bucketMb;
  config.request.splitBackward = splitBackward;
  config.recompute = recompute;
  config.loops = loops;
  config.streams = transferStreams;
  config.gradientSync = gradientSync;
  return config;
}

void bitpipe::buildPipeline(OpPassManager &pm, const PipelineConfig &config) {
  std::string error;
  FailureOr<Plan> plan = derive(config, error);
  if (failed(plan)) {
    pm.addPass(std::make_unique<PipelineOptionsErrorPass>(error));
    return;
  }
  addModelPasses(pm, *plan);
  addSchedulePasses(pm, *plan, config.loops);
  addCommunicationPasses(pm, config);
  if (config.verify)
    addVerificationPasses(pm);
}

std::vector<std::string> bitpipe::pipelineOptionNames() {
  return optionNamesOf<PipelineOptions>();
}

void bitpipe::registerBitPipePipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "bitpipe-pipeline",
      "From a model to per-rank pipeline-parallel training programs: "
      "annotate-cost, partition, generate-backward, place, schedule, "
      "insert-transfers, insert-allreduce, verify (programs with their "
      "repeated runs as loops unless loops=false)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildPipeline(pm, options.toConfig());
      });
}
