//===- BitPipeOps.cpp - bitpipe operations: verifiers ---------------------===//
//
// Verifiers are local: each looks at the op, its program and the module's
// attributes. Whole-schedule properties (every send has its recv, no
// deadlock) need all programs at once and belong to the schedule verifier.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/AttrDictPrinting.h"
#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace bitpipe::bp;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// `[4, 7]`, as the assembly format prints a list.
static std::string formatList(ArrayRef<int64_t> values) {
  return "[" +
         llvm::join(llvm::map_range(
                        values, [](int64_t v) { return std::to_string(v); }),
                    ", ") +
         "]";
}

static bool isSortedAndUnique(ArrayRef<int64_t> values) {
  for (size_t i = 1; i < values.size(); ++i)
    if (values[i - 1] >= values[i])
      return false;
  return true;
}

/// The `bitpipe.world_size` of the module holding `program`, if it has one.
static std::optional<int64_t> getWorldSize(ProgramOp program) {
  Operation *parent = program->getParentOp();
  if (!parent)
    return std::nullopt;
  auto size =
      parent->getAttrOfType<IntegerAttr>(BitPipeDialect::kWorldSizeAttrName);
  if (!size)
    return std::nullopt;
  return size.getInt();
}

/// The `bitpipe.data_parallel` of the module holding `program` (1 when
/// absent).
static int64_t getDataParallel(ProgramOp program) {
  Operation *parent = program->getParentOp();
  auto copies = parent ? parent->getAttrOfType<IntegerAttr>(
                             BitPipeDialect::kDataParallelAttrName)
                       : IntegerAttr();
  return copies ? copies.getInt() : 1;
}

/// Checks that `peer` is another rank of the world.
static LogicalResult verifyPeer(Operation *op, ProgramOp program, int64_t peer,
                                StringRef action) {
  if (peer == program.getRank())
    return op->emitOpError()
           << action << " its own rank " << peer
           << "; expected another rank (use bitpipe.local_copy between "
              "stages of one rank)";
  if (std::optional<int64_t> worldSize = getWorldSize(program);
      worldSize && peer >= *worldSize)
    return op->emitOpError()
           << action << " rank " << peer
           << ", expected a rank below bitpipe.world_size = " << *worldSize;
  return success();
}

//===----------------------------------------------------------------------===//
// Binding rule: a callee's signature filtered by role
//===----------------------------------------------------------------------===//

/// The attributes that make an argument stage state for `role`: the op does
/// not pass it, the runtime binds it (parameters; and the dropout key,
/// isRuntimeInput) or keeps it behind the `!bitpipe.saved` handle
/// (everything else).
static ArrayRef<StringLiteral> stateArgRoles(CalleeRole callee) {
  static constexpr StringLiteral forward[] = {role::kParam};
  static constexpr StringLiteral backward[] = {role::kParam, role::kInput,
                                               role::kForwardArg, role::kSaved,
                                               role::kStash};
  // The weight half also reads the output gradients the input half got.
  static constexpr StringLiteral weight[] = {
      role::kParam, role::kInput, role::kForwardArg,
      role::kSaved, role::kStash, role::kGradOfResult};
  switch (callee) {
  case CalleeRole::Forward:
    return forward;
  case CalleeRole::Backward:
    return backward;
  case CalleeRole::WeightGrad:
    return weight;
  }
  llvm_unreachable("unknown callee role");
}

/// Same for results: saved values (forward), parameter gradients and the
/// stash for the weight half (backward), parameter gradients (weight).
static ArrayRef<StringLiteral> stateResultRoles(CalleeRole callee) {
  static constexpr StringLiteral forward[] = {role::kSaved};
  static constexpr StringLiteral backward[] = {role::kParam, role::kStash};
  static constexpr StringLiteral weight[] = {role::kParam};
  switch (callee) {
  case CalleeRole::Forward:
    return forward;
  case CalleeRole::Backward:
    return backward;
  case CalleeRole::WeightGrad:
    return weight;
  }
  llvm_unreachable("unknown callee role");
}

static bool hasAnyOf(DictionaryAttr attrs, ArrayRef<StringLiteral> names) {
  return attrs && llvm::any_of(names, [&](StringLiteral name) {
           return attrs.contains(name);
         });
}

/// A training input the runtime passes by itself, as it passes parameters:
/// the micro-batch's dropout key (program.h, bp_rt_forward), a function of
/// the micro-batch alone, so no program loads it.
static bool isRuntimeInput(DictionaryAttr attrs) {
  auto input = attrs ? attrs.getAs<StringAttr>(role::kInput) : StringAttr();
  return input && input.getValue() == bitpipe::nn::attr::kDropoutKey;
}

SmallVector<unsigned> bitpipe::bp::getBoundArguments(FunctionOpInterface fn,
                                                     CalleeRole role) {
  SmallVector<unsigned> kept;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i) {
    DictionaryAttr attrs = fn.getArgAttrDict(i);
    if (!hasAnyOf(attrs, stateArgRoles(role)) && !isRuntimeInput(attrs))
      kept.push_back(i);
  }
  return kept;
}

SmallVector<unsigned> bitpipe::bp::getBoundResults(FunctionOpInterface fn,
                                                   CalleeRole role) {
  SmallVector<unsigned> kept;
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i)
    if (!hasAnyOf(fn.getResultAttrDict(i), stateResultRoles(role)))
      kept.push_back(i);
  return kept;
}

