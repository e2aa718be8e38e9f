//===- ScheduleFromIR.cpp - The schedule library's view of the IR ---------===//
//
// The world, the placement and the per-rank steps of a module, read back
// into the schedule library's types (the transfers: CommsFromIR.cpp).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"

#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace bitpipe;

FailureOr<bp::ScheduleAttr> bitpipe::readScheduleAttr(ModuleOp module) {
  auto schedule = module->getAttrOfType<bp::ScheduleAttr>(
      bp::BitPipeDialect::kScheduleAttrName);
  if (!schedule)
    return module.emitError()
           << "has no '" << bp::BitPipeDialect::kScheduleAttrName
           << "'; run bitpipe-schedule first";
  return schedule;
}

FailureOr<sched::World> bitpipe::readWorld(ModuleOp module) {
  auto placement = module->getAttrOfType<bp::PlacementAttr>(
      bp::BitPipeDialect::kPlacementAttrName);
  if (!placement)
    return module.emitError()
           << "has no '" << bp::BitPipeDialect::kPlacementAttrName
           << "'; run bitpipe-place first";
  if (auto copy = module->getAttrOfType<IntegerAttr>(
          bp::BitPipeDialect::kDataParallelCopyAttrName))
    return module.emitError()
           << "holds data-parallel copy " << copy.getInt()
           << " written out with world ranks for reading ('"
           << bp::BitPipeDialect::kDataParallelCopyAttrName
           << "', from bitpipe-instantiate-copy); passes and the lowering "
              "take the module of one program per pipeline rank it came from";
  sched::World world;
  world.pipelineDevices = placement.getDevices();
  if (auto copies = module->getAttrOfType<IntegerAttr>(
          bp::BitPipeDialect::kDataParallelAttrName))
    world.dataParallel = copies.getInt();
  // The dialect verifier checks the two agree when both are there; a world
  // size without a copy count must still be one copy.
  if (auto size = module->getAttrOfType<IntegerAttr>(
          bp::BitPipeDialect::kWorldSizeAttrName);
      size && size.getInt() != world.size())
    return module.emitError()
           << "has '" << bp::BitPipeDialect::kWorldSizeAttrName
           << "' = " << size.getInt() << ", but " << world.dataParallel
           << " cop" << (world.dataParallel == 1 ? "y" : "ies") << " of "
           << world.pipelineDevices << " devices make " << world.size()
           << " ranks; set '" << bp::BitPipeDialect::kDataParallelAttrName
           << "' (bitpipe-place dp=K)";
  return world;
}

FailureOr<ProgramSteps>
bitpipe::readProgramSteps(bp::ProgramOp program,
                          const sched::Placement &placement) {
  // The program as it runs: a repeat's body once per repetition.
  return readProgramSteps(bp::ProgramTrace(program), placement);
}

FailureOr<ProgramSteps>
bitpipe::readProgramSteps(const bp::ProgramTrace &trace,
                          const sched::Placement &placement) {
  ProgramSteps steps;
  std::vector<std::vector<int>> groups = placement.replicaGroups();
  // The open run of bucketed all-reduces: replica group -> its AR step.
  std::map<std::vector<int>, size_t> run;
  int64_t k = 0;
  size_t index = 0;
  auto push = [&](sched::Action action, Operation *op) {
    steps.actions.push_back(std::move(action));
    steps.ops.push_back(op);
    steps.repetitions.push_back(k);
    steps.traceIndices.push_back(index);
  };
  for (; index < trace.size(); ++index) {
    const bp::TracedStep &step = trace[index];
    Operation &op = *step.op;
    k = step.repetition;
    auto ar = dyn_cast<bp::AllReduceStartOp>(op);
    if (!ar || !ar.isBucketed()) {
      // Only compute steps and markers end a run of buckets: transfers,
      // waits and inputs between two buckets do not make a new sync point.
      if (isa<bp::ForwardOp, bp::BackwardOp, bp::WeightGradOp,
              bp::AllReduceStartOp>(op))
        run.clear();
    }
    LogicalResult read =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](bp::ForwardOp f) {
              push(sched::Action::forward(f.microbatchAt(k), f.getStage()), f);
              return success();
            })
            .Case([&](bp::BackwardOp b) {
              push(sched::Action::backward(b.microbatchAt(k), b.getStage()), b);
              return success();
            })
            .Case([&](bp::WeightGradOp w) {
              push(sched::Action::weightGrad(w.microbatchAt(k), w.getStage()),
                   w);
              return success();
            })
            .Case([&](bp::AllReduceStartOp start) -> LogicalResult {
              ArrayRef<int64_t> stages = start.getStages();
              if (!start.isBucketed()) {
                push(sched::Action::allReduce(
                         std::vector<int>(stages.begin(), stages.end())),
                     start);
                return success();
              }
              for (int64_t stage : stages)
                if (stage >= placement.numStages)
                  return start.emitOpError()
                         << "names stage " << stage << ", but the placement "
                         << "has " << placement.numStages << " stages";
              // A bucket of stages the open step of its group does not
              // hold starts the next sync point: two adjacent ones on one
              // rank (Chimera's middle ranks, whose mirror partner syncs
              // the same stages apart) stay two steps, as on the partner.
              // A sync point's buckets share a stage where they meet.
              for (int64_t stage : stages) {
                auto open = run.find(groups[stage]);
                if (open == run.end())
                  continue;
                const std::vector<int> &have =
                    steps.actions[open->second].stages;
                bool overlaps = llvm::any_of(stages, [&](int64_t s) {
                  return std::binary_search(have.begin(), have.end(),
                                            static_cast<int>(s));
                });
                if (!have.empty() && !overlaps)
                  run.erase(open);
              }
              for (int64_t stage : stages) {
                auto [it, fresh] =
                    run.try_emplace(groups[stage], steps.actions.size());
                if (fresh)
                  push(sched::Action::allReduce({}), start);
                std::vector<int> &have = steps.actions[it->second].stages;
                auto pos = std::lower_bound(have.begin(), have.end(), stage);
                if (pos == have.end() || *pos != stage)
                  have.insert(pos, static_cast<int>(stage));
              }
              return success();
            })
            // Not steps of the schedule: data movement and the end of
            // the step, derived from it by later passes.
            .Case<bp::LoadInputOp, bp::SendOp, bp::RecvOp, bp::LocalCopyOp,
                  bp::AllReduceWaitOp, bp::OptimizerStepOp>(
                [](Operation *) { return success(); })
            .Default([](Operation *other) {
              return other->emitError()
                     << "cannot be read as a step of the schedule";
            });
    if (failed(read))
      return failure();
  }
  return steps;
}

