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

#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"
#include "bitpipe/Dialect/BitPipe/Programs/Repeats.h"
#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Dialect/BitPipe/Programs/StraightProgram.h"
#include "bitpipe/Support/DiagnosticText.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Threading.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/TypeSwitch.h"

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

/// Phase 2: one rank's program, bound and with its transfers, step by step
/// as the library's lowered item list orders it. The steps that are not
/// the schedule's actions (input loads, all-reduce waits, the optimizer
/// step) are the unbound program's, read through its repeats.
class BoundProgram : public bp::StraightProgram {
public:
  /// `trace` is the unbound program of pipeline rank `device`; peers are
  /// pipeline ranks too (each data-parallel copy talks among its own).
  BoundProgram(MLIRContext *context, ArrayRef<StageBinding> stages,
               const sched::CommProgram &comm, int device,
               const bp::ProgramTrace &trace)
      : stages(stages), comm(comm),
        names{OperationName(bp::ForwardOp::getOperationName(), context),
              OperationName(bp::BackwardOp::getOperationName(), context),
              OperationName(bp::WeightGradOp::getOperationName(), context),
              OperationName(bp::RecvOp::getOperationName(), context),
              OperationName(bp::SendOp::getOperationName(), context),
              OperationName(bp::LocalCopyOp::getOperationName(), context)} {
    for (const StageBinding &stage : stages) {
      SmallVector<Type> results(stage.outputs);
      results.push_back(bp::SavedType::get(context));
      forwardResults.push_back(std::move(results));
    }
    ArrayRef<sched::CommAction> items = comm.ranks[device];
    // Where each traced step went, and per transfer the values it made
    // available on this rank; per action its outputs.
    std::vector<size_t> fromTrace(trace.size());
    llvm::DenseMap<int, SmallVector<bp::StepOperand>> arrived, produced;
    auto operandsOf = [&](size_t traced) {
      SmallVector<bp::StepOperand, 2> operands;
      for (unsigned n = 0, e = trace[traced].op->getNumOperands(); n < e; ++n)
        operands.push_back({fromTrace[*trace.operandStep(traced, n)], 0});
      // Results are numbered by the defining step's own op.
      for (auto [n, operand] : llvm::enumerate(operands))
        operand.result =
            cast<OpResult>(trace[traced].op->getOperand(n)).getResultNumber();
      return operands;
    };
    int action = -1;
    size_t next = 0; // The next item of the lowered list.
    for (size_t t = 0; t < trace.size(); ++t) {
      Operation *op = trace[t].op;
      if (!isa<bp::ForwardOp, bp::BackwardOp, bp::WeightGradOp,
               bp::AllReduceStartOp>(op)) {
        fromTrace[t] = steps.size();
        steps.push_back({Kind::Kept, t, operandsOf(t)});
        continue;
      }
      ++action;
      for (; next < items.size() && items[next].actionIndex == action; ++next) {
        const sched::CommAction &item = items[next];
        const sched::Transfer *transfer =
            item.transfer >= 0 ? &comm.transfers[item.transfer] : nullptr;
        switch (item.kind) {
        case sched::CommKind::AllReduce:
          fromTrace[t] = steps.size();
          steps.push_back({Kind::Kept, t, operandsOf(t)});
          break;
        case sched::CommKind::Compute: {
          fromTrace[t] = steps.size();
          Step step{Kind::Forward, t};
          if (auto forward = dyn_cast<bp::ForwardOp>(op)) {
            // Training inputs and activations, in the function's order.
            SmallVector<bp::StepOperand, 2> loaded = operandsOf(t);
            ArrayRef<bp::StepOperand> activations = arrived.lookup(action);
            auto input = loaded.begin();
            for (bool isInput :
                 stages[forward.getStage()].forwardOperandIsInput) {
              if (isInput) {
                step.operands.push_back(*input++);
              } else {
                step.operands.push_back(activations.front());
                activations = activations.drop_front();
              }
            }
            for (unsigned r = 0; r < stages[forward.getStage()].outputs.size();
                 ++r)
              produced[action].push_back({steps.size(), r});
          } else {
            // The saved handle, then (a backward) the output gradients.
            size_t forwardStep = operandsOf(t).front().step;
            int stage = isa<bp::BackwardOp>(op)
                            ? cast<bp::BackwardOp>(op).getStage()
                            : cast<bp::WeightGradOp>(op).getStage();
            step.kind =
                isa<bp::BackwardOp>(op) ? Kind::Backward : Kind::WeightGrad;
            step.operands.push_back(
                {forwardStep,
                 static_cast<unsigned>(stages[stage].outputs.size())});
            if (step.kind == Kind::Backward) {
              for (bp::StepOperand grad : arrived.lookup(action))
                step.operands.push_back(grad);
              for (unsigned r = 0; r < stages[stage].gradsOut.size(); ++r)
                produced[action].push_back({steps.size(), r});
            }
          }
          steps.push_back(std::move(step));
          break;
        }
        case sched::CommKind::RecvF:
        case sched::CommKind::RecvB:
          // Every tensor of a hand-off in the batch the library gave it.
          for (unsigned k = 0; k < payload(*transfer).size(); ++k) {
            arrived[transfer->consumerIndex].push_back({steps.size(), 0});
            steps.push_back({Kind::Recv, t, {}, item.transfer, k, item.batch});
          }
          break;
        case sched::CommKind::SendF:
        case sched::CommKind::SendB:
        case sched::CommKind::LocalCopyF:
        case sched::CommKind::LocalCopyB: {
          bool local = transfer->local();
          for (auto [k, value] : llvm::enumerate(produced.lookup(action))) {
            if (local)
              arrived[transfer->consumerIndex].push_back({steps.size(), 0});
            steps.push_back({local ? Kind::Copy : Kind::Send,
                             t,
                             {value},
                             item.transfer,
                             static_cast<unsigned>(k),
                             item.batch});
          }
          break;
        }
        }
      }
    }
    traced.assign(trace.steps().begin(), trace.steps().end());
  }

