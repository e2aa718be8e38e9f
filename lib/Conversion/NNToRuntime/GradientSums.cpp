//===- GradientSums.cpp - Parameter-gradient sums under bf16 --------------===//
//
// Lowering.h's GradientSumPlan. For `%s = nn.add %a, %b` of two parameter
// gradients, one operand (the "later" one) must be the direct result of a
// gradient kernel that runs after the buffer of the other (the
// "accumulator") exists; both must have no other user, so that nothing
// reads either buffer after the kernel has added into it. The accumulator
// may itself be such a sum (a weight used three times).
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "bitpipe/Conversion/Target/StorageType.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::nn_lowering;

bool nn_lowering::isAccumulatedResult(Value value) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return false;
  Operation *op = result.getOwner();
  if (isa<nn::LinearWeightGradOp, nn::EmbeddingGradOp>(op))
    return true;
  return isa<nn::LayerNormGradOp, nn::RMSNormGradOp>(op) &&
         result.getResultNumber() != 0;
}

namespace {

/// The op whose kernel creates the buffer that holds \p value under the
/// plan so far: its gradient op, or, for a sum, its accumulator's.
Operation *bufferOrigin(Value value, const GradientSumPlan &plan) {
  Operation *op = value.getDefiningOp();
  auto sum = plan.sums.find(op);
  if (sum != plan.sums.end())
    return bufferOrigin(op->getOperand(sum->second), plan);
  return op;
}

} // namespace

LogicalResult nn_lowering::planGradientSums(ModuleOp module,
                                            Precision precision,
                                            GradientSumPlan &plan) {
  if (precision == Precision::FP32)
    return success();
  // In program order, so that an inner sum is planned before the outer one
  // that reads it.
  WalkResult result = module.walk([&](nn::AddOp add) {
    if (!isParameterGradient(add.getResult()))
      return WalkResult::advance();
    for (unsigned later : {1u, 0u}) {
      Value laterValue = add->getOperand(later);
      Value accumulator = add->getOperand(1 - later);
      if (laterValue == accumulator || !isAccumulatedResult(laterValue) ||
          !laterValue.hasOneUse() || !accumulator.hasOneUse())
        continue;
      Operation *origin = bufferOrigin(accumulator, plan);
      Operation *kernel = laterValue.getDefiningOp();
      if (!origin || origin->getBlock() != kernel->getBlock() ||
          !origin->isBeforeInBlock(kernel))
        continue;
      plan.accumulateInto[laterValue] = accumulator;
      plan.sums[add] = 1 - later;
      return WalkResult::advance();
    }
    add.emitOpError()
        << "sums two parameter gradients that precision="
        << stringifyPrecision(precision)
        << " cannot add in place; expected one of them to be the result of "
           "a gradient op that runs after the other, each used only here";
    return WalkResult::interrupt();
  });
  return failure(result.wasInterrupted());
}
