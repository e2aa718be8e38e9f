//===- BackwardRulesTest.cpp - Every backward rule against its declarations ===//
//
// For each nn forward op: the backward ops that buildBackward emits verify;
// they read exactly the forward values getSavedValues declares (no more: the
// backward would read something that was not kept; no less: memory would be
// kept for nothing); and each operand gradient has its operand's type, with
// none for integer operands.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/SetVector.h"

#include "gtest/gtest.h"

using namespace mlir;
using namespace bitpipe::nn;

namespace {

struct CreatedOps : public OpBuilder::Listener {
  void notifyOperationInserted(Operation *op,
                               OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
  SmallVector<Operation *> ops;
};

/// `body` holds one forward op; its results' gradients are the function's
/// trailing `numGrads` arguments.
void checkRule(StringRef source, unsigned numGrads) {
  MLIRContext context;
  context.loadDialect<NNDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &context);
  ASSERT_TRUE(module) << source.str();
  auto fn = *module->getOps<func::FuncOp>().begin();
  BackwardOpInterface fwd;
  fn.walk([&](BackwardOpInterface op) { fwd = op; });
  ASSERT_TRUE(fwd) << "no forward op in\n" << source.str();
  SCOPED_TRACE(fwd->getName().getStringRef().str());

  Block &body = fn.getBody().front();
  ValueRange grads = body.getArguments().take_back(numGrads);
  ASSERT_EQ(grads.size(), fwd->getNumResults());

  OpBuilder b(&context);
  CreatedOps created;
  b.setListener(&created);
  b.setInsertionPoint(body.getTerminator());
  SmallVector<Value> operandGrads;
  ASSERT_TRUE(succeeded(fwd.buildBackward(b, grads, operandGrads)));
  ASSERT_TRUE(succeeded(verify(*module)));

  // What the backward ops read from the forward.
  llvm::SetVector<Value> read;
  DenseSet<Operation *> backwardOps(created.ops.begin(), created.ops.end());
  for (Operation *op : created.ops)
    for (Value v : op->getOperands()) {
      if (llvm::is_contained(grads, v))
        continue;
      if (Operation *def = v.getDefiningOp(); def && backwardOps.contains(def))
        continue;
      read.insert(v);
    }
  SmallVector<Value> saved = fwd.getSavedValues();
  llvm::SetVector<Value> declared(saved.begin(), saved.end());
  EXPECT_EQ(read.size(), declared.size());
  for (Value v : read)
    EXPECT_TRUE(declared.contains(v)) << "reads an undeclared value";
  for (Value v : declared)
    EXPECT_TRUE(read.contains(v)) << "declares a value it never reads";

