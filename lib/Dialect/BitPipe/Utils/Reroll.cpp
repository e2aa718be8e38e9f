//===- Reroll.cpp - Keeping repeated runs as bitpipe.repeat ---------------===//
//
// The program's ops become items for the schedule library's
// segmentRepetitions: the shape is everything about an op except its
// micro-batch and batch (which are the lanes), *including where its operands
// come from*, as the distance back to the defining op. So a run repeats only
// if its data flow repeats too, and a repeated run is a loop body whose
// operands are either defined in the same repetition or d repetitions
// earlier; the latter are carried by a window of d body arguments
// (docs/repetition.md, "Loops in the program IR").
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/Utils/Repeats.h"

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

/// A value of the body: result `result` of body op `position`.
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
  /// number) -> (body value, repetitions back). Read from the straight
  /// program, before rolling an earlier run renames what they point to.
  std::vector<std::tuple<size_t, unsigned, BodyValue, int64_t>> carriedUses;

  size_t end() const { return begin + period * count; }
};

class Reroller {
public:
  Reroller(ProgramOp program, const RerollOptions &options)
      : program(program), options(options) {}
  FailureOr<RerollStats> run();

private:
  void index();
  sched::ItemSequence items();
  /// The data flow of run `plan` (begin, period, count set); false when it
  /// cannot be rolled.
  bool analyse(RunPlan &plan);
  void roll(const RunPlan &plan);

  ProgramOp program;
  const RerollOptions &options;
  std::vector<Operation *> ops;
  llvm::DenseMap<Operation *, size_t> position;
  /// Per op and result: the index of its last user (0 when unused).
  std::vector<SmallVector<size_t, 2>> lastUse;
};

void Reroller::index() {
  for (Operation &op : program.getBody().front()) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  lastUse.resize(ops.size());
  for (auto [i, op] : llvm::enumerate(ops)) {
    lastUse[i].assign(op->getNumResults(), 0);
    for (Value operand : op->getOperands())
      if (auto result = dyn_cast<OpResult>(operand)) {
        size_t def = position.lookup(result.getOwner());
        size_t &last = lastUse[def][result.getResultNumber()];
        last = std::max(last, i);
      }
  }
}

sched::ItemSequence Reroller::items() {
  sched::ItemSequence seq(kNumLanes);
  sched::ShapeTable shapes;
  std::vector<int64_t> description;
  for (auto [i, op] : llvm::enumerate(ops)) {
    description.clear();
    description.push_back(asKey(op->getName().getAsOpaquePointer()));
    // Once per training step: never part of a run.
    if (!isa<LoadInputOp, ForwardOp, BackwardOp, WeightGradOp, SendOp, RecvOp,
             LocalCopyOp>(op))
      description.push_back(-1 - static_cast<int64_t>(i));
    // Everything that names what the op does, but its lanes. (Read through
    // the accessors: getAttrs() would build a dictionary per op.)
    llvm::TypeSwitch<Operation *>(op)
        .Case<ForwardOp, BackwardOp, WeightGradOp>([&](auto compute) {
          description.push_back(
              asKey(compute.getCalleeAttr().getAsOpaquePointer()));
          description.push_back(compute.getStage());
        })
        .Case<SendOp, RecvOp>([&](auto transfer) {
          description.push_back(static_cast<int64_t>(transfer.getKind()));
          description.push_back(transfer.getPeer());
          description.push_back(transfer.getStage());
          description.push_back(transfer.getBatch().has_value());
        })
        .Case([&](LocalCopyOp copy) {
          description.push_back(static_cast<int64_t>(copy.getKind()));
          description.push_back(copy.getStage());
        })
        .Case([&](LoadInputOp load) {
          description.push_back(static_cast<int64_t>(load.getKind()));
        });
    for (NamedAttribute attr : op->getDiscardableAttrs()) {
      description.push_back(asKey(attr.getName().getAsOpaquePointer()));
      description.push_back(asKey(attr.getValue().getAsOpaquePointer()));
    }
    for (Type type : op->getResultTypes())
      description.push_back(asKey(type.getAsOpaquePointer()));
    for (Value operand : op->getOperands()) {
      auto result = cast<OpResult>(operand);
      description.push_back(
          static_cast<int64_t>(i) -
          static_cast<int64_t>(position.lookup(result.getOwner())));
      description.push_back(result.getResultNumber());
      description.push_back(asKey(operand.getType().getAsOpaquePointer()));
    }
    std::optional<int64_t> microbatch = microbatchAt(op, 0);
    std::optional<int64_t> batch = batchAt(op, 0);
    seq.append(shapes.key(description),
               {microbatch.value_or(sched::ItemSequence::kAbsent),
                batch.value_or(sched::ItemSequence::kAbsent)});
    // A loop carries a value in a window shorter than its count.
    for (Value operand : op->getOperands())
      seq.addRead(i, position.lookup(cast<OpResult>(operand).getOwner()));
  }
  return seq;
}

