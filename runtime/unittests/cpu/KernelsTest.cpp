//===- KernelsTest.cpp - Forward kernels against the reference --*- C++ -*-===//
//
// Each fp32 forward kernel against the double reference of Reference.h on
// small shapes (relative tolerance kFwdRtol), plus a few known values and the
// argument checks.
//
//===----------------------------------------------------------------------===//

#include "DropoutReference.h"
#include "Reference.h"
#include "TestUtil.h"
#include "bitpipe/runtime.h"
#include "core/Dropout.h"
#include "kernels/Attention.h"

#include <cmath>
#include <gtest/gtest.h>
#include <limits>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

TEST(EmbeddingFwd, MatchesReference) {
  const int64_t B = 2, T = 5, H = 6, V = 7, P = 8;
  // Repeated tokens, including the same token twice in one sequence.
  std::vector<int32_t> tokens = {3, 0, 6, 3, 1, 2, 2, 5, 4, 0};
  auto wte = randomFloats(V * H, 1), wpe = randomFloats(P * H, 2);
  std::vector<float> out(B * T * H);
  ASSERT_EQ(bp_embedding_fwd(tokens.data(), wte.data(), wpe.data(), out.data(),
                             B, T, H, V),
            BP_OK);
  EXPECT_TRUE(allClose(
      out, ref::embedding(tokens, toDouble(wte), toDouble(wpe), B, T, H),
      kFwdRtol));
}

TEST(EmbeddingFwd, RejectsOutOfRangeTokens) {
  const int64_t B = 1, T = 2, H = 2, V = 3;
  auto wte = randomFloats(V * H, 1), wpe = randomFloats(T * H, 2);
  std::vector<float> out(B * T * H, 42.0f);
  for (int32_t bad : {-1, 3}) {
    std::vector<int32_t> tokens = {0, bad};
    EXPECT_EQ(bp_embedding_fwd(tokens.data(), wte.data(), wpe.data(),
                               out.data(), B, T, H, V),
              BP_ERR_INVALID_ARGUMENT);
  }
  // Checked before anything is written.
  for (float x : out)
    EXPECT_EQ(x, 42.0f);
}

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

TEST(LayerNormFwd, MatchesReferenceIncludingSavedStatistics) {
  const int64_t N = 7, H = 33;
  const float eps = 1e-5f;
  // An offset mean (3) tests the two-pass variance.
  auto x = randomFloats(N * H, 3, 2.0f, 4.0f);
  auto gamma = randomFloats(H, 4, 0.5f, 1.5f), beta = randomFloats(H, 5);
  std::vector<float> y(N * H), mean(N), rstd(N);
  ASSERT_EQ(bp_layer_norm_fwd(x.data(), gamma.data(), beta.data(), y.data(),
                              mean.data(), rstd.data(), N, H, eps),
            BP_OK);
  std::vector<double> refMean, refRstd;
  auto refY = ref::layerNorm(toDouble(x), toDouble(gamma), toDouble(beta), N, H,
                             double(eps), &refMean, &refRstd);
  EXPECT_TRUE(allClose(y, refY, kFwdRtol));
  EXPECT_TRUE(allClose(mean, refMean, kFwdRtol));
  EXPECT_TRUE(allClose(rstd, refRstd, kFwdRtol));
}

TEST(LayerNormFwd, NormalisesRows) {
  // Unit gain, zero bias: every output row has mean 0 and variance ~1.
  const int64_t N = 3, H = 64;
  auto x = randomFloats(N * H, 6, -5.0f, 9.0f);
  std::vector<float> gamma(H, 1.0f), beta(H, 0.0f), y(N * H), mean(N), rstd(N);
  ASSERT_EQ(bp_layer_norm_fwd(x.data(), gamma.data(), beta.data(), y.data(),
                              mean.data(), rstd.data(), N, H, 0.0f),
            BP_OK);
  for (int64_t i = 0; i < N; ++i) {
    double s = 0, sq = 0;
    for (int64_t c = 0; c < H; ++c) {
      s += y[i * H + c];
      sq += double(y[i * H + c]) * y[i * H + c];
    }
    EXPECT_NEAR(s / H, 0.0, 1e-6);
    EXPECT_NEAR(sq / H, 1.0, 1e-5);
  }
}

//===----------------------------------------------------------------------===//
// Linear
//===----------------------------------------------------------------------===//

