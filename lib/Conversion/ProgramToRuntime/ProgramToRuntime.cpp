//===- ProgramToRuntime.cpp - Programs to calls of program.h --------------===//
//
// The compiler's half of runtime/include/bitpipe/program.h. A program is
// already a straight line in the schedule's order; what it leaves implicit
// and the runtime needs explicit is decided here, once, for every rank:
//
//   functions  which stage functions the programs call, numbered;
//   values     a dense id per SSA value of a program;
//   lifetimes  where each tensor value is last used (bp_rt_release);
//   batches    where each batch of transfers ends (bp_rt_end_batch);
//   tags       the MPI tag of each transfer: its position on its channel
//              (sender -> receiver) in the step, modulo 32768, so that both
//              ends compute it alone and agree.
//
// Each rank is planned into a list of calls first (all errors are found
// there), and only then emitted, so that a failing module is left as it
// was. The manifest (Manifest.h) collects what the calls do not say.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/ProgramToRuntime/ProgramToRuntime.h"
#include "bitpipe/Dialect/BitPipe/Programs/VerifyPrograms.h"

#include "Manifest.h"
#include "RankFunction.h"

#include "bitpipe/Conversion/RuntimeAbi/RuntimeAbi.h"
#include "bitpipe/Conversion/Target/StorageType.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/Programs/CostsFromIR.h"
#include "bitpipe/Dialect/BitPipe/Programs/Repeats.h"
#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Support/TensorBytes.h"

#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/base/AtomicFile.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace bitpipe {
#define GEN_PASS_DEF_LOWERPROGRAMTORUNTIME
#include "bitpipe/Conversion/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::bp;
using manifest::FunctionKind;

