//===- InsertTransfers.cpp - The bitpipe-insert-transfers pass ------------===//
//
// Binds the unbound compute steps of bitpipe-schedule's programs to the
// stage functions and makes every hand-off between stages explicit: a send
// and a receive where the two stages of a micro-batch's pipeline sit on
// different ranks, a local copy where they share one.
//
// Where the transfers go is the schedule library's decision (lowerComms:
// receive right before the consumer, send right after the producer); this
// pass only writes it as IR. It works in two phases so that a failure never
// leaves half-rewritten programs: first every stage function is checked to
// fit the binding (role-filtered signatures agree across each boundary),
// then the programs are rewritten. Afterwards the programs, transfers
// included, are read back and verified by the library, so that the IR is
// checked by the same code that checks schedules.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Schedule/Comms.h"
#include "bitpipe/Schedule/Verifier.h"
#include "bitpipe/Transforms/Passes.h"

#include "bitpipe/Dialect/BitPipe/Utils/DiagnosticText.h"
#include "bitpipe/Dialect/BitPipe/Utils/Repeats.h"
#include "bitpipe/Dialect/BitPipe/Utils/ScheduleFromIR.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

#include <map>

namespace bitpipe {
#define GEN_PASS_DEF_INSERTTRANSFERS
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;
using bitpipe::detail::formatTypes;

namespace {

/// A stage's functions and the role-filtered view of their signatures that
/// the bound ops use.
struct StageBinding {
  func::FuncOp forward, backward, weight; ///< weight: split backward only.
  /// Forward operands in order: for each, true when it is a training input
  /// (from bitpipe.load_input), false for an activation of the previous
  /// stage.
  SmallVector<bool> forwardOperandIsInput;
  SmallVector<Type> activationsIn; ///< Activation operands of the forward.
  SmallVector<Type> outputs;       ///< Forward results without the handle.
  SmallVector<Type> gradsIn;       ///< Backward operands after the handle.
  SmallVector<Type> gradsOut;      ///< Backward results.
};

/// Looks up the function a stage function names in `attrName`.
FailureOr<func::FuncOp> lookupBackward(ModuleOp module, func::FuncOp forward,
                                       StringRef attrName, StringRef hint) {
  auto ref = forward->getAttrOfType<FlatSymbolRefAttr>(attrName);
  if (!ref)
    return forward.emitError() << "has no '" << attrName << "'; " << hint;
  auto fn = module.lookupSymbol<func::FuncOp>(ref);
  if (!fn)
    return forward.emitError() << "names " << ref << " in '" << attrName
                               << "', but the module has no such function";
  return fn;
}

/// Phase 1: the bindings of every stage, checked against each other.
FailureOr<SmallVector<StageBinding, 0>>
bindStages(ModuleOp module, ArrayRef<func::FuncOp> stages, bool split) {
  SmallVector<StageBinding, 0> bindings;
  for (func::FuncOp forward : stages) {
    StageBinding b;
    b.forward = forward;
    if (split) {
      StringRef hint = "the schedule splits the backward: run "
                       "bitpipe-generate-backward=split";
      FailureOr<func::FuncOp> input =
          lookupBackward(module, forward, attr::kBackwardInput, hint);
      if (failed(input))
        return failure();
      FailureOr<func::FuncOp> weight =
          lookupBackward(module, forward, attr::kBackwardWeight, hint);
      if (failed(weight))
        return failure();
      b.backward = *input;
      b.weight = *weight;
    } else {
      FailureOr<func::FuncOp> backward = lookupBackward(
          module, forward, attr::kBackward,
          forward->hasAttr(attr::kBackwardInput)
              ? "its backward is split, but the schedule is not: run "
                "bitpipe-generate-backward without split"
              : "run bitpipe-generate-backward");
      if (failed(backward))
        return failure();
      b.backward = *backward;
    }

    for (unsigned i : bp::getBoundArguments(forward, bp::CalleeRole::Forward)) {
      bool input = static_cast<bool>(forward.getArgAttr(i, bp::role::kInput));
      b.forwardOperandIsInput.push_back(input);
      if (!input)
        b.activationsIn.push_back(forward.getArgumentTypes()[i]);
    }
    FunctionType fwd = bp::getBoundType(forward, bp::CalleeRole::Forward);
    b.outputs.assign(fwd.getResults().begin(), fwd.getResults().end());
    FunctionType bwd = bp::getBoundType(b.backward, bp::CalleeRole::Backward);
    b.gradsIn.assign(bwd.getInputs().begin(), bwd.getInputs().end());
    b.gradsOut.assign(bwd.getResults().begin(), bwd.getResults().end());
    if (b.weight) {
      FunctionType w = bp::getBoundType(b.weight, bp::CalleeRole::WeightGrad);
      if (w.getNumInputs() || w.getNumResults())
        return b.weight.emitError()
               << "is the weight-gradient half of stage @"
               << forward.getSymName() << ", but besides stage state it takes "
               << formatTypes(w.getInputs()) << " and returns "
               << formatTypes(w.getResults())
               << "; expected it to read only what the input half stashed "
                  "and to return only parameter gradients";
    }
    bindings.push_back(std::move(b));
  }

  // Across each boundary s-1 -> s, the activation the forward of s-1 hands
  // on is what s takes, and the gradient of it comes back the other way.
  for (auto [s, b] : llvm::enumerate(bindings)) {
    if (s == 0 && !b.activationsIn.empty())
      return b.forward.emitError()
             << "is stage 0 but takes activations "
             << formatTypes(b.activationsIn)
             << " besides parameters and training inputs; no stage comes "
                "before it";
    if (s > 0 &&
        TypeRange(b.activationsIn) != TypeRange(bindings[s - 1].outputs))
      return b.forward.emitError()
             << "is stage " << s << " and takes "
             << formatTypes(b.activationsIn)
             << " from the previous stage, but stage " << s - 1 << " (@"
             << bindings[s - 1].forward.getSymName() << ") returns "
             << formatTypes(bindings[s - 1].outputs);
    if (TypeRange(b.gradsOut) != TypeRange(b.activationsIn))
      return b.backward.emitError()
             << "returns input gradients " << formatTypes(b.gradsOut)
             << ", but its stage @" << b.forward.getSymName()
             << " takes activations " << formatTypes(b.activationsIn);
    bool last = s + 1 == bindings.size();
    if (last && !b.gradsIn.empty())
      return b.backward.emitError()
             << "belongs to the last stage but takes output gradients "
             << formatTypes(b.gradsIn)
             << "; the loss stage seeds its gradient itself";
    if (!last && TypeRange(b.gradsIn) != TypeRange(b.outputs))
      return b.backward.emitError()
             << "takes output gradients " << formatTypes(b.gradsIn)
             << ", but its stage @" << b.forward.getSymName() << " returns "
             << formatTypes(b.outputs);
  }
  return bindings;
}

/// Phase 2: rewrites one rank's program from its lowered item list.
class ProgramRewriter {
public:
  /// Rewrites the programs of the pipeline ranks; peers are pipeline
  /// ranks too (each data-parallel copy talks among its own ranks).
  ProgramRewriter(ArrayRef<StageBinding> stages, const sched::CommProgram &comm)
      : stages(stages), comm(comm) {
    for (auto [id, t] : llvm::enumerate(comm.transfers))
      inputOf[{t.dst, t.consumerIndex}] = static_cast<int>(id);
  }

