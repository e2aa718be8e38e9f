//===- NNBackward.cpp - Backward rules of the nn forward ops --------------===//
//
// For every forward op: the backward ops it emits, the forward values those
// read (what a stage must keep per in-flight micro-batch), and which operands
// are weights. `getSavedValues` lists exactly the forward values that
// `buildBackward` passes to the ops it creates; a unit test checks that.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/base/CheckedArithmetic.h"

using namespace mlir;
using namespace bitpipe::nn;

//===----------------------------------------------------------------------===//
// embedding
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Type wpeType = getWpe() ? getWpe().getType() : Type();
  auto grad = b.create<EmbeddingGradOp>(getLoc(), getWte().getType(), wpeType,
                                        getTokens(), resultGrads[0]);
  operandGrads.assign({Value(), grad.getWteGrad()});
  if (getWpe())
    operandGrads.push_back(grad.getWpeGrad());
  return success();
}
SmallVector<Value> EmbeddingOp::getSavedValues() { return {getTokens()}; }
bool EmbeddingOp::isWeightOperand(unsigned index) { return index != 0; }
ArrayRef<StringLiteral> EmbeddingOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.embedding_grad"};
  return names;
}

//===----------------------------------------------------------------------===//
// layer_norm: keeps its input and gain, and with `with_stats` the rows'
// mean and rstd, which its backward otherwise computes again.
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Type in = getInput().getType(), gamma = getGamma().getType();
  auto grad = b.create<LayerNormGradOp>(getLoc(), in, gamma, gamma, getInput(),
                                        getGamma(), resultGrads[0], getStats(),
                                        getEpsilonAttr());
  operandGrads.assign(
      {grad.getInputGrad(), grad.getGammaGrad(), grad.getBetaGrad()});
  return success();
}
SmallVector<Value> LayerNormOp::getSavedValues() {
  SmallVector<Value> saved = {getInput(), getGamma()};
  llvm::append_range(saved, getStats());
  return saved;
}
Operation *LayerNormOp::buildWithStatistics(OpBuilder &b) {
  if (getWithStats())
    return nullptr;
  auto op = b.create<LayerNormOp>(getLoc(), getInput(), getGamma(), getBeta(),
                                  getEpsilonAttr(), b.getUnitAttr());
  op->setDiscardableAttrs(getOperation()->getDiscardableAttrDictionary());
  return op;
}
unsigned LayerNormOp::getNumStatisticResults() { return getStats().size(); }
int64_t LayerNormOp::getStatisticBytes() {
  // mean and rstd, one f32 each per row.
  auto in = cast<ShapedType>(getInput().getType());
  return saturatingProduct(
      {in.getNumElements() / in.getShape().back(), 2, int64_t(sizeof(float))});
}
bool LayerNormOp::isWeightOperand(unsigned index) { return index != 0; }
ArrayRef<StringLiteral> LayerNormOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.layer_norm_grad"};
  return names;
}

//===----------------------------------------------------------------------===//
// rms_norm
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  Type in = getInput().getType(), gamma = getGamma().getType();
  auto grad =
      b.create<RMSNormGradOp>(getLoc(), in, gamma, getInput(), getGamma(),
                              resultGrads[0], getStats(), getEpsilonAttr());
  operandGrads.assign({grad.getInputGrad(), grad.getGammaGrad()});
  return success();
}
SmallVector<Value> RMSNormOp::getSavedValues() {
  SmallVector<Value> saved = {getInput(), getGamma()};
  llvm::append_range(saved, getStats());
  return saved;
}
Operation *RMSNormOp::buildWithStatistics(OpBuilder &b) {
  if (getWithStats())
    return nullptr;
  auto op = b.create<RMSNormOp>(getLoc(), getInput(), getGamma(),
                                getEpsilonAttr(), b.getUnitAttr());
  op->setDiscardableAttrs(getOperation()->getDiscardableAttrDictionary());
  return op;
}
unsigned RMSNormOp::getNumStatisticResults() { return getStats().size(); }
int64_t RMSNormOp::getStatisticBytes() {
  // rstd, one f32 per row.
  auto in = cast<ShapedType>(getInput().getType());
  return saturatingProduct(
      {in.getNumElements() / in.getShape().back(), int64_t(sizeof(float))});
}
bool RMSNormOp::isWeightOperand(unsigned index) { return index != 0; }
ArrayRef<StringLiteral> RMSNormOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.rms_norm_grad"};
  return names;
}

