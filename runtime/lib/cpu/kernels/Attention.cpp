//===- Attention.cpp - Blocked multi-head attention -------------*- C++ -*-===//
//
// FlashAttention-style: scores are computed one (query block, key block) tile
// at a time, so memory is O(block^2) and never O(T^2).
//
// Forward, per (batch, head, query block): walk the key blocks, keeping for
// each query row a running max m, a running sum l of exp(s - m), and an
// unnormalised output accumulator; divide by l at the end and save
// lse = m + log(l) for the backward.
//
// Backward, per (batch, head, key block, query block): recompute the tile's
// probabilities exactly as P = exp(S - lse) (no second normalisation pass is
// needed since lse is the row's full log-normaliser) and accumulate dV, dK,
// dQ straight into dqkv.
//
// q, k and v are read in place from the fused qkv buffer: a head's rows are
// strided by the fused width ((nh + 2 nkv) d, 3H without grouping), which
// cblas_sgemm takes as the leading dimension. Grouped-query attention
// (nkv < nh) only changes where a query head finds its key/value head
// (h / (nh / nkv)); the dK and dV tiles of a shared head accumulate over
// its query heads like over its query blocks.
//
// Dropout on the probabilities (bp_attention_dropout_*) is the same loops
// with a mask: P' = P * keep / (1 - p), out = P' V. The forward sums l over
// the undropped P, so lse is P's, and zeroes the dropped entries of the
// tile before P V; 1 / (1 - p) joins the final 1 / l. The backward forms
// dV from P' and, with dP' = dO V^T, dS = P (dP - D) where dP = dP' * keep
// / (1 - p), i.e. dS = P' dP' - P D; D = dO . O still, since
// sum_k P_ik dP_ik = sum_k P'_ik dP'_ik = dO_i . (P' V)_i. Without a mask
// (p = 0) nothing of this runs: the results are attention's, bit for bit.
//
//===----------------------------------------------------------------------===//

#include "Attention.h"
#include "Common.h"
#include "VectorExp.h"
#include "core/CpuClones.h"
#include "core/Dropout.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

#include <algorithm>
#include <atomic>
#include <cblas.h>
#include <cmath>
#include <cstring>
#include <limits>

using namespace bitpipe::runtime::cpu;
using bitpipe::runtime::dropoutArgsValid;
using bitpipe::runtime::DropoutMask;
using bitpipe::runtime::dropoutMask;
using bitpipe::runtime::kDropoutMaxElements;
using bitpipe::runtime::productAtMost;

static constexpr float kNegInf = -std::numeric_limits<float>::infinity();

namespace {
/// The geometry shared by the forward and the backward of one call.
struct AttentionShape {
  int64_t B, T, H, nh, nkv, d;
  int64_t ldQKV; // Row stride of qkv and dqkv: (nh + 2 nkv) d.
  float scale;   // 1 / sqrt(d).
  bool causal;

  /// Offset of row t of the q (part 0), k (1) or v (2) head that query
  /// head h reads.
  int64_t qkvOffset(int64_t b, int64_t t, int64_t part, int64_t h) const {
    int64_t row = (b * T + t) * ldQKV;
    if (part == 0)
      return row + h * d;
    int64_t kvHead = h / (nh / nkv);
    return row + H + (part - 1) * nkv * d + kvHead * d;
  }
  /// Offset of row t of head h in out / dout [B, T, H].
  int64_t outOffset(int64_t b, int64_t t, int64_t h) const {
    return (b * T + t) * H + h * d;
  }
};
} // namespace

static bool validAttentionArgs(int64_t B, int64_t T, int64_t H, int64_t nh,
                               int64_t nkv, int64_t blockQ, int64_t blockK) {
  return allPositive({B, T, H, nh, nkv, blockQ, blockK}) && H % nh == 0 &&
         nh % nkv == 0;
}

static AttentionShape makeShape(int64_t B, int64_t T, int64_t H, int64_t nh,
                                int64_t nkv, bool causal) {
  int64_t d = H / nh;
  return {B,
          T,
          H,
          nh,
          nkv,
          d,
          (nh + 2 * nkv) * d,
          1.0f / std::sqrt(static_cast<float>(d)),
          causal};
}

/// The mask's element index of row \p r, column 0 of a tile: query q0 + r,
/// key k0 of head h of batch b.
static uint64_t dropoutRowBase(const AttentionShape &sh, int64_t b, int64_t h,
                               int64_t q0, int64_t r, int64_t k0) {
  return static_cast<uint64_t>(((b * sh.nh + h) * sh.T + q0 + r) * sh.T + k0);
}