  /// Rewrites the program of pipeline rank `device`.
  void rewrite(int device, ArrayRef<Operation *> steps);

private:
  /// The tensors a transfer carries: the producer's outputs.
  ArrayRef<Type> payload(const sched::Transfer &t) const {
    return t.gradient ? stages[t.fromStage].gradsOut
                      : stages[t.fromStage].outputs;
  }
  /// The values the transfer into step `index` of `rank` made available.
  ArrayRef<Value> inputs(int rank, int index) {
    auto it = inputOf.find({rank, index});
    return it == inputOf.end() ? ArrayRef<Value>() : arrived[it->second];
  }
  Operation *bind(OpBuilder &b, int rank, int index, Operation *old);

  ArrayRef<StageBinding> stages;
  const sched::CommProgram &comm;
  std::map<std::pair<int, int>, int> inputOf;       ///< (dst, consumer) -> id.
  llvm::DenseMap<int, SmallVector<Value>> arrived;  ///< id -> values.
  llvm::DenseMap<int, SmallVector<Value>> produced; ///< step -> outputs.
};

Operation *ProgramRewriter::bind(OpBuilder &b, int rank, int index,
                                 Operation *old) {
  Location loc = old->getLoc();
  if (auto forward = dyn_cast<bp::ForwardOp>(old)) {
    const StageBinding &stage = stages[forward.getStage()];
    ArrayRef<Value> activations = inputs(rank, index);
    auto loaded = forward.getInputs().begin();
    SmallVector<Value> operands;
    for (bool isInput : stage.forwardOperandIsInput) {
      if (isInput) {
        operands.push_back(*loaded++);
      } else {
        operands.push_back(activations.front());
        activations = activations.drop_front();
      }
    }
    auto bound = b.create<bp::ForwardOp>(
        loc, stage.outputs, forward.getSaved().getType(),
        FlatSymbolRefAttr::get(stage.forward), operands, forward.getStage(),
        forward.getMicrobatch(), /*microbatch_step=*/IntegerAttr());
    forward.getSaved().replaceAllUsesWith(bound.getSaved());
    produced[index] = SmallVector<Value>(bound.getOutputs());
    return bound;
  }
  if (auto backward = dyn_cast<bp::BackwardOp>(old)) {
    const StageBinding &stage = stages[backward.getStage()];
    auto bound = b.create<bp::BackwardOp>(
        loc, stage.gradsOut, FlatSymbolRefAttr::get(stage.backward),
        backward.getSaved(), inputs(rank, index), backward.getStage(),
        backward.getMicrobatch(), /*microbatch_step=*/IntegerAttr());
    produced[index] = SmallVector<Value>(bound.getOutputs());
    return bound;
  }
  auto weight = cast<bp::WeightGradOp>(old);
  return b.create<bp::WeightGradOp>(
      loc, FlatSymbolRefAttr::get(stages[weight.getStage()].weight),
      weight.getSaved(), weight.getStage(), weight.getMicrobatch(),
      /*microbatch_step=*/IntegerAttr());
}

void ProgramRewriter::rewrite(int device, ArrayRef<Operation *> steps) {
  OpBuilder b(steps.empty() ? nullptr : steps.front()->getContext());
  // Transfers between two compute steps form one batch; a compute step
  // closes the open batch if it holds anything.
  int64_t batch = 0;
  bool batchUsed = false;
  Operation *lastEmitted = nullptr;
  for (const sched::CommAction &item : comm.ranks[device]) {
    switch (item.kind) {
    case sched::CommKind::AllReduce:
      lastEmitted = steps[item.actionIndex];
      break;
    case sched::CommKind::Compute: {
      Operation *old = steps[item.actionIndex];
      b.setInsertionPoint(old);
      lastEmitted = bind(b, device, item.actionIndex, old);
      old->erase();
      if (batchUsed)
        ++batch;
      batchUsed = false;
      break;
    }
    case sched::CommKind::RecvF:
    case sched::CommKind::RecvB: {
      const sched::Transfer &t = comm.transfers[item.transfer];
      b.setInsertionPoint(steps[item.actionIndex]);
      SmallVector<Value> &values = arrived[item.transfer];
      for (Type type : payload(t))
        values.push_back(b.create<bp::RecvOp>(
            steps[item.actionIndex]->getLoc(), type,
            t.gradient ? bp::TransferKind::Gradient
                       : bp::TransferKind::Activation,
            t.src, t.fromStage, t.microbatch, b.getI64IntegerAttr(batch),
            /*microbatch_step=*/IntegerAttr(),
            /*batch_step=*/IntegerAttr()));
      batchUsed = true;
      break;
    }
    case sched::CommKind::SendF:
    case sched::CommKind::SendB:
    case sched::CommKind::LocalCopyF:
    case sched::CommKind::LocalCopyB: {
      const sched::Transfer &t = comm.transfers[item.transfer];
      bool local = t.local();
      auto kind = t.gradient ? bp::TransferKind::Gradient
                             : bp::TransferKind::Activation;
      b.setInsertionPointAfter(lastEmitted);
      SmallVector<Value> &values = arrived[item.transfer];
      for (Value value : produced[item.actionIndex]) {
        if (local) {
          auto copy = b.create<bp::LocalCopyOp>(
              value.getLoc(), kind, value, t.fromStage, t.microbatch,
              /*microbatch_step=*/IntegerAttr());
          values.push_back(copy);
          lastEmitted = copy;
        } else {
          lastEmitted = b.create<bp::SendOp>(
              value.getLoc(), kind, value, t.dst, t.fromStage, t.microbatch,
              b.getI64IntegerAttr(batch),
              /*microbatch_step=*/IntegerAttr(), /*batch_step=*/IntegerAttr());
        }
      }
      batchUsed |= !local;
      break;
    }
    }
  }
}

/// The two programs take the same steps, as CommProgram::format() shows
/// them (transfer numbers may differ), compared without formatting them.
bool sameSteps(const sched::CommProgram &a, const sched::CommProgram &b) {
  if (a.ranks.size() != b.ranks.size())
    return false;
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    if (a.ranks[r].size() != b.ranks[r].size())
      return false;
    for (size_t i = 0; i < a.ranks[r].size(); ++i) {
      const sched::CommAction &x = a.ranks[r][i], &y = b.ranks[r][i];
      bool p2p = x.kind == sched::CommKind::SendF ||
                 x.kind == sched::CommKind::SendB ||
                 x.kind == sched::CommKind::RecvF ||
                 x.kind == sched::CommKind::RecvB;
      if (x.kind != y.kind || !(x.action == y.action) ||
          (p2p && x.peer != y.peer))
        return false;
    }
  }
  return true;
}

struct InsertTransfersPass
    : public bitpipe::impl::InsertTransfersBase<InsertTransfersPass> {
  using InsertTransfersBase::InsertTransfersBase;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    if (failed(bp::requireStraightPrograms(module, "bitpipe-insert-transfers")))
      return failure();
    FailureOr<sched::Schedule> schedule = readScheduleFromIR(module);
    if (failed(schedule))
      return failure();
    FailureOr<sched::World> world = readWorld(module);
    if (failed(world))
      return failure();

    // Phase 1: check everything the rewrite relies on.
    SmallVector<SmallVector<Operation *>> steps(world->pipelineDevices);
    for (auto program : module.getOps<bp::ProgramOp>()) {
      for (Operation &op : program.getBody().front()) {
        if (isa<bp::SendOp, bp::RecvOp, bp::LocalCopyOp>(op) ||
            op.getAttr("callee"))
          return op.emitError()
                 << "is already a transfer or bound; bitpipe-insert-"
                    "transfers runs once, on the unbound programs of "
                    "bitpipe-schedule";
        if (isa<bp::ForwardOp, bp::BackwardOp, bp::WeightGradOp,
                bp::AllReduceStartOp>(op))
          steps[program.getRank()].push_back(&op);
      }
    }
    FailureOr<SmallVector<func::FuncOp>> stageFns =
        collectStageFunctions(module);
    if (failed(stageFns))
      return failure();
    if (static_cast<int>(stageFns->size()) != schedule->placement.numStages)
      return module.emitError() << "has " << stageFns->size()
                                << " stage functions, but the placement has "
                                << schedule->placement.numStages << " stages";
    FailureOr<SmallVector<StageBinding, 0>> stages =
        bindStages(module, *stageFns, schedule->splitBackward);
    if (failed(stages))
      return failure();
    for (ArrayRef<Operation *> rankSteps : steps)
      for (Operation *op : rankSteps)
        if (auto forward = dyn_cast<bp::ForwardOp>(op)) {
          const StageBinding &stage = (*stages)[forward.getStage()];
          func::FuncOp fn = stage.forward;
          size_t wanted = llvm::count(stage.forwardOperandIsInput, true);
          if (forward.getInputs().size() != wanted)
            return forward.emitError()
                   << "of stage " << forward.getStage() << " micro-batch "
                   << forward.getMicrobatch() << " loads "
                   << forward.getInputs().size() << " training input(s), but @"
                   << fn.getSymName() << " takes " << wanted;
        }

    sched::Result<sched::CommProgram> lowered = sched::lowerComms(*schedule);
    if (!lowered)
      return module.emitError()
             << "cannot derive the transfers of the schedule: "
             << lowered.error;

    // Phase 2: rewrite every program: one per pipeline rank, which every
    // data-parallel copy runs among its own ranks (docs/data-parallel.md).
    ProgramRewriter rewriter(*stages, *lowered);
    for (int d = 0; d < world->pipelineDevices; ++d)
      rewriter.rewrite(d, steps[d]);

    // The IR is the record from now on: read it back, transfers included,
    // and let the library check it. A failure fails the pass, which
    // discards the rewritten module. A pipeline that verifies at its end
    // skips it (it would check the same programs three times).
    if (!checkResult)
      return success();
    FailureOr<sched::Schedule> readBack = readScheduleFromIR(module);
    if (failed(readBack))
      return failure();
    FailureOr<IRCommProgram> comms = readCommProgramFromIR(module, *readBack);
    if (failed(comms))
      return failure();
    if (!sameSteps(comms->program, *lowered))
      return module.emitError()
             << "internal error: the transfers read back differ from the "
                "library's lowering\nlowered:\n"
             << lowered->format() << "read back:\n"
             << comms->program.format();
    std::vector<sched::Diagnostic> problems =
        sched::verify(*readBack, comms->program);
    if (!problems.empty())
      return module.emitError()
             << "the programs with their transfers do not verify:\n"
             << sched::formatDiagnostics(problems);
    return success();
  }
};

} // namespace
