//===- GradCheckTest.cpp - Backward kernels vs finite differences -*- C++ -*-=//
//
// Every fp32 backward kernel against central finite differences, in double,
// of the double reference forward in Reference.h. A tensor-valued op is
// turned into a scalar loss L = sum(w * y) with fixed random weights w; the
// kernel is fed dy = w, so its result must equal dL/dinput. Tolerance:
// kGradRtol (1e-3) relative, with an absolute floor of 1e-4 x the gradient's
// largest entry (see allClose).
//
// Also: weight gradients accumulate (a second call doubles them).
//
//===----------------------------------------------------------------------===//

#include "DropoutReference.h"
#include "Reference.h"
#include "TestUtil.h"
#include "bitpipe/runtime.h"
#include "core/Dropout.h"
#include "kernels/Attention.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

/// d loss / d loss, as runtime.h's bp_cross_entropy_bwd takes it: a pointer
/// to one float in the tensors' memory.
const float kUnitLossGrad = 1.0f;
const float kQuarterLossGrad = 0.25f;

/// bp_cross_entropy_bwd with the rows' normalisers its forward writes (the
/// forward's own errors, such as a label out of range, come first).
bp_status_t crossEntropyBwd(const float *logits, const int32_t *labels,
                            const float *dloss, float *dlogits, int64_t N,
                            int64_t V, int32_t ignoreIndex) {
  std::vector<float> rowMax(N), logSum(N);
  float loss;
  if (bp_status_t s = bp_cross_entropy_fwd(logits, labels, &loss, rowMax.data(),
                                           logSum.data(), N, V, ignoreIndex);
      s != BP_OK)
    return s;
  return bp_cross_entropy_bwd(logits, labels, dloss, rowMax.data(),
                              logSum.data(), dlogits, N, V, ignoreIndex);
}

std::vector<double> times(const std::vector<double> &v, double s) {
  std::vector<double> r(v);
  for (double &x : r)
    x *= s;
  return r;
}

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

TEST(EmbeddingBwd, MatchesFiniteDifferencesAndAccumulates) {
  const int64_t B = 2, T = 4, H = 3, V = 5, P = 6;
  // Token 2 appears three times: its gradient row is a sum.
  std::vector<int32_t> tokens = {2, 0, 2, 4, 1, 2, 3, 0};
  auto wte = randomFloats(V * H, 21), wpe = randomFloats(P * H, 22),
       w = randomFloats(B * T * H, 23);
  auto wteD = toDouble(wte), wpeD = toDouble(wpe), wD = toDouble(w);
  auto loss = [&] {
    return weightedSum(ref::embedding(tokens, wteD, wpeD, B, T, H), wD);
  };
  auto fdWte = finiteDifferences(wteD, loss);
  auto fdWpe = finiteDifferences(wpeD, loss);

  std::vector<float> dwte(V * H, 0.0f), dwpe(P * H, 0.0f);
  ASSERT_EQ(bp_embedding_bwd(tokens.data(), w.data(), dwte.data(), dwpe.data(),
                             B, T, H, V),
            BP_OK);
  EXPECT_TRUE(gradMatches(dwte, fdWte));
  EXPECT_TRUE(gradMatches(dwpe, fdWpe)); // Rows T..P-1 stay 0.

  ASSERT_EQ(bp_embedding_bwd(tokens.data(), w.data(), dwte.data(), dwpe.data(),
                             B, T, H, V),
            BP_OK);
  EXPECT_TRUE(gradMatches(dwte, times(fdWte, 2)));
  EXPECT_TRUE(gradMatches(dwpe, times(fdWpe, 2)));
}