//===----------------------------------------------------------------------===//
// linear: the input gradient and the weight gradient are separate ops.
//===----------------------------------------------------------------------===//

LogicalResult LinearOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Value grad = resultGrads[0];
  auto inputGrad = b.create<LinearInputGradOp>(
      getLoc(), getInput().getType(), grad, getWeight());
  Type biasType = getBias() ? getBias().getType() : Type();
  auto weightGrad = b.create<LinearWeightGradOp>(
      getLoc(), getWeight().getType(), biasType, getInput(), grad);
  operandGrads.assign({inputGrad.getInputGrad(), weightGrad.getWeightGrad()});
  if (getBias())
    operandGrads.push_back(weightGrad.getBiasGrad());
  return success();
}
SmallVector<Value> LinearOp::getSavedValues() {
  return {getInput(), getWeight()};
}
bool LinearOp::isWeightOperand(unsigned index) { return index != 0; }
ArrayRef<StringLiteral> LinearOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.linear_input_grad",
                                            "nn.linear_weight_grad"};
  return names;
}

//===----------------------------------------------------------------------===//
// attention: recomputes the probabilities from qkv tile by tile, so qkv is
// kept, and with `with_stats` the output and the rows' log-sum-exps, which
// the backward would otherwise get by running the forward again (the
// output is usually kept anyway, as the output projection's input).
//===----------------------------------------------------------------------===//

LogicalResult AttentionOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                         SmallVectorImpl<Value> &operandGrads) {
  Value out = getLse() ? getResult() : Value();
  auto grad = b.create<AttentionGradOp>(
      getLoc(), getQkv().getType(), getQkv(), resultGrads[0], getNumHeadsAttr(),
      getNumKvHeadsAttr(), getCausalAttr(), getKey(), getDropoutAttr(), out,
      getLse());
  operandGrads.assign({grad.getQkvGrad()});
  if (getKey())
    operandGrads.push_back(Value());
  return success();
}
SmallVector<Value> AttentionOp::getSavedValues() {
  SmallVector<Value> saved = {getQkv()};
  if (getKey())
    saved.push_back(getKey());
  if (getLse())
    saved.append({getResult(), getLse()});
  return saved;
}
Operation *AttentionOp::buildWithStatistics(OpBuilder &b) {
  if (getWithStats())
    return nullptr;
  auto op = b.create<AttentionOp>(getLoc(), getQkv(), getNumHeadsAttr(),
                                  getNumKvHeadsAttr(), getCausalAttr(),
                                  getKey(), getDropoutAttr(), b.getUnitAttr());
  // Discardable attributes (the layer a partition reads) carry over.
  op->setDiscardableAttrs(getOperation()->getDiscardableAttrDictionary());
  return op;
}
unsigned AttentionOp::getNumStatisticResults() { return getLse() ? 1 : 0; }
SmallVector<Value> AttentionOp::getValuesSavedWithStatistics() {
  if (getLse())
    return {};
  return {getResult()};
}
int64_t AttentionOp::getStatisticBytes() {
  // The log-sum-exps, [B, num_heads, T] f32.
  auto qkv = cast<ShapedType>(getQkv().getType());
  return saturatingProduct({qkv.getDimSize(0), int64_t(getNumHeads()),
                            qkv.getDimSize(1), int64_t(sizeof(float))});
}
bool AttentionOp::isWeightOperand(unsigned) { return false; }
ArrayRef<StringLiteral> AttentionOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.attention_grad"};
  return names;
}

//===----------------------------------------------------------------------===//
// rotary: an orthogonal map, so its backward is the inverse rotation of the
// gradient and keeps nothing.
//===----------------------------------------------------------------------===//

LogicalResult RotaryOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  auto grad = b.create<RotaryGradOp>(getLoc(), getQkv().getType(),
                                     resultGrads[0], getNumHeadsAttr(),
                                     getNumKvHeadsAttr(), getBaseAttr());
  operandGrads.assign({grad.getQkvGrad()});
  return success();
}
SmallVector<Value> RotaryOp::getSavedValues() { return {}; }
bool RotaryOp::isWeightOperand(unsigned) { return false; }
ArrayRef<StringLiteral> RotaryOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.rotary_grad"};
  return names;
}

//===----------------------------------------------------------------------===//
// swiglu: both operands are kept (each one's gradient reads the other).
//===----------------------------------------------------------------------===//

