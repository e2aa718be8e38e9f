//===- StorageType.cpp - The element type of a value in memory ------------===//
//
// The rules are StorageType.h's. A call's result is what the callee returns,
// so that a function that returns a parameter gradient to its caller keeps
// it f32 on both sides.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/Target/StorageType.h"

#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/SmallPtrSet.h"

using namespace mlir;
using namespace bitpipe;

namespace {

bool isParameterGradient(Value value,
                         llvm::SmallPtrSetImpl<Operation *> &callsSeen) {
  auto result = dyn_cast<OpResult>(value);
  if (!result)
    return false; // A function argument: the caller's value.
  Operation *op = result.getOwner();
  if (isa<nn::LinearWeightGradOp, nn::EmbeddingGradOp>(op))
    return true;
  if (isa<nn::LayerNormGradOp, nn::RMSNormGradOp>(op))
    return result.getResultNumber() != 0; // gamma (and beta), not the input
  if (auto add = dyn_cast<nn::AddOp>(op))
    return isParameterGradient(add.getLhs(), callsSeen) &&
           isParameterGradient(add.getRhs(), callsSeen);
  if (auto call = dyn_cast<func::CallOp>(op)) {
    // Straight-line programs do not recurse; the set only guards the walk.
    if (!callsSeen.insert(op).second)
      return false;
    auto callee =
        SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(op,
                                                           call.getCalleeAttr());
    if (!callee || callee.isExternal() || !callee.getBody().hasOneBlock())
      return false;
    Operation *terminator = callee.getBody().front().getTerminator();
    return isParameterGradient(
        terminator->getOperand(result.getResultNumber()), callsSeen);
  }
  return false;
}

/// The value \p fn returns as its result \p index, or null.
Value returnedValue(func::FuncOp fn, unsigned index) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return {};
  Operation *terminator = fn.getBody().front().getTerminator();
  return index < terminator->getNumOperands() ? terminator->getOperand(index)
                                              : Value();
}

/// Whether \p value is a statistic a forward op keeps for its backward
/// (nn::BackwardOpInterface::getNumStatisticResults): an f32 value in
/// every precision, like the kernels' scratch statistics. Followed through
/// calls, and from a backward function's saved argument to the value its
/// forward returns for it.
bool isStatistic(Value value, llvm::SmallPtrSetImpl<Operation *> &seen) {
  if (auto result = dyn_cast<OpResult>(value)) {
    Operation *op = result.getOwner();
    if (auto backward = dyn_cast<nn::BackwardOpInterface>(op))
      return result.getResultNumber() >=
             op->getNumResults() - backward.getNumStatisticResults();
    auto call = dyn_cast<func::CallOp>(op);
    if (!call || !seen.insert(op).second)
      return false;
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        op, call.getCalleeAttr());
    Value returned =
        callee ? returnedValue(callee, result.getResultNumber()) : Value();
    return returned && isStatistic(returned, seen);
  }
  auto arg = cast<BlockArgument>(value);
  auto fn = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
  if (!fn || !arg.getOwner()->isEntryBlock() || !seen.insert(fn).second)
    return false;
  auto saved =
      fn.getArgAttrOfType<IntegerAttr>(arg.getArgNumber(), attr::kSaved);
  auto forwardName = fn->getAttrOfType<FlatSymbolRefAttr>(attr::kBackwardOf);
  if (!saved || !forwardName)
    return false;
  auto forward =
      SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(fn, forwardName);
  if (!forward)
    return false;
  for (unsigned i = 0, e = forward.getNumResults(); i < e; ++i)
    if (forward.getResultAttr(i, attr::kSaved) == saved) {
      Value returned = returnedValue(forward, i);
      return returned && isStatistic(returned, seen);
    }
  return false;
}

} // namespace

bool bitpipe::isParameterGradient(Value value) {
  llvm::SmallPtrSet<Operation *, 4> callsSeen;
  return ::isParameterGradient(value, callsSeen);
}

Type bitpipe::storageType(Type type, bool parameterGradient,
                          Precision precision) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (precision == Precision::FP32 || !tensor ||
      !tensor.getElementType().isF32() || tensor.getRank() == 0 ||
      parameterGradient)
    return type;
  return RankedTensorType::get(tensor.getShape(),
                               BFloat16Type::get(type.getContext()),
                               tensor.getEncoding());
}

Type bitpipe::storageType(Value value, Precision precision) {
  llvm::SmallPtrSet<Operation *, 4> seen;
  bool keepF32 = isParameterGradient(value) || isStatistic(value, seen);
  return storageType(value.getType(), keepF32, precision);
}