FunctionType bitpipe::bp::getBoundType(FunctionOpInterface fn,
                                       CalleeRole role) {
  SmallVector<Type> inputs, results;
  for (unsigned i : getBoundArguments(fn, role))
    inputs.push_back(fn.getArgumentTypes()[i]);
  for (unsigned i : getBoundResults(fn, role))
    results.push_back(fn.getResultTypes()[i]);
  return FunctionType::get(fn->getContext(), inputs, results);
}

static StringRef describeCallee(CalleeRole role) {
  switch (role) {
  case CalleeRole::Forward:
    return "stage function";
  case CalleeRole::Backward:
    return "backward function";
  case CalleeRole::WeightGrad:
    return "weight-gradient function";
  }
  llvm_unreachable("unknown callee role");
}

/// The stage a callee says it belongs to: `bitpipe.stage` of a stage
/// function, or of the forward a backward names in `bitpipe.backward_of`.
/// None for declarations that do not say (hand-written tests).
static std::optional<int64_t>
getCalleeStage(Operation *op, FunctionOpInterface fn, CalleeRole role,
               SymbolTableCollection &symbolTable) {
  Operation *stageFn = fn;
  if (role != CalleeRole::Forward) {
    auto of = fn->getAttrOfType<FlatSymbolRefAttr>(bitpipe::attr::kBackwardOf);
    if (!of)
      return std::nullopt;
    stageFn = symbolTable.lookupNearestSymbolFrom(op, of);
    if (!stageFn)
      return std::nullopt;
  }
  auto stage = stageFn->getAttrOfType<IntegerAttr>(bitpipe::attr::kStage);
  if (!stage)
    return std::nullopt;
  return stage.getInt();
}

namespace {
/// What the binding rule needs to know of one callee in one role. A program
/// of N micro-batches calls each stage function N times, so the program
/// looks these up once per callee (ProgramOp::verifySymbolUses).
struct CalleeFacts {
  /// Null when the module has no function of that name.
  FunctionOpInterface fn;
  /// The stage the function says it belongs to (getCalleeStage).
  std::optional<int64_t> stage;
  /// Its type filtered by role (getBoundType).
  FunctionType bound;
};
} // namespace

static CalleeFacts getCalleeFacts(Operation *op, FlatSymbolRefAttr callee,
                                  CalleeRole role,
                                  SymbolTableCollection &symbolTable) {
  CalleeFacts facts;
  facts.fn =
      symbolTable.lookupNearestSymbolFrom<FunctionOpInterface>(op, callee);
  if (!facts.fn)
    return facts;
  facts.stage = getCalleeStage(op, facts.fn, role, symbolTable);
  facts.bound = getBoundType(facts.fn, role);
  return facts;
}

/// Checks that `callee` names a function of `stage` whose type, filtered by
/// `role`, is `inputs -> results` (the binding rule of bitpipe.forward).
static LogicalResult verifyStageCallee(Operation *op, FlatSymbolRefAttr callee,
                                       TypeRange inputs, TypeRange results,
                                       CalleeRole role, int64_t stage,
                                       const CalleeFacts &facts) {
  FunctionOpInterface fn = facts.fn;
  if (!fn)
    return op->emitOpError()
           << "expects " << callee << " to be a " << describeCallee(role)
           << ", but the module has no function of that "
              "name";
  if (facts.stage && *facts.stage != stage) {
    InFlightDiagnostic diag = op->emitOpError()
                              << "of stage " << stage << " calls " << callee
                              << ", a " << describeCallee(role) << " of stage "
                              << *facts.stage;
    diag.attachNote(fn.getLoc()) << describeCallee(role) << " declared here";
    return diag;
  }
  FunctionType bound = facts.bound;
  if (llvm::equal(bound.getInputs(), inputs) &&
      llvm::equal(bound.getResults(), results))
    return success();
  auto expected = FunctionType::get(op->getContext(), inputs, results);
  InFlightDiagnostic diag = op->emitOpError()
                            << "expects " << describeCallee(role) << " "
                            << callee << " of type " << expected;
  if (bound != fn.getFunctionType())
    diag << " once stage state is left out, but it has type " << bound
         << " (in full " << fn.getFunctionType() << ")";
  else
    diag << ", but it has type " << bound;
  diag.attachNote(fn.getLoc()) << describeCallee(role) << " declared here";
  return diag;
}

/// Checks that `saved` was kept by the forward of the same stage and
/// micro-batch, so a backward cannot stand before (or apart from) its
/// forward.
/// True when `value` reaches its user through a `bitpipe.repeat` (a body
/// argument or a repeat's result): which forward defined it depends on the
/// repetition, so the program's verifier checks it on the trace.
static bool isCarried(Value value) {
  if (auto arg = dyn_cast<BlockArgument>(value))
    return isa<RepeatOp>(arg.getOwner()->getParentOp());
  return isa_and_nonnull<RepeatOp>(value.getDefiningOp());
}