bool Reroller::analyse(RunPlan &plan) {
  const size_t s = plan.begin, L = plan.period;
  // Uses inside the run: from iteration 0's ops (every repetition's ops
  // read from the same distances).
  int64_t deepest = 0;
  for (size_t p = 0; p < L; ++p) {
    Operation *op = ops[s + p];
    for (auto [n, operand] : llvm::enumerate(op->getOperands())) {
      auto result = cast<OpResult>(operand);
      int64_t def = position.lookup(result.getOwner());
      int64_t from =
          def - static_cast<int64_t>(s); // Body position, < 0 before.
      if (from >= 0)
        continue;
      int64_t d =
          (-from + static_cast<int64_t>(L) - 1) / static_cast<int64_t>(L);
      size_t j = static_cast<size_t>(from + d * static_cast<int64_t>(L));
      BodyValue value{j, result.getResultNumber()};
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
  // The inits: every window slot is read, in some early repetition, from
  // an op before the run of the same type.
  for (const auto &[value, d] : plan.window)
    for (int64_t t = 1; t <= d; ++t) {
      int64_t at =
          static_cast<int64_t>(s + value.first) - t * static_cast<int64_t>(L);
      if (at < 0 || value.second >= ops[at]->getNumResults() ||
          ops[at]->getResult(value.second).getType() !=
              ops[s + value.first]->getResult(value.second).getType())
        return false;
    }
  int64_t saved = static_cast<int64_t>(L * (plan.count - 1));
  return saved >= options.minOpsSaved;
}

void Reroller::roll(const RunPlan &plan) {
  const size_t s = plan.begin, L = plan.period, e = plan.end();
  // Window slots, body value by body value: slot t holds the value of t
  // repetitions back.
  llvm::MapVector<BodyValue, unsigned> firstSlot; // Body value -> its slot 1.
  SmallVector<Value> inits;
  SmallVector<Type> carriedTypes;
  for (const auto &[value, d] : plan.window) {
    firstSlot[value] = inits.size();
    auto [p, n] = plan.farthestUse.at(value);
    for (int64_t t = 1; t <= d; ++t) {
      // The farthest use reads slot d; in repetition d - t it reads what
      // slot t holds on entry, which the straight program names.
      Operation *user = ops[s + (d - t) * L + p];
      inits.push_back(user->getOperand(n));
      carriedTypes.push_back(inits.back().getType());
    }
  }
  // Values used after the run that no window carries: the last
  // repetition's, yielded after the window.
  SmallVector<BodyValue> exposed;
  for (const auto &[value, reach] : plan.reach)
    if (!plan.window.count(value))
      exposed.push_back(value);

  OpBuilder b(ops[s]);
  SmallVector<Type> resultTypes(carriedTypes);
  for (BodyValue value : exposed)
    resultTypes.push_back(
        ops[s + value.first]->getResult(value.second).getType());
  auto repeat = b.create<RepeatOp>(ops[s]->getLoc(), resultTypes,
                                   b.getI64IntegerAttr(plan.count), inits);
  Block *body = new Block();
  repeat.getBody().push_back(body);
  for (Type type : carriedTypes)
    body->addArgument(type, repeat.getLoc());

  // Outside uses first, while every op still has its position: the value
  // of repetition count - t becomes result slot t (or the exposed value).
  for (size_t x = s; x < e; ++x)
    for (auto [r, last] : llvm::enumerate(lastUse[x])) {
      if (last < e)
        continue;
      BodyValue value{(x - s) % L, static_cast<unsigned>(r)};
      int64_t t = static_cast<int64_t>(plan.count - (x - s) / L);
      Value replacement;
      if (auto slot = firstSlot.find(value); slot != firstSlot.end())
        replacement = repeat.getResult(slot->second + t - 1);
      else
        replacement =
            repeat.getResult(carriedTypes.size() +
                             (llvm::find(exposed, value) - exposed.begin()));
      ops[x]->getResult(r).replaceUsesWithIf(replacement, [&](OpOperand &use) {
        auto it = position.find(use.getOwner());
        return it != position.end() && it->second >= e;
      });
    }

  // The body: repetition 0's ops, advancing as the run does.
  for (size_t p = 0; p < L; ++p) {
    Operation *op = ops[s + p];
    op->moveBefore(body, body->end());
    setSteps(op, plan.strides[p * kNumLanes + kMicrobatchLane],
             plan.strides[p * kNumLanes + kBatchLane]);
  }
  for (const auto &[p, n, value, d] : plan.carriedUses)
    ops[s + p]->setOperand(n,
                           body->getArgument(firstSlot.lookup(value) + d - 1));
  SmallVector<Value> yielded;
  for (const auto &[value, d] : plan.window) {
    yielded.push_back(ops[s + value.first]->getResult(value.second));
    for (int64_t t = 2; t <= d; ++t)
      yielded.push_back(body->getArgument(firstSlot.lookup(value) + t - 2));
  }
  for (BodyValue value : exposed)
    yielded.push_back(ops[s + value.first]->getResult(value.second));
  OpBuilder::atBlockEnd(body).create<YieldOp>(repeat.getLoc(), yielded);

  // The later repetitions: what they computed is the repeat's now.
  for (size_t x = e; x-- > s + L;) {
    ops[x]->dropAllUses();
    ops[x]->erase();
  }
}

FailureOr<RerollStats> Reroller::run() {
  unrollRepeats(program);
  index();
  RerollStats stats;
  stats.opsBefore = ops.size();
  // The steps as they run now, to check the rolled program against.
  std::vector<std::tuple<OperationName, int64_t, int64_t>> before;
  before.reserve(ops.size());
  for (Operation *op : ops)
    before.emplace_back(op->getName(), microbatchAt(op, 0).value_or(-1),
                        batchAt(op, 0).value_or(-1));

  sched::ItemSequence seq = items();
  std::vector<RunPlan> plans;
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
  for (const RunPlan &plan : plans)
    roll(plan);
  stats.repeats = plans.size();

  // The rolled program must run what the straight one ran. Ops of later
  // repetitions are gone, so compare by name and numbers.
  ProgramTrace trace(program);
  bool same = trace.size() == before.size();
  for (size_t i = 0; same && i < trace.size(); ++i) {
    const TracedStep &step = trace[i];
    auto [name, microbatch, batch] = before[i];
    same = step.op->getName() == name &&
           microbatchAt(step.op, step.repetition).value_or(-1) == microbatch &&
           batchAt(step.op, step.repetition).value_or(-1) == batch;
  }
  if (!same)
    return program.emitError()
           << "internal error: the rolled program does not run the steps of "
              "the straight one (bitpipe-reroll)";
  stats.opsAfter = 0;
  program.walk([&](Operation *op) {
    if (op != program.getOperation() && !isa<YieldOp>(op))
      ++stats.opsAfter;
  });
  return stats;
}

} // namespace

FailureOr<RerollStats>
bitpipe::bp::rerollProgram(ProgramOp program, const RerollOptions &options) {
  return Reroller(program, options).run();
}
