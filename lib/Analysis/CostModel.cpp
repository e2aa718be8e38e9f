//===- CostModel.cpp - FLOPs and bytes of model IR ------------------------===//

#include "bitpipe/Analysis/CostModel.h"

#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/Support/TensorBytes.h"
#include "bitpipe/base/CheckedArithmetic.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

#include <tuple>

using namespace mlir;
using namespace bitpipe;

/// The bytes of `v`'s tensor, saturated at kMaxCount as the Cost's sums are.
static int64_t bytesOf(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  assert(type.hasStaticShape() && type.getElementType().isIntOrFloat() &&
         "an nn op's tensors are static tensors of ints or floats");
  return checkedTensorBytes(type).value_or(kMaxCount);
}

/// The bytes of the statistics \p op will keep for its backward and does
/// not return yet (nn::BackwardOpInterface::getStatisticBytes); once it
/// returns them they are among its saved values.
static int64_t statisticBytesOf(Operation *op) {
  auto backward = dyn_cast<nn::BackwardOpInterface>(op);
  if (!backward || backward.getNumStatisticResults() != 0)
    return 0;
  return backward.getStatisticBytes();
}

/// The bytes of the statistics \p op keeps for its backward, whether it
/// returns them yet or not, and its forward FLOPs when it has any.
static std::pair<int64_t, int64_t> statisticsOf(Operation *op,
                                                int64_t forwardFlops) {
  auto backward = dyn_cast<nn::BackwardOpInterface>(op);
  int64_t bytes = backward ? backward.getStatisticBytes() : 0;
  return {bytes, bytes > 0 ? forwardFlops : 0};
}

/// The weight operands and the saved activations of an nn forward op.
static void classifyValues(Operation *op, SmallVectorImpl<Value> &weights,
                           SmallVectorImpl<Value> &activations) {
  auto backward = dyn_cast<nn::BackwardOpInterface>(op);
  if (!backward)
    return;
  for (OpOperand &operand : op->getOpOperands())
    if (backward.isWeightOperand(operand.getOperandNumber()))
      weights.push_back(operand.get());
  for (Value saved : backward.getSavedValues())
    if (!llvm::is_contained(weights, saved))
      activations.push_back(saved);
  // What the statistics form will keep too (bitpipe-generate-backward's
  // default), as the statistics themselves (statisticBytesOf).
  llvm::append_range(activations, backward.getValuesSavedWithStatistics());
}

/// \p op's FLOPs by the rate they run at: a linear's products by its shape
/// (its bias with the rest, its gradient a weight's only), attention by its
/// sequence length and head size, everything else as "other" work, the
/// embedding's backward a weight gradient only. Sums to the op's forward
/// and backward FLOPs (NNCost.cpp's conventions).
static sched::ComputeWork workOf(Operation *op, int64_t forwardFlops,
                                 int64_t backwardFlops) {
  sched::ComputeWork work;
  if (auto linear = dyn_cast<nn::LinearOp>(op)) {
    auto w = cast<RankedTensorType>(linear.getWeight().getType());
    auto y = cast<RankedTensorType>(linear.getResult().getType());
    sched::LinearShape shape{y.getNumElements() / w.getDimSize(0),
                             w.getDimSize(1), w.getDimSize(0)};
    work.addLinear(shape, 1);
    const double bias = linear.getBias() ? double(y.getNumElements()) : 0;
    work.otherForwardFlops = bias;
    work.otherWeightGradFlops = bias;
    return work;
  }
  if (auto attention = dyn_cast<nn::AttentionOp>(op)) {
    auto out = cast<RankedTensorType>(attention.getResult().getType());
    sched::AttentionShape shape{out.getDimSize(1),
                                out.getDimSize(2) / attention.getNumHeads(),
                                attention.getCausal()};
    work.addAttention(shape, double(forwardFlops));
    return work;
  }
  work.otherForwardFlops = double(forwardFlops);
  if (isa<nn::EmbeddingOp>(op))
    work.otherWeightGradFlops = double(backwardFlops);
  else
    work.otherBackwardFlops = double(backwardFlops);
  return work;
}

