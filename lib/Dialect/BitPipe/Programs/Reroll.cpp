//===- Reroll.cpp - Writing programs with their runs as bitpipe.repeat ----===//
//
// writeProgram: the steps of a StraightProgram become items for the schedule
// library's segmentRepetitions. An item's shape is everything about the step
// except its micro-batch and batch (which are the lanes), *including where
// its operands come from*, as the distance back to the defining step. So a
// run repeats only if its data flow repeats too, and a repeated run is a
// loop body whose operands are either defined in the same repetition or d
// repetitions earlier; the latter are carried by a window of d body
// arguments (docs/repetition.md, "Loops in the program IR"). Only the ops
// the rolled program keeps are created.
//
// rerollProgram is writeProgram over the ops of an existing program.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/Programs/Repeats.h"
#include "bitpipe/Dialect/BitPipe/Programs/StraightProgram.h"

#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"
#include "bitpipe/Schedule/Repetition.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <map>

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::bp;

namespace {

enum Lane : int { kMicrobatchLane = 0, kBatchLane = 1, kNumLanes = 2 };

int64_t asKey(const void *p) {
  return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p));
}

/// A value of the body: result `result` of body step `position`.
using BodyValue = std::pair<size_t, unsigned>;

/// What rolling one run needs to know about its data flow.
struct RunPlan {
  size_t begin = 0, period = 0, count = 0;
  std::vector<int64_t> strides;
  /// Per body value carried into later repetitions: the largest distance,
  /// in repetitions, from its definition to a use in the run.
  std::map<BodyValue, int64_t> window;
  /// Per body value used after the run: the largest reach back from the
  /// end, in repetitions (1 = the last repetition's value).
  std::map<BodyValue, int64_t> reach;
  /// Per carried body value: a use in the run at the largest distance, as
  /// (body position, operand number), from which the inits are read.
  std::map<BodyValue, std::pair<size_t, unsigned>> farthestUse;
  /// The body's operands that a window carries: (body position, operand
  /// number) -> (body value, repetitions back).
  std::vector<std::tuple<size_t, unsigned, BodyValue, int64_t>> carriedUses;

  size_t end() const { return begin + period * count; }
};

class Writer {
public:
  Writer(ProgramOp program, const StraightProgram &straight,
         const RerollOptions &options)
      : program(program), straight(straight), options(options) {}
  FailureOr<RerollStats> run();

private:
  void indexUses();
  sched::ItemSequence items();
  /// The data flow of run `plan` (begin, period, count set); false when it
  /// cannot be rolled.
  bool analyse(RunPlan &plan);
  /// Creates the straight steps [from, to).
  void writeStraight(OpBuilder &b, size_t from, size_t to);
  void writeRun(OpBuilder &b, const RunPlan &plan);
  SmallVector<Value> operandValues(size_t i);

  ProgramOp program;
  const StraightProgram &straight;
  const RerollOptions &options;
  /// Per step and result: the index of its last user (0 when unused).
  std::vector<SmallVector<size_t, 2>> lastUse;
  /// Per step and result: the value that stands for it where the next
  /// steps are written (a straight op's result, a repeat's result).
  std::vector<SmallVector<Value, 2>> values;
};

void Writer::indexUses() {
  lastUse.resize(straight.size());
  for (size_t i = 0, e = straight.size(); i < e; ++i) {
    lastUse[i].assign(straight.resultTypes(i).size(), 0);
    for (StepOperand operand : straight.operands(i)) {
      size_t &last = lastUse[operand.step][operand.result];
      last = std::max(last, i);
    }
  }
}

sched::ItemSequence Writer::items() {
  sched::ItemSequence seq(kNumLanes);
  sched::ShapeTable shapes;
  std::vector<int64_t> description;
  for (size_t i = 0, e = straight.size(); i < e; ++i) {
    description.clear();
    description.push_back(asKey(straight.name(i).getAsOpaquePointer()));
    // Once per training step: never part of a run.
    if (!straight.repeatable(i))
      description.push_back(-1 - static_cast<int64_t>(i));
    straight.describe(i, description);
    for (StepOperand operand : straight.operands(i)) {
      description.push_back(static_cast<int64_t>(i) -
                            static_cast<int64_t>(operand.step));
      description.push_back(operand.result);
    }
    seq.append(shapes.key(description),
               {straight.microbatch(i).value_or(sched::ItemSequence::kAbsent),
                straight.batch(i).value_or(sched::ItemSequence::kAbsent)});
    // A loop carries a value in a window shorter than its count.
    for (StepOperand operand : straight.operands(i))
      seq.addRead(i, operand.step);
  }
  return seq;
}