  ASSERT_EQ(operandGrads.size(), fwd->getNumOperands());
  for (auto [operand, grad] : llvm::zip(fwd->getOperands(), operandGrads)) {
    bool differentiable =
        isa<FloatType>(getElementTypeOrSelf(operand.getType()));
    EXPECT_EQ(static_cast<bool>(grad), differentiable);
    if (grad) {
      EXPECT_EQ(grad.getType(), operand.getType());
    }
  }
}

TEST(BackwardRules, Embedding) {
  checkRule(R"mlir(
    func.func @f(%t: tensor<2x4xi32>, %wte: tensor<16x8xf32>,
                 %wpe: tensor<4x8xf32>, %dy: tensor<2x4x8xf32>) {
      %x = nn.embedding %t, %wte, %wpe : (tensor<2x4xi32>, tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<2x4x8xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, EmbeddingWithoutPositions) {
  checkRule(R"mlir(
    func.func @f(%t: tensor<2x4xi32>, %wte: tensor<16x8xf32>,
                 %dy: tensor<2x4x8xf32>) {
      %x = nn.embedding %t, %wte : (tensor<2x4xi32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, RMSNorm) {
  checkRule(R"mlir(
    func.func @f(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %dy: tensor<2x8xf32>) {
      %y = nn.rms_norm %x, %g : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, GroupedQueryAttention) {
  checkRule(R"mlir(
    func.func @f(%qkv: tensor<2x4x16xf32>, %dy: tensor<2x4x8xf32>) {
      %y = nn.attention %qkv heads(2) kv_heads(1) causal : (tensor<2x4x16xf32>) -> tensor<2x4x8xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, Rotary) {
  checkRule(R"mlir(
    func.func @f(%qkv: tensor<2x4x16xf32>, %dy: tensor<2x4x16xf32>) {
      %y = nn.rotary %qkv heads(2) kv_heads(1) {base = 500000.0 : f32} : (tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, SwiGLU) {
  checkRule(R"mlir(
    func.func @f(%g: tensor<2x12xf32>, %u: tensor<2x12xf32>, %dy: tensor<2x12xf32>) {
      %y = nn.swiglu %g, %u : (tensor<2x12xf32>, tensor<2x12xf32>) -> tensor<2x12xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, LayerNorm) {
  checkRule(R"mlir(
    func.func @f(%x: tensor<2x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                 %dy: tensor<2x8xf32>) {
      %y = nn.layer_norm %x, %g, %b : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, LinearWithBias) {
  checkRule(R"mlir(
    func.func @f(%x: tensor<2x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>,
                 %dy: tensor<2x16xf32>) {
      %y = nn.linear %x, %w, %b : (tensor<2x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<2x16xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, LinearWithoutBias) {
  checkRule(R"mlir(
    func.func @f(%x: tensor<2x3x8xf32>, %w: tensor<16x8xf32>,
                 %dy: tensor<2x3x16xf32>) {
      %y = nn.linear %x, %w : (tensor<2x3x8xf32>, tensor<16x8xf32>) -> tensor<2x3x16xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, Attention) {
  checkRule(R"mlir(
    func.func @f(%qkv: tensor<2x4x24xf32>, %dy: tensor<2x4x8xf32>) {
      %y = nn.attention %qkv heads(2) causal : (tensor<2x4x24xf32>) -> tensor<2x4x8xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, Gelu) {
  checkRule(R"mlir(
    func.func @f(%x: tensor<2x8xf32>, %dy: tensor<2x8xf32>) {
      %y = nn.gelu %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, Add) {
  checkRule(R"mlir(
    func.func @f(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>, %dy: tensor<2x8xf32>) {
      %y = nn.add %a, %b : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, CrossEntropy) {
  checkRule(R"mlir(
    func.func @f(%l: tensor<2x4x16xf32>, %y: tensor<2x4xi32>, %dl: tensor<f32>) {
      %loss = nn.cross_entropy %l, %y : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
      return
    })mlir",
            1);
}

TEST(BackwardRules, WeightGradientOpsCarryTheTrait) {
  MLIRContext context;
  context.loadDialect<NNDialect>();
  for (StringRef name : {"nn.linear_weight_grad", "nn.embedding_grad"}) {
    std::optional<RegisteredOperationName> op =
        RegisteredOperationName::lookup(name, &context);
    ASSERT_TRUE(op.has_value()) << name.str();
    EXPECT_TRUE(op->hasTrait<bitpipe::nn::OpTrait::WeightGradient>()) << name.str();
  }
  for (StringRef name :
       {"nn.linear_input_grad", "nn.layer_norm_grad", "nn.rms_norm_grad",
        "nn.attention_grad", "nn.rotary_grad", "nn.gelu_grad",
        "nn.swiglu_grad", "nn.cross_entropy_grad"}) {
    std::optional<RegisteredOperationName> op =
        RegisteredOperationName::lookup(name, &context);
    ASSERT_TRUE(op.has_value()) << name.str();
    EXPECT_FALSE(op->hasTrait<bitpipe::nn::OpTrait::WeightGradient>()) << name.str();
  }
}

} // namespace
