//===- Place.cpp - The bitpipe-place pass ---------------------------------===//
//
// Chooses which device runs each stage function. The placement itself comes
// from the schedule library (sched::makePlacement), so this pass, the
// generators and the simulator can never disagree on it; the pass only
// checks that the module was partitioned into the number of stages the
// placement needs and records the result in the IR.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace bitpipe {
#define GEN_PASS_DEF_PLACE
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

/// "bidirectional-v placement on 4 devices", with the chunk count for loop
/// (the only kind where it changes the stage count).
std::string describePlacement(const sched::Placement &p, int chunksPerDevice) {
  std::string text = std::string(sched::placementKindName(p.kind)) +
                     " placement on " + std::to_string(p.numDevices) +
                     (p.numDevices == 1 ? " device" : " devices");
  if (p.kind == sched::PlacementKind::Loop && chunksPerDevice != 1)
    text += " with " + std::to_string(chunksPerDevice) + " chunks per device";
  return text;
}

struct PlacePass : public bitpipe::impl::PlaceBase<PlacePass> {
  using PlaceBase::PlaceBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(place(module)))
      signalPassFailure();
  }

  LogicalResult place(ModuleOp module) {
    if (placement.empty())
      return module.emitError() << "bitpipe-place needs placement=, one of "
                                << sched::placementKindList();
    sched::Result<sched::PlacementKind> kind =
        sched::parsePlacementKind(placement);
    if (!kind)
      return module.emitError() << kind.error;
    if (*kind != sched::PlacementKind::Loop && chunksPerDevice != 1)
      return module.emitError()
             << "chunks-per-device=" << chunksPerDevice.getValue()
             << " only applies to the loop placement; the " << placement
             << " placement fixes the chunks per device itself";
    // The counts within the schedule registry's limits (Registry.h).
    std::string counts =
        sched::checkPlacementCounts(devices, chunksPerDevice, dataParallel);
    if (!counts.empty())
      return module.emitError() << "bitpipe-place: " << counts;
    sched::Result<sched::Placement> layout =
        sched::makePlacement(*kind, devices, chunksPerDevice);
    if (!layout)
      return module.emitError() << layout.error;

    // A program refers to stages by number: re-placing under it would
    // silently change what it means.
    if (!module.getOps<bp::ProgramOp>().empty())
      return module.emitError()
             << "already has per-rank programs; place stage functions "
                "before bitpipe-schedule";

    FailureOr<SmallVector<func::FuncOp>> stages = collectStageFunctions(module);
    if (failed(stages))
      return failure();
    if (static_cast<int>(stages->size()) != layout->numStages)
      return module.emitError()
             << describePlacement(*layout, chunksPerDevice) << " needs "
             << layout->numStages << " stages, the module has "
             << stages->size() << " stage function"
             << (stages->size() == 1 ? "" : "s")
             << "; partition with chunks=" << layout->numStages;

    auto attr = bp::PlacementAttr::get(&getContext(), *layout);
    Builder b(&getContext());
    module->setAttr(bp::BitPipeDialect::kPlacementAttrName, attr);
    // K copies of the pipeline, rank = copy * D + device (sched::World).
    sched::World world{layout->numDevices, dataParallel};
    module->setAttr(bp::BitPipeDialect::kWorldSizeAttrName,
                    b.getI64IntegerAttr(world.size()));
    module->setAttr(bp::BitPipeDialect::kDataParallelAttrName,
                    b.getI64IntegerAttr(world.dataParallel));
    for (auto [stage, fn] : llvm::enumerate(*stages))
      fn->setAttr(attr::kDevices,
                  b.getDenseI64ArrayAttr(attr.getReplicaGroup(stage)));
    return success();
  }
};

} // namespace
