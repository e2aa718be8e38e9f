//===- Schedule.cpp - The bitpipe-schedule pass ---------------------------===//
//
// Turns a named schedule into per-rank programs. All schedule logic is the
// library's: the generator decides the order, the verifier decides whether
// it is a correct training step. This pass checks that the request fits the
// module (placement, stage functions), and writes the order as IR, then
// reads it back (ScheduleFromIR) to make sure the IR says exactly what the
// generator produced, since later passes trust the IR alone.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeTypes.h"
#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Dialect/BitPipe/Programs/StraightProgram.h"
#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Verifier.h"
#include "bitpipe/Transforms/Passes.h"

#include "PassOptionUtil.h"
#include "bitpipe/Support/DiagnosticText.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

namespace bitpipe {
#define GEN_PASS_DEF_SCHEDULE
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

/// The `bitpipe.place` options that build `p`, for "run ..." hints.
std::string placeOptions(const sched::Placement &p) {
  std::string text = std::string("placement=") +
                     sched::placementKindName(p.kind) +
                     " devices=" + std::to_string(p.numDevices);
  if (p.kind == sched::PlacementKind::Loop && p.numStages != p.numDevices)
    text += " chunks-per-device=" + std::to_string(p.numStages / p.numDevices);
  return text;
}

/// "bidirectional-v placement (8 stages on 4 devices)".
std::string describe(const sched::Placement &p) {
  return std::string(sched::placementKindName(p.kind)) + " placement (" +
         std::to_string(p.numStages) + " stages on " +
         std::to_string(p.numDevices) + " devices)";
}

/// One rank's program as bitpipe-schedule writes it, step by step: per
/// forward its training inputs' loads, then the unbound compute steps and
/// the all-reduce markers in the schedule's order, then a wait per marker
/// and the optimizer step.
/// The load of an `nn.input` argument, or nothing for the dropout key,
/// which the runtime binds itself (program.h, bp_rt_forward).
std::optional<bp::InputKind> inputKindOf(StringRef input) {
  return llvm::StringSwitch<std::optional<bp::InputKind>>(input)
      .Case(nn::attr::kTokens, bp::InputKind::Tokens)
      .Case(nn::attr::kLabels, bp::InputKind::Targets)
      .Default(std::nullopt);
}

class ScheduledProgram : public bp::StraightProgram {
public:
  ScheduledProgram(Location loc, ArrayRef<sched::Action> actions,
                   const sched::Placement &placement, const sched::World &world,
                   ArrayRef<func::FuncOp> stages)
      : loc(loc), placement(placement), world(world),
        savedType(bp::SavedType::get(loc.getContext())),
        tokenType(bp::TokenType::get(loc.getContext())),
        names{
            OperationName(bp::LoadInputOp::getOperationName(),
                          loc.getContext()),
            OperationName(bp::ForwardOp::getOperationName(), loc.getContext()),
            OperationName(bp::BackwardOp::getOperationName(), loc.getContext()),
            OperationName(bp::WeightGradOp::getOperationName(),
                          loc.getContext()),
            OperationName(bp::AllReduceStartOp::getOperationName(),
                          loc.getContext()),
            OperationName(bp::AllReduceWaitOp::getOperationName(),
                          loc.getContext()),
            OperationName(bp::OptimizerStepOp::getOperationName(),
                          loc.getContext())} {
    // Each stage function's training inputs, in argument order.
    for (func::FuncOp fn : stages) {
      SmallVector<std::pair<bp::InputKind, Type>> inputs;
      for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
        if (auto input = fn.getArgAttrOfType<StringAttr>(i, nn::attr::kInput))
          if (std::optional<bp::InputKind> kind = inputKindOf(input.getValue()))
            inputs.push_back({*kind, fn.getArgumentTypes()[i]});
      stageInputs.push_back(std::move(inputs));
    }
    llvm::DenseMap<std::pair<int, int>, size_t> forwardOf; // (stage, mb)
    SmallVector<size_t> markers;
    for (const sched::Action &a : actions) {
      switch (a.kind) {
      case sched::ActionKind::Forward: {
        Step forward{Kind::Forward, &a};
        // Each training input the stage function reads is loaded for this
        // micro-batch right before its forward.
        for (auto [index, input] : llvm::enumerate(stageInputs[a.stage])) {
          forward.operands.push_back({steps.size(), 0});
          steps.push_back({Kind::Load, &a, {}, static_cast<unsigned>(index)});
        }
        forwardOf[{a.stage, a.microbatch}] = steps.size();
        steps.push_back(std::move(forward));
        break;
      }
      case sched::ActionKind::Backward:
      case sched::ActionKind::WeightGrad:
        steps.push_back({a.kind == sched::ActionKind::Backward
                             ? Kind::Backward
                             : Kind::WeightGrad,
                         &a,
                         {{forwardOf.lookup({a.stage, a.microbatch}), 0}}});
        break;
      case sched::ActionKind::AllReduce:
        markers.push_back(steps.size());
        steps.push_back(
            {Kind::Marker, &a, {}, static_cast<unsigned>(markers.size() - 1)});
        break;
      }
    }
    // The gradients must be final before the update: wait for every
    // all-reduce, in the order they were started.
    for (size_t marker : markers)
      steps.push_back({Kind::Wait, nullptr, {{marker, 0}}});
    steps.push_back({Kind::Update, nullptr});
  }