namespace {

//===----------------------------------------------------------------------===//
// The bubble each rank's program leaves
//===----------------------------------------------------------------------===//

/// Per pipeline rank, the idle share of a step that its program leaves
/// when the stages take their `nn.cost` FLOPs and communication is free:
/// the schedule's own bubble, which a run prints beside what it measures
/// (docs/launching.md, "What a run prints"). Nothing for programs without
/// FLOP costs (hand-written IR), whose prediction would be made up; the
/// programs themselves were verified before.
std::optional<std::vector<double>> predictBubbles(ModuleOp module,
                                                  sched::Transport transport) {
  // A module without costs is no error here: its diagnostics are dropped.
  ScopedDiagnosticHandler quiet(module.getContext(),
                                [](Diagnostic &) { return success(); });
  FailureOr<ProgramsFromIR> programs = readProgramsFromIR(module);
  if (failed(programs))
    return std::nullopt;
  const sched::Schedule *schedule = &programs->schedule;
  FailureOr<IRCommProgram> comms = readCommProgramFromIR(module, *programs);
  if (failed(comms))
    return std::nullopt;
  sched::CostModel base;
  base.transport = transport;
  FailureOr<sched::CostModel> cost =
      costModelFromIR(module, *schedule, base, StageTimes::Flops);
  if (failed(cost))
    return std::nullopt;
  sched::SimulateOptions options;
  options.recordTimeline = false;
  sched::Result<sched::SimResult> sim =
      sched::simulate(*schedule, comms->program, *cost, options);
  if (!sim || sim->deadlocked)
    return std::nullopt;
  std::vector<double> bubbles;
  for (const sched::RankStats &rank : sim->ranks)
    bubbles.push_back(std::clamp(rank.bubbleRatio, 0.0, 1.0));
  return bubbles;
}

//===----------------------------------------------------------------------===//
// The calls of program.h
//===----------------------------------------------------------------------===//

/// A bp_rt_* function; bitpipe/abi/RuntimeCalls.def gives its parameters
/// (the context, then integers). The calls planned are PlannedCall
/// (RankFunction.h).
using RuntimeFn = abi::RuntimeCall;

//===----------------------------------------------------------------------===//
// Functions the programs call
//===----------------------------------------------------------------------===//

/// The kind of function a compute op calls. A backward whose handle a
/// weight_grad also consumes is an input half: the runtime must keep the
/// handle for the weight half.
FunctionKind calleeKind(Operation *op) {
  if (isa<ForwardOp>(op))
    return FunctionKind::Forward;
  if (isa<WeightGradOp>(op))
    return FunctionKind::BackwardWeight;
  Value saved = cast<BackwardOp>(op).getSaved();
  return llvm::any_of(saved.getUsers(),
                      [](Operation *user) { return isa<WeightGradOp>(user); })
             ? FunctionKind::BackwardInput
             : FunctionKind::Backward;
}

FlatSymbolRefAttr calleeOf(Operation *op) {
  return TypeSwitch<Operation *, FlatSymbolRefAttr>(op)
      .Case<ForwardOp, BackwardOp, WeightGradOp>(
          [](auto op) { return op.getCalleeAttr(); })
      .Default([](Operation *) { return FlatSymbolRefAttr(); });
}

int64_t stageOf(Operation *op) {
  return TypeSwitch<Operation *, int64_t>(op)
      .Case<ForwardOp, BackwardOp, WeightGradOp, SendOp, RecvOp, LocalCopyOp>(
          [](auto op) { return op.getStage(); })
      .Default([](Operation *) { return -1; });
}

/// The manifest's functions: every function a compute op of a program
/// calls, ordered by stage, kind and name, and the index of each.
struct FunctionTable {
  std::vector<manifest::StageFunction> functions;
  /// By callee name: the function and its index in `functions`. Looked up
  /// once per compute step, which a symbol lookup in the module (a scan of
  /// its ops) would make quadratic.
  llvm::DenseMap<StringAttr, std::pair<func::FuncOp, int64_t>> byName;
};

/// The bytes of a static tensor type (the manifest's buffers, whose types
/// describeRoles has checked).
int64_t tensorBytes(Type type) {
  std::optional<int64_t> bytes = staticTensorBytes(type);
  assert(bytes && "a buffer is a static tensor whose bytes fit in int64");
  return *bytes;
}

FailureOr<FunctionTable> collectFunctions(ModuleOp module,
                                          ArrayRef<ProgramOp> programs,
                                          TargetKind target,
                                          Precision precision) {
  SymbolTable symbols(module);
  llvm::MapVector<Operation *, manifest::StageFunction> found;
  llvm::DenseMap<Operation *, Operation *> firstUse;
  for (ProgramOp program : programs) {
    for (Operation &op : program.getBody().front()) {
      if (!isa<ForwardOp, BackwardOp, WeightGradOp>(op))
        continue;
      FlatSymbolRefAttr callee = calleeOf(&op);
      if (!callee)
        return op.emitOpError()
               << "has no callee; expected a bound program (run "
                  "bitpipe-insert-transfers first)";
      auto fn = symbols.lookup<func::FuncOp>(callee.getValue());
      if (!fn)
        return op.emitOpError()
               << "calls " << callee << ", which is not a func.func of the "
               << "module";
      manifest::StageFunction entry{fn, calleeKind(&op), stageOf(&op), {}, {}};
      auto [it, inserted] = found.insert({fn, entry});
      if (inserted) {
        firstUse[fn] = &op;
        continue;
      }
      if (it->second.kind == entry.kind && it->second.stage == entry.stage)
        continue;
      InFlightDiagnostic diag =
          op.emitOpError() << "calls " << callee << " as the "
                           << manifest::stringifyFunctionKind(entry.kind)
                           << " of stage " << entry.stage
                           << ", but another op calls it as the "
                           << manifest::stringifyFunctionKind(it->second.kind)
                           << " of stage " << it->second.stage
                           << "; expected one role per function";
      diag.attachNote(firstUse[fn]->getLoc()) << "other call here";
      return diag;
    }
  }

  FunctionTable table;
  for (auto &[op, entry] : found)
    table.functions.push_back(std::move(entry));
  llvm::stable_sort(table.functions, [](const manifest::StageFunction &a,
                                        const manifest::StageFunction &b) {
    return std::make_tuple(a.stage, a.kind, func::FuncOp(a.fn).getSymName()) <
           std::make_tuple(b.stage, b.kind, func::FuncOp(b.fn).getSymName());
  });
  for (auto [i, entry] : llvm::enumerate(table.functions)) {
    if (failed(manifest::describeRoles(entry, target, precision)))
      return failure();
    table.byName[entry.fn.getSymNameAttr()] = {entry.fn,
                                               static_cast<int64_t>(i)};
  }
  return table;
}

/// Walks \p program in order and returns the most forward handles alive at
/// once and the most bytes of their saved results (a handle lives from its
/// forward to the backward, or weight half, that ends it): the memory of
/// activations in flight that the schedule implies, which the runtime
/// measures and compares.
std::pair<int64_t, int64_t> peakSavedActivations(ProgramOp program,
                                                 const FunctionTable &table,
                                                 Precision precision) {
  llvm::DenseMap<Value, int64_t> bytesOf;
  int64_t live = 0, liveBytes = 0, peak = 0, peakBytes = 0;
  auto end = [&](Value saved) {
    --live;
    liveBytes -= bytesOf.lookup(saved);
  };
  program.walk([&](Operation *op) {
    if (auto forward = dyn_cast<ForwardOp>(op)) {
      func::FuncOp callee =
          table.byName.lookup(forward.getCalleeAttr().getAttr()).first;
      int64_t bytes = 0;
      // In the precision the buffers will have (bf16: half the bytes).
      Operation *returned = callee.isExternal()
                                ? nullptr
                                : callee.getBody().front().getTerminator();
      for (unsigned i = 0; i < callee.getNumResults(); ++i)
        if (callee.getResultAttr(i, attr::kSaved))
          bytes += tensorBytes(
              returned ? storageType(returned->getOperand(i), precision)
                       : storageType(callee.getResultTypes()[i],
                                     /*parameterGradient=*/false, precision));
      bytesOf[forward.getSaved()] = bytes;
      ++live;
      liveBytes += bytes;
      peak = std::max(peak, live);
      peakBytes = std::max(peakBytes, liveBytes);
    } else if (auto weight = dyn_cast<WeightGradOp>(op)) {
      end(weight.getSaved());
    } else if (auto backward = dyn_cast<BackwardOp>(op)) {
      if (calleeKind(op) == FunctionKind::Backward)
        end(backward.getSaved());
    }
  });
  return {peak, peakBytes};
}

//===----------------------------------------------------------------------===//
// Planning a rank
//===----------------------------------------------------------------------===//

int64_t elementCount(Type type) {
  return cast<ShapedType>(type).getNumElements();
}

/// Lowers one program to a list of calls, or fails with an error at the
/// op that does not fit program.h.
class RankPlanner {
public:
  RankPlanner(ProgramOp program, const FunctionTable &table)
      : program(program), table(table) {}

