//===- NcclRulesPipelineTest.cpp - Every emitted program under NCCL's rules -===//
//
// The programs bitpipe-insert-transfers and the lowering
// emit pass the check under NCCL's rules (rendezvous sends, batches as
// units, each stream in order: docs/nccl-transfers.md) for every registered
// schedule, D in {2, 4, 6, 8, 16}, N in {D, 2D, 4D} and one N that is not a
// multiple of D, one and two data-parallel copies, the split backward where
// the schedule has it. Each case runs bitpipe-pipeline as bitpipe-compile
// does (its bitpipe-verify checks under NCCL's rules) and then
// bitpipe-lower-program-to-runtime for the CUDA target, which checks the
// programs again before it writes them out. A shape the schedule registry
// or the generator refuses (no valid schedule: they say why) is left out
// and counted.
//
// The model is a GPT of 30 layers at hidden size 8: 32 partition units, as
// many stages as BitPipe needs at D = 16.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/Passes.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/Import/ModelConfig.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Transforms/Pipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <string>

using namespace mlir;
using namespace bitpipe;

namespace {

ModelConfig deepTinyGpt() {
  ModelConfig c;
  c.name = "gpt_deep_tiny";
  c.family = ModelFamily::GPT;
  c.layers = 30;
  c.hidden = 8;
  c.heads = 2;
  c.vocab = 16;
  c.maxPositions = 4;
  c.seqLen = 4;
  c.microbatchSize = 1;
  return c;
}

class NcclRulesPipeline : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registry.insert<nn::NNDialect, bp::BitPipeDialect, arith::ArithDialect,
                    func::FuncDialect, LLVM::LLVMDialect, scf::SCFDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }

  /// Compiles one shape; an empty string when it passed, else what failed
  /// (the diagnostics, the deadlock's cycle included).
  std::string compile(const sched::ScheduleOptions &request) {
    std::string diagnostics;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
      diagnostics += d.str() + "\n";
      for (const Diagnostic &note : d.getNotes())
        diagnostics += "  note: " + note.str() + "\n";
      return success();
    });
    OwningOpRef<ModuleOp> module = buildModel(context, deepTinyGpt());
    if (!module)
      return "the model was not built";
    PipelineConfig config;
    config.request = request;
    PassManager pipeline(&context);
    buildPipeline(pipeline, config); // ends with bitpipe-verify, NCCL's rules
    if (failed(pipeline.run(*module)))
      return "bitpipe-pipeline: " + diagnostics;
    LowerProgramToRuntimeOptions lowering;
    lowering.target = TargetKind::CUDA;
    lowering.loops = false;
    PassManager lower(&context);
    lower.addPass(createLowerProgramToRuntime(lowering));
    if (failed(lower.run(*module)))
      return "bitpipe-lower-program-to-runtime target=cuda: " + diagnostics;
    return "";
  }

  MLIRContext context;
};

TEST_P(NcclRulesPipeline, EveryShapeCompilesForCudaUnderNcclsRules) {
  int compiled = 0, refused = 0;
  for (int d : {2, 4, 6, 8, 16}) {
    for (int n : {d, 2 * d, 4 * d, d + 1}) {
      for (int dp : {1, 2}) {
        sched::ScheduleOptions request;
        request.schedule = GetParam();
        request.devices = d;
        request.microbatches = n;
        request.dataParallel = dp;
        // No schedule of this shape: the registry or the generator says
        // why (bitpipe-compile reports the same).
        sched::Result<sched::ScheduleOptions> valid = sched::validate(request);
        if (!valid || !sched::generateSchedule(*valid)) {
          ++refused;
          continue;
        }
        std::string failure = compile(request);
        EXPECT_EQ(failure, "") << GetParam() << " D=" << d << " N=" << n
                               << " dp=" << dp;
        ++compiled;
      }
    }
  }
  // Every schedule has shapes at every D (N = 2D at least, both widths).
  EXPECT_GE(compiled, 5 * 2 * 2) << GetParam() << ": " << refused
                                 << " shapes refused";
  RecordProperty("compiled", compiled);
  RecordProperty("refused", refused);
}

std::vector<std::string> scheduleNames() {
  std::vector<std::string> names;
  for (const sched::ScheduleInfo &info : sched::schedules())
    names.push_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(
    EverySchedule, NcclRulesPipeline, ::testing::ValuesIn(scheduleNames()),
    [](const ::testing::TestParamInfo<std::string> &info) {
      std::string name = info.param;
      for (char &c : name)
        if (!isalnum(static_cast<unsigned char>(c)))
          c = '_';
      return name;
    });

} // namespace