bool Writer::analyse(RunPlan &plan) {
  const size_t s = plan.begin, L = plan.period;
  // Uses inside the run: from repetition 0's steps (every repetition's
  // steps read from the same distances).
  int64_t deepest = 0;
  for (size_t p = 0; p < L; ++p) {
    for (auto [n, operand] : llvm::enumerate(straight.operands(s + p))) {
      int64_t from = static_cast<int64_t>(operand.step) -
                     static_cast<int64_t>(s); // Body position, < 0 before.
      if (from >= 0)
        continue;
      int64_t d =
          (-from + static_cast<int64_t>(L) - 1) / static_cast<int64_t>(L);
      size_t j = static_cast<size_t>(from + d * static_cast<int64_t>(L));
      BodyValue value{j, operand.result};
      plan.carriedUses.emplace_back(p, static_cast<unsigned>(n), value, d);
      auto [it, fresh] = plan.window.try_emplace(value, d);
      if (fresh || d > it->second) {
        it->second = d;
        plan.farthestUse[value] = {p, static_cast<unsigned>(n)};
      }
      deepest = std::max(deepest, d);
    }
  }
  // Uses after the run; peel repetitions off its end until every value
  // used after it is within the window (or is the last repetition's).
  for (;;) {
    if (static_cast<int64_t>(plan.count) < options.minRepetitions ||
        static_cast<int64_t>(plan.count) < deepest + 1)
      return false;
    plan.reach.clear();
    const size_t e = plan.end();
    int64_t peel = 0;
    for (size_t x = s; x < e; ++x)
      for (auto [r, last] : llvm::enumerate(lastUse[x])) {
        if (last < e)
          continue;
        size_t j = (x - s) % L;
        int64_t t = static_cast<int64_t>(plan.count - (x - s) / L);
        BodyValue value{j, static_cast<unsigned>(r)};
        int64_t &reach = plan.reach[value];
        reach = std::max(reach, t);
        auto w = plan.window.find(value);
        int64_t covered = w == plan.window.end() ? 1 : w->second;
        peel = std::max(peel, t - covered);
      }
    if (peel == 0)
      break;
    plan.count -= static_cast<size_t>(peel);
  }
  // The inits: every window slot is read, in some early repetition, from a
  // step before the run of the same type.
  for (const auto &[value, d] : plan.window) {
    auto [p, n] = plan.farthestUse.at(value);
    Type type = straight.resultTypes(s + value.first)[value.second];
    for (int64_t t = 1; t <= d; ++t) {
      StepOperand init = straight.operands(s + (d - t) * L + p)[n];
      if (init.step >= s ||
          straight.resultTypes(init.step)[init.result] != type)
        return false;
    }
  }
  int64_t saved = static_cast<int64_t>(L * (plan.count - 1));
  return saved >= options.minOpsSaved;
}

SmallVector<Value> Writer::operandValues(size_t i) {
  SmallVector<Value> operands;
  for (StepOperand operand : straight.operands(i))
    operands.push_back(values[operand.step][operand.result]);
  return operands;
}

void Writer::writeStraight(OpBuilder &b, size_t from, size_t to) {
  for (size_t i = from; i < to; ++i) {
    Operation *op = straight.build(b, i, operandValues(i));
    values[i].assign(op->result_begin(), op->result_end());
  }
}