  LogicalResult plan();

  SmallVector<PlannedCall> calls;
  int64_t numValues = 0;
  /// The forward functions the rank calls (their parameters are its own).
  llvm::SetVector<func::FuncOp> forwards;
  /// The all-reduce buckets in `bucket` order.
  SmallVector<AllReduceStartOp> buckets;

private:
  LogicalResult planOp(Operation &op);
  LogicalResult planTransfer(Operation *op, RuntimeFn fn, TransferKind kind,
                             Value value, int64_t peer, int64_t stage,
                             int64_t microbatch, std::optional<int64_t> batch);
  int64_t functionIndex(Operation *op, FlatSymbolRefAttr callee) const;
  void call(Operation *op, RuntimeFn fn, ArrayRef<int64_t> args) {
    // The context and then one integer per argument, as RuntimeCalls.def
    // says; anything else is a bug here, not in the input.
    if (args.size() + 1 != abi::signatureOf(fn).params.size())
      llvm::report_fatal_error(llvm::Twine("bitpipe: internal error: ") +
                               abi::signatureOf(fn).name + " planned with " +
                               llvm::Twine(args.size()) + " arguments");
    calls.push_back({fn, SmallVector<int64_t, 6>(args), op->getLoc()});
  }
  int64_t id(Value value) const { return ids.lookup(value); }
  int64_t idOrNone(ValueRange values, unsigned i) const {
    return i < values.size() ? id(values[i]) : -1;
  }