  size_t size() const override { return steps.size(); }
  OperationName name(size_t i) const override {
    return names[static_cast<int>(steps[i].kind)];
  }
  void describe(size_t i, std::vector<int64_t> &shape) const override {
    const Step &step = steps[i];
    if (step.action)
      shape.push_back(step.action->stage);
    // A load's input kind is fixed by its stage and position.
    shape.push_back(step.index);
  }
  bool repeatable(size_t i) const override {
    Kind kind = steps[i].kind;
    return kind != Kind::Marker && kind != Kind::Wait && kind != Kind::Update;
  }
  std::optional<int64_t> microbatch(size_t i) const override {
    if (!repeatable(i))
      return std::nullopt;
    return steps[i].action->microbatch;
  }
  std::optional<int64_t> batch(size_t) const override { return std::nullopt; }
  ArrayRef<bp::StepOperand> operands(size_t i) const override {
    return steps[i].operands;
  }
  TypeRange resultTypes(size_t i) const override {
    const Step &step = steps[i];
    switch (step.kind) {
    case Kind::Load:
      return TypeRange(stageInputs[step.action->stage][step.index].second);
    case Kind::Forward:
      return TypeRange(savedType);
    case Kind::Marker:
      return TypeRange(tokenType);
    default:
      return {};
    }
  }