static LogicalResult verifySavedSource(Operation *op, Value saved,
                                       int64_t stage, int64_t microbatch,
                                       std::optional<int64_t> microbatchStep) {
  if (isCarried(saved))
    return success();
  auto forward = saved.getDefiningOp<ForwardOp>();
  if (!forward)
    return op->emitOpError() << "expects its !bitpipe.saved operand to be "
                                "produced by a bitpipe.forward";
  // In one repeat body both advance together; a forward outside the
  // repeat would be consumed once per repetition.
  if (forward->getBlock() != op->getBlock())
    return op->emitOpError()
           << "uses the saved state of a forward outside its bitpipe.repeat "
              "in every repetition; expected it carried in as a body "
              "argument";
  if (forward.getStage() == stage && forward.getMicrobatch() == microbatch &&
      forward.getMicrobatchStep().value_or(0) == microbatchStep.value_or(0))
    return success();
  InFlightDiagnostic diag =
      op->emitOpError() << "of stage " << stage << " micro-batch " << microbatch
                        << " expects the saved state of the same stage and "
                           "micro-batch, but it comes from the forward of "
                           "stage "
                        << forward.getStage() << " micro-batch "
                        << forward.getMicrobatch();
  diag.attachNote(forward.getLoc()) << "forward here";
  return diag;
}

/// `custom<Kind>`: an enum attribute as a bare keyword, `activation`.
template <typename EnumAttrT>
static ParseResult parseKind(OpAsmParser &parser, EnumAttrT &attr) {
  using EnumT = decltype(std::declval<EnumAttrT>().getValue());
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<EnumT> value = symbolizeEnum<EnumT>(keyword);
  if (!value)
    return parser.emitError(loc) << "unknown kind '" << keyword << "'";
  attr = EnumAttrT::get(parser.getContext(), *value);
  return success();
}

template <typename EnumAttrT>
static void printKind(OpAsmPrinter &printer, Operation *, EnumAttrT attr) {
  printer << stringifyEnum(attr.getValue());
}

/// Default SSA names that carry the stage and micro-batch: `%act_s3_m2`.
static std::string resultName(StringRef prefix, int64_t stage,
                              int64_t microbatch) {
  return (prefix + "_s" + Twine(stage) + "_m" + Twine(microbatch)).str();
}

static StringRef transferPrefix(TransferKind kind) {
  return kind == TransferKind::Activation ? "act" : "grad";
}

//===----------------------------------------------------------------------===//
// ProgramOp
//===----------------------------------------------------------------------===//

void ProgramOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                      int64_t rank) {
  state.addAttribute(getSymNameAttrName(state.name),
                     builder.getStringAttr(name));
  state.addAttribute(getRankAttrName(state.name),
                     builder.getI64IntegerAttr(rank));
  state.addRegion()->emplaceBlock();
}

StringRef ProgramOp::getDefaultDialect() {
  return BitPipeDialect::getDialectNamespace();
}

/// The body of a program; `{}` stands for an empty one, so an empty program
/// round-trips.
static ParseResult parseProgramBody(OpAsmParser &parser, Region &body) {
  if (parser.parseRegion(body))
    return failure();
  if (body.empty())
    body.emplaceBlock();
  return success();
}

static void printProgramBody(OpAsmPrinter &printer, ProgramOp, Region &body) {
  printer.printRegion(body, /*printEntryBlockArgs=*/false,
                      /*printBlockTerminators=*/false);
}

LogicalResult ProgramOp::verify() {
  if (std::optional<int64_t> worldSize = getWorldSize(*this);
      worldSize && getRank() >= *worldSize)
    return emitOpError() << "has rank " << getRank()
                         << ", expected a rank below bitpipe.world_size = "
                         << *worldSize;

  // Report a duplicate once, at the later of the two programs.
  for (Operation &other : *(*this)->getBlock()) {
    if (&other == getOperation())
      break;
    auto program = dyn_cast<ProgramOp>(other);
    if (program && program.getRankAttr() && program.getRank() == getRank())
      return emitOpError() << "has rank " << getRank() << ", which program @"
                           << program.getSymName()
                           << " already has; expected one program per rank";
  }
  return success();
}