Cost bitpipe::costOfOp(Operation *op) {
  Cost cost;
  if (auto flops = dyn_cast<nn::CostOpInterface>(op)) {
    cost.forwardFlops = flops.getForwardFlops();
    cost.backwardFlops = flops.getBackwardFlops();
    cost.work = workOf(op, cost.forwardFlops, cost.backwardFlops);
  }
  SmallVector<Value> weights, activations;
  classifyValues(op, weights, activations);
  for (Value w : weights)
    cost.parameterBytes = saturatingSum({cost.parameterBytes, bytesOf(w)});
  for (Value a : activations)
    cost.activationBytes = saturatingSum({cost.activationBytes, bytesOf(a)});
  cost.activationBytes =
      saturatingSum({cost.activationBytes, statisticBytesOf(op)});
  std::tie(cost.statisticBytes, cost.statisticFlops) =
      statisticsOf(op, cost.forwardFlops);
  return cost;
}

namespace {
/// Sums costs while counting every parameter and activation value once.
struct Accumulator {
  Cost cost;
  int64_t parameterCount = 0;
  llvm::DenseSet<Value> seenWeights, seenActivations;

  void add(Operation *op) {
    Cost c = costOfOp(op);
    cost.forwardFlops = saturatingSum({cost.forwardFlops, c.forwardFlops});
    cost.backwardFlops = saturatingSum({cost.backwardFlops, c.backwardFlops});
    cost.statisticBytes =
        saturatingSum({cost.statisticBytes, c.statisticBytes});
    cost.statisticFlops =
        saturatingSum({cost.statisticFlops, c.statisticFlops});
    cost.work.add(c.work);
    SmallVector<Value> weights, activations;
    classifyValues(op, weights, activations);
    for (Value w : weights)
      if (seenWeights.insert(w).second) {
        cost.parameterBytes = saturatingSum({cost.parameterBytes, bytesOf(w)});
        parameterCount = saturatingSum(
            {parameterCount,
             cast<RankedTensorType>(w.getType()).getNumElements()});
      }
    for (Value a : activations)
      if (seenActivations.insert(a).second)
        cost.activationBytes =
            saturatingSum({cost.activationBytes, bytesOf(a)});
    cost.activationBytes =
        saturatingSum({cost.activationBytes, statisticBytesOf(op)});
  }
};
} // namespace

FailureOr<ModelCost> bitpipe::analyzeModelCost(func::FuncOp fn) {
  llvm::MapVector<int64_t, std::pair<Accumulator, LayerCost>> layers;
  Accumulator model;
  WalkResult walk = fn.walk([&](Operation *op) -> WalkResult {
    if (!isa<nn::NNDialect>(op->getDialect()))
      return WalkResult::advance();
    SmallVector<Type> types(op->getOperandTypes());
    llvm::append_range(types, op->getResultTypes());
    for (Type type : types)
      if (auto t = dyn_cast<RankedTensorType>(type); t && !t.hasStaticShape())
        return op->emitOpError()
               << "needs static shapes for cost analysis, got " << type;
    auto layer = op->getAttrOfType<IntegerAttr>(nn::attr::kLayer);
    if (!layer)
      return op->emitOpError()
             << "has no '" << nn::attr::kLayer
             << "' attribute: cost analysis groups ops by layer "
                "(bitpipe-import sets it)";
    auto &[acc, info] = layers[layer.getInt()];
    info.layer = layer.getInt();
    ++info.numOps;
    if (isa<nn::EmbeddingOp>(op))
      info.kind = "embedding";
    else if (isa<nn::CrossEntropyOp>(op))
      info.kind = "head";
    acc.add(op);
    model.add(op);
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  ModelCost result;
  for (auto &[layer, entry] : layers) {
    auto &[acc, info] = entry;
    if (info.kind.empty())
      info.kind = "transformer";
    info.cost = acc.cost;
    info.parameterCount = acc.parameterCount;
    result.layers.push_back(info);
  }
  llvm::sort(result.layers, [](const LayerCost &a, const LayerCost &b) {
    return a.layer < b.layer;
  });
  result.total = model.cost;
  result.parameterCount = model.parameterCount;
  // The counts saturate rather than wrap; a model that reaches the limit is
  // too large to compile (the importer and #nn.model refuse such sizes;
  // this catches IR without them).
  const Cost &t = result.total;
  for (auto [name, value] :
       {std::pair<StringRef, int64_t>{"forward FLOPs", t.forwardFlops},
        {"backward FLOPs", t.backwardFlops},
        {"parameter bytes", t.parameterBytes},
        {"activation bytes", t.activationBytes},
        {"parameters", result.parameterCount}})
    if (value >= kMaxCount)
      return fn.emitOpError()
             << "has more " << name
             << " per micro-batch than 2^63-1 (9223372036854775807); "
                "docs/models.md, \"Limits\", gives the sizes bitpipe builds";
  return result;
}