/// Sets the causally masked entries of an rq x rk score tile (leading
/// dimension ld) to -inf: key k0 + c is hidden from query q0 + r when it lies
/// in the future, k0 + c > q0 + r.
static void applyCausalMask(float *s, int64_t ld, int64_t q0, int64_t rq,
                            int64_t k0, int64_t rk) {
  if (k0 + rk - 1 <= q0)
    return; // The whole tile is on or below the diagonal.
  for (int64_t r = 0; r < rq; ++r)
    for (int64_t c = std::max<int64_t>(0, q0 + r - k0 + 1); c < rk; ++c)
      s[r * ld + c] = kNegInf;
}

/// The forward of (batch, head) pairs [first, last) of a call; false when
/// out of memory. In a function of its own so that its loops are compiled
/// in both copies (core/CpuClones.h): a lambda is not.
BP_CPU_CLONES static bool forwardHeads(const AttentionShape &sh,
                                       const float *qkv, float *out, float *lse,
                                       int64_t blockQ, int64_t blockK,
                                       const DropoutMask *dropout,
                                       int64_t first, int64_t last) {
  const int64_t T = sh.T, nh = sh.nh, d = sh.d;
  const bool causal = sh.causal;
  ScratchBuffer scores(blockQ * blockK), acc(blockQ * d), rowMax(blockQ),
      rowSum(blockQ);
  if (!scores.ok() || !acc.ok() || !rowMax.ok() || !rowSum.ok())
    return false;
  float *S = scores.get(), *O = acc.get(), *m = rowMax.get(), *l = rowSum.get();

  for (int64_t bh = first; bh < last; ++bh) {
    const int64_t b = bh / nh, h = bh % nh;
    {
      for (int64_t q0 = 0; q0 < T; q0 += blockQ) {
        const int64_t rq = std::min(blockQ, T - q0);
        const float *Q = qkv + sh.qkvOffset(b, q0, 0, h);
        std::fill(m, m + rq, kNegInf);
        std::fill(l, l + rq, 0.0f);
        std::memset(O, 0, static_cast<size_t>(rq * d) * sizeof(float));

        // Causal: keys after the block's last query are masked for every
        // row, so they are not visited at all.
        const int64_t kEnd = causal ? q0 + rq : T;
        for (int64_t k0 = 0; k0 < kEnd; k0 += blockK) {
          const int64_t rk = std::min(blockK, kEnd - k0);
          const float *K = qkv + sh.qkvOffset(b, k0, 1, h);
          const float *V = qkv + sh.qkvOffset(b, k0, 2, h);

          // S[rq, rk] = scale * Q K^T
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rq, rk, d,
                      sh.scale, Q, sh.ldQKV, K, sh.ldQKV, 0.0f, S, blockK);
          if (causal)
            applyCausalMask(S, blockK, q0, rq, k0, rk);

          for (int64_t r = 0; r < rq; ++r) {
            float *sr = S + r * blockK;
            float tileMax = kNegInf;
            for (int64_t c = 0; c < rk; ++c)
              tileMax = std::max(tileMax, sr[c]);
            // Key block 0 is visited first and holds key 0, which no query
            // masks, so after the first tile m[r] is finite; a later tile
            // that is fully masked for this row leaves m unchanged.
            const float mNew = std::max(m[r], tileMax);
            // The exponentials so far were taken relative to the old max.
            // When the max grows they are rescaled by exp(mOld - mNew) <= 1,
            // which keeps every exponent <= 0 (no overflow) without a second
            // pass over the keys. On the first tile mOld = -inf and the
            // factor is 0, clearing the (zero) accumulators.
            const float corr = std::exp(m[r] - mNew);
            float sum = 0.0f;
            for (int64_t c = 0; c < rk; ++c) {
              sr[c] = softmaxWeight(sr[c] - mNew); // 0 where masked (-inf).
              sum += sr[c];
            }
            l[r] = l[r] * corr + sum;
            m[r] = mNew;
            float *orow = O + r * d;
            for (int64_t c = 0; c < d; ++c)
              orow[c] *= corr;
            // Dropped after the sum: l, and so lse, are the undropped P's.
            if (dropout) {
              const uint64_t e0 = dropoutRowBase(sh, b, h, q0, r, k0);
              for (int64_t c = 0; c < rk; ++c)
                if (!dropout->keeps(e0 + c))
                  sr[c] = 0.0f;
            }
          }
          // O[rq, d] += P[rq, rk] V[rk, d]
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rq, d, rk,
                      1.0f, S, blockK, V, sh.ldQKV, 1.0f, O, d);
        }

        float *lseRow = lse + (b * nh + h) * T + q0;
        for (int64_t r = 0; r < rq; ++r) {
          // Under dropout, the kept entries' 1 / (1 - p) too.
          const float inv = dropout ? dropout->scale / l[r] : 1.0f / l[r];
          float *dst = out + sh.outOffset(b, q0 + r, h);
          const float *orow = O + r * d;
          for (int64_t c = 0; c < d; ++c)
            dst[c] = orow[c] * inv;
          lseRow[r] = m[r] + std::log(l[r]);
        }
      }
    }
  }
  return true;
}

