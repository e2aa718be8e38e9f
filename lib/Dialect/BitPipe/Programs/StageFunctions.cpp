//===- StageFunctions.cpp - The stage functions of a module ---------------===//

#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"

using namespace mlir;
using namespace bitpipe;

FailureOr<SmallVector<func::FuncOp>>
bitpipe::collectStageFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> stages;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto attr = fn->getAttrOfType<IntegerAttr>(attr::kStage);
    if (!attr)
      continue;
    int64_t stage = attr.getInt();
    if (stage < 0)
      return fn.emitError()
             << "'" << attr::kStage
             << "' expects a non-negative stage number, got " << stage;
    if (static_cast<int64_t>(stages.size()) <= stage)
      stages.resize(stage + 1);
    if (stages[stage]) {
      InFlightDiagnostic diag = fn.emitError()
                                << "is stage " << stage << ", but @"
                                << stages[stage].getSymName()
                                << " already is; expected one function per "
                                   "stage";
      diag.attachNote(stages[stage].getLoc()) << "stage " << stage << " here";
      return diag;
    }
    stages[stage] = fn;
  }
  for (auto [s, fn] : llvm::enumerate(stages))
    if (!fn)
      return module.emitError()
             << "has stage functions up to stage " << stages.size() - 1
             << " but none for stage " << s << "; expected stages 0.."
             << stages.size() - 1 << " each once";
  return stages;
}
