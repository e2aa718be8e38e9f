//===- BitPipeDialect.cpp - The bitpipe dialect ---------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeTypes.h"

using namespace mlir;
using namespace bitpipe::bp;

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOpsDialect.cpp.inc"

void BitPipeDialect::initialize() {
  registerTypes();
  registerAttributes();
  addOperations<
#define GET_OP_LIST
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.cpp.inc"
      >();
}

/// Checks the module-level attributes. Other `bitpipe.*` discardable
/// attributes belong to passes (costs, for example) and are accepted as is.
LogicalResult BitPipeDialect::verifyOperationAttribute(Operation *op,
                                                       NamedAttribute attr) {
  if (attr.getName() == kPlacementAttrName) {
    if (!isa<PlacementAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kPlacementAttrName
             << "' expects a #bitpipe.placement, got " << attr.getValue();
    return success();
  }

  if (attr.getName() == kWorldSizeAttrName) {
    auto size = dyn_cast<IntegerAttr>(attr.getValue());
    if (!size || size.getValue().getSExtValue() < 1)
      return op->emitError()
             << "'" << kWorldSizeAttrName
             << "' expects a positive integer, got " << attr.getValue();
    // World = pipeline x data parallel: each pipeline device is replicated
    // the same number of times.
    if (auto placement = op->getAttrOfType<PlacementAttr>(kPlacementAttrName);
        placement && size.getInt() % placement.getDevices() != 0)
      return op->emitError()
             << "'" << kWorldSizeAttrName << "' = " << size.getInt()
             << " is not a multiple of the placement's "
             << placement.getDevices() << " devices";
    return success();
  }

  return success();
}
