//===- ComputeWork.h - What a stage computes, by kernel shape ---*- C++ -*-===//
//
// The FLOPs of a partition unit or a stage for one micro-batch, split by the
// rate each part runs at: a linear layer's three matrix products by their
// shape, attention by its sequence length and head dimension, and the rest
// (norms, activations, biases, embedding, loss), which is memory-bound. A
// cluster file may give measured rates for each (KernelRates.h,
// docs/clusters.md "Compute rates by kernel shape"), so that small
// micro-batches and thin kernels pay for their small products; without
// them every FLOP runs at the cluster's one rate.
//
// The FLOPs are the cost analysis's (lib/Dialect/NN/IR/NNCost.cpp): a
// linear's product is 2 * tokens * in * out for each of its forward, input
// gradient and weight gradient (its bias is "other" work); attention's
// forward 4 * B * T * T * width, its backward twice that. The split of a
// backward into the input gradient (B) and the weight gradient (W) that
// the zero-bubble schedules run apart follows: W is the linears' weight
// products, B everything else.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_COMPUTEWORK_H
#define BITPIPE_SCHEDULE_COMPUTEWORK_H

#include <cstdint>
#include <tuple>
#include <vector>

namespace bitpipe::sched {

/// A linear layer's products: x [tokens, in] times W^T [in, out].
struct LinearShape {
  int64_t tokens = 0, in = 0, out = 0;
  double productFlops() const {
    return 2.0 * static_cast<double>(tokens) * static_cast<double>(in) *
           static_cast<double>(out);
  }
  friend bool operator<(const LinearShape &a, const LinearShape &b) {
    return std::tie(a.tokens, a.in, a.out) < std::tie(b.tokens, b.in, b.out);
  }
  friend bool operator==(const LinearShape &a, const LinearShape &b) {
    return std::tie(a.tokens, a.in, a.out) == std::tie(b.tokens, b.in, b.out);
  }
};

/// Attention over sequences of seqLen tokens, heads of headDim.
struct AttentionShape {
  int64_t seqLen = 0, headDim = 0;
  bool causal = false;
  friend bool operator<(const AttentionShape &a, const AttentionShape &b) {
    return std::tie(a.seqLen, a.headDim, a.causal) <
           std::tie(b.seqLen, b.headDim, b.causal);
  }
  friend bool operator==(const AttentionShape &a, const AttentionShape &b) {
    return std::tie(a.seqLen, a.headDim, a.causal) ==
           std::tie(b.seqLen, b.headDim, b.causal);
  }
};

struct LinearWork {
  LinearShape shape;
  double count = 0; ///< Linear ops of this shape.
};

struct AttentionWork {
  AttentionShape shape;
  double forwardFlops = 0; ///< Over every op of this shape; backward 2x.
};

struct ComputeWork {
  std::vector<LinearWork> linears;       ///< One entry per shape, sorted.
  std::vector<AttentionWork> attentions; ///< One entry per shape, sorted.
  /// The rest: its forward, the part of its backward that gradients of
  /// inputs wait for (B), and the part that only makes weight gradients
  /// (W: a bias's, the embedding tables').
  double otherForwardFlops = 0, otherBackwardFlops = 0,
         otherWeightGradFlops = 0;

  void addLinear(const LinearShape &shape, double count);
  void addAttention(const AttentionShape &shape, double forwardFlops);
  /// Adds \p other's work to this one's.
  void add(const ComputeWork &other);

  double forwardFlops() const;
  /// The backward's input-gradient half (B): everything but W.
  double inputGradFlops() const;
  /// The weight-gradient half (W): the linears' weight-gradient products
  /// and the rest's weight-only gradients.
  double weightGradFlops() const;
  bool empty() const {
    return linears.empty() && attentions.empty() && otherForwardFlops == 0 &&
           otherBackwardFlops == 0 && otherWeightGradFlops == 0;
  }
};

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_COMPUTEWORK_H