void Writer::writeRun(OpBuilder &b, const RunPlan &plan) {
  const size_t s = plan.begin, L = plan.period, e = plan.end();
  // Window slots, body value by body value: slot t holds the value of t
  // repetitions back.
  llvm::MapVector<BodyValue, unsigned> firstSlot; // Body value -> its slot 1.
  SmallVector<Value> inits;
  for (const auto &[value, d] : plan.window) {
    firstSlot[value] = inits.size();
    auto [p, n] = plan.farthestUse.at(value);
    for (int64_t t = 1; t <= d; ++t) {
      // The farthest use reads slot d; in repetition d - t it reads what
      // slot t holds on entry, which a step before the run defined.
      StepOperand init = straight.operands(s + (d - t) * L + p)[n];
      inits.push_back(values[init.step][init.result]);
    }
  }
  // Values used after the run that no window carries: the last
  // repetition's, yielded after the window.
  SmallVector<BodyValue> exposed;
  for (const auto &[value, reach] : plan.reach)
    if (!plan.window.count(value))
      exposed.push_back(value);

  Location loc = program.getLoc();
  SmallVector<Type> resultTypes;
  for (Value init : inits)
    resultTypes.push_back(init.getType());
  for (BodyValue value : exposed)
    resultTypes.push_back(straight.resultTypes(s + value.first)[value.second]);
  auto repeat = b.create<RepeatOp>(loc, resultTypes,
                                   b.getI64IntegerAttr(plan.count), inits);
  Block *body = new Block();
  repeat.getBody().push_back(body);
  for (Value init : inits)
    body->addArgument(init.getType(), loc);

  // The body: repetition 0's steps, advancing as the run does; an operand
  // from an earlier repetition is the window slot that carries it.
  DenseMap<std::pair<size_t, unsigned>, Value> carried;
  for (const auto &[p, n, value, d] : plan.carriedUses)
    carried[{p, n}] = body->getArgument(firstSlot.lookup(value) + d - 1);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToEnd(body);
    for (size_t p = 0; p < L; ++p) {
      SmallVector<Value> operands;
      for (auto [n, operand] : llvm::enumerate(straight.operands(s + p)))
        operands.push_back(operand.step >= s
                               ? values[operand.step][operand.result]
                               : carried.lookup({p, static_cast<unsigned>(n)}));
      Operation *op = straight.build(b, s + p, operands);
      setSteps(op, plan.strides[p * kNumLanes + kMicrobatchLane],
               plan.strides[p * kNumLanes + kBatchLane]);
      values[s + p].assign(op->result_begin(), op->result_end());
    }
    SmallVector<Value> yielded;
    for (const auto &[value, d] : plan.window) {
      yielded.push_back(values[s + value.first][value.second]);
      for (int64_t t = 2; t <= d; ++t)
        yielded.push_back(body->getArgument(firstSlot.lookup(value) + t - 2));
    }
    for (BodyValue value : exposed)
      yielded.push_back(values[s + value.first][value.second]);
    b.create<YieldOp>(loc, yielded);
  }

  // After the run, the value of repetition count - t is result slot t (or
  // the exposed value); a value not used after the run is not needed.
  for (size_t x = s; x < e; ++x)
    for (auto [r, last] : llvm::enumerate(lastUse[x])) {
      if (last < e)
        continue;
      BodyValue value{(x - s) % L, static_cast<unsigned>(r)};
      int64_t t = static_cast<int64_t>(plan.count - (x - s) / L);
      if (auto slot = firstSlot.find(value); slot != firstSlot.end())
        values[x][r] = repeat.getResult(slot->second + t - 1);
      else
        values[x][r] = repeat.getResult(
            inits.size() + (llvm::find(exposed, value) - exposed.begin()));
    }
}

FailureOr<RerollStats> Writer::run() {
  RerollStats stats;
  stats.opsBefore = straight.size();
  values.resize(straight.size());
  std::vector<RunPlan> plans;
  if (options.loops) {
    indexUses();
    sched::ItemSequence seq = items();
    for (const sched::Segment &segment : sched::segmentRepetitions(seq)) {
      if (!segment.repeated())
        continue;
      RunPlan plan;
      plan.begin = segment.begin;
      plan.period = segment.period;
      plan.count = segment.count;
      plan.strides = segment.strides;
      if (analyse(plan))
        plans.push_back(std::move(plan));
    }
  }

  Block &block = program.getBody().front();
  OpBuilder b = OpBuilder::atBlockEnd(&block);
  size_t next = 0;
  for (const RunPlan &plan : plans) {
    writeStraight(b, next, plan.begin);
    writeRun(b, plan);
    next = plan.end();
  }
  writeStraight(b, next, straight.size());
  stats.repeats = plans.size();

  // The written program must run the straight one's steps.
  ProgramTrace trace(program);
  bool same = trace.size() == straight.size();
  for (size_t i = 0; same && i < trace.size(); ++i) {
    const TracedStep &step = trace[i];
    same = step.op->getName() == straight.name(i) &&
           microbatchAt(step.op, step.repetition) == straight.microbatch(i) &&
           batchAt(step.op, step.repetition) == straight.batch(i);
  }
  if (!same)
    return program.emitError()
           << "internal error: the rolled program does not run the steps of "
              "the straight one";
  stats.opsAfter = 0;
  program.walk([&](Operation *op) {
    if (op != program.getOperation() && !isa<YieldOp>(op))
      ++stats.opsAfter;
  });
  return stats;
}