/// The binding rule of every step that calls a function. The unbound forms
/// (no callee) name their stage by number only (bitpipe.stage on the
/// function): nothing to resolve until bitpipe-insert-transfers binds them.
LogicalResult ProgramOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  DenseMap<std::pair<Attribute, unsigned>, CalleeFacts> factsByCallee;
  auto check = [&](Operation *op, FlatSymbolRefAttr callee, TypeRange inputs,
                   TypeRange results, CalleeRole role, int64_t stage) {
    if (!callee)
      return success();
    auto [it, inserted] =
        factsByCallee.try_emplace({callee, static_cast<unsigned>(role)});
    if (inserted)
      it->second = getCalleeFacts(op, callee, role, symbolTable);
    return verifyStageCallee(op, callee, inputs, results, role, stage,
                             it->second);
  };
  WalkResult walk = getBody().walk([&](Operation *op) {
    LogicalResult checked =
        llvm::TypeSwitch<Operation *, LogicalResult>(op)
            .Case([&](ForwardOp forward) {
              return check(forward, forward.getCalleeAttr(),
                           forward.getInputs().getTypes(),
                           forward.getOutputs().getTypes(), CalleeRole::Forward,
                           forward.getStage());
            })
            .Case([&](BackwardOp backward) {
              return check(backward, backward.getCalleeAttr(),
                           backward.getGrads().getTypes(),
                           backward.getOutputs().getTypes(),
                           CalleeRole::Backward, backward.getStage());
            })
            .Case([&](WeightGradOp weight) {
              return check(weight, weight.getCalleeAttr(), {}, {},
                           CalleeRole::WeightGrad, weight.getStage());
            })
            .Default([](Operation *) { return success(); });
    return failed(checked) ? WalkResult::interrupt() : WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

/// " in repetition k of its bitpipe.repeat" for a step of a repeat's body,
/// so that a finding about one repetition says which.
static std::string repetitionText(const TracedStep &step) {
  if (!isa<RepeatOp>(step.op->getParentOp()))
    return "";
  return " in repetition " + std::to_string(step.repetition) +
         " of its bitpipe.repeat";
}

/// Backwards and weight halves in or around repeats: each must get the
/// handle of the forward of its own stage and micro-batch, in the
/// repetition it runs; a forward's handle is consumed at most once by each,
/// the backward first. (Straight programs: the ops' own checks.)
static LogicalResult verifyCarriedHandles(const ProgramTrace &trace) {
  // forward step (op, repetition) -> (backward step, weight_grad step)
  // consuming it, as indices of the trace. With Repetitions::Ends a
  // consumer's forward may be a repetition the trace leaves out; the same
  // pattern of consumers is then checked where it repeats.
  llvm::DenseMap<std::pair<Operation *, int64_t>, std::pair<size_t, size_t>>
      consumers;
  constexpr size_t kNone = ~size_t(0);
  for (auto [index, step] : llvm::enumerate(trace.steps())) {
    Value saved;
    int64_t stage;
    bool weight = false;
    if (auto backward = dyn_cast<BackwardOp>(step.op)) {
      saved = backward.getSaved();
      stage = backward.getStage();
    } else if (auto weightGrad = dyn_cast<WeightGradOp>(step.op)) {
      saved = weightGrad.getSaved();
      stage = weightGrad.getStage();
      weight = true;
    } else {
      continue;
    }
    // Handles used where they are defined: the ops' own verifiers have
    // checked them; they still count as consumers below.
    bool carried = isCarried(saved);
    int64_t microbatch = *microbatchAt(step.op, step.repetition);
    std::optional<TracedStep> def =
        ProgramTrace::definingSite(saved, step.repetition);
    auto forward = def ? dyn_cast<ForwardOp>(def->op) : ForwardOp();
    if (!forward)
      return step.op->emitOpError()
             << "of stage " << stage << " micro-batch " << microbatch
             << repetitionText(step)
             << " expects its !bitpipe.saved operand to come from a "
                "bitpipe.forward";
    int64_t fwdMicrobatch = forward.microbatchAt(def->repetition);
    if (carried &&
        (forward.getStage() != stage || fwdMicrobatch != microbatch)) {
      InFlightDiagnostic diag =
          step.op->emitOpError()
          << "of stage " << stage << " micro-batch " << microbatch
          << repetitionText(step)
          << " expects the saved state of the same stage and micro-batch, "
             "but it carries the forward of stage "
          << forward.getStage() << " micro-batch " << fwdMicrobatch;
      diag.attachNote(forward.getLoc()) << "forward here";
      return diag;
    }
    // The consumers of a forward the trace leaves out are partly left out
    // with it; the same pattern of consumers is checked at a forward of
    // the same op it lists (Repetitions::Ends).
    if (!trace.lists(def->op, def->repetition))
      continue;
    auto [it, fresh] =
        consumers.try_emplace({def->op, def->repetition}, kNone, kNone);
    size_t &slot = weight ? it->second.second : it->second.first;
    if (slot != kNone)
      return forward.emitOpError()
             << "of stage " << stage << " micro-batch " << microbatch
             << repetitionText(*def) << " has its saved state consumed "
             << "by two "
             << (weight ? "bitpipe.weight_grad" : "bitpipe.backward")
             << " ops; expected at most one of each";
    slot = index;
    if (weight && it->second.first == kNone)
      return step.op->emitOpError()
             << "of stage " << stage << " micro-batch " << microbatch
             << repetitionText(step)
             << " expects the bitpipe.backward of the same saved state to "
                "run before it";
  }
  return success();
}

namespace {
/// The micro-batches one forward op runs: first + k * step for k in
/// [0, count), at trace positions position + k * period (the straight
/// program's step numbers).
struct ForwardRun {
  ForwardOp op;
  int64_t first, step, count;
  size_t position, period;
  bool inRepeat;
  int64_t microbatch(int64_t k) const { return first + k * step; }
  size_t positionOf(int64_t k) const {
    return position + static_cast<size_t>(k) * period;
  }
  /// The repetition that runs `microbatch`, if any.
  std::optional<int64_t> repetitionOf(int64_t microbatch) const {
    int64_t offset = microbatch - first;
    if (step == 0)
      return offset == 0 ? std::optional<int64_t>(0) : std::nullopt;
    if (offset % step != 0)
      return std::nullopt;
    int64_t k = offset / step;
    return k >= 0 && k < count ? std::optional<int64_t>(k) : std::nullopt;
  }
};

/// Two runs of one forward: (run, repetition) each, the second the later.
struct ForwardClash {
  const ForwardRun *first = nullptr, *second = nullptr;
  int64_t firstK = 0, secondK = 0;
};
} // namespace

/// Every (stage, micro-batch) runs forward at most once, checked on the
/// ops with their micro-batch progressions rather than on the unrolled
/// program; the clash reported is the one the straight program reaches
/// first, at its later forward.
static LogicalResult verifyForwardsOnce(ProgramOp program) {
  llvm::DenseMap<int64_t, SmallVector<ForwardRun>> byStage;
  size_t position = 0;
  for (Operation &op : program.getBody().front()) {
    auto repeat = dyn_cast<RepeatOp>(op);
    if (!repeat) {
      if (auto forward = dyn_cast<ForwardOp>(op))
        byStage[forward.getStage()].push_back(
            {forward, forward.getMicrobatch(), 0, 1, position, 0, false});
      ++position;
      continue;
    }
    auto body = repeat.getSteps();
    size_t period = std::distance(body.begin(), body.end());
    size_t at = position;
    for (Operation &step : body) {
      if (auto forward = dyn_cast<ForwardOp>(step))
        byStage[forward.getStage()].push_back(
            {forward, forward.getMicrobatch(),
             forward.getMicrobatchStep().value_or(0),
             std::max<int64_t>(repeat.getCount(), 1), at, period, true});
      ++at;
    }
    position += period * static_cast<size_t>(
                             std::max<int64_t>(repeat.getCount(), 0));
  }

  std::optional<ForwardClash> earliest;
  auto consider = [&](const ForwardRun &a, int64_t ka, const ForwardRun &b,
                      int64_t kb) {
    ForwardClash c{&a, &b, ka, kb};
    if (a.positionOf(ka) > b.positionOf(kb))
      c = {&b, &a, kb, ka};
    if (!earliest || c.second->positionOf(c.secondK) <
                         earliest->second->positionOf(earliest->secondK))
      earliest = c;
  };
  for (auto &[stage, runs] : byStage) {
    // Single forwards by micro-batch; each run of a repeat is tested
    // against them, and against the other runs.
    llvm::DenseMap<int64_t, const ForwardRun *> singles;
    SmallVector<const ForwardRun *> repeated;
    for (const ForwardRun &run : runs) {
      if (run.count > 1) {
        repeated.push_back(&run);
        if (run.step == 0) // the same micro-batch in every repetition
          consider(run, 0, run, 1);
        continue;
      }
      auto [it, fresh] = singles.try_emplace(run.first, &run);
      if (!fresh)
        consider(*it->second, 0, run, 0);
    }
    for (const ForwardRun *run : repeated) {
      for (auto &[microbatch, single] : singles)
        if (std::optional<int64_t> k = run->repetitionOf(microbatch))
          consider(*single, 0, *run, *k);
      for (const ForwardRun *other : repeated) {
        if (other <= run)
          continue;
        // The shorter run's micro-batches, looked up in the other.
        const ForwardRun *a = run->count <= other->count ? run : other;
        const ForwardRun *b = a == run ? other : run;
        for (int64_t k = 0; k < a->count; ++k)
          if (std::optional<int64_t> kb = b->repetitionOf(a->microbatch(k)))
            consider(*a, k, *b, *kb);
      }
    }
  }
  if (!earliest)
    return success();
  const ForwardClash &c = *earliest;
  ForwardOp second = c.second->op, first = c.first->op;
  TracedStep later{second, c.secondK};
  InFlightDiagnostic diag =
      second.emitOpError()
      << "runs stage " << second.getStage() << " micro-batch "
      << c.second->microbatch(c.secondK) << repetitionText(later)
      << " a second time; expected one forward per stage and micro-batch "
         "in a program";
  diag.attachNote(first.getLoc()) << "first forward here";
  return diag;
}

LogicalResult ProgramOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != 0)
    return emitOpError() << "expects a body without arguments";
  for (Operation &op : body)
    if (hasStep(&op))
      return op.emitOpError()
             << "advances a number per repetition ('step'), but is not in a "
                "bitpipe.repeat";

  // A (stage, micro-batch) runs forward at most once per step. Backwards
  // follow: each consumes the handle of one forward (ForwardOp::verify).
  if (failed(verifyForwardsOnce(*this)))
    return failure();

  // The program as it runs, each repeat by its first two and last two
  // repetitions: what the checks below compare is affine in the repetition
  // (Repetitions::Ends says why that is enough), so the verifier's cost
  // does not grow with the micro-batch count.
  ProgramTrace trace(*this, Repetitions::Ends);

  // Transfer batches: one batch lies between two compute steps, and batch
  // numbers grow, so the lowering can issue each as one group when it
  // reaches its first op.
  std::optional<int64_t> open;   // The batch of the last transfer seen.
  Operation *closedBy = nullptr; // A compute step after it, if any.
  for (const TracedStep &step : trace.steps()) {
    Operation &op = *step.op;
    if (isa<ForwardOp, BackwardOp, WeightGradOp>(op)) {
      if (open && !closedBy)
        closedBy = &op;
      continue;
    }
    std::optional<int64_t> batch = batchAt(&op, step.repetition);
    if (!batch)
      continue;
    if (open && *batch < *open)
      return op.emitOpError()
             << "is in transfer batch " << *batch << repetitionText(step)
             << " after batch " << *open
             << "; expected batch numbers to grow along the program";
    if (open && *batch == *open && closedBy) {
      InFlightDiagnostic diag =
          op.emitOpError() << "is in transfer batch " << *batch
                           << repetitionText(step)
                           << ", which a compute step splits; expected the "
                              "transfers of a batch between two compute "
                              "steps";
      diag.attachNote(closedBy->getLoc()) << "compute step here";
      return diag;
    }
    if (!open || *batch != *open)
      closedBy = nullptr;
    open = batch;
  }
  // Straight programs: the ops' own verifiers have checked every handle.
  if (!trace.hasRepeats())
    return success();
  return verifyCarriedHandles(trace);
}