TEST(LinearFwd, MatchesReferenceWithAndWithoutBias) {
  const int64_t N = 5, In = 13, Out = 9; // Non-square on purpose.
  auto x = randomFloats(N * In, 7), w = randomFloats(Out * In, 8),
       b = randomFloats(Out, 9);
  std::vector<float> y(N * Out);
  ASSERT_EQ(bp_linear_fwd(x.data(), w.data(), b.data(), y.data(), N, In, Out),
            BP_OK);
  EXPECT_TRUE(allClose(
      y, ref::linear(toDouble(x), toDouble(w), toDouble(b), N, In, Out),
      kFwdRtol));

  ASSERT_EQ(bp_linear_fwd(x.data(), w.data(), nullptr, y.data(), N, In, Out),
            BP_OK);
  EXPECT_TRUE(allClose(y, ref::linear(toDouble(x), toDouble(w), {}, N, In, Out),
                       kFwdRtol));
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

// Blocks that divide T, that do not (partial last blocks), with blockQ !=
// blockK (tiles straddling the causal diagonal unevenly), of size 1, and
// larger than T. blockQ = blockK = 64 is what the C ABI uses.
const AttentionCase kAttentionCases[] = {
    {2, 8, 8, 2, 4, 4, true},    {2, 8, 8, 2, 4, 4, false},
    {2, 10, 8, 2, 4, 3, true},   {2, 10, 8, 2, 4, 3, false},
    {1, 11, 12, 3, 3, 5, true},  {1, 11, 12, 3, 3, 5, false},
    {1, 7, 4, 1, 1, 1, true},    {1, 7, 4, 1, 1, 1, false},
    {1, 5, 8, 2, 16, 16, true},  {1, 70, 8, 2, 64, 64, true},
    {1, 70, 8, 2, 64, 64, false}};

class AttentionFwd : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionFwd, MatchesReference) {
  const AttentionCase c = GetParam();
  // Scores of a few units, so the softmax is far from uniform.
  auto qkv = randomFloats(c.B * c.T * 3 * c.H, 10, -2.0f, 2.0f);
  std::vector<float> out(c.B * c.T * c.H), lse(c.B * c.nh * c.T);
  ASSERT_EQ(cpu::attentionForward(qkv.data(), out.data(), lse.data(), c.B, c.T,
                                  c.H, c.nh, c.nh, c.causal, c.blockQ,
                                  c.blockK),
            BP_OK);
  std::vector<double> refLse;
  auto refOut =
      ref::attention(toDouble(qkv), c.B, c.T, c.H, c.nh, c.causal, &refLse);
  EXPECT_TRUE(allClose(out, refOut, kFwdRtol));
  EXPECT_TRUE(allClose(lse, refLse, kFwdRtol));
}

INSTANTIATE_TEST_SUITE_P(Blocks, AttentionFwd,
                         ::testing::ValuesIn(kAttentionCases),
                         attentionCaseName);

TEST(AttentionAbi, MatchesReferenceAcrossDefaultBlocks) {
  // T = 130 spans three default blocks, the last partial.
  const int64_t B = 1, T = 130, H = 16, nh = 2;
  auto qkv = randomFloats(B * T * 3 * H, 11, -2.0f, 2.0f);
  for (int32_t causal : {1, 0}) {
    std::vector<float> out(B * T * H), lse(B * nh * T);
    ASSERT_EQ(bp_attention_fwd(qkv.data(), out.data(), lse.data(), B, T, H, nh,
                               causal),
              BP_OK);
    std::vector<double> refLse;
    auto refOut =
        ref::attention(toDouble(qkv), B, T, H, nh, causal != 0, &refLse);
    EXPECT_TRUE(allClose(out, refOut, kFwdRtol)) << "causal=" << causal;
    EXPECT_TRUE(allClose(lse, refLse, kFwdRtol)) << "causal=" << causal;
  }
}

TEST(AttentionAbi, CausalFirstRowIsItsOwnValue) {
  // Query 0 sees only key 0, so its output is v[0] exactly (one weight 1).
  const int64_t B = 1, T = 6, H = 4, nh = 2;
  auto qkv = randomFloats(B * T * 3 * H, 12, -3.0f, 3.0f);
  std::vector<float> out(B * T * H), lse(B * nh * T);
  ASSERT_EQ(
      bp_attention_fwd(qkv.data(), out.data(), lse.data(), B, T, H, nh, 1),
      BP_OK);
  for (int64_t c = 0; c < H; ++c)
    EXPECT_FLOAT_EQ(out[c], qkv[2 * H + c]);
}

TEST(AttentionAbi, LargeScoresDoNotOverflow) {
  // Scores of order 1e3: exp would overflow without the running max.
  const int64_t B = 1, T = 9, H = 4, nh = 1;
  auto qkv = randomFloats(B * T * 3 * H, 13, -40.0f, 40.0f);
  std::vector<float> out(B * T * H), lse(B * nh * T);
  ASSERT_EQ(
      bp_attention_fwd(qkv.data(), out.data(), lse.data(), B, T, H, nh, 0),
      BP_OK);
  std::vector<double> refLse;
  auto refOut = ref::attention(toDouble(qkv), B, T, H, nh, false, &refLse);
  EXPECT_TRUE(allClose(out, refOut, 1e-4));
  EXPECT_TRUE(allClose(lse, refLse, kFwdRtol));
}