/// The ops of a straight program, as they are; building one moves it.
class ExistingOps : public StraightProgram {
public:
  explicit ExistingOps(Block &block) {
    DenseMap<Operation *, size_t> position;
    for (Operation &op : block) {
      position[&op] = ops.size();
      ops.push_back(&op);
    }
    operandRefs.resize(ops.size());
    for (auto [i, op] : llvm::enumerate(ops))
      for (Value operand : op->getOperands()) {
        auto result = cast<OpResult>(operand);
        operandRefs[i].push_back(
            {position.lookup(result.getOwner()), result.getResultNumber()});
      }
  }

  size_t size() const override { return ops.size(); }
  OperationName name(size_t i) const override { return ops[i]->getName(); }
  void describe(size_t i, std::vector<int64_t> &shape) const override {
    Operation *op = ops[i];
    // Everything that names what the op does, but its lanes. (Read through
    // the accessors: getAttrs() would build a dictionary per op.)
    llvm::TypeSwitch<Operation *>(op)
        .Case<ForwardOp, BackwardOp, WeightGradOp>([&](auto compute) {
          shape.push_back(asKey(compute.getCalleeAttr().getAsOpaquePointer()));
          shape.push_back(compute.getStage());
        })
        .Case<SendOp, RecvOp>([&](auto transfer) {
          shape.push_back(static_cast<int64_t>(transfer.getKind()));
          shape.push_back(transfer.getPeer());
          shape.push_back(transfer.getStage());
          shape.push_back(transfer.getBatch().has_value());
        })
        .Case([&](LocalCopyOp copy) {
          shape.push_back(static_cast<int64_t>(copy.getKind()));
          shape.push_back(copy.getStage());
        })
        .Case([&](LoadInputOp load) {
          shape.push_back(static_cast<int64_t>(load.getKind()));
        });
    for (NamedAttribute attr : op->getDiscardableAttrs()) {
      shape.push_back(asKey(attr.getName().getAsOpaquePointer()));
      shape.push_back(asKey(attr.getValue().getAsOpaquePointer()));
    }
    for (Type type : op->getResultTypes())
      shape.push_back(asKey(type.getAsOpaquePointer()));
  }
  bool repeatable(size_t i) const override {
    return isa<LoadInputOp, ForwardOp, BackwardOp, WeightGradOp, SendOp, RecvOp,
               LocalCopyOp>(ops[i]);
  }
  std::optional<int64_t> microbatch(size_t i) const override {
    return microbatchAt(ops[i], 0);
  }
  std::optional<int64_t> batch(size_t i) const override {
    return batchAt(ops[i], 0);
  }
  ArrayRef<StepOperand> operands(size_t i) const override {
    return operandRefs[i];
  }
  TypeRange resultTypes(size_t i) const override {
    return ops[i]->getResultTypes();
  }
  Operation *build(OpBuilder &b, size_t i, ValueRange operands) const override {
    Operation *op = ops[i];
    op->moveBefore(b.getInsertionBlock(), b.getInsertionPoint());
    op->setOperands(operands);
    return op;
  }

  std::vector<Operation *> ops;
  std::vector<SmallVector<StepOperand, 2>> operandRefs;
};

} // namespace

FailureOr<RerollStats>
bitpipe::bp::writeProgram(ProgramOp program, const StraightProgram &straight,
                          const RerollOptions &options) {
  return Writer(program, straight, options).run();
}

FailureOr<RerollStats>
bitpipe::bp::rerollProgram(ProgramOp program, const RerollOptions &options) {
  unrollRepeats(program);
  // The ops wait in a block of their own; writing moves back those the
  // rolled program keeps, and the later repetitions' are left there.
  Block &body = program.getBody().front();
  auto waiting = std::make_unique<Block>();
  waiting->getOperations().splice(waiting->end(), body.getOperations());
  ExistingOps ops(*waiting);
  FailureOr<RerollStats> stats = writeProgram(program, ops, options);
  for (Operation &op : *waiting)
    op.dropAllUses();
  while (!waiting->empty())
    waiting->back().erase();
  return stats;
}
