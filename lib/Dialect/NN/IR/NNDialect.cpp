//===- NNDialect.cpp - The nn dialect -------------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace bitpipe::nn;

#include "bitpipe/Dialect/NN/IR/NNOpsDialect.cpp.inc"

void NNDialect::initialize() {
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
  if (name == "nn.layer") {
    auto layer = dyn_cast<IntegerAttr>(attr.getValue());
    if (!layer || layer.getInt() < 0)
      return op->emitError() << "'nn.layer' must be a non-negative integer, "
                                "got "
                             << attr.getValue();
    return success();
  }
  if (name == "nn.cost") {
    auto cost = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!cost)
      return op->emitError() << "'nn.cost' must be a dictionary";
    for (StringRef key : {"fwd_flops", "bwd_flops", "param_bytes", "act_bytes"})
      if (!cost.getAs<IntegerAttr>(key))
        return op->emitError()
               << "'nn.cost' lacks the integer field '" << key << "'";
    return success();
  }
  if (name == "nn.model") {
    if (!isa<DictionaryAttr>(attr.getValue()))
      return op->emitError() << "'nn.model' must be a dictionary";
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
  if (name == "nn.param") {
    auto s = dyn_cast<StringAttr>(attr.getValue());
    if (!s || s.getValue().empty())
      return fail() << "'nn.param' must be a non-empty string (the "
                       "parameter's name)";
    return success();
  }
  if (name == "nn.input") {
    auto s = dyn_cast<StringAttr>(attr.getValue());
    if (!s || (s.getValue() != "tokens" && s.getValue() != "labels"))
      return fail() << "'nn.input' must be \"tokens\" or \"labels\", got "
                    << attr.getValue();
    return success();
  }
  if (name == "nn.init") {
    auto init = dyn_cast<DictionaryAttr>(attr.getValue());
    auto kind = init ? init.getAs<StringAttr>("kind") : StringAttr();
    if (!kind)
      return fail() << "'nn.init' must be a dictionary with a string 'kind'";
    if (kind.getValue() == "normal") {
      auto std = init.getAs<FloatAttr>("std");
      if (!std || std.getValueAsDouble() <= 0)
        return fail() << "'nn.init' of kind \"normal\" needs a positive "
                         "float 'std'";
      return success();
    }
    if (kind.getValue() != "zeros" && kind.getValue() != "ones")
      return fail() << "'nn.init' kind must be \"normal\", \"zeros\" or "
                       "\"ones\", got \""
                    << kind.getValue() << "\"";
    return success();
  }
  return fail() << "unknown nn argument attribute '" << name << "'";
}
