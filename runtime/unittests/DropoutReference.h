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
  const int64_t d = H / nh;
  const S scale = S(1) / std::sqrt(S(d)), keptScale = S(drop.scale());
  std::vector<S> out(B * T * H, S(0)), p(T);
  if (lse)
    lse->assign(B * nh * T, S(0));
  auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h) {
    return &qkv[(b * T + t) * 3 * H + part * H + h * d];
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t nKeys = causal ? i + 1 : T;
        const S *q = at(b, i, 0, h);
        S mx = -INFINITY;
        for (int64_t j = 0; j < nKeys; ++j) {
          const S *k = at(b, j, 1, h);
          S s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += q[c] * k[c];
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        S sum = 0;
        for (int64_t j = 0; j < nKeys; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        const int64_t row = ((b * nh + h) * T + i) * T;
        S *o = &out[(b * T + i) * H + h * d];
        for (int64_t j = 0; j < nKeys; ++j) {
          const S kept = drop.keeps(row + j) ? p[j] / sum * keptScale : S(0);
          const S *v = at(b, j, 2, h);
          for (int64_t c = 0; c < d; ++c)
            o[c] += kept * v[c];
        }
        if (lse)
          (*lse)[(b * nh + h) * T + i] = mx + std::log(sum);
      }
  return out;
}

/// The backward of attentionDropout, by the chain rule through each step:
/// dV_j += P'_ij dO_i; dP'_ij = dO_i . V_j; dP_ij = dP'_ij / (1 - p) where
/// kept, else 0; the softmax's dS_ij = P_ij (dP_ij - D_i) with
/// D_i = sum_j P_ij dP_ij = sum_j P'_ij dP'_ij = dO_i . out_i, formed from
/// the \p out given as Reference.h's attentionGrad forms it (and the kernels
/// do); dQ_i += scale dS_ij K_j, dK_j += scale dS_ij Q_i.
template <typename S>
std::vector<S> attentionDropoutGrad(const std::vector<S> &qkv,
                                    const std::vector<S> &out,
                                    const std::vector<S> &dout, int64_t B,
                                    int64_t T, int64_t H, int64_t nh,
                                    bool causal, const DropoutSpec &drop) {
  const int64_t d = H / nh;
  const S scale = S(1) / std::sqrt(S(d)), keptScale = S(drop.scale());
  std::vector<S> dqkv(qkv.size(), S(0)), p(T);
  auto at = [&](int64_t b, int64_t t, int64_t part, int64_t h) {
    return (b * T + t) * 3 * H + part * H + h * d;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t nKeys = causal ? i + 1 : T;
        const S *q = &qkv[at(b, i, 0, h)];
        const S *dO = &dout[(b * T + i) * H + h * d];
        const S *o = &out[(b * T + i) * H + h * d];
        S mx = -INFINITY;
        for (int64_t j = 0; j < nKeys; ++j) {
          const S *k = &qkv[at(b, j, 1, h)];
          S s = 0;
          for (int64_t c = 0; c < d; ++c)
            s += q[c] * k[c];
          p[j] = s * scale;
          mx = std::max(mx, p[j]);
        }
        S sum = 0, rowDot = 0;
        for (int64_t j = 0; j < nKeys; ++j) {
          p[j] = std::exp(p[j] - mx);
          sum += p[j];
        }
        for (int64_t c = 0; c < d; ++c)
          rowDot += dO[c] * o[c];
        const int64_t row = ((b * nh + h) * T + i) * T;
        for (int64_t j = 0; j < nKeys; ++j) {
          const bool kept = drop.keeps(row + j);
          const S pj = p[j] / sum, pKept = kept ? pj * keptScale : S(0);
          const S *k = &qkv[at(b, j, 1, h)];
          const S *v = &qkv[at(b, j, 2, h)];
          S dpKept = 0; // dP'_ij
          for (int64_t c = 0; c < d; ++c)
            dpKept += dO[c] * v[c];
          const S dp = kept ? dpKept * keptScale : S(0);
          const S ds = pj * (dp - rowDot);
          S *dq = &dqkv[at(b, i, 0, h)];
          S *dk = &dqkv[at(b, j, 1, h)];
          S *dv = &dqkv[at(b, j, 2, h)];
          for (int64_t c = 0; c < d; ++c) {
            dq[c] += scale * ds * k[c];
            dk[c] += scale * ds * q[c];
            dv[c] += pKept * dO[c];
          }
        }
      }
  return dqkv;
}

} // namespace bitpipe::runtime::ref

#endif // BITPIPE_RUNTIME_UNITTESTS_DROPOUTREFERENCE_H
