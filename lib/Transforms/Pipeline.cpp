//===- Pipeline.cpp - The bitpipe-pipeline pass pipeline ------------------===//
//
// The passes in the order docs/architecture.md draws them, grouped by phase:
//
//   model          annotate-cost, partition, generate-backward
//   schedule       place, schedule
//   communication  insert-transfers, insert-allreduce
//   verification   the library verifier on the finished programs
//
// The pipeline decides nothing the schedule library does not already
// define: the placement (and so the number of chunks) is the one the
// schedule runs on (sched::schedulePlacement), and the backward is split
// when the generated schedule has weight-gradient steps. Generating the
// schedule here, once, also turns a micro-batch count the generator refuses
// into an error before any pass has run.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Transforms/Pipeline.h"

#include "bitpipe/Schedule/Generators.h"
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

/// What the options imply for the individual passes.
struct Plan {
  std::string placement;
  int stages = 0;
  int chunksPerDevice = 1;
  bool splitBackward = false;
};

FailureOr<Plan> derive(const PipelineOptions &options, std::string &error) {
  if (options.schedule.empty()) {
    error = "needs schedule=gpipe|1f1b|interleaved-1f1b|chimera|bitpipe|zb-h1";
    return failure();
  }
  if (options.devices < 1 || options.microbatches < 1) {
    error = "needs devices=D and microbatches=N, both positive; got devices=" +
            std::to_string(options.devices) +
            " microbatches=" + std::to_string(options.microbatches);
    return failure();
  }
  if (options.dataParallel < 1) {
    error = "dp=" + std::to_string(options.dataParallel) +
            " data-parallel copies; expected at least 1";
    return failure();
  }
  sched::ScheduleOptions request;
  request.schedule = options.schedule;
  request.devices = options.devices;
  request.microbatches = options.microbatches;
  if (options.chunksPerDevice > 0)
    request.chunksPerDevice = options.chunksPerDevice;
  sched::Result<sched::Schedule> generated = sched::generateSchedule(request);
  if (!generated) {
    error = "cannot build schedule '" + options.schedule + "' on " +
            std::to_string(options.devices) + " devices with " +
            std::to_string(options.microbatches) +
            " micro-batches: " + generated.error;
    return failure();
  }
  const sched::Placement &placement = generated->placement;
  Plan plan;
  plan.placement = placement.kind;
  plan.stages = placement.numStages;
  plan.splitBackward = generated->splitBackward || options.splitBackward;
  if (placement.kind == "loop")
    plan.chunksPerDevice = placement.numStages / placement.numDevices;
  // Only the loop placement of interleaved 1F1B has a chunk count to
  // choose; asking for one elsewhere means a misunderstanding.
  if (options.chunksPerDevice > 0 &&
      (placement.kind != "loop" ||
       plan.chunksPerDevice != options.chunksPerDevice)) {
    error = "chunks-per-device=" + std::to_string(options.chunksPerDevice) +
            " does not apply to schedule '" + options.schedule + "', which " +
            "runs " + std::to_string(placement.numStages) + " stages on a " +
            placement.kind + " placement of " +
            std::to_string(placement.numDevices) + " devices";
    return failure();
  }
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
  pm.addPass(createGenerateBackward(backward));
}

/// Which rank runs what, in which order.
void addSchedulePasses(OpPassManager &pm, const PipelineOptions &options,
                       const Plan &plan) {
  PlaceOptions place;
  place.placement = plan.placement;
  place.devices = options.devices;
  place.chunksPerDevice = plan.chunksPerDevice;
  place.dataParallel = options.dataParallel;
  pm.addPass(createPlace(place));
  ScheduleOptions schedule;
  schedule.schedule = options.schedule;
  schedule.microbatches = options.microbatches;
  pm.addPass(createSchedule(schedule));
}

/// The data that moves between ranks: activations and gradients between
/// stages, then the gradient all-reduces.
void addCommunicationPasses(OpPassManager &pm,
                            const PipelineOptions &options) {
  // Transfers first: the all-reduces then start after the sends of their
  // sync step.
  pm.addPass(createInsertTransfers());
  InsertAllReduceOptions allReduce;
  allReduce.bucketMb = options.bucketMb;
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
  pm.addPass(createVerify(verify));
}

} // namespace

void bitpipe::buildPipeline(OpPassManager &pm, const PipelineOptions &options) {
  std::string error;
  FailureOr<Plan> plan = derive(options, error);
  if (failed(plan)) {
    pm.addPass(std::make_unique<PipelineOptionsErrorPass>(error));
    return;
  }
  addModelPasses(pm, *plan);
  addSchedulePasses(pm, options, *plan);
  addCommunicationPasses(pm, options);
  addVerificationPasses(pm);
}

void bitpipe::registerBitPipePipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "bitpipe-pipeline",
      "From a model to per-rank pipeline-parallel training programs: "
      "annotate-cost, partition, generate-backward, place, schedule, "
      "insert-transfers, insert-allreduce, verify",
      buildPipeline);
}
