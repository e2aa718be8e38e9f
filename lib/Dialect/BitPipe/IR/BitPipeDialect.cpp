//===- BitPipeDialect.cpp - The bitpipe dialect ---------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeTypes.h"
#include "bitpipe/Schedule/Registry.h"

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

/// Checks `bitpipe.schedule`: a #bitpipe.schedule (whose own verifier
/// checks its fields) whose pipelines exist in the module's placement.
static LogicalResult verifyScheduleAttr(Operation *op, Attribute value) {
  StringLiteral name = BitPipeDialect::kScheduleAttrName;
  auto schedule = dyn_cast<ScheduleAttr>(value);
  if (!schedule)
    return op->emitError() << "'" << name
                           << "' expects a #bitpipe.schedule, got " << value;
  auto placement =
      op->getAttrOfType<PlacementAttr>(BitPipeDialect::kPlacementAttrName);
  if (!placement)
    return op->emitError() << "'" << name << "' expects the '"
                           << BitPipeDialect::kPlacementAttrName
                           << "' the schedule runs on";
  for (auto [m, p] : llvm::enumerate(schedule.getMicrobatchPipelines()))
    if (p >= placement.getNumPipelines())
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
    if (!size || size.getValue().getSignificantBits() > 64 ||
        size.getValue().getSExtValue() < 1 ||
        size.getValue().getSExtValue() > sched::limit::kMaxRanks)
      return op->emitError()
             << "'" << kWorldSizeAttrName
             << "' expects a positive integer of at most "
             << sched::limit::kMaxRanks
             << " (the schedule registry's limit), got " << attr.getValue();
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

  if (attr.getName() == kTransferStreamsAttrName) {
    if (!isa<TransferStreamsAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kTransferStreamsAttrName
             << "' expects a #bitpipe.transfer_streams, got "
             << attr.getValue();
    return success();
  }

  if (attr.getName() == kGradientSyncAttrName) {
    if (!isa<GradientSyncAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kGradientSyncAttrName
             << "' expects a #bitpipe.gradient_sync, got " << attr.getValue();
    return success();
  }

  if (attr.getName() == kRecomputeAttrName) {
    if (!isa<RecomputeAttr>(attr.getValue()))
      return op->emitError()
             << "'" << kRecomputeAttrName << "' expects a #bitpipe.recompute, "
             << "got " << attr.getValue();
    return success();
  }

  if (attr.getName() == ::bitpipe::attr::kPartition) {
    if (!isa<PartitionAttr>(attr.getValue()))
      return op->emitError()
             << "'" << ::bitpipe::attr::kPartition
             << "' expects a #bitpipe.partition, got " << attr.getValue();
    return success();
  }

  if (attr.getName() == kDataParallelAttrName) {
    auto copies = dyn_cast<IntegerAttr>(attr.getValue());
    if (!copies || copies.getValue().getSignificantBits() > 64 ||
        copies.getValue().getSExtValue() < 1 ||
        copies.getValue().getSExtValue() > sched::limit::kMaxDataParallel)
      return op->emitError()
             << "'" << kDataParallelAttrName
             << "' expects a positive integer of at most "
             << sched::limit::kMaxDataParallel
             << " (the schedule registry's limit), got " << attr.getValue();
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

  if (attr.getName() == kDataParallelCopyAttrName) {
    auto copy = dyn_cast<IntegerAttr>(attr.getValue());
    auto copies = op->getAttrOfType<IntegerAttr>(kDataParallelAttrName);
    int64_t limit = copies ? copies.getInt() : 1;
    if (!copy || copy.getValue().getSignificantBits() > 64 ||
        copy.getValue().getSExtValue() < 0 ||
        copy.getValue().getSExtValue() >= limit)
      return op->emitError()
             << "'" << kDataParallelCopyAttrName
             << "' expects a copy number below '" << kDataParallelAttrName
             << "' = " << limit << ", got " << attr.getValue();
    return success();
  }

  return success();
}