  size_t size() const override { return steps.size(); }
  OperationName name(size_t i) const override {
    const Step &step = steps[i];
    return step.kind == Kind::Kept ? op(step)->getName()
                                   : names[static_cast<int>(step.kind)];
  }
  void describe(size_t i, std::vector<int64_t> &shape) const override {
    const Step &step = steps[i];
    if (step.kind == Kind::Kept) {
      Operation *kept = op(step);
      for (Type type : kept->getResultTypes())
        shape.push_back(asKey(type.getAsOpaquePointer()));
      if (auto load = dyn_cast<bp::LoadInputOp>(kept))
        shape.push_back(static_cast<int64_t>(load.getKind()));
      return;
    }
    shape.push_back(stage(step));
    if (step.transfer >= 0) {
      const sched::Transfer &t = comm.transfers[step.transfer];
      shape.push_back(t.gradient);
      shape.push_back(step.kind == Kind::Send ? t.dst : t.src);
      shape.push_back(step.index);
    }
  }
  bool repeatable(size_t i) const override {
    const Step &step = steps[i];
    return step.kind != Kind::Kept || isa<bp::LoadInputOp>(op(step));
  }
  std::optional<int64_t> microbatch(size_t i) const override {
    const Step &step = steps[i];
    return bp::microbatchAt(traced[step.traced].op,
                            traced[step.traced].repetition);
  }
  std::optional<int64_t> batch(size_t i) const override {
    const Step &step = steps[i];
    if (step.kind == Kind::Send || step.kind == Kind::Recv)
      return step.batch;
    return std::nullopt;
  }
  ArrayRef<bp::StepOperand> operands(size_t i) const override {
    return steps[i].operands;
  }
  TypeRange resultTypes(size_t i) const override {
    const Step &step = steps[i];
    switch (step.kind) {
    case Kind::Kept:
      return op(step)->getResultTypes();
    case Kind::Forward:
      return forwardResults[stage(step)];
    case Kind::Backward:
      return stages[stage(step)].gradsOut;
    case Kind::Recv:
    case Kind::Copy:
      return TypeRange(payload(comm.transfers[step.transfer]))
          .slice(step.index, 1);
    default:
      return {};
    }
  }

