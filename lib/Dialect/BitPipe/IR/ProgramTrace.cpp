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

ProgramTrace::ProgramTrace(ProgramOp program) : program_(program) {
  Block &block = program.getBody().front();
  for (Operation &op : block) {
    auto repeat = dyn_cast<RepeatOp>(op);
    if (!repeat) {
      steps_.push_back({&op, 0});
      continue;
    }
    hasRepeats_ = true;
    auto body = repeat.getSteps();
    size_t period = std::distance(body.begin(), body.end());
    int64_t count = repeat.getCount();
    steps_.reserve(steps_.size() + period * std::max<int64_t>(count, 0));
    for (int64_t k = 0; k < count; ++k)
      for (Operation &step : body)
        steps_.push_back({&step, k});
  }
}

void ProgramTrace::place() const {
  placed_ = true;
  placement_.reserve(steps_.size());
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

std::optional<size_t> ProgramTrace::indexOf(Operation *op, int64_t k) const {
  if (!placed_)
    place();
  auto it = placement_.find(op);
  if (it == placement_.end())
    return std::nullopt;
  size_t index = it->second.first + static_cast<size_t>(k) * it->second.period;
  if (index >= steps_.size() || steps_[index].op != op)
    return std::nullopt;
  return index;
}

std::optional<size_t> ProgramTrace::definingStep(Value value, int64_t k) const {
  // Each turn moves one repetition back or leaves the repeat, so the walk
  // ends; the bound only guards against IR the verifier has not seen.
  for (size_t guard = 0; guard <= steps_.size(); ++guard) {
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
    return indexOf(def, k);
  }
  return std::nullopt;
}