//===----------------------------------------------------------------------===//
// RepeatOp
//===----------------------------------------------------------------------===//

YieldOp RepeatOp::getYield() {
  return cast<YieldOp>(getBodyBlock().getTerminator());
}

// repeat 12 (%a = %x, ...) : (types) -> (types) { ... }
ParseResult RepeatOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  int64_t count;
  SMLoc countLoc = parser.getCurrentLocation();
  if (parser.parseInteger(count))
    return failure();
  if (count < 1)
    return parser.emitError(countLoc)
           << "expects a repetition count of at least 1, got " << count;
  result.addAttribute(getCountAttrName(result.name),
                      b.getI64IntegerAttr(count));

  SmallVector<OpAsmParser::Argument> args;
  SmallVector<OpAsmParser::UnresolvedOperand> inits;
  if (succeeded(parser.parseOptionalLParen()) &&
      failed(parser.parseOptionalRParen())) {
    do {
      OpAsmParser::Argument arg;
      OpAsmParser::UnresolvedOperand init;
      if (parser.parseArgument(arg) || parser.parseEqual() ||
          parser.parseOperand(init))
        return failure();
      args.push_back(arg);
      inits.push_back(init);
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseRParen())
      return failure();
  }
  SmallVector<Type> initTypes;
  if (succeeded(parser.parseOptionalColon())) {
    SMLoc typeLoc = parser.getCurrentLocation();
    FunctionType type;
    if (parser.parseType(type))
      return failure();
    if (type.getNumInputs() != inits.size())
      return parser.emitError(typeLoc)
             << "has " << inits.size() << " carried value(s) but "
             << type.getNumInputs() << " type(s) for them";
    llvm::append_range(initTypes, type.getInputs());
    result.addTypes(type.getResults());
  } else if (!inits.empty()) {
    return parser.emitError(parser.getCurrentLocation())
           << "expects ': (types) -> (types)' after the carried values";
  }
  for (auto [arg, type] : llvm::zip(args, initTypes))
    arg.type = type;
  if (parser.resolveOperands(inits, initTypes, countLoc, result.operands))
    return failure();
  Region *body = result.addRegion();
  if (parser.parseRegion(*body, args) ||
      parser.parseOptionalAttrDict(result.attributes))
    return failure();
  RepeatOp::ensureTerminator(*body, b, result.location);
  return success();
}

