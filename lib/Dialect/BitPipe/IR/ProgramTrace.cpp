//===- ProgramTrace.cpp - A program as the steps it runs ------------------===//

#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace bitpipe::bp;

std::optional<int64_t> bitpipe::bp::microbatchAt(Operation *op, int64_t k) {
  return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(op)
      .Case<LoadInputOp, ForwardOp, BackwardOp, WeightGradOp, SendOp, RecvOp,
            LocalCopyOp>([&](auto step) { return step.microbatchAt(k); })
      .Default([](Operation *) { return std::nullopt; });
}

std::optional<int64_t> bitpipe::bp::batchAt(Operation *op, int64_t k) {
  return llvm::TypeSwitch<Operation *, std::optional<int64_t>>(op)
      .Case<SendOp, RecvOp>([&](auto transfer) { return transfer.batchAt(k); })
      .Default([](Operation *) { return std::nullopt; });
}

bool bitpipe::bp::hasStep(Operation *op) {
  return llvm::TypeSwitch<Operation *, bool>(op)
      .Case<SendOp, RecvOp>([](auto transfer) {
        return transfer.getMicrobatchStep() || transfer.getBatchStep();
      })
      .Case<LoadInputOp, ForwardOp, BackwardOp, WeightGradOp, LocalCopyOp>(
          [](auto step) { return step.getMicrobatchStep().has_value(); })
      .Default(false);
}

/// The most repetitions a value the body of `repeat` carries travels from
/// the one that defines it to one that uses it: 1 for a value yielded and
/// used in the next, one more for each yield that passes a carried value
/// on unchanged.
static int64_t carryDepth(RepeatOp repeat) {
  int64_t deepest = 0;
  Block &body = repeat.getBodyBlock();
  YieldOp yield = repeat.getYield();
  for (BlockArgument arg : body.getArguments()) {
    int64_t depth = 1;
    Value value = yield.getOperand(arg.getArgNumber());
    // Passed on unchanged: used one repetition later still. The bound
    // guards against a cycle of such values, which carries nothing.
    while (auto passed = dyn_cast<BlockArgument>(value)) {
      if (passed.getOwner() != &body ||
          depth > static_cast<int64_t>(body.getNumArguments()))
        break;
      value = yield.getOperand(passed.getArgNumber());
      ++depth;
    }
    deepest = std::max(deepest, depth);
  }
  return deepest;
}

ProgramTrace::ProgramTrace(ProgramOp program, Repetitions repetitions)
    : program_(program), repetitions_(repetitions) {
  Block &block = program.getBody().front();
  // First the repetitions each repeat lists, so that the steps are
  // allocated once, at their size: a pass may hold every rank's trace.
  size_t size = 0;
  for (Operation &op : block) {
    auto repeat = dyn_cast<RepeatOp>(op);
    if (!repeat) {
      ++size;
      ++numOps_;
      continue;
    }
    hasRepeats_ = true;
    auto body = repeat.getSteps();
    size_t period = std::distance(body.begin(), body.end());
    numOps_ += period;
    int64_t count = std::max<int64_t>(repeat.getCount(), 0);
    const int64_t window = repetitions_ == Repetitions::All
                               ? count
                               : 2 + carryDepth(repeat);
    listed_[repeat] = {count, window};
    size += period * static_cast<size_t>(std::min<int64_t>(count, 2 * window));
  }
  steps_.reserve(size);
  for (Operation &op : block) {
    auto repeat = dyn_cast<RepeatOp>(op);
    if (!repeat) {
      steps_.push_back({&op, 0});
      continue;
    }
    const Listed &listed = listed_.find(repeat)->second;
    for (int64_t k = 0; k < listed.count; ++k) {
      if (k == listed.window && listed.count - listed.window > k)
        k = listed.count - listed.window; // on to the last ones
      for (Operation &step : repeat.getSteps())
        steps_.push_back({&step, k});
    }
  }
}

void ProgramTrace::place() const {
  placed_ = true;
  if (repetitions_ == Repetitions::Ends) {
    // Listed repetitions are not evenly spaced: index every step.
    for (auto [index, step] : llvm::enumerate(steps_))
      stepIndex_[{step.op, step.repetition}] = index;
    return;
  }
  // One entry per op, however often it runs: a pass may hold the traces
  // of every rank at once.
  placement_.reserve(numOps_);
  size_t index = 0;
  for (Operation &op : program_.getBody().front()) {
    auto repeat = dyn_cast<RepeatOp>(op);
    if (!repeat) {
      placement_[&op] = {index++, 0};
      continue;
    }
    auto body = repeat.getSteps();
    size_t period = std::distance(body.begin(), body.end());
    size_t position = 0;
    for (Operation &step : body)
      placement_[&step] = {index + position++, period};
    index +=
        period * static_cast<size_t>(std::max<int64_t>(repeat.getCount(), 0));
  }
}

bool ProgramTrace::lists(Operation *op, int64_t k) const {
  Operation *parent = op->getParentOp();
  if (parent == program_.getOperation())
    return !isa<RepeatOp>(op);
  auto it = listed_.find(parent);
  if (it == listed_.end() || isa<YieldOp>(op))
    return false;
  const Listed &listed = it->second;
  return k >= 0 && k < listed.count &&
         (k < listed.window || k >= listed.count - listed.window);
}

std::optional<size_t> ProgramTrace::indexOf(Operation *op, int64_t k) const {
  if (!placed_)
    place();
  if (repetitions_ == Repetitions::Ends) {
    auto it = stepIndex_.find({op, k});
    if (it == stepIndex_.end())
      return std::nullopt;
    return it->second;
  }
  auto it = placement_.find(op);
  if (it == placement_.end())
    return std::nullopt;
  size_t index = it->second.first + static_cast<size_t>(k) * it->second.period;
  if (index >= steps_.size() || steps_[index].op != op)
    return std::nullopt;
  return index;
}

std::optional<size_t> ProgramTrace::definingStep(Value value, int64_t k) const {
  std::optional<TracedStep> site = definingSite(value, k);
  if (!site)
    return std::nullopt;
  return indexOf(site->op, site->repetition);
}

std::optional<TracedStep> ProgramTrace::definingSite(Value value, int64_t k) {
  // Each turn moves one repetition back or leaves the repeat, so the walk
  // ends; the bound only guards against IR the verifier has not seen.
  for (int64_t guard = 0; guard <= (int64_t(1) << 32); ++guard) {
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      auto repeat = dyn_cast<RepeatOp>(arg.getOwner()->getParentOp());
      if (!repeat || arg.getArgNumber() >= repeat.getInits().size())
        return std::nullopt;
      if (k == 0) {
        value = repeat.getInits()[arg.getArgNumber()];
        k = 0; // Inits are defined outside the repeat.
      } else {
        value = repeat.getYield().getOperand(arg.getArgNumber());
        --k;
      }
      continue;
    }
    Operation *def = value.getDefiningOp();
    if (auto repeat = dyn_cast_or_null<RepeatOp>(def)) {
      // What the last repetition yielded.
      unsigned index = cast<OpResult>(value).getResultNumber();
      value = repeat.getYield().getOperand(index);
      k = repeat.getCount() - 1;
      continue;
    }
    if (!def)
      return std::nullopt;
    // An op outside any repeat runs once, whatever repetition uses it.
    if (!isa<RepeatOp>(def->getParentOp()))
      k = 0;
    return TracedStep{def, k};
  }
  return std::nullopt;
}