/// The backward of the query heads of (batch, key-value head) pairs
/// [first, last) of a call; false when out of memory (see forwardHeads).
BP_CPU_CLONES static bool
backwardGroups(const AttentionShape &sh, const float *qkv, const float *out,
               const float *dout, const float *lse, float *dqkv, int64_t blockQ,
               int64_t blockK, const DropoutMask *dropout, int64_t first,
               int64_t last) {
  const int64_t T = sh.T, H = sh.H, nh = sh.nh, nkv = sh.nkv, d = sh.d;
  const int64_t group = nh / nkv;
  const bool causal = sh.causal;
  // With dropout, P' (P dropped and scaled) is a third tile.
  ScratchBuffer probs(blockQ * blockK), dprobs(blockQ * blockK), rowDot(T),
      keptProbs(dropout ? blockQ * blockK : 1);
  if (!probs.ok() || !dprobs.ok() || !rowDot.ok() || !keptProbs.ok())
    return false;
  float *P = probs.get(), *dP = dprobs.get(), *D = rowDot.get();
  float *Pd = dropout ? keptProbs.get() : P;

  for (int64_t bg = first; bg < last; ++bg) {
    const int64_t b = bg / nkv, g = bg % nkv;
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      // The softmax backward is dS_ij = P_ij (dP_ij - sum_k P_ik dP_ik), and
      // sum_k P_ik dP_ik = sum_k P_ik (dO_i . V_k) = dO_i . O_i. Precomputing
      // D_i = dO_i . O_i per row replaces a reduction over the whole key row,
      // which a tile does not see.
      for (int64_t t = 0; t < T; ++t) {
        const float *o = out + sh.outOffset(b, t, h);
        const float *dO = dout + sh.outOffset(b, t, h);
        float dot = 0.0f;
        for (int64_t c = 0; c < d; ++c)
          dot += o[c] * dO[c];
        D[t] = dot;
      }
      const float *lseBH = lse + (b * nh + h) * T;

      for (int64_t k0 = 0; k0 < T; k0 += blockK) {
        const int64_t rk = std::min(blockK, T - k0);
        const float *K = qkv + sh.qkvOffset(b, k0, 1, h);
        const float *V = qkv + sh.qkvOffset(b, k0, 2, h);
        float *dK = dqkv + sh.qkvOffset(b, k0, 1, h);
        float *dV = dqkv + sh.qkvOffset(b, k0, 2, h);

        // Causal: queries before k0 see none of these keys, so the query
        // tiles start at k0. The backward's tiles are independent (each adds
        // its own terms into dQ, dK, dV), so they need not line up with the
        // forward's query blocks.
        const int64_t qStart = causal ? k0 : 0;
        for (int64_t q0 = qStart; q0 < T; q0 += blockQ) {
          const int64_t rq = std::min(blockQ, T - q0);
          const float *Q = qkv + sh.qkvOffset(b, q0, 0, h);
          const float *dO = dout + sh.outOffset(b, q0, h);
          float *dQ = dqkv + sh.qkvOffset(b, q0, 0, h);

          // P = exp(scale * Q K^T - lse): the forward's probabilities,
          // recomputed rather than stored.
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rq, rk, d,
                      sh.scale, Q, sh.ldQKV, K, sh.ldQKV, 0.0f, P, blockK);
          if (causal)
            applyCausalMask(P, blockK, q0, rq, k0, rk);
          for (int64_t r = 0; r < rq; ++r) {
            float *pr = P + r * blockK;
            const float rowLse = lseBH[q0 + r];
            for (int64_t c = 0; c < rk; ++c)
              pr[c] = softmaxWeight(pr[c] - rowLse);
          }

          // P' = P * keep / (1 - p): the probabilities out was made of.
          if (dropout) {
            for (int64_t r = 0; r < rq; ++r) {
              const float *pr = P + r * blockK;
              float *pdr = Pd + r * blockK;
              const uint64_t e0 = dropoutRowBase(sh, b, h, q0, r, k0);
              for (int64_t c = 0; c < rk; ++c)
                pdr[c] = dropout->keeps(e0 + c) ? pr[c] * dropout->scale : 0.0f;
            }
          }

          // dV[rk, d] += P'^T dO
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, rk, d, rq, 1.0f,
                      Pd, blockK, dO, H, 1.0f, dV, sh.ldQKV);
          // dP[rq, rk] = dO V^T (dP' under dropout)
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rq, rk, d, 1.0f,
                      dO, H, V, sh.ldQKV, 0.0f, dP, blockK);
          // dS = P * (dP - D), in place in dP. Masked entries have P = 0.
          // Under dropout dS = P' dP' - P D (the file's comment says why).
          for (int64_t r = 0; r < rq; ++r) {
            const float *pr = P + r * blockK;
            float *dsr = dP + r * blockK;
            const float Dr = D[q0 + r];
            if (dropout) {
              const float *pdr = Pd + r * blockK;
              for (int64_t c = 0; c < rk; ++c)
                dsr[c] = pdr[c] * dsr[c] - pr[c] * Dr;
            } else {
              for (int64_t c = 0; c < rk; ++c)
                dsr[c] = pr[c] * (dsr[c] - Dr);
            }
          }
          // S = scale * Q K^T, so dQ += scale dS K and dK += scale dS^T Q.
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rq, d, rk,
                      sh.scale, dP, blockK, K, sh.ldQKV, 1.0f, dQ, sh.ldQKV);
          cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, rk, d, rq,
                      sh.scale, dP, blockK, Q, sh.ldQKV, 1.0f, dK, sh.ldQKV);
        }
      }
    }
  }
  return true;
}

