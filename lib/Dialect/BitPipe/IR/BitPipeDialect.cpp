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

/// Checks `bitpipe.schedule`: the fields a reader of the programs needs to
/// rebuild the schedule (ScheduleFromIR) are there and agree with the
/// placement.
static LogicalResult verifyScheduleAttr(Operation *op, Attribute value) {
  StringLiteral name = BitPipeDialect::kScheduleAttrName;
  auto dict = dyn_cast<DictionaryAttr>(value);
  if (!dict)
    return op->emitError() << "'" << name << "' expects a dictionary, got "
                           << value;
  auto fail = [&](StringRef field, StringRef expected) {
    return op->emitError() << "'" << name << "' expects field '" << field
                           << "' to be " << expected;
  };
  if (!dict.getAs<StringAttr>("name"))
    return fail("name", "a string");
  auto microbatches = dict.getAs<IntegerAttr>("microbatches");
  if (!microbatches || microbatches.getValue().getSExtValue() < 1)
    return fail("microbatches", "a positive integer");
  if (!dict.getAs<BoolAttr>("split_backward"))
    return fail("split_backward", "a bool");
  if (Attribute note = dict.get("note"); note && !isa<StringAttr>(note))
    return fail("note", "a string");
  auto pipelines = dict.getAs<DenseI64ArrayAttr>("microbatch_pipelines");
  if (!pipelines || pipelines.size() != microbatches.getInt())
    return fail("microbatch_pipelines",
                "an array<i64> with one entry per micro-batch");
  auto placement =
      op->getAttrOfType<PlacementAttr>(BitPipeDialect::kPlacementAttrName);
  if (!placement)
    return op->emitError() << "'" << name << "' expects the '"
                           << BitPipeDialect::kPlacementAttrName
                           << "' the schedule runs on";
  for (auto [m, p] : llvm::enumerate(pipelines.asArrayRef()))
    if (p < 0 || p >= placement.getNumPipelines())
      return op->emitError()
             << "'" << name << "' sends micro-batch " << m
             << " through pipeline " << p << ", but the placement has "
             << placement.getNumPipelines();
  return success();
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

  if (attr.getName() == kScheduleAttrName)
    return verifyScheduleAttr(op, attr.getValue());

  if (attr.getName() == kDataParallelAttrName) {
    auto copies = dyn_cast<IntegerAttr>(attr.getValue());
    if (!copies || copies.getValue().getSExtValue() < 1)
      return op->emitError()
             << "'" << kDataParallelAttrName
             << "' expects a positive integer, got " << attr.getValue();
    // Rank = copy * D + device only names every rank once when the world
    // is exactly K copies of the D devices.
    auto placement = op->getAttrOfType<PlacementAttr>(kPlacementAttrName);
    auto size = op->getAttrOfType<IntegerAttr>(kWorldSizeAttrName);
    if (placement && size &&
        size.getInt() != placement.getDevices() * copies.getInt())
      return op->emitError()
             << "'" << kDataParallelAttrName << "' = " << copies.getInt()
             << " copies of the placement's " << placement.getDevices()
             << " devices need '" << kWorldSizeAttrName << "' = "
             << placement.getDevices() * copies.getInt() << ", got "
             << size.getInt();
    return success();
  }

  return success();
}
