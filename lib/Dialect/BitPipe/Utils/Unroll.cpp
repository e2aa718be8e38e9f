//===- Unroll.cpp - Removing bitpipe.repeat -------------------------------===//

#include "bitpipe/Dialect/BitPipe/Utils/Repeats.h"

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

void bitpipe::bp::unrollRepeat(RepeatOp repeat) {
  OpBuilder b(repeat);
  Block &body = repeat.getBodyBlock();
  YieldOp yield = repeat.getYield();
  SmallVector<Value> carried(repeat.getInits());
  SmallVector<Value> yielded(yield.getOperands());
  for (int64_t k = 0; k < repeat.getCount(); ++k) {
    IRMapping map;
    map.map(body.getArguments(), carried);
    for (Operation &op : repeat.getSteps())
      setRepetition(b.clone(op, map), k);
    for (auto [i, value] : llvm::enumerate(yield.getOperands()))
      yielded[i] = map.lookupOrDefault(value);
    carried.assign(yielded.begin(), yielded.begin() + carried.size());
  }
  repeat.replaceAllUsesWith(yielded);
  repeat.erase();
}

void bitpipe::bp::unrollRepeats(ProgramOp program) {
  for (auto repeat :
       llvm::make_early_inc_range(program.getBody().front().getOps<RepeatOp>()))
    unrollRepeat(repeat);
}

LogicalResult bitpipe::bp::requireStraightPrograms(ModuleOp module,
                                                   StringRef pass) {
  for (auto program : module.getOps<ProgramOp>())
    for (auto repeat : program.getBody().front().getOps<RepeatOp>())
      return repeat.emitError()
             << pass << " rewrites the programs op by op and takes straight "
             << "ones, but @" << program.getSymName()
             << " keeps a run as a bitpipe.repeat; run it before "
                "bitpipe-reroll, or after bitpipe-unroll";
  return success();
}
