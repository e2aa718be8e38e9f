//===- RepeatsTest.cpp - Peeling, unrolling and rolling repeats -----------===//
//
// Whatever form a program takes (docs/repetition.md), it runs the same
// steps with the same data flow: these tests compare ProgramTraces, step by
// step and operand by operand, before and after each rewrite.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/Programs/Repeats.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

using namespace mlir;
using namespace bitpipe::bp;

namespace {

// Five repetitions of a steady state whose backward uses the handle of the
// forward two repetitions earlier (a window of two), then the backwards of
// the last two handles.
constexpr const char *kProgram = R"mlir(
bitpipe.program @rank0 rank 0 {
  %i0 = load_input tokens microbatch 0 : tensor<2x4xi32>
  %s0 = forward(%i0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
  %i1 = load_input tokens microbatch 1 : tensor<2x4xi32>
  %s1 = forward(%i1) stage 0 microbatch 1 : (tensor<2x4xi32>) -> !bitpipe.saved
  %w:2 = repeat 5 (%a = %s1, %b = %s0) : (!bitpipe.saved, !bitpipe.saved) -> (!bitpipe.saved, !bitpipe.saved) {
    %i = load_input tokens microbatch 2 step 1 : tensor<2x4xi32>
    %s = forward(%i) stage 0 microbatch 2 step 1 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%b) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
    yield %s, %a : !bitpipe.saved, !bitpipe.saved
  }
  backward(%w#1) stage 0 microbatch 5 : (!bitpipe.saved) -> ()
  backward(%w#0) stage 0 microbatch 6 : (!bitpipe.saved) -> ()
  optimizer_step
}
)mlir";

/// Per step: op name, micro-batch, and the steps its operands come from.
using Step = std::tuple<std::string, int64_t, std::vector<size_t>>;

std::vector<Step> steps(ProgramOp program) {
  ProgramTrace trace(program);
  std::vector<Step> out;
  for (size_t i = 0; i < trace.size(); ++i) {
    const TracedStep &s = trace[i];
    std::vector<size_t> from;
    for (unsigned n = 0; n < s.op->getNumOperands(); ++n)
      from.push_back(trace.operandStep(i, n).value_or(~size_t(0)));
    out.emplace_back(s.op->getName().getStringRef().str(),
                     microbatchAt(s.op, s.repetition).value_or(-1), from);
  }
  return out;
}

class RepeatsTest : public ::testing::Test {
protected:
  void SetUp() override {
    context.loadDialect<BitPipeDialect>();
    module = parseSourceString<ModuleOp>(kProgram, &context);
    ASSERT_TRUE(module);
    program = *module->getOps<ProgramOp>().begin();
    before = steps(program);
    ASSERT_EQ(before.size(), 4u + 5 * 3 + 3);
  }
  RepeatOp repeat() {
    return *program.getBody().front().getOps<RepeatOp>().begin();
  }
  size_t numRepeats() {
    auto ops = program.getBody().front().getOps<RepeatOp>();
    return std::distance(ops.begin(), ops.end());
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  ProgramOp program;
  std::vector<Step> before;
};

TEST_F(RepeatsTest, PeelingKeepsTheStepsAndTheirDataFlow) {
  peelRepetitions(repeat(), 3);
  ASSERT_EQ(numRepeats(), 1u);
  EXPECT_EQ(repeat().getCount(), 3);
  EXPECT_EQ(steps(program), before);
  ASSERT_TRUE(succeeded(mlir::verify(*module)));
}

TEST_F(RepeatsTest, PeelingAllButOneUnrolls) {
  peelRepetitions(repeat(), 1);
  EXPECT_EQ(numRepeats(), 0u);
  EXPECT_EQ(steps(program), before);
  ASSERT_TRUE(succeeded(mlir::verify(*module)));
}

TEST_F(RepeatsTest, PeelingNothingChangesNothing) {
  peelRepetitions(repeat(), 5);
  EXPECT_EQ(repeat().getCount(), 5);
  EXPECT_EQ(steps(program), before);
}

TEST_F(RepeatsTest, RerollingWritesTheSameSteps) {
  RerollOptions options;
  options.minRepetitions = 2;
  options.minOpsSaved = 1;
  FailureOr<RerollStats> stats = rerollProgram(program, options);
  ASSERT_TRUE(succeeded(stats));
  EXPECT_EQ(stats->opsBefore, before.size());
  EXPECT_LT(stats->opsAfter, stats->opsBefore);
  EXPECT_GE(stats->repeats, 1u);
  EXPECT_EQ(steps(program), before);
  ASSERT_TRUE(succeeded(mlir::verify(*module)));
}

TEST_F(RepeatsTest, WritingStraightWritesEveryStep) {
  RerollOptions options;
  options.loops = false;
  ASSERT_TRUE(succeeded(rerollProgram(program, options)));
  EXPECT_EQ(numRepeats(), 0u);
  EXPECT_EQ(steps(program), before);
}

TEST_F(RepeatsTest, ListsAgreesWithTheIndexOfSteps) {
  // Every op of a program (steps, the repeat, its yield) at repetitions
  // around and inside each window: `lists` computes what indexOf finds.
  auto check = [&](ProgramOp p, int64_t upTo) {
    for (Repetitions mode : {Repetitions::All, Repetitions::Ends}) {
      ProgramTrace trace(p, mode);
      p.walk([&](Operation *op) {
        if (op == p.getOperation())
          return;
        // An op outside a repeat runs in repetition 0 only.
        int64_t last = isa<RepeatOp>(op->getParentOp()) ? upTo : 0;
        for (int64_t k = 0; k <= last; ++k)
          EXPECT_EQ(trace.lists(op, k), trace.indexOf(op, k).has_value())
              << op->getName().getStringRef().str() << " k=" << k
              << (mode == Repetitions::Ends ? " (ends)" : " (all)");
      });
    }
  };
  check(program, 6);

  // Nine repetitions whose carried value is used one later (a window of
  // 3): Ends lists 0-2 and 6-8 and leaves 3-5 out.
  constexpr const char *kLong = R"mlir(
bitpipe.program @rank0 rank 0 {
  %i0 = load_input tokens microbatch 0 : tensor<2x4xi32>
  %s0 = forward(%i0) stage 0 microbatch 0 : (tensor<2x4xi32>) -> !bitpipe.saved
  %w = repeat 9 (%a = %s0) : (!bitpipe.saved) -> (!bitpipe.saved) {
    %i = load_input tokens microbatch 1 step 1 : tensor<2x4xi32>
    %s = forward(%i) stage 0 microbatch 1 step 1 : (tensor<2x4xi32>) -> !bitpipe.saved
    backward(%a) stage 0 microbatch 0 step 1 : (!bitpipe.saved) -> ()
    yield %s : !bitpipe.saved
  }
  backward(%w) stage 0 microbatch 9 : (!bitpipe.saved) -> ()
  optimizer_step
}
)mlir";
  OwningOpRef<ModuleOp> longModule =
      parseSourceString<ModuleOp>(kLong, &context);
  ASSERT_TRUE(longModule);
  ProgramOp longProgram = *longModule->getOps<ProgramOp>().begin();
  check(longProgram, 10);
  ProgramTrace ends(longProgram, Repetitions::Ends);
  Operation *load =
      &*(*longProgram.getBody().front().getOps<RepeatOp>().begin())
            .getSteps()
            .begin();
  for (int64_t k = 0; k < 9; ++k)
    EXPECT_EQ(ends.lists(load, k), k < 3 || k >= 6) << "k=" << k;
}

} // namespace
