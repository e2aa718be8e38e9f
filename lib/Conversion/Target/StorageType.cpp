//===- StorageType.cpp - The element type of a value in memory ------------===//
//
// The rules are StorageType.h's. A call's result is what the callee returns,
// so that a function that returns a parameter gradient to its caller keeps
// it f32 on both sides.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/Target/StorageType.h"

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
  return storageType(value.getType(), isParameterGradient(value), precision);
}