  ProgramOp program;
  const FunctionTable &table;
  llvm::DenseMap<Value, int64_t> ids;
  /// The tensor values to release after each op, in id order.
  llvm::DenseMap<Operation *, SmallVector<int64_t>> releases;
  /// The last transfer of each batch, and the batch it ends.
  llvm::DenseMap<Operation *, int64_t> batchEnds;
  /// (sends?, peer, gradient?, stage, micro-batch) of the transfers seen,
  /// to reject a repeated one.
  std::map<std::tuple<bool, int64_t, bool, int64_t, int64_t>, Operation *>
      channelTransfers;
  /// (sends?, peer) -> transfers posted on that channel so far.
  std::map<std::pair<bool, int64_t>, int64_t> channelCount;
  /// The all-reduce starts by bucket number.
  std::map<int64_t, AllReduceStartOp> bucketOps;
};

LogicalResult RankPlanner::plan() {
  Block &body = program.getBody().front();

  // Ids in program order; then, per tensor value, the op after which it is
  // dead: its last user, or its definition when nothing reads it.
  for (Operation &op : body)
    for (Value result : op.getResults())
      ids[result] = numValues++;
  llvm::DenseMap<Value, Operation *> lastUse;
  for (Operation &op : body)
    for (Value operand : op.getOperands())
      lastUse[operand] = &op;
  for (Operation &op : body)
    for (Value result : op.getResults())
      if (isa<RankedTensorType>(result.getType())) {
        Operation *after = lastUse.lookup(result);
        releases[after ? after : &op].push_back(id(result));
      }
  for (auto &[op, values] : releases)
    llvm::sort(values);

  // The last transfer of each batch (batches are contiguous and grow: the
  // program verifier checks it).
  std::map<int64_t, Operation *> lastOfBatch;
  for (Operation &op : body) {
    std::optional<int64_t> batch;
    if (auto send = dyn_cast<SendOp>(op))
      batch = send.getBatch();
    else if (auto recv = dyn_cast<RecvOp>(op))
      batch = recv.getBatch();
    if (batch)
      lastOfBatch[*batch] = &op;
  }
  for (auto [batch, op] : lastOfBatch)
    batchEnds[op] = batch;

  for (Operation &op : body) {
    if (failed(planOp(op)))
      return failure();
    if (auto it = batchEnds.find(&op); it != batchEnds.end())
      call(&op, RuntimeFn::bp_rt_end_batch, {it->second});
    for (int64_t value : releases.lookup(&op))
      call(&op, RuntimeFn::bp_rt_release, {value});
  }

  // Buckets are numbered 0..n-1 in start order; the manifest lists them by
  // number and bp_rt_allreduce_start names them so.
  for (auto [i, entry] : llvm::enumerate(bucketOps)) {
    if (entry.first != static_cast<int64_t>(i))
      return entry.second.emitOpError()
             << "is bucket " << entry.first << ", but program @"
             << program.getSymName() << " has no bucket " << i
             << "; expected the buckets of a rank numbered 0, 1, ... once "
                "each";
    buckets.push_back(entry.second);
  }
  return success();
}

/// The callee's index in the manifest (collectFunctions has seen every
/// compute op, so it is there).
int64_t RankPlanner::functionIndex(Operation *op,
                                   FlatSymbolRefAttr callee) const {
  return table.byName.lookup(callee.getAttr()).second;
}

LogicalResult RankPlanner::planOp(Operation &op) {
  return TypeSwitch<Operation *, LogicalResult>(&op)
      .Case([&](LoadInputOp load) {
        int64_t kind = load.getKind() == InputKind::Tokens ? BP_INPUT_TOKENS
                                                           : BP_INPUT_LABELS;
        call(load, RuntimeFn::bp_rt_load_input,
             {id(load.getResult()), kind, load.getMicrobatch(),
              elementCount(load.getType())});
        return success();
      })
      .Case([&](ForwardOp forward) -> LogicalResult {
        // program.h passes the bound arguments as in0, in1 and the bound
        // output as out0: enough for a transformer stage (activation or
        // tokens, plus labels on the loss stage; one output).
        if (forward.getInputs().size() > 2)
          return forward.emitOpError()
                 << "of stage " << forward.getStage() << " passes "
                 << forward.getInputs().size()
                 << " bound inputs; expected at most 2, the in0 and in1 of "
                    "bp_rt_forward";
        if (forward.getOutputs().size() > 1)
          return forward.emitOpError()
                 << "of stage " << forward.getStage() << " returns "
                 << forward.getOutputs().size()
                 << " bound outputs; expected at most 1, the out0 of "
                    "bp_rt_forward";
        int64_t fn = functionIndex(forward, forward.getCalleeAttr());
        forwards.insert(table.functions[fn].fn);
        call(forward, RuntimeFn::bp_rt_forward,
             {fn, forward.getMicrobatch(), idOrNone(forward.getInputs(), 0),
              idOrNone(forward.getInputs(), 1),
              idOrNone(forward.getOutputs(), 0), id(forward.getSaved())});
        return success();
      })
      .Case([&](BackwardOp backward) -> LogicalResult {
        if (backward.getGrads().size() > 1)
          return backward.emitOpError()
                 << "of stage " << backward.getStage() << " passes "
                 << backward.getGrads().size()
                 << " output gradients; expected at most 1, the grad0 of "
                    "bp_rt_backward";
        if (backward.getOutputs().size() > 1)
          return backward.emitOpError()
                 << "of stage " << backward.getStage() << " returns "
                 << backward.getOutputs().size()
                 << " input gradients; expected at most 1, the out0 of "
                    "bp_rt_backward";
        call(backward, RuntimeFn::bp_rt_backward,
             {functionIndex(backward, backward.getCalleeAttr()),
              backward.getMicrobatch(), id(backward.getSaved()),
              idOrNone(backward.getGrads(), 0),
              idOrNone(backward.getOutputs(), 0)});
        return success();
      })
      .Case([&](WeightGradOp weight) {
        call(weight, RuntimeFn::bp_rt_weight_grad,
             {functionIndex(weight, weight.getCalleeAttr()),
              weight.getMicrobatch(), id(weight.getSaved())});
        return success();
      })
      .Case([&](SendOp send) {
        return planTransfer(send, RuntimeFn::bp_rt_send, send.getKind(),
                            send.getValue(), send.getPeer(), send.getStage(),
                            send.getMicrobatch(), send.getBatch());
      })
      .Case([&](RecvOp recv) {
        return planTransfer(recv, RuntimeFn::bp_rt_recv, recv.getKind(),
                            recv.getResult(), recv.getPeer(), recv.getStage(),
                            recv.getMicrobatch(), recv.getBatch());
      })
      .Case([&](LocalCopyOp copy) {
        call(copy, RuntimeFn::bp_rt_local_copy,
             {id(copy.getValue()), id(copy.getResult())});
        return success();
      })
      .Case([&](AllReduceStartOp start) -> LogicalResult {
        if (!start.isBucketed())
          return start.emitOpError()
                 << "is a schedule marker without gradients; expected the "
                    "bucketed form (run bitpipe-insert-allreduce first)";
        auto [it, inserted] = bucketOps.try_emplace(start.getBucket(), start);
        if (!inserted) {
          InFlightDiagnostic diag =
              start.emitOpError()
              << "is bucket " << start.getBucket()
              << " a second time; expected the buckets of a rank numbered "
                 "0, 1, ... once each";
          diag.attachNote(it->second.getLoc()) << "first bucket here";
          return diag;
        }
        call(start, RuntimeFn::bp_rt_allreduce_start,
             {start.getBucket(), id(start.getToken())});
        return success();
      })
      .Case([&](AllReduceWaitOp wait) {
        call(wait, RuntimeFn::bp_rt_allreduce_wait, {id(wait.getToken())});
        return success();
      })
      .Case([&](OptimizerStepOp step) {
        // Without a count the gradients are taken as they are: -1, "none".
        call(step, RuntimeFn::bp_rt_optimizer_step,
             {step.getMicrobatches().value_or(-1)});
        return success();
      })
      .Default([](Operation *other) {
        return other->emitOpError()
               << "has no lowering to the calls of bitpipe/program.h";
      });
}

LogicalResult RankPlanner::planTransfer(Operation *op, RuntimeFn fn,
                                        TransferKind kind, Value value,
                                        int64_t peer, int64_t stage,
                                        int64_t microbatch,
                                        std::optional<int64_t> batch) {
  if (!batch)
    return op->emitOpError()
           << "has no transfer batch; expected 'batch', which "
              "bitpipe-insert-transfers assigns, so that the runtime can "
              "post a batch before it waits";
  bool sends = fn == RuntimeFn::bp_rt_send;
  auto [it, inserted] = channelTransfers.try_emplace(
      {sends, peer, kind == TransferKind::Gradient, stage, microbatch}, op);
  if (!inserted) {
    InFlightDiagnostic diag =
        op->emitOpError() << (sends ? "sends to" : "receives from") << " rank "
                          << peer << " the "
                          << (kind == TransferKind::Gradient ? "gradient"
                                                             : "activation")
                          << " of stage " << stage << " micro-batch "
                          << microbatch
                          << " a second time in the step; expected one "
                             "transfer of each on a channel";
    diag.attachNote(it->second->getLoc()) << "first transfer here";
    return diag;
  }
  // The k-th transfer on a channel, at both ends: bitpipe-verify has
  // checked that sender and receiver order every channel alike. MPI keeps
  // the messages of one (sender, receiver, tag) in order, so the modulo
  // only reuses a tag 32768 transfers later on the same channel.
  int64_t tag = channelCount[{sends, peer}]++ % (kMaxTransferTag + 1);
  call(op, fn, {id(value), elementCount(value.getType()), peer, tag});
  return success();
}

//===----------------------------------------------------------------------===//
// Emitting
//===----------------------------------------------------------------------===//

/// `@bitpipe_manifest` (the text, not NUL-terminated) and
/// `@bitpipe_manifest_size`, constant and external, at the module's end
/// (ModelSymbols.def).
void emitManifestGlobals(ModuleOp module, StringRef text) {
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  const abi::BytesSymbols &symbols =
      abi::symbolsOf(abi::ModelBytes::bitpipe_manifest);
  auto bytes = LLVM::LLVMArrayType::get(b.getI8Type(), text.size());
  b.create<LLVM::GlobalOp>(module.getLoc(), bytes, /*isConstant=*/true,
                           LLVM::Linkage::External, symbols.data,
                           b.getStringAttr(text));
  Type sizeType = abi::typeOf(symbols.sizeKind, b.getContext());
  b.create<LLVM::GlobalOp>(module.getLoc(), sizeType,
                           /*isConstant=*/true, LLVM::Linkage::External,
                           symbols.size,
                           b.getIntegerAttr(sizeType, text.size()));
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct LowerProgramToRuntimePass
    : bitpipe::impl::LowerProgramToRuntimeBase<LowerProgramToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(lower()))
      signalPassFailure();
  }

  LogicalResult lower();
  /// The programs by pipeline rank, which every data-parallel copy runs.
  FailureOr<SmallVector<ProgramOp>> collectPrograms(const sched::World &world);
  LogicalResult readSchedule(const sched::World &world,
                             manifest::Manifest &manifest);
  LogicalResult writeManifestFile(StringRef text);
};