TEST(AttentionAbi, RejectsHeadsThatDoNotDivideH) {
  std::vector<float> qkv(3 * 6), out(6), lse(4);
  EXPECT_EQ(bp_attention_fwd(qkv.data(), out.data(), lse.data(), 1, 1, 6, 4, 1),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_attention_bwd(qkv.data(), out.data(), out.data(), lse.data(),
                             qkv.data(), 1, 1, 6, 4, 1),
            BP_ERR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Attention with dropout on the probabilities
//===----------------------------------------------------------------------===//

/// Keys whose words are negative as int32 as well as positive, sites 0 and
/// one near 2^24 (the counter's high bits).
const ref::DropoutSpec kDropoutSpecs[] = {
    {0x0123456789abcdefULL, 0xfedcba9876543210ULL, 4, 0.1f},
    {42, 3, 0, 0.5f},
    {7, 0x100000000ULL, (1 << 24) - 1, 0.5f}};

TEST(AttentionDropoutFwd, MatchesTheDefinitionAcrossBlocks) {
  // The cases' tilings (partial blocks, the causal diagonal, blockQ !=
  // blockK, the default blocks), each under every mask.
  for (const AttentionCase &c : kAttentionCases)
    for (const ref::DropoutSpec &spec : kDropoutSpecs) {
      auto qkv = randomFloats(c.B * c.T * 3 * c.H, 20, -2.0f, 2.0f);
      const auto key = spec.key();
      const DropoutMask mask = dropoutMask(key.data(), spec.site, spec.p);
      std::vector<float> out(c.B * c.T * c.H), lse(c.B * c.nh * c.T);
      ASSERT_EQ(cpu::attentionForward(qkv.data(), out.data(), lse.data(), c.B,
                                      c.T, c.H, c.nh, c.nh, c.causal, c.blockQ,
                                      c.blockK, &mask),
                BP_OK);
      std::vector<double> refLse;
      auto refOut = ref::attentionDropout(toDouble(qkv), c.B, c.T, c.H, c.nh,
                                          c.causal, spec, &refLse);
      const std::string where = ::testing::PrintToString(c) +
                                " p=" + std::to_string(spec.p) +
                                " site=" + std::to_string(spec.site);
      EXPECT_TRUE(allClose(out, refOut, kFwdRtol)) << where;
      // lse is the undropped softmax's.
      EXPECT_TRUE(allClose(lse, refLse, kFwdRtol)) << where;
      // Not vacuous: the mask drops some probability the rows see.
      EXPECT_GT(ref::droppedProbabilities(spec, c.B, c.nh, c.T, c.causal), 0)
          << where;
    }
}

TEST(AttentionDropoutAbi, MatchesTheDefinition) {
  // T = 130: three default blocks, the last partial; B, nh > 1.
  const int64_t B = 2, T = 130, H = 16, nh = 2;
  auto qkv = randomFloats(B * T * 3 * H, 21, -2.0f, 2.0f);
  for (const ref::DropoutSpec &spec : kDropoutSpecs)
    for (int32_t causal : {1, 0}) {
      const auto key = spec.key();
      std::vector<float> out(B * T * H), lse(B * nh * T);
      ASSERT_EQ(bp_attention_dropout_fwd(qkv.data(), out.data(), lse.data(), B,
                                         T, H, nh, causal, key.data(),
                                         spec.site, spec.p),
                BP_OK);
      std::vector<double> refLse;
      auto refOut = ref::attentionDropout(toDouble(qkv), B, T, H, nh,
                                          causal != 0, spec, &refLse);
      EXPECT_TRUE(allClose(out, refOut, kFwdRtol))
          << "causal=" << causal << " p=" << spec.p;
      EXPECT_TRUE(allClose(lse, refLse, kFwdRtol))
          << "causal=" << causal << " p=" << spec.p;
      // Not vacuous: the mask changes the output well beyond the tolerance.
      auto undropped = ref::attention(toDouble(qkv), B, T, H, nh, causal != 0);
      EXPECT_FALSE(allClose(out, undropped, 1e-2))
          << "causal=" << causal << " p=" << spec.p;
    }
}

TEST(AttentionDropoutAbi, DropsTheShareOfProbabilitiesItIsAsked) {
  // With T = 1 every query row has one key, of probability 1: its output
  // is that key's v times 1 / (1 - p) or 0, as the definition's mask says
  // for element b nh + h; over the B nh rows about 1 - p are kept.
  const int64_t B = 64, T = 1, H = 8, nh = 8, d = H / nh;
  auto qkv = randomFloats(B * T * 3 * H, 22, 0.5f, 1.0f); // v never 0
  const ref::DropoutSpec spec{99, 5, 1, 0.5f};
  const auto key = spec.key();
  std::vector<float> out(B * T * H), lse(B * nh * T);
  ASSERT_EQ(bp_attention_dropout_fwd(qkv.data(), out.data(), lse.data(), B, T,
                                     H, nh, 1, key.data(), spec.site, spec.p),
            BP_OK);
  int64_t kept = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h) {
      const float o = out[b * H + h * d], v = qkv[b * 3 * H + 2 * H + h * d];
      const bool keeps = spec.keeps(b * nh + h); // ((b nh + h) 1 + 0) 1 + 0
      EXPECT_FLOAT_EQ(o, keeps ? v * spec.scale() : 0.0f)
          << "b=" << b << " h=" << h;
      kept += keeps;
    }
  // 512 fair draws: 256 expected, standard deviation 11.3.
  EXPECT_GT(kept, 200);
  EXPECT_LT(kept, 312);
}

TEST(AttentionDropoutAbi, ZeroProbabilityIsAttentionExactly) {
  const int64_t B = 2, T = 70, H = 8, nh = 2;
  auto qkv = randomFloats(B * T * 3 * H, 23, -2.0f, 2.0f);
  auto dout = randomFloats(B * T * H, 24);
  const int32_t key[4] = {1, 2, 3, 4};
  for (int32_t causal : {1, 0}) {
    std::vector<float> a(B * T * H), b(B * T * H), lseA(B * nh * T),
        lseB(B * nh * T), da(qkv.size()), db(qkv.size());
    ASSERT_EQ(bp_attention_fwd(qkv.data(), a.data(), lseA.data(), B, T, H, nh,
                               causal),
              BP_OK);
    ASSERT_EQ(bp_attention_dropout_fwd(qkv.data(), b.data(), lseB.data(), B, T,
                                       H, nh, causal, key, 3, 0.0f),
              BP_OK);
    EXPECT_EQ(a, b) << "causal=" << causal;
    EXPECT_EQ(lseA, lseB) << "causal=" << causal;
    ASSERT_EQ(bp_attention_bwd(qkv.data(), a.data(), dout.data(), lseA.data(),
                               da.data(), B, T, H, nh, causal),
              BP_OK);
    ASSERT_EQ(bp_attention_dropout_bwd(qkv.data(), a.data(), dout.data(),
                                       lseA.data(), db.data(), B, T, H, nh,
                                       causal, key, 3, 0.0f),
              BP_OK);
    EXPECT_EQ(da, db) << "causal=" << causal;
  }
}

TEST(AttentionDropoutAbi, RejectsBadDropoutArguments) {
  const int64_t B = 1, T = 2, H = 4, nh = 2;
  std::vector<float> qkv(B * T * 3 * H, 0.5f), dout(B * T * H, 0.5f);
  const int32_t key[4] = {1, 2, 3, 4};
  struct Bad {
    const int32_t *key;
    int32_t site;
    float p;
  };
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (Bad bad : {Bad{key, 0, -0.1f}, Bad{key, 0, 1.0f}, Bad{key, 0, 1.5f},
                  Bad{key, 0, nan}, Bad{key, -1, 0.1f}, Bad{key, 1 << 24, 0.1f},
                  Bad{nullptr, 0, 0.1f}, Bad{nullptr, 0, 0.0f}}) {
    std::vector<float> out(B * T * H, 42.0f), lse(B * nh * T, 42.0f),
        dqkv(qkv.size(), 42.0f);
    EXPECT_EQ(bp_attention_dropout_fwd(qkv.data(), out.data(), lse.data(), B, T,
                                       H, nh, 1, bad.key, bad.site, bad.p),
              BP_ERR_INVALID_ARGUMENT)
        << "site=" << bad.site << " p=" << bad.p;
    EXPECT_EQ(bp_attention_dropout_bwd(qkv.data(), out.data(), dout.data(),
                                       lse.data(), dqkv.data(), B, T, H, nh, 1,
                                       bad.key, bad.site, bad.p),
              BP_ERR_INVALID_ARGUMENT)
        << "site=" << bad.site << " p=" << bad.p;
    // Checked before anything is written.
    for (const auto *v : {&out, &lse, &dqkv})
      for (float x : *v)
        EXPECT_EQ(x, 42.0f);
  }
  // Heads that do not divide H, as attention_fwd.
  std::vector<float> out(B * T * H), lse(4 * T);
  EXPECT_EQ(bp_attention_dropout_fwd(qkv.data(), out.data(), lse.data(), B, T,
                                     H, 3, 1, key, 0, 0.1f),
            BP_ERR_INVALID_ARGUMENT);
  // More than 2^40 probabilities (B nh T T = 2^42): refused before any
  // buffer is touched, so these small ones stand in.
  EXPECT_EQ(bp_attention_dropout_fwd(qkv.data(), out.data(), lse.data(),
                                     int64_t{1} << 12, int64_t{1} << 10,
                                     int64_t{1} << 10, int64_t{1} << 10, 1, key,
                                     0, 0.1f),
            BP_ERR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Grouped-query attention
//===----------------------------------------------------------------------===//

/// B, T, H, nh, nkv, blockQ, blockK, causal.
struct GqaCase {
  int64_t B, T, H, nh, nkv, blockQ, blockK;
  bool causal;
};
// Groups of 2 and 3 query heads per key/value head, one key/value head for
// all (multi-query), partial blocks, and nkv == nh (plain multi-head).
const GqaCase kGqaCases[] = {
    {2, 10, 8, 2, 1, 4, 3, true},  {2, 10, 8, 2, 1, 4, 3, false},
    {1, 9, 12, 6, 2, 2, 4, true},  {1, 9, 12, 6, 3, 5, 2, false},
    {1, 70, 8, 4, 2, 64, 64, true}, {1, 7, 8, 2, 2, 3, 3, true}};

TEST(GroupedQueryAttention, MatchesReference) {
  for (const GqaCase &c : kGqaCases) {
    const int64_t d = c.H / c.nh, width = (c.nh + 2 * c.nkv) * d;
    auto qkv = randomFloats(c.B * c.T * width, 15, -2.0f, 2.0f);
    std::vector<float> out(c.B * c.T * c.H), lse(c.B * c.nh * c.T);
    ASSERT_EQ(cpu::attentionForward(qkv.data(), out.data(), lse.data(), c.B,
                                    c.T, c.H, c.nh, c.nkv, c.causal, c.blockQ,
                                    c.blockK),
              BP_OK);
    std::vector<double> refLse;
    auto refOut = ref::groupedAttention(toDouble(qkv), c.B, c.T, c.H, c.nh,
                                        c.nkv, c.causal, &refLse);
    EXPECT_TRUE(allClose(out, refOut, kFwdRtol)) << "nh=" << c.nh
                                                 << " nkv=" << c.nkv;
    EXPECT_TRUE(allClose(lse, refLse, kFwdRtol));
  }
}

TEST(GroupedQueryAttention, FullGroupsEqualMultiHeadAttention) {
  // nkv == nh is bp_attention_fwd exactly (same layout, same kernel).
  const int64_t B = 2, T = 13, H = 8, nh = 2;
  auto qkv = randomFloats(B * T * 3 * H, 16, -2.0f, 2.0f);
  std::vector<float> a(B * T * H), b(B * T * H), lseA(B * nh * T),
      lseB(B * nh * T);
  ASSERT_EQ(bp_attention_fwd(qkv.data(), a.data(), lseA.data(), B, T, H, nh, 1),
            BP_OK);
  ASSERT_EQ(bp_attention_gqa_fwd(qkv.data(), b.data(), lseB.data(), B, T, H,
                                 nh, nh, 1),
            BP_OK);
  EXPECT_EQ(a, b);
  EXPECT_EQ(lseA, lseB);
}

TEST(GroupedQueryAttention, SharedKeyValueHeadGivesEqualOutputsForEqualQueries) {
  // Two query heads with identical q reading the same key/value head must
  // produce identical outputs: the grouping maps both to that head.
  const int64_t B = 1, T = 5, H = 8, nh = 2, nkv = 1, d = 4;
  const int64_t width = (nh + 2 * nkv) * d;
  auto qkv = randomFloats(B * T * width, 17, -1.0f, 1.0f);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < d; ++c)
      qkv[t * width + d + c] = qkv[t * width + c];
  std::vector<float> out(B * T * H), lse(B * nh * T);
  ASSERT_EQ(bp_attention_gqa_fwd(qkv.data(), out.data(), lse.data(), B, T, H,
                                 nh, nkv, 1),
            BP_OK);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < d; ++c)
      EXPECT_EQ(out[t * H + c], out[t * H + d + c]);
}

TEST(GroupedQueryAttention, RejectsKvHeadsThatDoNotDivideHeads) {
  std::vector<float> qkv(64), out(16), lse(8);
  EXPECT_EQ(bp_attention_gqa_fwd(qkv.data(), out.data(), lse.data(), 1, 1, 12,
                                 3, 2, 1),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_attention_gqa_bwd(qkv.data(), out.data(), out.data(),
                                 lse.data(), qkv.data(), 1, 1, 12, 3, 2, 1),
            BP_ERR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// Rotary position embedding
//===----------------------------------------------------------------------===//

TEST(RotaryFwd, MatchesReference) {
  const int64_t B = 2, T = 7, H = 8, nh = 2, nkv = 1, d = 4;
  const int64_t width = (nh + 2 * nkv) * d;
  auto qkv = randomFloats(B * T * width, 18, -2.0f, 2.0f);
  for (float base : {10000.0f, 500000.0f, 3.0f}) {
    std::vector<float> out(qkv.size());
    ASSERT_EQ(
        bp_rotary_fwd(qkv.data(), out.data(), B, T, H, nh, nkv, base),
        BP_OK);
    EXPECT_TRUE(allClose(
        out, ref::rotary(toDouble(qkv), B, T, H, nh, nkv, double(base)),
        kFwdRtol))
        << "base=" << base;
  }
}

TEST(RotaryFwd, PositionZeroAndValuesPassThroughAndNormsArePreserved) {
  const int64_t B = 1, T = 5, H = 12, nh = 2, nkv = 2, d = 6;
  const int64_t width = (nh + 2 * nkv) * d;
  auto qkv = randomFloats(B * T * width, 19, -2.0f, 2.0f);
  std::vector<float> out(qkv.size());
  ASSERT_EQ(bp_rotary_fwd(qkv.data(), out.data(), B, T, H, nh, nkv, 10000.0f),
            BP_OK);
  // Angle 0 at t = 0: the first row is unchanged.
  for (int64_t c = 0; c < width; ++c)
    EXPECT_EQ(out[c], qkv[c]);
  for (int64_t t = 0; t < T; ++t) {
    // v heads are copied.
    for (int64_t c = (nh + nkv) * d; c < width; ++c)
      EXPECT_EQ(out[t * width + c], qkv[t * width + c]);
    // A rotation keeps each pair's length.
    for (int64_t h = 0; h < nh + nkv; ++h)
      for (int64_t i = 0; i < d / 2; ++i) {
        auto norm = [&](const std::vector<float> &v) {
          float lo = v[t * width + h * d + i], hi = v[t * width + h * d + i + d / 2];
          return lo * lo + hi * hi;
        };
        EXPECT_NEAR(norm(out), norm(qkv), 1e-5f * (1.0f + norm(qkv)));
      }
  }
}

TEST(RotaryFwd, InPlaceAndBackwardUndoesForward) {
  const int64_t B = 2, T = 6, H = 8, nh = 4, nkv = 2;
  const int64_t width = (nh + 2 * nkv) * (H / nh);
  auto qkv = randomFloats(B * T * width, 20, -2.0f, 2.0f);
  std::vector<float> copy(qkv), rotated(qkv.size());
  ASSERT_EQ(bp_rotary_fwd(qkv.data(), rotated.data(), B, T, H, nh, nkv, 100.0f),
            BP_OK);
  ASSERT_EQ(bp_rotary_fwd(copy.data(), copy.data(), B, T, H, nh, nkv, 100.0f),
            BP_OK);
  EXPECT_EQ(copy, rotated);
  ASSERT_EQ(bp_rotary_bwd(copy.data(), copy.data(), B, T, H, nh, nkv, 100.0f),
            BP_OK);
  EXPECT_TRUE(allClose(copy, toDouble(qkv), 1e-5));
}

TEST(RotaryFwd, RejectsOddHeadDimensionsAndBadBases) {
  std::vector<float> qkv(3 * 6), out(3 * 6);
  // d = 3: odd.
  EXPECT_EQ(bp_rotary_fwd(qkv.data(), out.data(), 1, 1, 6, 2, 2, 10000.0f),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_rotary_fwd(qkv.data(), out.data(), 1, 1, 4, 2, 2, 0.0f),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_rotary_bwd(qkv.data(), out.data(), 1, 1, 4, 2, 3, 10000.0f),
            BP_ERR_INVALID_ARGUMENT);
}

//===----------------------------------------------------------------------===//
// RMS norm, SwiGLU, embedding without positions
//===----------------------------------------------------------------------===//

TEST(RmsNormFwd, MatchesReferenceIncludingSavedStatistics) {
  const int64_t N = 5, H = 12;
  const float eps = 1e-6f;
  auto x = randomFloats(N * H, 21, -3.0f, 3.0f);
  auto gamma = randomFloats(H, 22, 0.5f, 1.5f);
  std::vector<float> y(N * H), rstd(N);
  ASSERT_EQ(bp_rms_norm_fwd(x.data(), gamma.data(), y.data(), rstd.data(), N, H,
                            eps),
            BP_OK);
  std::vector<double> refRstd;
  auto refY =
      ref::rmsNorm(toDouble(x), toDouble(gamma), N, H, double(eps), &refRstd);
  EXPECT_TRUE(allClose(y, refY, kFwdRtol));
  EXPECT_TRUE(allClose(rstd, refRstd, kFwdRtol));
}

TEST(SwiGluFwd, MatchesReferenceAndKnownValues) {
  auto gate = randomFloats(101, 23, -8.0f, 8.0f), up = randomFloats(101, 24);
  gate.push_back(0.0f);
  up.push_back(5.0f);
  gate.push_back(-100.0f); // exp(100) overflows to inf: sigmoid 0, no NaN.
  up.push_back(1.0f);
  std::vector<float> y(gate.size());
  ASSERT_EQ(bp_swiglu_fwd(gate.data(), up.data(), y.data(), gate.size()),
            BP_OK);
  EXPECT_TRUE(
      allClose(y, ref::swiglu(toDouble(gate), toDouble(up)), kFwdRtol));
  EXPECT_EQ(y[101], 0.0f);
  EXPECT_EQ(y[102], -0.0f);
}

TEST(EmbeddingFwd, WithoutPositionTableIsTheTokenRows) {
  const int64_t B = 2, T = 3, H = 4, V = 5;
  std::vector<int32_t> tokens = {4, 0, 4, 1, 2, 3};
  auto wte = randomFloats(V * H, 25);
  std::vector<float> out(B * T * H);
  ASSERT_EQ(bp_embedding_fwd(tokens.data(), wte.data(), nullptr, out.data(), B,
                             T, H, V),
            BP_OK);
  EXPECT_TRUE(allClose(out,
                       ref::embedding(tokens, toDouble(wte),
                                      std::vector<double>(), B, T, H),
                       0.0));
}

//===----------------------------------------------------------------------===//
// GELU and add
//===----------------------------------------------------------------------===//

TEST(GeluFwd, MatchesReferenceAndKnownValues) {
  auto x = randomFloats(101, 14, -6.0f, 6.0f);
  x.push_back(0.0f);
  x.push_back(1.0f);
  std::vector<float> y(x.size());
  ASSERT_EQ(bp_gelu_fwd(x.data(), y.data(), x.size()), BP_OK);
  EXPECT_TRUE(allClose(y, ref::gelu(toDouble(x)), kFwdRtol));
  EXPECT_EQ(y[101], 0.0f);
  // 0.5 (1 + tanh(sqrt(2/pi) 1.044715)), the tanh form's value at 1 (the
  // erf form's 0.8413447 differs in the fourth digit).
  EXPECT_NEAR(y[102], 0.8411920, 1e-6);
}

TEST(GeluErfFwd, MatchesReferenceAndKnownValues) {
  auto x = randomFloats(101, 17, -6.0f, 6.0f);
  x.push_back(0.0f);
  x.push_back(1.0f);
  x.push_back(-1.0f);
  std::vector<float> y(x.size());
  ASSERT_EQ(bp_gelu_erf_fwd(x.data(), y.data(), x.size()), BP_OK);
  EXPECT_TRUE(allClose(y, ref::geluErf(toDouble(x)), kFwdRtol));
  EXPECT_EQ(y[101], 0.0f);
  // Phi(1) = 0.8413447 and -Phi(-1) = -0.1586553: the erf form, which the
  // tanh form (0.8411920 at 1) approximates.
  EXPECT_NEAR(y[102], 0.8413447, 1e-6);
  EXPECT_NEAR(y[103], -0.1586553, 1e-6);
  // In place, as the lowering may call it.
  std::vector<float> inPlace = x;
  ASSERT_EQ(bp_gelu_erf_fwd(inPlace.data(), inPlace.data(), x.size()), BP_OK);
  EXPECT_EQ(inPlace, y);
  EXPECT_EQ(bp_gelu_erf_fwd(x.data(), nullptr, 4), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_gelu_erf_bwd(x.data(), x.data(), y.data(), 0),
            BP_ERR_INVALID_ARGUMENT);
}

TEST(AddFwd, AddsAndMayAliasAnOperand) {
  auto a = randomFloats(17, 15), b = randomFloats(17, 16);
  auto expected = ref::add(toDouble(a), toDouble(b));
  std::vector<float> out(17);
  ASSERT_EQ(bp_add_fwd(a.data(), b.data(), out.data(), 17), BP_OK);
  EXPECT_TRUE(allClose(out, expected, kFwdRtol));
  ASSERT_EQ(bp_add_fwd(a.data(), b.data(), a.data(), 17), BP_OK);
  EXPECT_TRUE(allClose(a, expected, kFwdRtol));
}

//===----------------------------------------------------------------------===//
// Cross-entropy
//===----------------------------------------------------------------------===//

TEST(CrossEntropyFwd, MatchesReferenceWithIgnoredRows) {
  const int64_t N = 6, V = 11;
  auto logits = randomFloats(N * V, 17, -3.0f, 3.0f);
  std::vector<int32_t> labels = {4, BP_IGNORE_INDEX, 0, 10, BP_IGNORE_INDEX, 7};
  float loss = -1.0f;
  std::vector<float> rowMax(N), logSum(N);
  ASSERT_EQ(bp_cross_entropy_fwd(logits.data(), labels.data(), &loss,
                                 rowMax.data(), logSum.data(), N, V,
                                 BP_IGNORE_INDEX),
            BP_OK);
  double expected =
      ref::crossEntropy(toDouble(logits), labels, N, V, BP_IGNORE_INDEX);
  EXPECT_NEAR(loss, expected, kFwdRtol * std::fabs(expected));
  // The rows' normalisers for the backward: each labelled row's max, and
  // log(sum exp(logit - max)); 0 for an ignored row.
  for (int64_t i = 0; i < N; ++i) {
    if (labels[i] == BP_IGNORE_INDEX) {
      EXPECT_EQ(rowMax[i], 0.0f);
      EXPECT_EQ(logSum[i], 0.0f);
      continue;
    }
    const float *row = logits.data() + i * V;
    const float max = *std::max_element(row, row + V);
    double sum = 0;
    for (int64_t j = 0; j < V; ++j)
      sum += std::exp(static_cast<double>(row[j]) - max);
    EXPECT_EQ(rowMax[i], max) << "row " << i;
    EXPECT_NEAR(logSum[i], std::log(sum), 1e-6) << "row " << i;
  }
  // The mean is over the 4 labelled rows, not all 6: a mean over N would be
  // 4/6 of this.
  double sumOverLabelled = expected * 4;
  EXPECT_GT(std::fabs(loss - sumOverLabelled / N), 0.1 * std::fabs(loss));
}

TEST(CrossEntropyFwd, UniformLogitsGiveLogV) {
  const int64_t N = 3, V = 50;
  std::vector<float> logits(N * V, 0.25f);
  std::vector<int32_t> labels = {0, 17, 49};
  float loss;
  std::vector<float> rowMax(N), logSum(N);
  ASSERT_EQ(bp_cross_entropy_fwd(logits.data(), labels.data(), &loss,
                                 rowMax.data(), logSum.data(), N, V,
                                 BP_IGNORE_INDEX),
            BP_OK);
  EXPECT_NEAR(loss, std::log(50.0), 1e-6);
}

TEST(CrossEntropyFwd, StableForLargeLogits) {
  // exp(1e4) overflows float; the log-sum-exp must subtract the max.
  const int64_t N = 2, V = 5;
  auto logits = randomFloats(N * V, 18, -2.0f, 2.0f);
  for (float &x : logits)
    x += 1e4f;
  std::vector<int32_t> labels = {1, 3};
  float loss;
  std::vector<float> rowMax(N), logSum(N);
  ASSERT_EQ(bp_cross_entropy_fwd(logits.data(), labels.data(), &loss,
                                 rowMax.data(), logSum.data(), N, V,
                                 BP_IGNORE_INDEX),
            BP_OK);
  ASSERT_TRUE(std::isfinite(loss));
  double expected =
      ref::crossEntropy(toDouble(logits), labels, N, V, BP_IGNORE_INDEX);
  // The logits themselves are only accurate to ~1e-3 at 1e4 (float spacing),
  // but the reference sees the same rounded values, so only the kernel's
  // arithmetic differs.
  EXPECT_NEAR(loss, expected, 1e-4);
}

TEST(CrossEntropyFwd, AllIgnoredGivesZero) {
  const int64_t N = 3, V = 4;
  auto logits = randomFloats(N * V, 19);
  std::vector<int32_t> labels(N, BP_IGNORE_INDEX);
  float loss = 123.0f;
  std::vector<float> rowMax(N), logSum(N);
  ASSERT_EQ(bp_cross_entropy_fwd(logits.data(), labels.data(), &loss,
                                 rowMax.data(), logSum.data(), N, V,
                                 BP_IGNORE_INDEX),
            BP_OK);
  EXPECT_EQ(loss, 0.0f);
}

TEST(CrossEntropyFwd, RejectsOutOfRangeLabels) {
  const int64_t N = 2, V = 4;
  auto logits = randomFloats(N * V, 20);
  float loss;
  std::vector<float> rowMax(N), logSum(N);
  for (int32_t bad : {-1, 4, -99}) {
    std::vector<int32_t> labels = {0, bad};
    EXPECT_EQ(bp_cross_entropy_fwd(logits.data(), labels.data(), &loss,
                                   rowMax.data(), logSum.data(), N, V,
                                   BP_IGNORE_INDEX),
              BP_ERR_INVALID_ARGUMENT)
        << "label " << bad;
  }
}

//===----------------------------------------------------------------------===//
// Argument checks common to all kernels
//===----------------------------------------------------------------------===//

TEST(Arguments, NullPointersAndNonPositiveSizesAreRejected) {
  std::vector<float> a(4, 1.0f), b(4, 1.0f);
  EXPECT_EQ(bp_add_fwd(nullptr, b.data(), a.data(), 4),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_add_fwd(a.data(), b.data(), a.data(), 0),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_gelu_fwd(a.data(), nullptr, 4), BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_linear_fwd(a.data(), b.data(), nullptr, a.data(), 2, -2, 1),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_linear_bwd_weight(a.data(), b.data(), nullptr, nullptr, 1, 2, 2),
            BP_ERR_INVALID_ARGUMENT);
  float mean, rstd;
  EXPECT_EQ(bp_layer_norm_fwd(a.data(), b.data(), b.data(), a.data(), &mean,
                              &rstd, 1, 4, -1.0f),
            BP_ERR_INVALID_ARGUMENT);
}

} // namespace

extern "C" int bpCHeaderAddOnePlusTwo(float *out);

TEST(CAbi, CallableFromC) {
  float out = 0.0f;
  EXPECT_EQ(bpCHeaderAddOnePlusTwo(&out), 0);
  EXPECT_EQ(out, 3.0f);
}