  Operation *build(OpBuilder &b, size_t i, ValueRange operands) const override {
    const Step &step = steps[i];
    const sched::Action *a = step.action;
    // No callee: the unbound form, until bitpipe-insert-transfers binds the
    // stage functions (see bitpipe.forward's description).
    const FlatSymbolRefAttr unbound;
    switch (step.kind) {
    case Kind::Load: {
      auto [kind, type] = stageInputs[a->stage][step.index];
      return b.create<bp::LoadInputOp>(loc, type, kind,
                                       static_cast<int64_t>(a->microbatch),
                                       /*microbatch_step=*/IntegerAttr());
    }
    case Kind::Forward:
      return b.create<bp::ForwardOp>(loc, TypeRange{}, savedType, unbound,
                                     operands, a->stage, a->microbatch,
                                     /*microbatch_step=*/IntegerAttr());
    case Kind::Backward:
      return b.create<bp::BackwardOp>(loc, TypeRange{}, unbound, operands[0],
                                      ValueRange{}, a->stage, a->microbatch,
                                      /*microbatch_step=*/IntegerAttr());
    case Kind::WeightGrad:
      return b.create<bp::WeightGradOp>(loc, unbound, operands[0], a->stage,
                                        a->microbatch,
                                        /*microbatch_step=*/IntegerAttr());
    case Kind::Marker: {
      // The verifier has checked that all stages of one AR share their
      // replica group; the marker names it by pipeline ranks, and every
      // copy reduces with its own (docs/data-parallel.md).
      SmallVector<int64_t> stageList(a->stages.begin(), a->stages.end());
      std::vector<int> group = sched::pipelineGroup(
          sched::stageReplicaRanks(placement, a->stages.front(), world), world);
      return b.create<bp::AllReduceStartOp>(
          loc, tokenType, stageList,
          SmallVector<int64_t>(group.begin(), group.end()),
          static_cast<int64_t>(step.index), /*grads=*/nullptr,
          /*bytes=*/nullptr);
    }
    case Kind::Wait:
      return b.create<bp::AllReduceWaitOp>(loc, operands[0]);
    case Kind::Update:
      // Not averaged yet: bitpipe-insert-allreduce knows over how many
      // micro-batches the summed gradients run.
      return b.create<bp::OptimizerStepOp>(loc, /*microbatches=*/nullptr);
    }
    llvm_unreachable("every step kind is built");
  }

private:
  enum class Kind { Load, Forward, Backward, WeightGrad, Marker, Wait, Update };
  struct Step {
    Kind kind;
    const sched::Action *action; ///< Null for the waits and the update.
    SmallVector<bp::StepOperand, 1> operands = {};
    /// A load: which training input of its stage; a marker: its number.
    unsigned index = 0;
  };

  Location loc;
  const sched::Placement &placement;
  const sched::World &world;
  Type savedType, tokenType;
  OperationName names[7];
  SmallVector<SmallVector<std::pair<bp::InputKind, Type>>> stageInputs;
  std::vector<Step> steps;
};

struct SchedulePass : public bitpipe::impl::ScheduleBase<SchedulePass> {
  using ScheduleBase::ScheduleBase;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  /// The one conversion of the pass options into the registry's request,
  /// for the module's placement `have`: D from it, and v when the schedule
  /// has a chunk count to choose; `microbatches` and `max-in-flight` when
  /// given (else the registry's defaults). Not yet validated.
  sched::ScheduleOptions request(const sched::Placement &have) {
    sched::ScheduleOptions request;
    request.schedule = schedule;
    request.devices = have.numDevices;
    request.microbatches = givenValue(microbatches, 0);
    // 0 is "not given": bitpipe-pipeline builds this pass from its option
    // struct, which sets every option, so a given 0 cannot be told apart.
    if (maxInFlight != 0)
      request.maxInFlight = maxInFlight;
    const sched::ScheduleInfo *info = sched::findSchedule(schedule);
    if (info && info->choosesChunks() &&
        have.kind == sched::PlacementKind::Loop)
      request.chunksPerDevice = have.numStages / have.numDevices;
    return request;
  }