FailureOr<SmallVector<ProgramOp>>
LowerProgramToRuntimePass::collectPrograms(const sched::World &world) {
  ModuleOp module = getOperation();
  SmallVector<ProgramOp> byRank(world.pipelineDevices);
  for (auto program : module.getOps<ProgramOp>()) {
    if (program.getRank() >= world.pipelineDevices)
      return program.emitError()
             << "has rank " << program.getRank()
             << ", but a module holds one program per pipeline rank (0.."
             << world.pipelineDevices - 1
             << "), which every data-parallel copy runs";
    byRank[program.getRank()] = program;
  }
  for (auto [rank, program] : llvm::enumerate(byRank))
    if (!program)
      return module.emitError()
             << "has no bitpipe.program for pipeline rank " << rank
             << "; expected one per device of the placement's "
             << world.pipelineDevices << ", run bitpipe-pipeline first";
  return byRank;
}

LogicalResult
LowerProgramToRuntimePass::readSchedule(const sched::World &world,
                                        manifest::Manifest &manifest) {
  FailureOr<ScheduleAttr> schedule = readScheduleAttr(getOperation());
  if (failed(schedule))
    return failure();
  manifest::Schedule &s = manifest.schedule;
  s.name = schedule->getName().str();
  s.microbatches = schedule->getMicrobatches();
  s.devices = world.pipelineDevices;
  s.dataParallel = world.dataParallel;
  s.worldSize = world.size();
  // The layout's numbering is program.h's (sched/Transport.cpp checks).
  s.transferStreams =
      static_cast<bp_transfer_streams>(readTransferStreams(getOperation()));
  // So is the sync scheme's (sched/GradientSync.cpp checks).
  s.gradientSync =
      static_cast<bp_gradient_sync>(readGradientSync(getOperation()));
  // Every channel a send crosses, whichever layout: the runtime connects
  // exactly these at start-up.
  std::set<std::pair<int64_t, int64_t>> channels;
  for (auto program : getOperation().getOps<ProgramOp>())
    program.walk([&](SendOp send) {
      channels.insert({program.getRank(), send.getPeer()});
    });
  s.channels.assign(channels.begin(), channels.end());
  return success();
}