  Operation *build(OpBuilder &b, size_t i, ValueRange operands) const override {
    const Step &step = steps[i];
    Operation *old = op(step);
    Location loc = old->getLoc();
    int64_t microbatch = *this->microbatch(i);
    if (step.kind == Kind::Kept) {
      Operation *copy = b.clone(*old);
      copy->setOperands(operands);
      bp::setRepetition(copy, traced[step.traced].repetition);
      return copy;
    }
    const StageBinding &binding = stages[stage(step)];
    const sched::Transfer *t =
        step.transfer >= 0 ? &comm.transfers[step.transfer] : nullptr;
    auto transferKind = [&] {
      return t->gradient ? bp::TransferKind::Gradient
                         : bp::TransferKind::Activation;
    };
    switch (step.kind) {
    case Kind::Forward:
      return b.create<bp::ForwardOp>(
          loc, binding.outputs, forwardResults[stage(step)].back(),
          FlatSymbolRefAttr::get(binding.forward), operands, stage(step),
          microbatch, /*microbatch_step=*/IntegerAttr());
    case Kind::Backward:
      return b.create<bp::BackwardOp>(
          loc, binding.gradsOut, FlatSymbolRefAttr::get(binding.backward),
          operands.front(), operands.drop_front(), stage(step), microbatch,
          /*microbatch_step=*/IntegerAttr());
    case Kind::WeightGrad:
      return b.create<bp::WeightGradOp>(
          loc, FlatSymbolRefAttr::get(binding.weight), operands.front(),
          stage(step), microbatch, /*microbatch_step=*/IntegerAttr());
    case Kind::Recv:
      return b.create<bp::RecvOp>(
          loc, payload(*t)[step.index], transferKind(), t->src, t->fromStage,
          t->microbatch, b.getI64IntegerAttr(step.batch),
          /*microbatch_step=*/IntegerAttr(), /*batch_step=*/IntegerAttr());
    case Kind::Send:
      return b.create<bp::SendOp>(
          operands.front().getLoc(), transferKind(), operands.front(), t->dst,
          t->fromStage, t->microbatch, b.getI64IntegerAttr(step.batch),
          /*microbatch_step=*/IntegerAttr(), /*batch_step=*/IntegerAttr());
    case Kind::Copy:
      return b.create<bp::LocalCopyOp>(operands.front().getLoc(),
                                       transferKind(), operands.front(),
                                       t->fromStage, t->microbatch,
                                       /*microbatch_step=*/IntegerAttr());
    case Kind::Kept:
      break;
    }
    llvm_unreachable("kept steps are cloned above");
  }

private:
  enum class Kind { Forward, Backward, WeightGrad, Recv, Send, Copy, Kept };
  struct Step {
    Kind kind;
    size_t traced; ///< The unbound program's step it comes from.
    SmallVector<bp::StepOperand, 2> operands = {};
    int transfer = -1;  ///< A transfer: its number in the lowered program.
    unsigned index = 0; ///< A transfer: which tensor of its payload.
    int64_t batch = 0;  ///< A send or receive: its batch.
  };