  LogicalResult run(ModuleOp module) {
    auto placementAttr = module->getAttrOfType<bp::PlacementAttr>(
        bp::BitPipeDialect::kPlacementAttrName);
    if (!placementAttr)
      return module.emitError()
             << "has no '" << bp::BitPipeDialect::kPlacementAttrName
             << "'; run bitpipe-place before bitpipe-schedule";
    if (!module.getOps<bp::ProgramOp>().empty())
      return module.emitError() << "already has per-rank programs; "
                                   "bitpipe-schedule runs once";
    FailureOr<SmallVector<func::FuncOp>> stages = collectStageFunctions(module);
    if (failed(stages))
      return failure();
    sched::Placement have = placementAttr.toSched();
    if (static_cast<int>(stages->size()) != have.numStages)
      return module.emitError()
             << "has " << stages->size() << " stage functions, but its "
             << describe(have) << " names " << have.numStages;

    sched::ScheduleOptions wanted = request(have);
    if (!sched::findSchedule(schedule))
      return module.emitError()
             << "bitpipe-schedule: " << sched::validate(wanted).error;
    // Placement first: "needs another placement" is the answer whatever N.
    sched::ScheduleOptions anyN = wanted;
    anyN.microbatches.reset();
    sched::Result<sched::Placement> want = sched::schedulePlacement(anyN);
    if (!want)
      return module.emitError()
             << "cannot build schedule '" << schedule << "' for the module's "
             << describe(have) << ": " << want.error;
    if (*want != have && want->kind == have.kind &&
        want->numStages == have.numStages &&
        want->numDevices == have.numDevices) {
      // Same shape, different map: a hand-written or edited placement.
      for (size_t p = 0; p < want->pipelines.size(); ++p)
        if (want->pipelines[p] != have.pipelines[p])
          return module.emitError()
                 << "schedule '" << schedule << "' runs on the library's "
                 << describe(*want) << ", but pipeline " << p
                 << " of the module's maps stages to devices "
                 << bitpipe::detail::formatList(have.pipelines[p].stageDevice)
                 << " instead of "
                 << bitpipe::detail::formatList(want->pipelines[p].stageDevice)
                 << "; run bitpipe-place{" << placeOptions(*want) << "}";
    }
    if (*want != have)
      return module.emitError()
             << "schedule '" << schedule << "' runs on a " << describe(*want)
             << ", but the module has a " << describe(have)
             << "; run bitpipe-place{" << placeOptions(*want) << "}";

    sched::Result<sched::ScheduleOptions> options = sched::validate(wanted);
    if (!options)
      return module.emitError()
             << "cannot build schedule '" << schedule << "' for the module's "
             << describe(have) << ": " << options.error;
    sched::Result<sched::Schedule> generated =
        sched::generateSchedule(*options);
    if (!generated)
      return module.emitError() << "cannot build schedule '" << schedule
                                << "': " << generated.error;
    if (generated->placement != have)
      return module.emitError()
             << "schedule '" << schedule << "' was generated for a "
             << describe(generated->placement) << ", not the module's "
             << describe(have);

    // A generator's mistake is caught here, with the grid, when the pass
    // checks its result; in bitpipe-pipeline the closing bitpipe-verify (or
    // the lowering) checks the finished programs with the same verifier.
    std::vector<sched::Diagnostic> problems;
    if (checkResult)
      problems = sched::verify(*generated);
    if (!problems.empty())
      return module.emitError() << "schedule '" << schedule << "' with "
                                << generated->numMicrobatches
                                << " micro-batches does not verify:\n"
                                << sched::formatDiagnostics(problems);

    FailureOr<sched::World> world = readWorld(module);
    if (failed(world))
      return failure();

    MLIRContext *context = &getContext();
    module->setAttr(bp::BitPipeDialect::kScheduleAttrName,
                    bp::ScheduleAttr::get(context, *generated));
    OpBuilder builder = OpBuilder::atBlockEnd(module.getBody());
    bp::RerollOptions rolling;
    rolling.loops = loops;
    // One program per pipeline rank, whatever the data-parallel width:
    // every copy runs the same schedule on its own data, among its own
    // ranks (docs/data-parallel.md), so the IR does not grow with it.
    // The programs are written in parallel: each fills its own op.
    SmallVector<bp::ProgramOp> programs;
    for (int r = 0; r < world->pipelineDevices; ++r)
      programs.push_back(builder.create<bp::ProgramOp>(
          module.getLoc(), ("rank" + Twine(r)).str(), r));
    if (failed(failableParallelForEachN(
            context, 0, programs.size(), [&](size_t r) {
              ScheduledProgram steps(module.getLoc(), generated->ranks[r], have,
                                     *world, *stages);
              return bp::writeProgram(programs[r], steps, rolling);
            })))
      return failure();

    // The IR is the record from now on; it must say what was generated.
    if (!checkResult)
      return success();
    FailureOr<sched::Schedule> readBack = readScheduleFromIR(module);
    if (failed(readBack))
      return failure();
    if (readBack->ranks != generated->ranks)
      return module.emitError()
             << "internal error: the programs read back differ from the "
                "generated schedule\ngenerated:\n"
             << sched::formatGrid(*generated) << "read back:\n"
             << sched::formatGrid(*readBack);
    return success();
  }
};

} // namespace