namespace bitpipe::runtime::cpu {

bp_status_t attentionForward(const float *qkv, float *out, float *lse,
                             int64_t B, int64_t T, int64_t H, int64_t nh,
                             int64_t nkv, bool causal, int64_t blockQ,
                             int64_t blockK, const DropoutMask *dropout) {
  if (!allNonNull({qkv, out, lse}) ||
      !validAttentionArgs(B, T, H, nh, nkv, blockQ, blockK))
    return BP_ERR_INVALID_ARGUMENT;
  const AttentionShape sh = makeShape(B, T, H, nh, nkv, causal);

  // Heads are independent: the kernel's threads take (batch, head) pairs,
  // each with tiles of its own and the products on its own thread.
  std::atomic<bool> outOfMemory{false};
  parallelFor(B * nh, 1, [&](int64_t first, int64_t last) {
    if (!forwardHeads(sh, qkv, out, lse, blockQ, blockK, dropout, first, last))
      outOfMemory = true;
  });
  return outOfMemory ? BP_ERR_OUT_OF_MEMORY : BP_OK;
}

bp_status_t attentionBackward(const float *qkv, const float *out,
                              const float *dout, const float *lse, float *dqkv,
                              int64_t B, int64_t T, int64_t H, int64_t nh,
                              int64_t nkv, bool causal, int64_t blockQ,
                              int64_t blockK, const DropoutMask *dropout) {
  if (!allNonNull({qkv, out, dout, lse, dqkv}) ||
      !validAttentionArgs(B, T, H, nh, nkv, blockQ, blockK))
    return BP_ERR_INVALID_ARGUMENT;
  const AttentionShape sh = makeShape(B, T, H, nh, nkv, causal);

  // dQ, dK, dV are accumulated tile by tile with sgemm's beta = 1.
  std::memset(dqkv, 0, static_cast<size_t>(B * T * sh.ldQKV) * sizeof(float));

  // The query heads that share a key-value head add into the same dK and
  // dV: the kernel's threads take (batch, key-value head) pairs, each
  // running its query heads in order, so every sum keeps the serial order.
  std::atomic<bool> outOfMemory{false};
  parallelFor(B * nkv, 1, [&](int64_t first, int64_t last) {
    if (!backwardGroups(sh, qkv, out, dout, lse, dqkv, blockQ, blockK, dropout,
                        first, last))
      outOfMemory = true;
  });
  return outOfMemory ? BP_ERR_OUT_OF_MEMORY : BP_OK;
}

} // namespace bitpipe::runtime::cpu