LogicalResult SwiGLUOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                      SmallVectorImpl<Value> &operandGrads) {
  Type type = getGate().getType();
  auto grad = b.create<SwiGLUGradOp>(getLoc(), type, type, getGate(), getUp(),
                                     resultGrads[0]);
  operandGrads.assign({grad.getGateGrad(), grad.getUpGrad()});
  return success();
}
SmallVector<Value> SwiGLUOp::getSavedValues() { return {getGate(), getUp()}; }
bool SwiGLUOp::isWeightOperand(unsigned) { return false; }
ArrayRef<StringLiteral> SwiGLUOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.swiglu_grad"};
  return names;
}

//===----------------------------------------------------------------------===//
// gelu
//===----------------------------------------------------------------------===//

LogicalResult GeluOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  auto grad = b.create<GeluGradOp>(getLoc(), getInput().getType(), getInput(),
                                   resultGrads[0], getForm());
  operandGrads.assign({grad.getInputGrad()});
  return success();
}
SmallVector<Value> GeluOp::getSavedValues() { return {getInput()}; }
bool GeluOp::isWeightOperand(unsigned) { return false; }
ArrayRef<StringLiteral> GeluOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.gelu_grad"};
  return names;
}

//===----------------------------------------------------------------------===//
// add: the gradient flows unchanged to both operands; nothing is kept.
//===----------------------------------------------------------------------===//

LogicalResult AddOp::buildBackward(OpBuilder &, ValueRange resultGrads,
                                   SmallVectorImpl<Value> &operandGrads) {
  operandGrads.assign({resultGrads[0], resultGrads[0]});
  return success();
}
SmallVector<Value> AddOp::getSavedValues() { return {}; }
bool AddOp::isWeightOperand(unsigned) { return false; }
ArrayRef<StringLiteral> AddOp::getBackwardOpNames() { return {}; }

//===----------------------------------------------------------------------===//
// dropout: y = x * mask * scale is linear in x, so the gradient is the same
// map, drawn again from the key; only the key is kept (the mask is never
// stored), and the key has no gradient.
//===----------------------------------------------------------------------===//

LogicalResult DropoutOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                                       SmallVectorImpl<Value> &operandGrads) {
  auto grad =
      b.create<DropoutOp>(getLoc(), resultGrads[0], getKey(), getDropoutAttr());
  operandGrads.assign({grad.getResult(), Value()});
  return success();
}
SmallVector<Value> DropoutOp::getSavedValues() { return {getKey()}; }
bool DropoutOp::isWeightOperand(unsigned) { return false; }
ArrayRef<StringLiteral> DropoutOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.dropout"};
  return names;
}

//===----------------------------------------------------------------------===//
// cross_entropy: labels have no gradient.
//===----------------------------------------------------------------------===//

LogicalResult
CrossEntropyOp::buildBackward(OpBuilder &b, ValueRange resultGrads,
                              SmallVectorImpl<Value> &operandGrads) {
  auto grad = b.create<CrossEntropyGradOp>(
      getLoc(), getLogits().getType(), getLogits(), getLabels(), resultGrads[0],
      getStats(), getIgnoreIndexAttr());
  operandGrads.assign({grad.getLogitsGrad(), Value()});
  return success();
}
SmallVector<Value> CrossEntropyOp::getSavedValues() {
  SmallVector<Value> saved = {getLogits(), getLabels()};
  llvm::append_range(saved, getStats());
  return saved;
}
Operation *CrossEntropyOp::buildWithStatistics(OpBuilder &b) {
  if (getWithStats())
    return nullptr;
  auto op = b.create<CrossEntropyOp>(getLoc(), getLogits(), getLabels(),
                                     getIgnoreIndexAttr(), b.getUnitAttr());
  op->setDiscardableAttrs(getOperation()->getDiscardableAttrDictionary());
  return op;
}
unsigned CrossEntropyOp::getNumStatisticResults() { return getStats().size(); }
int64_t CrossEntropyOp::getStatisticBytes() {
  // The row's max and log-sum, one f32 each per row.
  auto logits = cast<ShapedType>(getLogits().getType());
  return saturatingProduct({logits.getNumElements() / logits.getShape().back(),
                            2, int64_t(sizeof(float))});
}
bool CrossEntropyOp::isWeightOperand(unsigned) { return false; }
ArrayRef<StringLiteral> CrossEntropyOp::getBackwardOpNames() {
  static constexpr StringLiteral names[] = {"nn.cross_entropy_grad"};
  return names;
}
