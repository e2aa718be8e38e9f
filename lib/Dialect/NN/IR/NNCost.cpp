//===- NNCost.cpp - FLOP counts of the nn forward ops ---------------------===//
//
// Conventions (the numbers the partitioner balances and the simulator
// times):
//   * a matrix product of [M, K] x [K, N] costs 2*M*K*N FLOPs;
//   * linear: forward 2*M*K*N (+ M*N for the bias); backward twice the
//     product (input gradient and weight gradient, 2*M*K*N each) (+ M*N for
//     the bias gradient);
//   * attention on [B, T, 3H]: forward 4*B*T*T*H (QK^T and PV over the full
//     T x T square, causal or not, as Megatron-LM's and the BitPipe paper's
//     FLOP formulas count it); backward twice that;
//   * attention with kv_heads (grouped-query): the same, the products being
//     over the query heads' width (the result's), whatever K;
//   * element-wise work counts FLOPs per element: add 1 (its backward is
//     free), layer_norm 5, rms_norm 4, gelu 8, swiglu 6 (per output
//     element: sigmoid 4, two products), and each backward twice its
//     forward;
//   * rotary: 3 per rotated element (the q and k heads: two products and a
//     sum; v passes through), and the same for its backward (the inverse
//     rotation);
//   * embedding: forward adds the position row (1 per output element),
//     backward scatter-adds into two tables (2 per element); without a
//     position table the forward is a gather (0) and the backward 1 per
//     element;
//   * dropout: 1 per element (the scale) forward, the same backward; the
//     mask's draw is integer work, not counted. Attention's dropout on its
//     probabilities adds nothing to attention's count (B*h*T*T products
//     beside its 4*B*T*T*H);
//   * cross_entropy over M positions of V logits: forward 4*M*V (max,
//     subtract, exp, sum), backward 2*M*V (softmax minus one-hot, scale).
// Costs need static shapes; the cost pass rejects dynamic ones first.
// Counts saturate at 2^63-1 instead of wrapping
// (bitpipe/base/CheckedArithmetic.h); the cost analysis refuses a model
// whose cost reaches it.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/base/CheckedArithmetic.h"

using namespace mlir;
using namespace bitpipe::nn;
using bitpipe::saturatingProduct;
using bitpipe::saturatingSum;

static int64_t numElements(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}

int64_t EmbeddingOp::getForwardFlops() {
  return getWpe() ? numElements(getResult()) : 0;
}
int64_t EmbeddingOp::getBackwardFlops() {
  return saturatingProduct({getWpe() ? 2 : 1, numElements(getResult())});
}

int64_t RMSNormOp::getForwardFlops() {
  return saturatingProduct({4, numElements(getInput())});
}
int64_t RMSNormOp::getBackwardFlops() {
  return saturatingProduct({2, getForwardFlops()});
}

int64_t LayerNormOp::getForwardFlops() {
  return saturatingProduct({5, numElements(getInput())});
}
int64_t LayerNormOp::getBackwardFlops() {
  return saturatingProduct({2, getForwardFlops()});
}

/// 2*M*K*N for the product of the linear op's input and weight.
static int64_t linearProductFlops(LinearOp op) {
  auto w = cast<RankedTensorType>(op.getWeight().getType());
  // numElements(result) = M*N; times K.
  return saturatingProduct({2, numElements(op.getResult()), w.getDimSize(1)});
}

int64_t LinearOp::getForwardFlops() {
  return saturatingSum(
      {linearProductFlops(*this), getBias() ? numElements(getResult()) : 0});
}
int64_t LinearOp::getBackwardFlops() {
  return saturatingSum({saturatingProduct({2, linearProductFlops(*this)}),
                        getBias() ? numElements(getResult()) : 0});
}

int64_t AttentionOp::getForwardFlops() {
  auto out = cast<RankedTensorType>(getResult().getType());
  int64_t seq = out.getDimSize(1);
  // B*T*H = numElements(out); QK^T and PV each cost 2*B*T*T*H.
  return saturatingProduct({4, numElements(getResult()), seq});
}
int64_t AttentionOp::getBackwardFlops() {
  return saturatingProduct({2, getForwardFlops()});
}

int64_t RotaryOp::getForwardFlops() {
  auto type = cast<RankedTensorType>(getQkv().getType());
  int64_t heads = getNumHeads(), kvHeads = getKvHeadCount();
  // The fused width is (heads + 2 kvHeads) d; q and k are (heads + kvHeads) d.
  int64_t rotated = saturatingProduct(
      {type.getDimSize(0), type.getDimSize(1),
       type.getDimSize(2) / (heads + 2 * kvHeads), heads + kvHeads});
  return saturatingProduct({3, rotated});
}
int64_t RotaryOp::getBackwardFlops() { return getForwardFlops(); }

int64_t SwiGLUOp::getForwardFlops() {
  return saturatingProduct({6, numElements(getResult())});
}
int64_t SwiGLUOp::getBackwardFlops() {
  return saturatingProduct({2, getForwardFlops()});
}

int64_t GeluOp::getForwardFlops() {
  return saturatingProduct({8, numElements(getInput())});
}
int64_t GeluOp::getBackwardFlops() {
  return saturatingProduct({2, getForwardFlops()});
}

int64_t AddOp::getForwardFlops() { return numElements(getResult()); }
int64_t AddOp::getBackwardFlops() { return 0; }

int64_t DropoutOp::getForwardFlops() { return numElements(getResult()); }
int64_t DropoutOp::getBackwardFlops() { return getForwardFlops(); }

int64_t CrossEntropyOp::getForwardFlops() {
  return saturatingProduct({4, numElements(getLogits())});
}
int64_t CrossEntropyOp::getBackwardFlops() {
  return saturatingProduct({2, numElements(getLogits())});
}