/// Written as every tool writes its outputs (docs/files.md): replaced only
/// by a complete file, never through a link or over a directory.
LogicalResult LowerProgramToRuntimePass::writeManifestFile(StringRef text) {
  std::string content = (text + "\n").str();
  ::bitpipe::base::Status written = ::bitpipe::base::writeFileAtomically(
      manifestFile, content.data(), content.size());
  if (!written.isOk())
    return getOperation().emitError()
           << "cannot write the manifest to '" << manifestFile
           << "': " << written.message();
  return success();
}

LogicalResult LowerProgramToRuntimePass::lower() {
  ModuleOp module = getOperation();
  if (module.getOps<ProgramOp>().empty())
    return module.emitError()
           << "has no bitpipe.program; expected the per-rank programs of "
              "bitpipe-pipeline";

  FailureOr<sched::World> world = readWorld(module);
  if (failed(world))
    return failure();
  FailureOr<SmallVector<ProgramOp>> programs = collectPrograms(*world);
  if (failed(programs))
    return failure();
  // The calls are planned step by step, so repeats are written out here;
  // the rank functions roll the planned calls into loops again
  // (RankFunction.h, docs/repetition.md).
  for (ProgramOp program : *programs)
    unrollRepeats(program);

  manifest::Manifest manifest;
  if (!supportsPrecision(target, precision))
    return module.emitError()
           << "precision=" << stringifyPrecision(precision)
           << " needs target=" << stringifyTargetKind(TargetKind::CUDA)
           << "; the " << stringifyTargetKind(target)
           << " runtime has fp32 kernels only";
  // Target.cpp checks that both enums number their words as program.h.
  manifest.target.name = static_cast<bp_target_kind>(TargetKind(target));
  manifest.target.precision = static_cast<bp_precision>(Precision(precision));
  if (failed(readSchedule(*world, manifest)))
    return failure();
  func::FuncOp model;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr(nn::attr::kModel))
      model = fn;
  if (!model)
    return module.emitError()
           << "has no function with '" << nn::attr::kModel
           << "'; expected the model function "
              "of bitpipe-import, whose configuration the manifest records";
  if (failed(manifest::readModel(model, manifest.model)))
    return failure();

  FailureOr<FunctionTable> table =
      collectFunctions(module, *programs, target, precision);
  if (failed(table))
    return failure();
  FailureOr<std::vector<manifest::Param>> params =
      manifest::collectParams(table->functions);
  if (failed(params))
    return failure();
  manifest.params = std::move(*params);
  llvm::StringSet<> known;
  for (const manifest::Param &p : manifest.params)
    known.insert(p.name);

  // Plan every rank before changing anything.
  std::vector<RankPlanner> planners;
  // Reserved: a planner holds its rank's calls, and growing the vector
  // would copy every planner made so far.
  planners.reserve(programs->size());
  llvm::MapVector<ArrayRef<int64_t>, int64_t> groups;
  for (ProgramOp program : *programs) {
    RankPlanner &planner = planners.emplace_back(program, *table);
    if (failed(planner.plan()))
      return failure();
    manifest::Rank rank;
    rank.numValues = planner.numValues;
    auto [peakHandles, peakSavedBytes] =
        peakSavedActivations(program, *table, precision);
    rank.peakHandles = peakHandles;
    rank.peakSavedBytes = peakSavedBytes;
    llvm::StringSet<> held;
    for (func::FuncOp fn : planner.forwards)
      for (unsigned i = 0; i < fn.getNumArguments(); ++i)
        if (auto name = fn.getArgAttrOfType<StringAttr>(i, nn::attr::kParam))
          held.insert(name.getValue());
    for (const manifest::Param &p : manifest.params)
      if (held.contains(p.name))
        rank.params.push_back(p.name);
    for (AllReduceStartOp start : planner.buckets) {
      manifest::Bucket bucket;
      bucket.group =
          groups.insert({start.getGroup(), groups.size()}).first->second;
      for (StringRef grad : start.getGrads()->getAsValueRange<StringAttr>()) {
        if (!held.contains(grad))
          return start.emitOpError()
                 << "carries the gradient of \"" << grad
                 << "\", which no forward of rank " << program.getRank()
                 << " takes; expected gradients of the rank's parameters";
        bucket.params.push_back(grad.str());
      }
      rank.buckets.push_back(std::move(bucket));
    }
    manifest.ranks.push_back(std::move(rank));
  }
  for (auto &[group, index] : groups)
    manifest.groups.emplace_back(group.begin(), group.end());
  for (const manifest::StageFunction &f : table->functions)
    manifest.functions.push_back(manifest::describeFunction(f));

  // Still nothing changed: programs that bitpipe-verify rejects (an
  // unmatched transfer, a deadlock) must not become an executable that
  // hangs until the communication timeout (docs/models.md, "Limits").
  // The CUDA target issues the transfers under NCCL's rules; a CPU
  // program is checked under them too when asked (its runtime may be the
  // NCCL communicator over an MPI stand-in: docs/nccl-transfers.md).
  sched::Transport transport = target == TargetKind::CUDA || ncclRules
                                   ? sched::Transport::Nccl
                                   : sched::Transport::Mpi;
  if (failed(verifyRankPrograms(module, /*requireAllReduce=*/true, transport)))
    return failure();
  if (std::optional<std::vector<double>> bubbles =
          predictBubbles(module, transport))
    for (auto [program, rank] : llvm::zip(*programs, manifest.ranks))
      if (size_t r = program.getRank(); r < bubbles->size())
        rank.predictedBubble = (*bubbles)[r];

  std::string text = manifest::writeManifest(manifest);
  if (!manifestFile.empty() && failed(writeManifestFile(text)))
    return failure();

  // Rewrite: rank functions in place of the programs, the manifest, the
  // entry points for bitpipe-emit-entry-points.
  MLIRContext *ctx = module.getContext();
  SmallVector<Attribute> functions, ranks;
  for (const manifest::StageFunction &f : table->functions)
    functions.push_back(FlatSymbolRefAttr::get(f.fn));
  for (auto [program, planner] : llvm::zip(*programs, planners)) {
    func::FuncOp fn = emitRankFunction(program, planner.calls, loops);
    ranks.push_back(FlatSymbolRefAttr::get(fn));
  }
  emitManifestGlobals(module, text);
  module->setAttr(kEntryPointsAttrName,
                  DictionaryAttr::get(
                      ctx, {NamedAttribute(StringAttr::get(ctx, "functions"),
                                           ArrayAttr::get(ctx, functions)),
                            NamedAttribute(StringAttr::get(ctx, "ranks"),
                                           ArrayAttr::get(ctx, ranks))}));

  // What the programs were and what described them is in the manifest now;
  // the model function would only call stage functions nothing else runs.
  // The partition's record goes too: an LLVM module carries no bitpipe
  // attribute, so that any tool reads it without the dialect.
  for (ProgramOp program : *programs)
    program.erase();
  model.erase();
  for (StringRef name :
       {BitPipeDialect::kPlacementAttrName, BitPipeDialect::kScheduleAttrName,
        BitPipeDialect::kTransferStreamsAttrName,
        BitPipeDialect::kGradientSyncAttrName,
        BitPipeDialect::kWorldSizeAttrName,
        BitPipeDialect::kDataParallelAttrName, ::bitpipe::attr::kPartition})
    module->removeAttr(name);
  return success();
}

} // namespace
