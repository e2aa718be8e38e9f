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
#include "bitpipe/Dialect/BitPipe/Utils/ScheduleFromIR.h"
#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Verifier.h"
#include "bitpipe/Transforms/Passes.h"

#include "bitpipe/Dialect/BitPipe/Utils/DiagnosticText.h"
#include "PassOptionUtil.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"

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

/// Builds the program of one rank from its list of actions.
class ProgramBuilder {
public:
  ProgramBuilder(OpBuilder &builder, Location loc,
                 const sched::Placement &placement, const sched::World &world,
                 ArrayRef<func::FuncOp> stages)
      : b(builder), loc(loc), placement(placement), world(world),
        stages(stages) {}

  void build(int rank, ArrayRef<sched::Action> actions) {
    auto program =
        b.create<bp::ProgramOp>(loc, ("rank" + Twine(rank)).str(), rank);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(&program.getBody().front());
    saved.clear();
    tokens.clear();
    for (const sched::Action &action : actions)
      emit(action);
    // The gradients must be final before the update: wait for every
    // all-reduce, in the order they were started.
    for (Value token : tokens)
      b.create<bp::AllReduceWaitOp>(loc, token);
    // Not averaged yet: bitpipe-insert-allreduce knows over how many
    // micro-batches the summed gradients run.
    b.create<bp::OptimizerStepOp>(loc, /*microbatches=*/nullptr);
  }

private:
  static int64_t stage(const sched::Action &a) { return a.stage; }
  static int64_t microbatch(const sched::Action &a) { return a.microbatch; }

  void emit(const sched::Action &a) {
    // No callee: the unbound form, until bitpipe-insert-transfers binds the
    // stage functions (see bitpipe.forward's description).
    const FlatSymbolRefAttr unbound;
    switch (a.kind) {
    case sched::ActionKind::Forward: {
      // Each training input the stage function reads is loaded for this
      // micro-batch right before its forward.
      func::FuncOp fn = stages[a.stage];
      SmallVector<Value> inputs;
      for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
        auto input = fn.getArgAttrOfType<StringAttr>(i, nn::attr::kInput);
        if (!input)
          continue;
        bp::InputKind kind = input.getValue() == nn::attr::kTokens
                                 ? bp::InputKind::Tokens
                                 : bp::InputKind::Targets;
        inputs.push_back(
            b.create<bp::LoadInputOp>(loc, fn.getArgumentTypes()[i], kind,
                                      static_cast<int64_t>(a.microbatch),
                                      /*microbatch_step=*/IntegerAttr()));
      }
      auto forward = b.create<bp::ForwardOp>(
          loc, TypeRange{}, bp::SavedType::get(b.getContext()), unbound, inputs,
          stage(a), microbatch(a), /*microbatch_step=*/IntegerAttr());
      saved[{a.stage, a.microbatch}] = forward.getSaved();
      return;
    }
    case sched::ActionKind::Backward:
      b.create<bp::BackwardOp>(loc, TypeRange{}, unbound,
                               saved.lookup({a.stage, a.microbatch}),
                               ValueRange{}, stage(a), microbatch(a),
                               /*microbatch_step=*/IntegerAttr());
      return;
    case sched::ActionKind::WeightGrad:
      b.create<bp::WeightGradOp>(loc, unbound,
                                 saved.lookup({a.stage, a.microbatch}),
                                 stage(a), microbatch(a),
                                 /*microbatch_step=*/IntegerAttr());
      return;
    case sched::ActionKind::AllReduce: {
      // The verifier has checked that all stages of one AR share their
      // replica group; the marker names it by pipeline ranks, and every
      // copy reduces with its own (docs/data-parallel.md).
      SmallVector<int64_t> stageList(a.stages.begin(), a.stages.end());
      std::vector<int> group = sched::pipelineGroup(
          sched::stageReplicaRanks(placement, a.stages.front(), world),
          world);
      auto start = b.create<bp::AllReduceStartOp>(
          loc, bp::TokenType::get(b.getContext()), stageList,
          SmallVector<int64_t>(group.begin(), group.end()),
          static_cast<int64_t>(tokens.size()), /*grads=*/nullptr,
          /*bytes=*/nullptr);
      tokens.push_back(start.getToken());
      return;
    }
    }
  }

  OpBuilder &b;
  Location loc;
  const sched::Placement &placement;
  const sched::World &world;
  ArrayRef<func::FuncOp> stages;
  llvm::DenseMap<std::pair<int, int>, Value> saved; ///< (stage, mb) -> handle
  SmallVector<Value> tokens;
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

    std::vector<sched::Diagnostic> problems = sched::verify(*generated);
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
    ProgramBuilder programs(builder, module.getLoc(), have, *world, *stages);
    // One program per pipeline rank, whatever the data-parallel width:
    // every copy runs the same schedule on its own data, among its own
    // ranks (docs/data-parallel.md), so the IR does not grow with it.
    for (int r = 0; r < world->pipelineDevices; ++r)
      programs.build(r, generated->ranks[r]);

    // The IR is the record from now on; it must say what was generated.
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