void RepeatOp::print(OpAsmPrinter &p) {
  p << ' ' << getCount();
  Block &body = getBodyBlock();
  if (!getInits().empty()) {
    p << " (";
    llvm::interleaveComma(
        llvm::zip(body.getArguments(), getInits()), p, [&](auto pair) {
          p << std::get<0>(pair) << " = " << std::get<1>(pair);
        });
    p << ')';
  }
  if (!getInits().empty() || !getResults().empty())
    p << " : "
      << FunctionType::get(getContext(), getInits().getTypes(),
                           getResults().getTypes());
  p << ' ';
  p.printRegion(getBody(), /*printEntryBlockArgs=*/false,
                /*printBlockTerminators=*/!getResults().empty());
  p.printOptionalAttrDict((*this)->getAttrs(), {getCountAttrName()});
}

LogicalResult RepeatOp::verify() {
  if (getCount() < 1)
    return emitOpError() << "expects a repetition count of at least 1, got "
                         << getCount();
  Block &body = getBodyBlock();
  if (body.getNumArguments() != getInits().size())
    return emitOpError() << "has " << getInits().size()
                         << " carried value(s) but its body takes "
                         << body.getNumArguments();
  YieldOp yield = getYield();
  if (yield.getNumOperands() < getInits().size())
    return yield.emitOpError()
           << "yields " << yield.getNumOperands() << " value(s), but the "
           << "repeat carries " << getInits().size()
           << "; expected one per body argument first";
  for (auto [i, arg, init] : llvm::enumerate(body.getArguments(), getInits()))
    if (arg.getType() != init.getType() ||
        yield.getOperand(i).getType() != arg.getType())
      return emitOpError() << "carries value " << i << " as " << arg.getType()
                           << ", but its init is " << init.getType()
                           << " and the yield gives "
                           << yield.getOperand(i).getType();
  if (yield.getOperandTypes() != getResultTypes())
    return emitOpError() << "has results of type(s) " << getResultTypes()
                         << ", but its body yields " << yield.getOperandTypes();
  // Every number a step reaches must be a micro-batch or batch number.
  int64_t last = getCount() - 1;
  for (Operation &op : getSteps()) {
    std::optional<int64_t> microbatch = microbatchAt(&op, last);
    std::optional<int64_t> batch = batchAt(&op, last);
    if ((microbatch && *microbatch < 0) || (batch && *batch < 0))
      return op.emitOpError()
             << "reaches "
             << (microbatch && *microbatch < 0 ? "micro-batch " : "batch ")
             << (microbatch && *microbatch < 0 ? *microbatch : *batch)
             << " in the last repetition (" << last
             << "); expected numbers that stay non-negative";
  }
  return success();
}

