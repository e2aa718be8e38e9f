//===- NNDialect.cpp - The nn dialect -------------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace bitpipe::nn;

#include "bitpipe/Dialect/NN/IR/NNOpsDialect.cpp.inc"

void NNDialect::initialize() {
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "bitpipe/Dialect/NN/IR/NNOps.cpp.inc"
      >();
}

#include "bitpipe/Dialect/NN/IR/NNInterfaces.cpp.inc"

//===----------------------------------------------------------------------===//
// Discardable attributes of model IR.
//===----------------------------------------------------------------------===//

LogicalResult NNDialect::verifyOperationAttribute(Operation *op,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == attr::kLayer) {
    auto layer = dyn_cast<IntegerAttr>(attr.getValue());
    if (!layer || layer.getInt() < 0)
      return op->emitError()
             << "'" << attr::kLayer << "' must be a non-negative integer, got "
             << attr.getValue();
    return success();
  }
  // The typed attributes have checked their fields; only the type is left.
  if (name == attr::kCost) {
    if (!isa<CostAttr>(attr.getValue()))
      return op->emitError() << "'" << attr::kCost
                             << "' must be a #nn.cost, got " << attr.getValue();
    return success();
  }
  if (name == attr::kModel) {
    if (!isa<ModelAttr>(attr.getValue()))
      return op->emitError()
             << "'" << attr::kModel << "' must be a #nn.model, got "
             << attr.getValue();
    return success();
  }
  return op->emitError() << "unknown nn attribute '" << name << "'";
}

LogicalResult NNDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                  unsigned argIndex,
                                                  NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  auto fail = [&]() {
    return op->emitError() << "argument #" << argIndex << ": ";
  };
  if (name == attr::kParam) {
    auto s = dyn_cast<StringAttr>(attr.getValue());
    if (!s || s.getValue().empty())
      return fail() << "'" << attr::kParam
                    << "' must be a non-empty string (the parameter's name)";
    return success();
  }
  if (name == attr::kInput) {
    auto s = dyn_cast<StringAttr>(attr.getValue());
    if (!s || (s.getValue() != attr::kTokens && s.getValue() != attr::kLabels &&
               s.getValue() != attr::kDropoutKey))
      return fail() << "'" << attr::kInput << "' must be \"" << attr::kTokens
                    << "\", \"" << attr::kLabels << "\" or \""
                    << attr::kDropoutKey << "\", got " << attr.getValue();
    return success();
  }
  if (name == attr::kInit) {
    if (!isa<InitAttr>(attr.getValue()))
      return fail() << "'" << attr::kInit << "' must be a #nn.init, got "
                    << attr.getValue();
    return success();
  }
  return fail() << "unknown nn argument attribute '" << name << "'";
}