FailureOr<ProgramsFromIR> bitpipe::readProgramsFromIR(ModuleOp module) {
  // The attributes' verifiers have checked both; here only their presence
  // matters.
  auto placement = module->getAttrOfType<bp::PlacementAttr>(
      bp::BitPipeDialect::kPlacementAttrName);
  if (!placement)
    return module.emitError()
           << "has no '" << bp::BitPipeDialect::kPlacementAttrName
           << "'; run bitpipe-place and bitpipe-schedule first";
  FailureOr<bp::ScheduleAttr> info = readScheduleAttr(module);
  if (failed(info))
    return failure();
  FailureOr<sched::World> world = readWorld(module);
  if (failed(world))
    return failure();

  ProgramsFromIR read;
  sched::Schedule &schedule = read.schedule;
  info->applyTo(schedule);
  schedule.placement = placement.toSched();

  // One program per pipeline rank, whatever the data-parallel width:
  // every copy runs them (docs/data-parallel.md). The program verifier
  // rejects duplicates.
  const int ranks = world->pipelineDevices;
  SmallVector<bp::ProgramOp> &programs = read.programs;
  programs.resize(ranks);
  for (auto program : module.getOps<bp::ProgramOp>()) {
    int64_t rank = program.getRank();
    if (rank >= ranks)
      return program.emitError()
             << "has rank " << rank << ", but a module holds one program per "
             << "pipeline rank (0.." << ranks - 1 << " for the placement's "
             << ranks << " devices), which every data-parallel copy runs";
    programs[rank] = program;
  }
  for (auto [rank, program] : llvm::enumerate(programs))
    if (!program)
      return module.emitError()
             << "has no bitpipe.program for pipeline rank " << rank
             << " of the placement's " << ranks << " devices";

  schedule.ranks.resize(ranks);
  read.traces.reserve(ranks);
  read.steps.reserve(ranks);
  for (auto [rank, program] : llvm::enumerate(programs)) {
    // The program as it runs: a repeat's body once per repetition.
    const bp::ProgramTrace &trace = read.traces.emplace_back(program);
    FailureOr<ProgramSteps> steps = readProgramSteps(trace, schedule.placement);
    if (failed(steps))
      return failure();
    schedule.ranks[rank] = std::move(steps->actions);
    steps->actions.clear();
    read.steps.push_back(std::move(*steps));
  }
  return read;
}

FailureOr<sched::Schedule> bitpipe::readScheduleFromIR(ModuleOp module) {
  FailureOr<ProgramsFromIR> read = readProgramsFromIR(module);
  if (failed(read))
    return failure();
  return std::move(read->schedule);
}

sched::TransferStreams bitpipe::readTransferStreams(ModuleOp module) {
  if (auto streams = module->getAttrOfType<bp::TransferStreamsAttr>(
          bp::BitPipeDialect::kTransferStreamsAttrName))
    return streams.getValue();
  return sched::TransferStreams::Shared;
}

sched::GradientSync bitpipe::readGradientSync(ModuleOp module) {
  if (auto sync = module->getAttrOfType<bp::GradientSyncAttr>(
          bp::BitPipeDialect::kGradientSyncAttrName))
    return sync.getValue();
  return sched::GradientSync::Flat;
}

bool bitpipe::hasBoundPrograms(ModuleOp module) {
  for (auto program : module.getOps<bp::ProgramOp>()) {
    WalkResult bound = program.walk([](Operation *op) {
      bool has =
          llvm::TypeSwitch<Operation *, bool>(op)
              .Case<bp::ForwardOp, bp::BackwardOp, bp::WeightGradOp>(
                  [](auto compute) { return bool(compute.getCalleeAttr()); })
              .Default(false);
      return has ? WalkResult::interrupt() : WalkResult::advance();
    });
    if (bound.wasInterrupted())
      return true;
  }
  return false;
}