void RepeatOp::getAsmBlockArgumentNames(Region &region,
                                        OpAsmSetValueNameFn setNameFn) {
  for (Value arg : region.getArguments())
    setNameFn(arg, "carried");
}

StringRef RepeatOp::getDefaultDialect() {
  return BitPipeDialect::getDialectNamespace();
}

void RepeatOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  if (!getResults().empty())
    setNameFn(getResult(0), "after");
}

//===----------------------------------------------------------------------===//
// Custom directives
//===----------------------------------------------------------------------===//

/// `custom<Batch>`: an optional `batch b`, then an optional `step s` that
/// only a batch may have.
static ParseResult parseBatch(OpAsmParser &parser, IntegerAttr &batch,
                              IntegerAttr &step) {
  if (failed(parser.parseOptionalKeyword("batch")))
    return success();
  int64_t value;
  if (parser.parseInteger(value))
    return failure();
  batch = parser.getBuilder().getI64IntegerAttr(value);
  if (failed(parser.parseOptionalKeyword("step")))
    return success();
  if (parser.parseInteger(value))
    return failure();
  step = parser.getBuilder().getI64IntegerAttr(value);
  return success();
}

static void printBatch(OpAsmPrinter &printer, Operation *, IntegerAttr batch,
                       IntegerAttr step) {
  if (!batch)
    return;
  printer << "batch " << batch.getInt();
  if (step)
    printer << " step " << step.getInt();
}

//===----------------------------------------------------------------------===//
// LoadInputOp
//===----------------------------------------------------------------------===//

void LoadInputOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(
      getResult(),
      (stringifyInputKind(getKind()) + "_m" + Twine(getMicrobatch())).str());
}

//===----------------------------------------------------------------------===//
// ForwardOp
//===----------------------------------------------------------------------===//

LogicalResult ForwardOp::verify() {
  // Unbound: the inter-stage tensors do not exist yet, so the op may only
  // read training inputs and may only return its saved handle. Anything
  // else would be a tensor with no stage function to type-check it against.
  if (!getCalleeAttr()) {
    if (!getOutputs().empty())
      return emitOpError() << "without a callee returns only its "
                              "!bitpipe.saved handle, but it has "
                           << getOutputs().size()
                           << " more result(s); bind the stage function to "
                              "return tensors";
    for (Value input : getInputs())
      if (!input.getDefiningOp<LoadInputOp>())
        return emitOpError() << "without a callee takes only training inputs "
                                "from bitpipe.load_input; bind the stage "
                                "function to pass other tensors";
  }

  // What a forward keeps is freed by one backward (and, when the backward is
  // split, one weight_grad); a second consumer would read freed memory.
  unsigned backwards = 0, weightGrads = 0;
  for (Operation *user : getSaved().getUsers()) {
    backwards += isa<BackwardOp>(user);
    weightGrads += isa<WeightGradOp>(user);
  }
  if (backwards > 1 || weightGrads > 1)
    return emitOpError() << "of stage " << getStage() << " micro-batch "
                         << getMicrobatch()
                         << " has its saved state consumed by " << backwards
                         << " bitpipe.backward and " << weightGrads
                         << " bitpipe.weight_grad ops; expected at most one "
                            "of each";
  return success();
}

void ForwardOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  for (Value output : getOutputs())
    setNameFn(output, resultName("act", getStage(), getMicrobatch()));
  setNameFn(getSaved(), resultName("saved", getStage(), getMicrobatch()));
}

//===----------------------------------------------------------------------===//
// BackwardOp
//===----------------------------------------------------------------------===//

LogicalResult BackwardOp::verify() {
  // Unbound (see ForwardOp): no gradients flow until the callee is bound.
  if (!getCalleeAttr() && (!getGrads().empty() || !getOutputs().empty()))
    return emitOpError() << "without a callee takes only its !bitpipe.saved "
                            "handle and returns nothing; bind the backward "
                            "function to pass gradients";
  return verifySavedSource(*this, getSaved(), getStage(), getMicrobatch(),
                           getMicrobatchStep());
}

void BackwardOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  for (Value output : getOutputs())
    setNameFn(output, resultName("grad", getStage(), getMicrobatch()));
}

//===----------------------------------------------------------------------===//
// WeightGradOp
//===----------------------------------------------------------------------===//

LogicalResult WeightGradOp::verify() {
  if (failed(verifySavedSource(*this, getSaved(), getStage(), getMicrobatch(),
                               getMicrobatchStep())))
    return failure();
  // A carried handle: ProgramOp::verifyRegions checks the order on the
  // trace.
  if (isCarried(getSaved()))
    return success();

  // The weight half needs the output gradients the input half computed.
  auto forward = getSaved().getDefiningOp<ForwardOp>();
  for (Operation *op = forward->getNextNode(); op && op != getOperation();
       op = op->getNextNode())
    if (auto backward = dyn_cast<BackwardOp>(op);
        backward && backward.getSaved() == getSaved())
      return success();
  return emitOpError() << "of stage " << getStage() << " micro-batch "
                       << getMicrobatch()
                       << " expects the bitpipe.backward of the same saved "
                          "state to run before it";
}