  static int64_t asKey(const void *p) {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p));
  }
  Operation *op(const Step &step) const { return traced[step.traced].op; }
  int stage(const Step &step) const {
    if (step.transfer >= 0) {
      const sched::Transfer &t = comm.transfers[step.transfer];
      return t.fromStage;
    }
    return llvm::TypeSwitch<Operation *, int>(op(step))
        .Case<bp::ForwardOp, bp::BackwardOp, bp::WeightGradOp>(
            [](auto compute) { return compute.getStage(); });
  }
  /// The tensors a transfer carries: the producer's outputs.
  ArrayRef<Type> payload(const sched::Transfer &t) const {
    return t.gradient ? stages[t.fromStage].gradsOut
                      : stages[t.fromStage].outputs;
  }

  ArrayRef<StageBinding> stages;
  const sched::CommProgram &comm;
  OperationName names[6];
  SmallVector<SmallVector<Type>> forwardResults;
  std::vector<bp::TracedStep> traced;
  std::vector<Step> steps;
};

/// The two programs take the same steps, as CommProgram::format() shows
/// them, in the same batches (transfer numbers may differ), compared
/// without formatting them.
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
          (p2p && (x.peer != y.peer || x.batch != y.batch)))
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
    // Phase 1: check everything the rewrite relies on. Programs are read
    // as the steps they run, repeats or not.
    FailureOr<ProgramsFromIR> read = readProgramsFromIR(module);
    if (failed(read))
      return failure();
    const sched::Schedule *schedule = &read->schedule;
    const std::vector<bp::ProgramTrace> &traces = read->traces;
    SmallVector<bp::ProgramOp> &programs = read->programs;
    FailureOr<sched::World> world = readWorld(module);
    if (failed(world))
      return failure();
    for (const bp::ProgramTrace &trace : traces)
      for (const bp::TracedStep &step : trace.steps())
        if (isa<bp::SendOp, bp::RecvOp, bp::LocalCopyOp>(step.op) ||
            step.op->getAttr("callee"))
          return step.op->emitError()
                 << "is already a transfer or bound; bitpipe-insert-"
                    "transfers runs once, on the unbound programs of "
                    "bitpipe-schedule";
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
    for (const bp::ProgramTrace &trace : traces)
      for (const bp::TracedStep &step : trace.steps())
        if (auto forward = dyn_cast<bp::ForwardOp>(step.op)) {
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

    sched::Result<sched::CommProgram> lowered =
        sched::lowerComms(*schedule, streams);
    if (!lowered)
      return module.emitError()
             << "cannot derive the transfers of the schedule: "
             << lowered.error;

    // Phase 2: rewrite every program: one per pipeline rank, which every
    // data-parallel copy runs among its own ranks (docs/data-parallel.md).
    bp::RerollOptions rolling;
    rolling.loops = loops;
    // In parallel: each rank's program is rewritten in its own op and reads
    // only its own trace and the shared, unchanging lowering.
    auto rewrite = [&](size_t d) -> LogicalResult {
      BoundProgram bound(&getContext(), *stages, *lowered, d, traces[d]);
      // The unbound ops wait aside until the bound program is written;
      // its kept steps (loads, waits, the update) are copies of them.
      Block &body = programs[d].getBody().front();
      Block waiting;
      waiting.getOperations().splice(waiting.end(), body.getOperations());
      FailureOr<bp::RerollStats> written =
          bp::writeProgram(programs[d], bound, rolling);
      for (Operation &op : waiting)
        op.dropAllUses();
      while (!waiting.empty())
        waiting.back().erase();
      return written;
    };
    if (failed(failableParallelForEachN(&getContext(), 0,
                                        world->pipelineDevices, rewrite)))
      return failure();
    module->setAttr(bp::BitPipeDialect::kTransferStreamsAttrName,
                    bp::TransferStreamsAttr::get(&getContext(), streams));

    // The IR is the record from now on: read it back, transfers included,
    // and let the library check it. A failure fails the pass, which
    // discards the rewritten module. A pipeline that verifies at its end
    // skips it (it would check the same programs three times).
    if (!checkResult)
      return success();
    FailureOr<ProgramsFromIR> readBack = readProgramsFromIR(module);
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
        sched::verify(readBack->schedule, comms->program);
    if (!problems.empty())
      return module.emitError()
             << "the programs with their transfers do not verify:\n"
             << sched::formatDiagnostics(problems);
    return success();
  }
};

} // namespace