// The entry points check the roles' part of their arguments (Kernels.h);
// attentionForward / attentionBackward check theirs again, as tests call
// them directly with other block sizes.

extern "C" bp_status_t bp_attention_fwd(const float *qkv, float *out,
                                        float *lse, int64_t B, int64_t T,
                                        int64_t H, int64_t nh, int32_t causal) {
  BP_PROFILE_KERNEL(attention_fwd);
  if (!BP_KERNEL_ARGS_VALID(attention_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  return attentionForward(qkv, out, lse, B, T, H, nh, nh, causal != 0,
                          kAttentionBlockQ, kAttentionBlockK);
}

extern "C" bp_status_t bp_attention_bwd(const float *qkv, const float *out,
                                        const float *dout, const float *lse,
                                        float *dqkv, int64_t B, int64_t T,
                                        int64_t H, int64_t nh, int32_t causal) {
  BP_PROFILE_KERNEL(attention_bwd);
  if (!BP_KERNEL_ARGS_VALID(attention_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return attentionBackward(qkv, out, dout, lse, dqkv, B, T, H, nh, nh,
                           causal != 0, kAttentionBlockQ, kAttentionBlockK);
}

/// The dropout kernels' own checks (Kernels.h, attention_dropout_fwd), after
/// the roles' (so the sizes are positive): a drawable mask whose element
/// indices, [B, nh, T, T], fit below 2^40.
static bool validDropoutArgs(int64_t B, int64_t T, int64_t nh, int32_t site,
                             float p) {
  return dropoutArgsValid(site, p) &&
         productAtMost({B, nh, T, T}, kDropoutMaxElements);
}

extern "C" bp_status_t
bp_attention_dropout_fwd(const float *qkv, float *out, float *lse, int64_t B,
                         int64_t T, int64_t H, int64_t nh, int32_t causal,
                         const int32_t *key, int32_t site, float p) {
  BP_PROFILE_KERNEL(attention_dropout_fwd);
  if (!BP_KERNEL_ARGS_VALID(attention_dropout_fwd) ||
      !validDropoutArgs(B, T, nh, site, p))
    return BP_ERR_INVALID_ARGUMENT;
  // p = 0 draws nothing: attention_fwd's loops as they are.
  const DropoutMask mask = dropoutMask(key, site, p);
  return attentionForward(qkv, out, lse, B, T, H, nh, nh, causal != 0,
                          kAttentionBlockQ, kAttentionBlockK,
                          p == 0.0f ? nullptr : &mask);
}

extern "C" bp_status_t
bp_attention_dropout_bwd(const float *qkv, const float *out, const float *dout,
                         const float *lse, float *dqkv, int64_t B, int64_t T,
                         int64_t H, int64_t nh, int32_t causal,
                         const int32_t *key, int32_t site, float p) {
  BP_PROFILE_KERNEL(attention_dropout_bwd);
  if (!BP_KERNEL_ARGS_VALID(attention_dropout_bwd) ||
      !validDropoutArgs(B, T, nh, site, p))
    return BP_ERR_INVALID_ARGUMENT;
  const DropoutMask mask = dropoutMask(key, site, p);
  return attentionBackward(qkv, out, dout, lse, dqkv, B, T, H, nh, nh,
                           causal != 0, kAttentionBlockQ, kAttentionBlockK,
                           p == 0.0f ? nullptr : &mask);
}

extern "C" bp_status_t bp_attention_gqa_fwd(const float *qkv, float *out,
                                            float *lse, int64_t B, int64_t T,
                                            int64_t H, int64_t nh, int64_t nkv,
                                            int32_t causal) {
  BP_PROFILE_KERNEL(attention_gqa_fwd);
  if (!BP_KERNEL_ARGS_VALID(attention_gqa_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  return attentionForward(qkv, out, lse, B, T, H, nh, nkv, causal != 0,
                          kAttentionBlockQ, kAttentionBlockK);
}

extern "C" bp_status_t bp_attention_gqa_bwd(const float *qkv, const float *out,
                                            const float *dout, const float *lse,
                                            float *dqkv, int64_t B, int64_t T,
                                            int64_t H, int64_t nh, int64_t nkv,
                                            int32_t causal) {
  BP_PROFILE_KERNEL(attention_gqa_bwd);
  if (!BP_KERNEL_ARGS_VALID(attention_gqa_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  return attentionBackward(qkv, out, dout, lse, dqkv, B, T, H, nh, nkv,
                           causal != 0, kAttentionBlockQ, kAttentionBlockK);
}