//===----------------------------------------------------------------------===//
// Transfers
//===----------------------------------------------------------------------===//

LogicalResult SendOp::verify() {
  if (getBatchStep() && !getBatch())
    return emitOpError() << "advances its transfer batch per repetition "
                            "('batch_step') but has no batch";
  return verifyPeer(*this, (*this)->getParentOfType<ProgramOp>(), getPeer(),
                    "sends to");
}

LogicalResult RecvOp::verify() {
  if (getBatchStep() && !getBatch())
    return emitOpError() << "advances its transfer batch per repetition "
                            "('batch_step') but has no batch";
  return verifyPeer(*this, (*this)->getParentOfType<ProgramOp>(), getPeer(),
                    "receives from");
}

void RecvOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(),
            resultName(transferPrefix(getKind()), getStage(), getMicrobatch()));
}

void LocalCopyOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getResult(),
            resultName(transferPrefix(getKind()), getStage(), getMicrobatch()));
}

//===----------------------------------------------------------------------===//
// AllReduceStartOp
//===----------------------------------------------------------------------===//

LogicalResult AllReduceStartOp::verify() {
  ArrayRef<int64_t> stages = getStages();
  if (stages.empty())
    return emitOpError() << "expects at least one stage";
  if (!isSortedAndUnique(stages) || stages.front() < 0)
    return emitOpError() << "expects stages sorted, unique and non-negative, "
                            "got "
                         << formatList(stages);

  // A group names pipeline ranks and stands for them in every copy
  // (docs/data-parallel.md): one pipeline rank is a group of K ranks.
  ArrayRef<int64_t> group = getGroup();
  ProgramOp program = getParentOp();
  if (group.empty() ||
      static_cast<int64_t>(group.size()) * getDataParallel(program) < 2)
    return emitOpError() << "expects a group of at least 2 ranks, got "
                         << formatList(group)
                         << "; stages without replicas need no all-reduce";
  if (!isSortedAndUnique(group) || group.front() < 0)
    return emitOpError() << "expects group sorted, unique and non-negative, "
                            "got "
                         << formatList(group);

  if (!llvm::is_contained(group, program.getRank()))
    return emitOpError() << "expects group " << formatList(group)
                         << " to contain the rank of its program, "
                         << program.getRank();
  if (std::optional<int64_t> worldSize = getWorldSize(program);
      worldSize && group.back() >= *worldSize)
    return emitOpError() << "expects group " << formatList(group)
                         << " within bitpipe.world_size = " << *worldSize;

  // Both or neither: a bucket that names its tensors must say how much it
  // moves, so that every member can check it agrees with the others.
  if (getGrads().has_value() != getBytes().has_value())
    return emitOpError() << "expects 'grads' and 'bytes' together (the "
                            "bucketed form) or neither (a schedule marker)";
  if (std::optional<ArrayAttr> grads = getGrads()) {
    if (grads->empty())
      return emitOpError() << "expects a bucket with at least one gradient";
    if (*getBytes() <= 0)
      return emitOpError() << "expects a positive bucket size in bytes, got "
                           << *getBytes();
  }

  // Only allreduce_wait takes a token; an unwaited all-reduce would leave
  // the gradients undefined, a second wait would wait on nothing.
  size_t waits = std::distance(getToken().use_begin(), getToken().use_end());
  if (waits != 1)
    return emitOpError() << "expects its token to be waited exactly once by "
                            "bitpipe.allreduce_wait, but it is waited "
                         << waits << " times";
  return success();
}

void AllReduceStartOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  setNameFn(getToken(), ("token_b" + Twine(getBucket())).str());
}

//===----------------------------------------------------------------------===//
// OptimizerStepOp
//===----------------------------------------------------------------------===//

LogicalResult OptimizerStepOp::verify() {
  if (std::optional<int64_t> count = getMicrobatches(); count && *count < 1)
    return emitOpError() << "expects a positive micro-batch count to "
                            "average over, got "
                         << *count;
  llvm::SetVector<Value> pending;
  for (Operation &op : *(*this)->getBlock()) {
    if (&op == getOperation())
      break;
    if (auto start = dyn_cast<AllReduceStartOp>(op))
      pending.insert(start.getToken());
    else if (auto wait = dyn_cast<AllReduceWaitOp>(op))
      pending.remove(wait.getToken());
  }
  if (pending.empty())
    return success();

  auto start = pending.front().getDefiningOp<AllReduceStartOp>();
  InFlightDiagnostic diag =
      emitOpError() << "runs before the all-reduce of stages "
                    << formatList(start.getStages()) << " (bucket "
                    << start.getBucket()
                    << ") is waited for; expected a bitpipe.allreduce_wait "
                       "of its token before it";
  diag.attachNote(start.getLoc()) << "all-reduce started here";
  return diag;
}

// The generated definitions, with printers that print `attr-dict` through
// printAttrDictNotInFormat (include/bitpipe/Dialect/BitPipe/IR/CMakeLists.txt).
#define GET_OP_CLASSES
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOpDefs.cpp.inc"
