//===- InstantiateCopy.cpp - The bitpipe-instantiate-copy pass ------------===//
//
// Writes one data-parallel copy of the per-pipeline-rank programs out with
// world ranks, for a reader who wants to see what a given rank runs and
// with whom it talks (docs/data-parallel.md). Only numbers change: the
// programs' order and values are the copy's as they are.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/IR/Builders.h"

namespace bitpipe {
#define GEN_PASS_DEF_INSTANTIATECOPY
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

struct InstantiateCopyPass
    : public bitpipe::impl::InstantiateCopyBase<InstantiateCopyPass> {
  using InstantiateCopyBase::InstantiateCopyBase;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    FailureOr<sched::World> world = readWorld(module);
    if (failed(world))
      return failure();
    const int wanted = copy;
    if (wanted < 0 || wanted >= world->dataParallel)
      return module.emitError()
             << "bitpipe-instantiate-copy: copy=" << wanted
             << " is not a copy of the module's "
             << bp::BitPipeDialect::kDataParallelAttrName << " = "
             << world->dataParallel << "; expected 0.."
             << world->dataParallel - 1;
    if (module.getOps<bp::ProgramOp>().empty())
      return module.emitError()
             << "has no bitpipe.program to instantiate; run bitpipe-schedule "
                "first";
    // The reader checks that the programs are the pipeline ranks', once
    // each, so the numbers below name every rank of the copy exactly once.
    if (failed(readScheduleFromIR(module)))
      return failure();

    Builder b(module.getContext());
    auto worldRank = [&](int64_t pipelineRank) -> int64_t {
      return world->rank(wanted, static_cast<int>(pipelineRank));
    };
    for (auto program : module.getOps<bp::ProgramOp>()) {
      int64_t rank = worldRank(program.getRank());
      program.setRank(rank);
      program.setSymName(("rank" + Twine(rank)).str());
      // Repeats included: their transfers talk to the same peers in every
      // repetition.
      program.walk([&](Operation *op) {
        if (auto send = dyn_cast<bp::SendOp>(op))
          send.setPeer(worldRank(send.getPeer()));
        else if (auto recv = dyn_cast<bp::RecvOp>(op))
          recv.setPeer(worldRank(recv.getPeer()));
        else if (auto start = dyn_cast<bp::AllReduceStartOp>(op))
          start.setGroup(worldRanks(start.getGroup(), *world));
      });
    }
    module->setAttr(bp::BitPipeDialect::kDataParallelCopyAttrName,
                    b.getI64IntegerAttr(wanted));
    return success();
  }

  /// The world ranks a group of pipeline ranks spans: each in every copy.
  static SmallVector<int64_t> worldRanks(ArrayRef<int64_t> group,
                                         const sched::World &world) {
    std::vector<int> members(group.begin(), group.end());
    std::vector<int> all = sched::worldGroup(members, world);
    return SmallVector<int64_t>(all.begin(), all.end());
  }
};

} // namespace
