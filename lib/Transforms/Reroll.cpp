//===- Reroll.cpp - The bitpipe-reroll and bitpipe-unroll passes ----------===//
//
// Thin passes over Repeats.h: the rolling itself is a utility of the
// program dialect, shared with the lowering (docs/repetition.md).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/Programs/Repeats.h"
#include "bitpipe/Transforms/Passes.h"

namespace bitpipe {
#define GEN_PASS_DEF_REROLL
#define GEN_PASS_DEF_UNROLL
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

struct RerollPass : public bitpipe::impl::RerollBase<RerollPass> {
  using RerollBase::RerollBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const int64_t repetitions = minRepetitions, saved = minOpsSaved;
    if (repetitions < 2 || saved < 1) {
      module.emitError() << "bitpipe-reroll: min-repetitions=" << repetitions
                         << " min-ops-saved=" << saved
                         << "; expected min-repetitions >= 2 and "
                            "min-ops-saved >= 1";
      return signalPassFailure();
    }
    bp::RerollOptions options;
    options.minRepetitions = repetitions;
    options.minOpsSaved = saved;
    for (auto program : module.getOps<bp::ProgramOp>())
      if (failed(bp::rerollProgram(program, options)))
        return signalPassFailure();
  }
};

struct UnrollPass : public bitpipe::impl::UnrollBase<UnrollPass> {
  void runOnOperation() override {
    for (auto program : getOperation().getOps<bp::ProgramOp>())
      bp::unrollRepeats(program);
  }
};

} // namespace
