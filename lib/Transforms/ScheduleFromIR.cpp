//===- ScheduleFromIR.cpp - The schedule library's view of the IR ---------===//

#include "bitpipe/Transforms/ScheduleFromIR.h"

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace bitpipe;

FailureOr<SmallVector<func::FuncOp>>
bitpipe::collectStageFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> stages;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto attr = fn->getAttrOfType<IntegerAttr>(kStageAttrName);
    if (!attr)
      continue;
    int64_t stage = attr.getInt();
    if (stage < 0)
      return fn.emitError()
             << "'" << kStageAttrName
             << "' expects a non-negative stage number, got " << stage;
    if (static_cast<int64_t>(stages.size()) <= stage)
      stages.resize(stage + 1);
    if (stages[stage]) {
      InFlightDiagnostic diag = fn.emitError()
                                << "is stage " << stage << ", but @"
                                << stages[stage].getSymName()
                                << " already is; expected one function per "
                                   "stage";
      diag.attachNote(stages[stage].getLoc()) << "stage " << stage << " here";
      return diag;
    }
    stages[stage] = fn;
  }
  for (auto [s, fn] : llvm::enumerate(stages))
    if (!fn)
      return module.emitError()
             << "has stage functions up to stage " << stages.size() - 1
             << " but none for stage " << s << "; expected stages 0.."
             << stages.size() - 1 << " each once";
  return stages;
}

bp::PlacementAttr bitpipe::toPlacementAttr(Location loc,
                                           const sched::Placement &placement) {
  std::optional<bp::PlacementKind> kind =
      bp::symbolizePlacementKind(placement.kind);
  if (!kind) {
    emitError(loc) << "the schedule library's placement kind '"
                   << placement.kind << "' has no #bitpipe.placement spelling";
    return {};
  }
  MLIRContext *context = loc.getContext();
  SmallVector<DenseI64ArrayAttr> pipelines;
  for (const sched::Pipeline &pipe : placement.pipelines)
    pipelines.push_back(DenseI64ArrayAttr::get(
        context, SmallVector<int64_t>(pipe.stageDevice.begin(),
                                      pipe.stageDevice.end())));
  return bp::PlacementAttr::get(context, *kind, placement.numDevices,
                                pipelines);
}

sched::Placement bitpipe::toSchedPlacement(bp::PlacementAttr attr) {
  sched::Placement p;
  p.kind = bp::stringifyPlacementKind(attr.getKind()).str();
  p.numDevices = attr.getDevices();
  p.numStages = attr.getNumStages();
  for (DenseI64ArrayAttr pipe : attr.getPipelines())
    p.pipelines.push_back(
        {std::vector<int>(pipe.asArrayRef().begin(), pipe.asArrayRef().end())});
  return p;
}

bool bitpipe::samePlacement(const sched::Placement &a,
                            const sched::Placement &b) {
  if (a.kind != b.kind || a.numDevices != b.numDevices ||
      a.numStages != b.numStages || a.pipelines.size() != b.pipelines.size())
    return false;
  for (size_t p = 0; p < a.pipelines.size(); ++p)
    if (a.pipelines[p].stageDevice != b.pipelines[p].stageDevice)
      return false;
  return true;
}

DictionaryAttr bitpipe::toScheduleAttr(MLIRContext *context,
                                       const sched::Schedule &schedule) {
  Builder b(context);
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(schedule.name)),
      b.getNamedAttr("microbatches",
                     b.getI64IntegerAttr(schedule.numMicrobatches)),
      b.getNamedAttr("microbatch_pipelines",
                     b.getDenseI64ArrayAttr(SmallVector<int64_t>(
                         schedule.microbatchPipeline.begin(),
                         schedule.microbatchPipeline.end()))),
      b.getNamedAttr("split_backward", b.getBoolAttr(schedule.splitBackward)),
  };
  if (!schedule.note.empty())
    fields.push_back(b.getNamedAttr("note", b.getStringAttr(schedule.note)));
  return b.getDictionaryAttr(fields);
}

FailureOr<sched::Schedule> bitpipe::readScheduleFromIR(ModuleOp module) {
  // The dialect's attribute verifier has checked the shapes of both
  // attributes; here only their presence matters.
  auto placement = module->getAttrOfType<bp::PlacementAttr>(
      bp::BitPipeDialect::kPlacementAttrName);
  if (!placement)
    return module.emitError()
           << "has no '" << bp::BitPipeDialect::kPlacementAttrName
           << "'; run bitpipe-place and bitpipe-schedule first";
  auto info = module->getAttrOfType<DictionaryAttr>(
      bp::BitPipeDialect::kScheduleAttrName);
  if (!info)
    return module.emitError()
           << "has no '" << bp::BitPipeDialect::kScheduleAttrName
           << "'; run bitpipe-schedule first";

  sched::Schedule schedule;
  schedule.name = info.getAs<StringAttr>("name").str();
  schedule.placement = toSchedPlacement(placement);
  schedule.numMicrobatches = info.getAs<IntegerAttr>("microbatches").getInt();
  ArrayRef<int64_t> pipelines =
      info.getAs<DenseI64ArrayAttr>("microbatch_pipelines").asArrayRef();
  schedule.microbatchPipeline.assign(pipelines.begin(), pipelines.end());
  schedule.splitBackward = info.getAs<BoolAttr>("split_backward").getValue();
  if (auto note = info.getAs<StringAttr>("note"))
    schedule.note = note.str();

  // One program per device of the placement. Data-parallel replicas of a
  // pipeline would need the rank -> device map, which no pass writes yet.
  const int64_t devices = placement.getDevices();
  SmallVector<bp::ProgramOp> programs(devices);
  for (auto program : module.getOps<bp::ProgramOp>()) {
    int64_t rank = program.getRank();
    if (rank >= devices)
      return program.emitError()
             << "has rank " << rank << ", but the placement has " << devices
             << " devices; reading data-parallel programs is not supported";
    programs[rank] = program; // The program verifier rejects duplicates.
  }
  for (auto [rank, program] : llvm::enumerate(programs))
    if (!program)
      return module.emitError()
             << "has no bitpipe.program for rank " << rank
             << " of the placement's " << devices << " devices";

  schedule.ranks.resize(devices);
  for (auto [rank, program] : llvm::enumerate(programs)) {
    std::vector<sched::Action> &actions = schedule.ranks[rank];
    for (Operation &op : program.getBody().front()) {
      LogicalResult read =
          llvm::TypeSwitch<Operation *, LogicalResult>(&op)
              .Case([&](bp::ForwardOp f) {
                actions.push_back(
                    sched::Action::forward(f.getMicrobatch(), f.getStage()));
                return success();
              })
              .Case([&](bp::BackwardOp b) {
                actions.push_back(
                    sched::Action::backward(b.getMicrobatch(), b.getStage()));
                return success();
              })
              .Case([&](bp::WeightGradOp w) {
                actions.push_back(
                    sched::Action::weightGrad(w.getMicrobatch(), w.getStage()));
                return success();
              })
              .Case([&](bp::AllReduceStartOp ar) {
                ArrayRef<int64_t> stages = ar.getStages();
                actions.push_back(sched::Action::allReduce(
                    std::vector<int>(stages.begin(), stages.end())));
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
  }
  return schedule;
}
