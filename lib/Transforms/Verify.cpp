//===- Verify.cpp - The bitpipe-verify pass -------------------------------===//
//
// The pass over verifyRankPrograms (lib/Dialect/BitPipe/Programs/
// VerifyPrograms.cpp), which bitpipe-lower-program-to-runtime also runs
// before it changes anything.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/Programs/VerifyPrograms.h"
#include "bitpipe/Transforms/Passes.h"

namespace bitpipe {
#define GEN_PASS_DEF_VERIFY
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;

namespace {

struct VerifyPass : public bitpipe::impl::VerifyBase<VerifyPass> {
  using VerifyBase::VerifyBase;

  void runOnOperation() override {
    if (failed(bitpipe::verifyRankPrograms(getOperation(), requireAllReduce,
                                           transport)))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }
};

} // namespace
