//===- Unroll.cpp - Removing bitpipe.repeat -------------------------------===//

#include "bitpipe/Dialect/BitPipe/Programs/Repeats.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace bitpipe::bp;

void bitpipe::bp::setRepetition(Operation *op, int64_t k) {
  llvm::TypeSwitch<Operation *>(op)
      .Case<SendOp, RecvOp>([&](auto transfer) {
        if (std::optional<int64_t> batch = transfer.batchAt(k))
          transfer.setBatch(*batch);
        transfer.removeBatchStepAttr();
        transfer.setMicrobatch(transfer.microbatchAt(k));
        transfer.removeMicrobatchStepAttr();
      })
      .Case<LoadInputOp, ForwardOp, BackwardOp, WeightGradOp, LocalCopyOp>(
          [&](auto step) {
            step.setMicrobatch(step.microbatchAt(k));
            step.removeMicrobatchStepAttr();
          });
}

void bitpipe::bp::setSteps(Operation *op, int64_t microbatchStep,
                           int64_t batchStep) {
  Builder b(op->getContext());
  auto step = [&](int64_t value) {
    return value ? b.getI64IntegerAttr(value) : IntegerAttr();
  };
  llvm::TypeSwitch<Operation *>(op)
      .Case<SendOp, RecvOp>([&](auto transfer) {
        transfer.setMicrobatchStepAttr(step(microbatchStep));
        if (transfer.getBatch())
          transfer.setBatchStepAttr(step(batchStep));
      })
      .Case<LoadInputOp, ForwardOp, BackwardOp, WeightGradOp, LocalCopyOp>(
          [&](auto numbered) {
            numbered.setMicrobatchStepAttr(step(microbatchStep));
          });
}

void bitpipe::bp::peelRepetitions(RepeatOp repeat, int64_t keep) {
  const int64_t count = repeat.getCount();
  keep = keep < 2 ? 0 : std::min(keep, count);
  if (keep == count)
    return;
  Block &body = repeat.getBodyBlock();
  YieldOp yield = repeat.getYield();
  // What the steps after the repeat use: the last copy's values from now.
  SmallVector<std::pair<OpOperand *, unsigned>> later;
  for (OpResult result : repeat.getResults())
    for (OpOperand &use : result.getUses())
      later.push_back({&use, result.getResultNumber()});
  // Repetition `keep` starts from what the kept ones yielded.
  SmallVector<Value> carried =
      keep ? SmallVector<Value>(
                 repeat.getResults().take_front(body.getNumArguments()))
           : SmallVector<Value>(repeat.getInits());
  SmallVector<Value> yielded(yield.getOperands());
  OpBuilder b(repeat->getContext());
  b.setInsertionPointAfter(repeat);
  for (int64_t k = keep; k < count; ++k) {
    IRMapping map;
    map.map(body.getArguments(), carried);
    for (Operation &op : repeat.getSteps())
      setRepetition(b.clone(op, map), k);
    for (auto [i, value] : llvm::enumerate(yield.getOperands()))
      yielded[i] = map.lookupOrDefault(value);
    carried.assign(yielded.begin(), yielded.begin() + carried.size());
  }
  for (auto [use, result] : later)
    use->set(yielded[result]);
  if (keep)
    repeat.setCountAttr(b.getI64IntegerAttr(keep));
  else
    repeat.erase();
}

void bitpipe::bp::unrollRepeat(RepeatOp repeat) { peelRepetitions(repeat, 0); }

void bitpipe::bp::unrollRepeats(ProgramOp program) {
  for (auto repeat :
       llvm::make_early_inc_range(program.getBody().front().getOps<RepeatOp>()))
    unrollRepeat(repeat);
}
