//===- DropoutReference.h - Dropout from its definition ---------*- C++ -*-===//
//
// Test-only. Which elements a dropout site keeps, drawn from the formula of
// docs/training-semantics.md ("Dropout") with core/Random.h's uniform rather
// than with core/Dropout.h's DropoutMask, which the kernels use: a kernel
// that draws another element, or a mask that drifts from the definition,
// then fails its test. And attention with dropout on its probabilities in
// the plain loops of Reference.h, the mask written into them.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_UNITTESTS_DROPOUTREFERENCE_H
#define BITPIPE_RUNTIME_UNITTESTS_DROPOUTREFERENCE_H

#include "Reference.h"
#include "core/Random.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace bitpipe::runtime::ref {

/// One dropout site of one micro-batch: the run's seed, the micro-batch's
/// sample group g, the site and p.
struct DropoutSpec {
  uint64_t seed, group;
  int32_t site;
  float p;

  /// Element e is kept when uniform(seed, D ^ mix64(g), site * 2^40 + e)
  /// >= p, D = "dropout!".
  bool keeps(int64_t e) const {
    const uint64_t stream = 0x64726f706f757421ULL ^ mix64(group);
    const uint64_t counter =
        (static_cast<uint64_t>(site) << 40) + static_cast<uint64_t>(e);
    return randomUniform(seed, stream, counter) >= static_cast<double>(p);
  }
  /// What a kept element is multiplied by: 1 / (1 - p), in fp32.
  float scale() const { return 1.0f / (1.0f - p); }
  /// The kernels' RNG_KEY: [seed low, seed high, g low, g high].
  std::array<int32_t, 4> key() const {
    return {static_cast<int32_t>(static_cast<uint32_t>(seed)),
            static_cast<int32_t>(static_cast<uint32_t>(seed >> 32)),
            static_cast<int32_t>(static_cast<uint32_t>(group)),
            static_cast<int32_t>(static_cast<uint32_t>(group >> 32))};
  }
};

/// How many of the [B, nh, T, T] probabilities that the rows see (under
/// \p causal, keys up to the query's) \p drop drops.
inline int64_t droppedProbabilities(const DropoutSpec &drop, int64_t B,
                                    int64_t nh, int64_t T, bool causal) {
  int64_t dropped = 0;
  for (int64_t bh = 0; bh < B * nh; ++bh)
    for (int64_t i = 0; i < T; ++i)
      for (int64_t j = 0; j < (causal ? i + 1 : T); ++j)
        dropped += !drop.keeps((bh * T + i) * T + j);
  return dropped;
}

/// The ProbabilityFactor of \p drop: 0 where it drops, 1 / (1 - p) where it
/// keeps.
inline ProbabilityFactor probabilityFactor(const DropoutSpec &drop) {
  return
      [drop](int64_t e) { return drop.keeps(e) ? double(drop.scale()) : 0.0; };
}

/// Multi-head attention on fused qkv [B, T, 3H] with dropout on the
/// probabilities, as PyTorch's eager attention: P = softmax(scale Q K^T +
/// mask), P'_ij = P_ij / (1 - p) where element ((b nh + h) T + i) T + j is
/// kept and 0 where it is dropped, out = P' V. Optionally returns the row
/// log-sum-exps of the undropped scores as [B, nh, T].
template <typename S>
std::vector<S> attentionDropout(const std::vector<S> &qkv, int64_t B, int64_t T,
                                int64_t H, int64_t nh, bool causal,
                                const DropoutSpec &drop,
                                std::vector<S> *lse = nullptr) {
  return groupedAttention(qkv, B, T, H, nh, nh, causal, lse,
                          probabilityFactor(drop));
}

/// The backward of attentionDropout (Reference.h's groupedAttentionGrad
/// with the same factors): D_i = sum_j P_ij dP_ij = sum_j P'_ij dP'_ij =
/// dO_i . out_i, formed from the \p out given, as the kernels form it.
template <typename S>
std::vector<S> attentionDropoutGrad(const std::vector<S> &qkv,
                                    const std::vector<S> &out,
                                    const std::vector<S> &dout, int64_t B,
                                    int64_t T, int64_t H, int64_t nh,
                                    bool causal, const DropoutSpec &drop) {
  return groupedAttentionGrad(qkv, out, dout, B, T, H, nh, nh, causal,
                              probabilityFactor(drop));
}

} // namespace bitpipe::runtime::ref

#endif // BITPIPE_RUNTIME_UNITTESTS_DROPOUTREFERENCE_H