TEST(EmbeddingBwd, WithoutPositionTableMatchesFiniteDifferences) {
  const int64_t B = 2, T = 3, H = 3, V = 4;
  std::vector<int32_t> tokens = {1, 1, 0, 3, 1, 2};
  auto wte = randomFloats(V * H, 52), w = randomFloats(B * T * H, 53);
  auto wteD = toDouble(wte), wD = toDouble(w);
  auto fdWte = finiteDifferences(wteD, [&] {
    return weightedSum(
        ref::embedding(tokens, wteD, std::vector<double>(), B, T, H), wD);
  });
  std::vector<float> dwte(V * H, 0.0f);
  ASSERT_EQ(bp_embedding_bwd(tokens.data(), w.data(), dwte.data(), nullptr, B,
                             T, H, V),
            BP_OK);
  EXPECT_TRUE(gradMatches(dwte, fdWte));
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

TEST(LayerNormBwd, MatchesFiniteDifferencesAndAccumulates) {
  const int64_t N = 4, H = 10;
  const float eps = 1e-5f;
  auto x = randomFloats(N * H, 24, -2.0f, 3.0f);
  auto gamma = randomFloats(H, 25, 0.5f, 1.5f), beta = randomFloats(H, 26),
       w = randomFloats(N * H, 27);
  auto xD = toDouble(x), gD = toDouble(gamma), bD = toDouble(beta),
       wD = toDouble(w);
  auto loss = [&] {
    return weightedSum(ref::layerNorm(xD, gD, bD, N, H, double(eps)), wD);
  };
  auto fdX = finiteDifferences(xD, loss);
  auto fdGamma = finiteDifferences(gD, loss);
  auto fdBeta = finiteDifferences(bD, loss);

  std::vector<float> y(N * H), mean(N), rstd(N);
  ASSERT_EQ(bp_layer_norm_fwd(x.data(), gamma.data(), beta.data(), y.data(),
                              mean.data(), rstd.data(), N, H, eps),
            BP_OK);
  std::vector<float> dx(N * H, 7.0f), dgamma(H, 0.0f), dbeta(H, 0.0f);
  ASSERT_EQ(bp_layer_norm_bwd(w.data(), x.data(), gamma.data(), mean.data(),
                              rstd.data(), dx.data(), dgamma.data(),
                              dbeta.data(), N, H),
            BP_OK);
  EXPECT_TRUE(gradMatches(dx, fdX));
  EXPECT_TRUE(gradMatches(dgamma, fdGamma));
  EXPECT_TRUE(gradMatches(dbeta, fdBeta));

  // dgamma, dbeta accumulate; dx is overwritten (not doubled).
  ASSERT_EQ(bp_layer_norm_bwd(w.data(), x.data(), gamma.data(), mean.data(),
                              rstd.data(), dx.data(), dgamma.data(),
                              dbeta.data(), N, H),
            BP_OK);
  EXPECT_TRUE(gradMatches(dx, fdX));
  EXPECT_TRUE(gradMatches(dgamma, times(fdGamma, 2)));
  EXPECT_TRUE(gradMatches(dbeta, times(fdBeta, 2)));
}

//===----------------------------------------------------------------------===//
// Linear
//===----------------------------------------------------------------------===//

TEST(LinearBwd, InputGradientMatchesFiniteDifferences) {
  const int64_t N = 3, In = 7, Out = 5;
  auto x = randomFloats(N * In, 28), wt = randomFloats(Out * In, 29),
       b = randomFloats(Out, 30), w = randomFloats(N * Out, 31);
  auto xD = toDouble(x), wtD = toDouble(wt), bD = toDouble(b), wD = toDouble(w);
  auto fdX = finiteDifferences(xD, [&] {
    return weightedSum(ref::linear(xD, wtD, bD, N, In, Out), wD);
  });
  std::vector<float> dx(N * In, 7.0f); // Written, not accumulated.
  ASSERT_EQ(bp_linear_bwd_input(w.data(), wt.data(), dx.data(), N, In, Out),
            BP_OK);
  EXPECT_TRUE(gradMatches(dx, fdX));
}

TEST(LinearBwd, WeightGradientMatchesFiniteDifferencesAndAccumulates) {
  const int64_t N = 4, In = 6, Out = 3;
  auto x = randomFloats(N * In, 32), wt = randomFloats(Out * In, 33),
       b = randomFloats(Out, 34), w = randomFloats(N * Out, 35);
  auto xD = toDouble(x), wtD = toDouble(wt), bD = toDouble(b), wD = toDouble(w);
  auto loss = [&] {
    return weightedSum(ref::linear(xD, wtD, bD, N, In, Out), wD);
  };
  auto fdW = finiteDifferences(wtD, loss);
  auto fdB = finiteDifferences(bD, loss);

  std::vector<float> dw(Out * In, 0.0f), db(Out, 0.0f);
  ASSERT_EQ(bp_linear_bwd_weight(w.data(), x.data(), dw.data(), db.data(), N,
                                 In, Out),
            BP_OK);
  EXPECT_TRUE(gradMatches(dw, fdW));
  EXPECT_TRUE(gradMatches(db, fdB));

  // A second micro-batch's call adds: gradient accumulation.
  ASSERT_EQ(bp_linear_bwd_weight(w.data(), x.data(), dw.data(), db.data(), N,
                                 In, Out),
            BP_OK);
  EXPECT_TRUE(gradMatches(dw, times(fdW, 2)));
  EXPECT_TRUE(gradMatches(db, times(fdB, 2)));

  // Without a bias, db is not touched and dw still accumulates.
  ASSERT_EQ(
      bp_linear_bwd_weight(w.data(), x.data(), dw.data(), nullptr, N, In, Out),
      BP_OK);
  EXPECT_TRUE(gradMatches(dw, times(fdW, 3)));
  EXPECT_TRUE(gradMatches(db, times(fdB, 2)));
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// T not a multiple of the blocks, blockQ != blockK, unit blocks, blocks
// larger than T, and (T = 70) the default 64 x 64 blocks with a partial one.
const AttentionCase kAttentionCases[] = {
    {2, 10, 8, 2, 4, 3, true},   {2, 10, 8, 2, 4, 3, false},
    {1, 9, 6, 3, 2, 4, true},    {1, 9, 6, 3, 2, 4, false},
    {1, 5, 4, 1, 1, 1, true},    {1, 5, 4, 2, 8, 8, false},
    {1, 70, 4, 2, 64, 64, true}, {1, 70, 4, 2, 64, 64, false}};

class AttentionBwd : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionBwd, MatchesFiniteDifferences) {
  const AttentionCase c = GetParam();
  auto qkv = randomFloats(c.B * c.T * 3 * c.H, 36, -1.5f, 1.5f);
  auto w = randomFloats(c.B * c.T * c.H, 37);
  auto qkvD = toDouble(qkv), wD = toDouble(w);
  auto fd = finiteDifferences(qkvD, [&] {
    return weightedSum(ref::attention(qkvD, c.B, c.T, c.H, c.nh, c.causal), wD);
  });

  std::vector<float> out(c.B * c.T * c.H), lse(c.B * c.nh * c.T);
  ASSERT_EQ(cpu::attentionForward(qkv.data(), out.data(), lse.data(), c.B, c.T,
                                  c.H, c.nh, c.nh, c.causal, c.blockQ,
                                  c.blockK),
            BP_OK);
  std::vector<float> dqkv(qkv.size(), 7.0f); // Written, not accumulated.
  ASSERT_EQ(cpu::attentionBackward(qkv.data(), out.data(), w.data(), lse.data(),
                                   dqkv.data(), c.B, c.T, c.H, c.nh, c.nh,
                                   c.causal, c.blockQ, c.blockK),
            BP_OK);
  EXPECT_TRUE(gradMatches(dqkv, fd));
}

INSTANTIATE_TEST_SUITE_P(Blocks, AttentionBwd,
                         ::testing::ValuesIn(kAttentionCases),
                         attentionCaseName);

TEST(AttentionBwdAbi, MatchesFiniteDifferencesThroughTheCAbi) {
  const int64_t B = 2, T = 67, H = 4, nh = 2;
  auto qkv = randomFloats(B * T * 3 * H, 38, -1.5f, 1.5f);
  auto w = randomFloats(B * T * H, 39);
  auto qkvD = toDouble(qkv), wD = toDouble(w);
  for (int32_t causal : {1, 0}) {
    auto fd = finiteDifferences(qkvD, [&] {
      return weightedSum(ref::attention(qkvD, B, T, H, nh, causal != 0), wD);
    });
    std::vector<float> out(B * T * H), lse(B * nh * T), dqkv(qkv.size());
    ASSERT_EQ(bp_attention_fwd(qkv.data(), out.data(), lse.data(), B, T, H, nh,
                               causal),
              BP_OK);
    ASSERT_EQ(bp_attention_bwd(qkv.data(), out.data(), w.data(), lse.data(),
                               dqkv.data(), B, T, H, nh, causal),
              BP_OK);
    EXPECT_TRUE(gradMatches(dqkv, fd)) << "causal=" << causal;
  }
}

/// The backward through the mask: finite differences of the definition's
/// forward with the same mask (which does not depend on qkv, so the loss is
/// as smooth as without dropout).
TEST_P(AttentionBwd, WithDropoutMatchesFiniteDifferences) {
  const AttentionCase c = GetParam();
  auto qkv = randomFloats(c.B * c.T * 3 * c.H, 70, -1.5f, 1.5f);
  auto w = randomFloats(c.B * c.T * c.H, 71);
  auto qkvD = toDouble(qkv), wD = toDouble(w);
  for (const ref::DropoutSpec &spec :
       {ref::DropoutSpec{0x0123456789abcdefULL, 9, 4, 0.1f},
        ref::DropoutSpec{5, 0xfedcba9876543210ULL, 7, 0.5f}}) {
    auto fd = finiteDifferences(qkvD, [&] {
      return weightedSum(
          ref::attentionDropout(qkvD, c.B, c.T, c.H, c.nh, c.causal, spec), wD);
    });
    const auto key = spec.key();
    const DropoutMask mask = dropoutMask(key.data(), spec.site, spec.p);
    std::vector<float> out(c.B * c.T * c.H), lse(c.B * c.nh * c.T);
    ASSERT_EQ(cpu::attentionForward(qkv.data(), out.data(), lse.data(), c.B,
                                    c.T, c.H, c.nh, c.nh, c.causal, c.blockQ,
                                    c.blockK, &mask),
              BP_OK);
    std::vector<float> dqkv(qkv.size(), 7.0f); // Written, not accumulated.
    ASSERT_EQ(cpu::attentionBackward(qkv.data(), out.data(), w.data(),
                                     lse.data(), dqkv.data(), c.B, c.T, c.H,
                                     c.nh, c.nh, c.causal, c.blockQ, c.blockK,
                                     &mask),
              BP_OK);
    EXPECT_TRUE(gradMatches(dqkv, fd)) << "p=" << spec.p;
    // Not vacuous: the mask drops some probability the rows see.
    EXPECT_GT(ref::droppedProbabilities(spec, c.B, c.nh, c.T, c.causal), 0)
        << "p=" << spec.p;
  }
}

TEST(AttentionDropoutBwdAbi, MatchesFiniteDifferencesThroughTheCAbi) {
  const int64_t B = 2, T = 67, H = 4, nh = 2;
  auto qkv = randomFloats(B * T * 3 * H, 72, -1.5f, 1.5f);
  auto w = randomFloats(B * T * H, 73);
  auto qkvD = toDouble(qkv), wD = toDouble(w);
  const ref::DropoutSpec spec{11, 12, 13, 0.25f};
  const auto key = spec.key();
  for (int32_t causal : {1, 0}) {
    auto fd = finiteDifferences(qkvD, [&] {
      return weightedSum(
          ref::attentionDropout(qkvD, B, T, H, nh, causal != 0, spec), wD);
    });
    std::vector<float> out(B * T * H), lse(B * nh * T), dqkv(qkv.size());
    ASSERT_EQ(bp_attention_dropout_fwd(qkv.data(), out.data(), lse.data(), B, T,
                                       H, nh, causal, key.data(), spec.site,
                                       spec.p),
              BP_OK);
    ASSERT_EQ(bp_attention_dropout_bwd(qkv.data(), out.data(), w.data(),
                                       lse.data(), dqkv.data(), B, T, H, nh,
                                       causal, key.data(), spec.site, spec.p),
              BP_OK);
    EXPECT_TRUE(gradMatches(dqkv, fd)) << "causal=" << causal;
  }
}

TEST(GroupedQueryAttentionBwd, MatchesFiniteDifferences) {
  // nh, nkv, blocks, causal: groups of 2 and 3, multi-query, partial blocks;
  // the last through the C ABI's default blocks.
  struct Case {
    int64_t nh, nkv, blockQ, blockK;
    bool causal;
  };
  const int64_t B = 2, T = 9, d = 2;
  for (Case c : {Case{2, 1, 4, 3, true}, Case{6, 2, 2, 5, false},
                 Case{3, 1, 3, 3, true}, Case{4, 2, 64, 64, true}}) {
    const int64_t H = c.nh * d, width = (c.nh + 2 * c.nkv) * d;
    auto qkv = randomFloats(B * T * width, 42, -1.5f, 1.5f);
    auto w = randomFloats(B * T * H, 43);
    auto qkvD = toDouble(qkv), wD = toDouble(w);
    auto fd = finiteDifferences(qkvD, [&] {
      return weightedSum(
          ref::groupedAttention(qkvD, B, T, H, c.nh, c.nkv, c.causal), wD);
    });
    std::vector<float> out(B * T * H), lse(B * c.nh * T);
    std::vector<float> dqkv(qkv.size(), 7.0f); // Written, not accumulated.
    if (c.blockQ == cpu::kAttentionBlockQ) {
      ASSERT_EQ(bp_attention_gqa_fwd(qkv.data(), out.data(), lse.data(), B, T,
                                     H, c.nh, c.nkv, c.causal),
                BP_OK);
      ASSERT_EQ(bp_attention_gqa_bwd(qkv.data(), out.data(), w.data(),
                                     lse.data(), dqkv.data(), B, T, H, c.nh,
                                     c.nkv, c.causal),
                BP_OK);
    } else {
      ASSERT_EQ(cpu::attentionForward(qkv.data(), out.data(), lse.data(), B, T,
                                      H, c.nh, c.nkv, c.causal, c.blockQ,
                                      c.blockK),
                BP_OK);
      ASSERT_EQ(cpu::attentionBackward(qkv.data(), out.data(), w.data(),
                                       lse.data(), dqkv.data(), B, T, H, c.nh,
                                       c.nkv, c.causal, c.blockQ, c.blockK),
                BP_OK);
    }
    EXPECT_TRUE(gradMatches(dqkv, fd)) << "nh=" << c.nh << " nkv=" << c.nkv;
  }
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

TEST(RotaryBwd, MatchesFiniteDifferences) {
  const int64_t B = 2, T = 5, H = 8, nh = 2, nkv = 1;
  const int64_t width = (nh + 2 * nkv) * (H / nh);
  auto qkv = randomFloats(B * T * width, 44, -1.5f, 1.5f);
  auto w = randomFloats(qkv.size(), 45);
  auto qkvD = toDouble(qkv), wD = toDouble(w);
  for (float base : {10000.0f, 7.0f}) {
    auto fd = finiteDifferences(qkvD, [&] {
      return weightedSum(ref::rotary(qkvD, B, T, H, nh, nkv, double(base)),
                         wD);
    });
    std::vector<float> dqkv(qkv.size(), 7.0f);
    ASSERT_EQ(bp_rotary_bwd(w.data(), dqkv.data(), B, T, H, nh, nkv, base),
              BP_OK);
    EXPECT_TRUE(gradMatches(dqkv, fd)) << "base=" << base;
  }
}

//===----------------------------------------------------------------------===//
// RMS norm
//===----------------------------------------------------------------------===//

TEST(RmsNormBwd, MatchesFiniteDifferencesAndAccumulates) {
  const int64_t N = 4, H = 10;
  const float eps = 1e-5f;
  auto x = randomFloats(N * H, 46, -2.0f, 3.0f);
  auto gamma = randomFloats(H, 47, 0.5f, 1.5f), w = randomFloats(N * H, 48);
  auto xD = toDouble(x), gD = toDouble(gamma), wD = toDouble(w);
  auto loss = [&] {
    return weightedSum(ref::rmsNorm(xD, gD, N, H, double(eps)), wD);
  };
  auto fdX = finiteDifferences(xD, loss);
  auto fdGamma = finiteDifferences(gD, loss);

  std::vector<float> y(N * H), rstd(N);
  ASSERT_EQ(bp_rms_norm_fwd(x.data(), gamma.data(), y.data(), rstd.data(), N, H,
                            eps),
            BP_OK);
  std::vector<float> dx(N * H, 7.0f), dgamma(H, 0.0f);
  for (int call = 1; call <= 2; ++call) {
    ASSERT_EQ(bp_rms_norm_bwd(w.data(), x.data(), gamma.data(), rstd.data(),
                              dx.data(), dgamma.data(), N, H),
              BP_OK);
    // dx is overwritten; dgamma accumulates.
    EXPECT_TRUE(gradMatches(dx, fdX)) << "call " << call;
    EXPECT_TRUE(gradMatches(dgamma, times(fdGamma, call))) << "call " << call;
  }
}

//===----------------------------------------------------------------------===//
// SwiGLU
//===----------------------------------------------------------------------===//

TEST(SwiGluBwd, MatchesFiniteDifferences) {
  auto gate = randomFloats(64, 49, -6.0f, 6.0f), up = randomFloats(64, 50);
  gate.push_back(0.0f);
  up.push_back(0.5f);
  auto w = randomFloats(gate.size(), 51);
  auto gD = toDouble(gate), uD = toDouble(up), wD = toDouble(w);
  auto loss = [&] { return weightedSum(ref::swiglu(gD, uD), wD); };
  auto fdGate = finiteDifferences(gD, loss);
  auto fdUp = finiteDifferences(uD, loss);
  std::vector<float> dgate(gate.size(), 7.0f), dup(up.size(), 7.0f);
  ASSERT_EQ(bp_swiglu_bwd(w.data(), gate.data(), up.data(), dgate.data(),
                          dup.data(), gate.size()),
            BP_OK);
  EXPECT_TRUE(gradMatches(dgate, fdGate));
  EXPECT_TRUE(gradMatches(dup, fdUp));
}

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

TEST(GeluBwd, MatchesFiniteDifferences) {
  auto x = randomFloats(64, 40, -5.0f, 5.0f);
  x.push_back(0.0f);
  auto w = randomFloats(x.size(), 41);
  auto xD = toDouble(x), wD = toDouble(w);
  auto fd =
      finiteDifferences(xD, [&] { return weightedSum(ref::gelu(xD), wD); });
  std::vector<float> dx(x.size());
  ASSERT_EQ(bp_gelu_bwd(w.data(), x.data(), dx.data(), x.size()), BP_OK);
  EXPECT_TRUE(gradMatches(dx, fd));
}

TEST(GeluErfBwd, MatchesFiniteDifferencesAndMayAliasDy) {
  auto x = randomFloats(64, 42, -5.0f, 5.0f);
  x.push_back(0.0f);
  auto w = randomFloats(x.size(), 43);
  auto xD = toDouble(x), wD = toDouble(w);
  auto fd =
      finiteDifferences(xD, [&] { return weightedSum(ref::geluErf(xD), wD); });
  std::vector<float> dx(x.size());
  ASSERT_EQ(bp_gelu_erf_bwd(w.data(), x.data(), dx.data(), x.size()), BP_OK);
  EXPECT_TRUE(gradMatches(dx, fd));
  std::vector<float> inPlace = w;
  ASSERT_EQ(bp_gelu_erf_bwd(inPlace.data(), x.data(), inPlace.data(), x.size()),
            BP_OK);
  EXPECT_EQ(inPlace, dx);
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

TEST(CrossEntropyBwd, MatchesFiniteDifferencesWithIgnoredRows) {
  const int64_t N = 5, V = 7;
  auto logits = randomFloats(N * V, 42, -3.0f, 3.0f);
  std::vector<int32_t> labels = {3, BP_IGNORE_INDEX, 0, 6, BP_IGNORE_INDEX};
  auto lD = toDouble(logits);
  auto fd = finiteDifferences(
      lD, [&] { return ref::crossEntropy(lD, labels, N, V, BP_IGNORE_INDEX); });
  std::vector<float> dlogits(N * V, 7.0f);
  ASSERT_EQ(crossEntropyBwd(logits.data(), labels.data(), &kUnitLossGrad,
                            dlogits.data(), N, V, BP_IGNORE_INDEX),
            BP_OK);
  EXPECT_TRUE(gradMatches(dlogits, fd));
  // Ignored rows are exactly 0, not merely small.
  for (int64_t j = 0; j < V; ++j) {
    EXPECT_EQ(dlogits[1 * V + j], 0.0f);
    EXPECT_EQ(dlogits[4 * V + j], 0.0f);
  }

  // dloss scales the gradient (e.g. 1 / micro-batches).
  ASSERT_EQ(crossEntropyBwd(logits.data(), labels.data(), &kQuarterLossGrad,
                            dlogits.data(), N, V, BP_IGNORE_INDEX),
            BP_OK);
  EXPECT_TRUE(gradMatches(dlogits, times(fd, 0.25)));
}

TEST(CrossEntropyBwd, InPlaceOverLogits) {
  const int64_t N = 3, V = 6;
  auto logits = randomFloats(N * V, 43, -3.0f, 3.0f);
  std::vector<int32_t> labels = {5, 0, BP_IGNORE_INDEX};
  auto lD = toDouble(logits);
  auto fd = finiteDifferences(
      lD, [&] { return ref::crossEntropy(lD, labels, N, V, BP_IGNORE_INDEX); });
  ASSERT_EQ(crossEntropyBwd(logits.data(), labels.data(), &kUnitLossGrad,
                            logits.data(), N, V, BP_IGNORE_INDEX),
            BP_OK);
  EXPECT_TRUE(gradMatches(logits, fd));
}

TEST(CrossEntropyBwd, StableForLargeLogits) {
  // Logits near 1e4: exp overflows without the max, and a log-sum-exp
  // rounded to float at 1e4 would be off by ~1e-3 in every probability.
  const int64_t N = 2, V = 5;
  auto logits = randomFloats(N * V, 46, -2.0f, 2.0f);
  for (float &x : logits)
    x += 1e4f;
  std::vector<int32_t> labels = {4, 1};
  auto lD = toDouble(logits);
  auto fd = finiteDifferences(
      lD, [&] { return ref::crossEntropy(lD, labels, N, V, BP_IGNORE_INDEX); });
  std::vector<float> dlogits(N * V);
  ASSERT_EQ(crossEntropyBwd(logits.data(), labels.data(), &kUnitLossGrad,
                            dlogits.data(), N, V, BP_IGNORE_INDEX),
            BP_OK);
  EXPECT_TRUE(gradMatches(dlogits, fd));
}

TEST(CrossEntropyBwd, AllIgnoredGivesZeroGradients) {
  const int64_t N = 2, V = 3;
  auto logits = randomFloats(N * V, 44);
  std::vector<int32_t> labels(N, BP_IGNORE_INDEX);
  std::vector<float> dlogits(N * V, 7.0f);
  ASSERT_EQ(crossEntropyBwd(logits.data(), labels.data(), &kUnitLossGrad,
                            dlogits.data(), N, V, BP_IGNORE_INDEX),
            BP_OK);
  for (float g : dlogits)
    EXPECT_EQ(g, 0.0f);
}

TEST(CrossEntropyBwd, OtherIgnoreIndex) {
  // The ignore index is a parameter: with -1, the label -100 is out of range.
  const int64_t N = 3, V = 4;
  auto logits = randomFloats(N * V, 45);
  std::vector<int32_t> labels = {1, -1, 2};
  auto lD = toDouble(logits);
  auto fd = finiteDifferences(
      lD, [&] { return ref::crossEntropy(lD, labels, N, V, -1); });
  std::vector<float> dlogits(N * V);
  ASSERT_EQ(crossEntropyBwd(logits.data(), labels.data(), &kUnitLossGrad,
                            dlogits.data(), N, V, -1),
            BP_OK);
  EXPECT_TRUE(gradMatches(dlogits, fd));
  labels[1] = BP_IGNORE_INDEX;
  EXPECT_EQ(crossEntropyBwd(logits.data(), labels.data(), &kUnitLossGrad,
                            dlogits.data(), N, V, -1),
            BP_ERR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// The backward references of Reference.h (what the CUDA kernels are tested
// against) against finite differences of the forward references. Both sides
// are double, so the tolerance is 1e-5 rather than kGradRtol.
//===----------------------------------------------------------------------===//

constexpr double kRefGradRtol = 1e-5;

TEST(ReferenceGrad, EmbeddingMatchesFiniteDifferences) {
  const int64_t B = 2, T = 3, H = 2, V = 4;
  std::vector<int32_t> tokens = {1, 3, 1, 1, 0, 2}; // Token 1 three times.
  auto wteD = toDouble(randomFloats(V * H, 50)),
       wpeD = toDouble(randomFloats(T * H, 51)),
       wD = toDouble(randomFloats(B * T * H, 52));
  auto loss = [&] {
    return weightedSum(ref::embedding(tokens, wteD, wpeD, B, T, H), wD);
  };
  auto fdWte = finiteDifferences(wteD, loss);
  auto fdWpe = finiteDifferences(wpeD, loss);
  std::vector<double> dwte, dwpe;
  ref::embeddingGrad(tokens, wD, B, T, H, V, dwte, dwpe);
  EXPECT_TRUE(allClose(dwte, fdWte, kRefGradRtol));
  EXPECT_TRUE(allClose(dwpe, fdWpe, kRefGradRtol));
}

TEST(ReferenceGrad, LayerNormMatchesFiniteDifferences) {
  const int64_t N = 3, H = 7;
  const double eps = 1e-5;
  auto xD = toDouble(randomFloats(N * H, 53, 1.0f, 3.0f)),
       gD = toDouble(randomFloats(H, 54, 0.5f, 1.5f)),
       bD = toDouble(randomFloats(H, 55)), wD = toDouble(randomFloats(N * H, 56));
  auto loss = [&] {
    return weightedSum(ref::layerNorm(xD, gD, bD, N, H, eps), wD);
  };
  auto fdX = finiteDifferences(xD, loss);
  auto fdGamma = finiteDifferences(gD, loss);
  auto fdBeta = finiteDifferences(bD, loss);
  std::vector<double> dx, dgamma, dbeta;
  ref::layerNormGrad(wD, xD, gD, N, H, eps, dx, dgamma, dbeta);
  EXPECT_TRUE(gradMatches(dx, fdX)); // Not vacuous...
  EXPECT_TRUE(allClose(dx, fdX, kRefGradRtol)); // ...and tight.
  EXPECT_TRUE(allClose(dgamma, fdGamma, kRefGradRtol));
  EXPECT_TRUE(allClose(dbeta, fdBeta, kRefGradRtol));
}

TEST(ReferenceGrad, GeluMatchesFiniteDifferences) {
  auto xD = toDouble(randomFloats(40, 57, -5.0f, 5.0f)),
       wD = toDouble(randomFloats(40, 58));
  auto fd =
      finiteDifferences(xD, [&] { return weightedSum(ref::gelu(xD), wD); });
  EXPECT_TRUE(allClose(ref::geluGrad(wD, xD), fd, kRefGradRtol));
}

TEST(ReferenceGrad, GeluErfMatchesFiniteDifferences) {
  auto xD = toDouble(randomFloats(40, 59, -5.0f, 5.0f)),
       wD = toDouble(randomFloats(40, 60));
  auto fd =
      finiteDifferences(xD, [&] { return weightedSum(ref::geluErf(xD), wD); });
  EXPECT_TRUE(allClose(ref::geluErfGrad(wD, xD), fd, kRefGradRtol));
}

TEST(ReferenceGrad, CrossEntropyMatchesFiniteDifferences) {
  const int64_t N = 4, V = 5;
  const double dloss = 0.25;
  auto lD = toDouble(randomFloats(N * V, 59, -3.0f, 3.0f));
  std::vector<int32_t> labels = {2, BP_IGNORE_INDEX, 4, 0};
  auto fd = finiteDifferences(lD, [&] {
    return dloss * ref::crossEntropy(lD, labels, N, V, BP_IGNORE_INDEX);
  });
  auto d = ref::crossEntropyGrad(lD, labels, N, V, BP_IGNORE_INDEX, dloss);
  EXPECT_TRUE(gradMatches(d, fd));
  EXPECT_TRUE(allClose(d, fd, kRefGradRtol));
}

} // namespace

TEST(ReferenceGrad, RmsNormMatchesFiniteDifferences) {
  const int64_t N = 3, H = 7;
  const double eps = 1e-5;
  auto x = toDouble(randomFloats(N * H, 60, -2.0f, 2.0f));
  auto g = toDouble(randomFloats(H, 61, 0.5f, 1.5f));
  auto dy = toDouble(randomFloats(N * H, 62));
  auto loss = [&] { return weightedSum(ref::rmsNorm(x, g, N, H, eps), dy); };
  auto fdX = finiteDifferences(x, loss);
  auto fdG = finiteDifferences(g, loss);
  std::vector<double> dx, dg;
  ref::rmsNormGrad(dy, x, g, N, H, eps, dx, dg);
  EXPECT_TRUE(allClose(dx, fdX, kRefGradRtol));
  EXPECT_TRUE(allClose(dg, fdG, kRefGradRtol));
}

TEST(ReferenceGrad, SwiGluMatchesFiniteDifferences) {
  auto gate = toDouble(randomFloats(40, 63, -6.0f, 6.0f));
  auto up = toDouble(randomFloats(40, 64));
  auto dy = toDouble(randomFloats(40, 65));
  auto loss = [&] { return weightedSum(ref::swiglu(gate, up), dy); };
  auto fdGate = finiteDifferences(gate, loss);
  auto fdUp = finiteDifferences(up, loss);
  std::vector<double> dgate, dup;
  ref::swigluGrad(dy, gate, up, dgate, dup);
  EXPECT_TRUE(allClose(dgate, fdGate, kRefGradRtol));
  EXPECT_TRUE(allClose(dup, fdUp, kRefGradRtol));
}

TEST(ReferenceGrad, RotaryMatchesFiniteDifferences) {
  const int64_t B = 1, T = 4, H = 8, nh = 2, nkv = 1;
  auto qkv = toDouble(randomFloats(B * T * 16, 66, -1.5f, 1.5f));
  auto dy = toDouble(randomFloats(qkv.size(), 67));
  auto fd = finiteDifferences(qkv, [&] {
    return weightedSum(ref::rotary(qkv, B, T, H, nh, nkv, 5.0), dy);
  });
  EXPECT_TRUE(
      allClose(ref::rotaryGrad(dy, B, T, H, nh, nkv, 5.0), fd, kRefGradRtol));
}

TEST(ReferenceGrad, AttentionDropoutMatchesFiniteDifferences) {
  const int64_t B = 2, T = 5, H = 6, nh = 3;
  auto qkv = toDouble(randomFloats(B * T * 3 * H, 74, -1.5f, 1.5f));
  auto dy = toDouble(randomFloats(B * T * H, 75));
  const ref::DropoutSpec spec{3, 4, 5, 0.5f};
  for (bool causal : {true, false}) {
    auto fd = finiteDifferences(qkv, [&] {
      return weightedSum(ref::attentionDropout(qkv, B, T, H, nh, causal, spec),
                         dy);
    });
    auto out = ref::attentionDropout(qkv, B, T, H, nh, causal, spec);
    auto grad =
        ref::attentionDropoutGrad(qkv, out, dy, B, T, H, nh, causal, spec);
    EXPECT_TRUE(gradMatches(grad, fd)) << "causal=" << causal;
    EXPECT_TRUE(allClose(grad, fd, kRefGradRtol)) << "causal=" << causal;
  }
}

TEST(ReferenceGrad, GroupedAttentionMatchesFiniteDifferences) {
  const int64_t B = 1, T = 5, H = 6, nh = 3, nkv = 1;
  const int64_t width = (nh + 2 * nkv) * (H / nh);
  auto qkv = toDouble(randomFloats(B * T * width, 68, -1.5f, 1.5f));
  auto dy = toDouble(randomFloats(B * T * H, 69));
  for (bool causal : {true, false}) {
    auto fd = finiteDifferences(qkv, [&] {
      return weightedSum(
          ref::groupedAttention(qkv, B, T, H, nh, nkv, causal), dy);
    });
    auto out = ref::groupedAttention(qkv, B, T, H, nh, nkv, causal);
    EXPECT_TRUE(allClose(ref::groupedAttentionGrad(qkv, out, dy, B, T, H, nh,
                                                   nkv, causal),
                         fd, kRefGradRtol))
        << "causal=" << causal;
  }
}
