//===- ModelGradCheckTest.cpp - A tiny transformer via the ABI -*- C++ -*-===//
//
// One pre-LN transformer layer with a tied output projection, as docs/models.md's
// GPT (causal, next-token labels) and BERT (bidirectional, most labels
// ignored), run forward and backward through the C ABI only, in the order
// generated code will call it. Every parameter gradient is checked against
// central finite differences of the same model composed from Reference.h in
// double.
//
// What this adds over the per-kernel checks: the calling convention composes.
// Residual fan-outs are summed with bp_add_fwd, the tied token embedding
// collects its gradient from both the output projection and the embedding
// (both accumulate), and saved tensors (layer-norm statistics, attention
// log-sum-exp) are consumed as documented.
//
//===----------------------------------------------------------------------===//

#include "Reference.h"
#include "TestUtil.h"
#include "bitpipe/runtime.h"

#include <gtest/gtest.h>
#include <map>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

/// d loss / d loss, as runtime.h's bp_cross_entropy_bwd takes it: a pointer
/// to one float in the tensors' memory.
const float kUnitLossGrad = 1.0f;

constexpr int64_t B = 2, T = 5, H = 8, nh = 2, V = 11, F = 4 * H;
constexpr int64_t N = B * T;
constexpr float kEps = 1e-5f;

/// Parameter names and sizes, in a fixed order.
const std::pair<const char *, int64_t> kParams[] = {
    {"wte", V *H},       {"wpe", T *H},    {"ln1.g", H},     {"ln1.b", H},
    {"qkv.w", 3 * H *H}, {"qkv.b", 3 * H}, {"proj.w", H *H}, {"proj.b", H},
    {"ln2.g", H},        {"ln2.b", H},     {"fc.w", F *H},   {"fc.b", F},
    {"out.w", H *F},     {"out.b", H},     {"lnf.g", H},     {"lnf.b", H}};

template <typename S> using Params = std::map<std::string, std::vector<S>>;

Params<float> initParams() {
  Params<float> p;
  uint32_t seed = 100;
  for (auto [name, size] : kParams) {
    std::string n(name);
    if (n.size() > 2 && n.compare(n.size() - 2, 2, ".g") == 0)
      p[n] = randomFloats(size, seed++, 0.7f, 1.3f); // Gains near 1.
    else
      p[n] = randomFloats(size, seed++, -0.4f, 0.4f);
  }
  return p;
}

/// The model's loss, composed from the reference ops.
double referenceLoss(const Params<double> &p,
                     const std::vector<int32_t> &tokens,
                     const std::vector<int32_t> &labels, bool causal) {
  using namespace ref;
  const double eps = kEps;
  auto x0 = embedding(tokens, p.at("wte"), p.at("wpe"), B, T, H);
  auto h1 = layerNorm(x0, p.at("ln1.g"), p.at("ln1.b"), N, H, eps);
  auto qkv = linear(h1, p.at("qkv.w"), p.at("qkv.b"), N, H, 3 * H);
  auto att = attention(qkv, B, T, H, nh, causal);
  auto x1 = add(x0, linear(att, p.at("proj.w"), p.at("proj.b"), N, H, H));
  auto h2 = layerNorm(x1, p.at("ln2.g"), p.at("ln2.b"), N, H, eps);
  auto f = gelu(linear(h2, p.at("fc.w"), p.at("fc.b"), N, H, F));
  auto x2 = add(x1, linear(f, p.at("out.w"), p.at("out.b"), N, F, H));
  auto hf = layerNorm(x2, p.at("lnf.g"), p.at("lnf.b"), N, H, eps);
  auto logits = linear(hf, p.at("wte"), {}, N, H, V); // Tied.
  return crossEntropy(logits, labels, N, V, BP_IGNORE_INDEX);
}

#define BP_CHECK(call) ASSERT_EQ((call), BP_OK) << #call

/// Forward and backward through the C ABI; fills \p grads (zeroed first,
/// as at the start of a step) and \p loss.
void runtimeStep(const Params<float> &p, const std::vector<int32_t> &tokens,
                 const std::vector<int32_t> &labels, bool causal,
                 Params<float> &grads, float &loss) {
  for (auto [name, size] : kParams)
    grads[name].assign(size, 0.0f);
  auto P = [&](const char *n) { return p.at(n).data(); };
  auto G = [&](const char *n) { return grads[n].data(); };
  const int32_t c = causal ? 1 : 0;

  // Forward, keeping what the backward needs.
  std::vector<float> x0(N * H), h1(N * H), m1(N), r1(N), qkv(N * 3 * H),
      att(N * H), lse(B * nh * T), a(N * H), x1(N * H), h2(N * H), m2(N), r2(N),
      f(N * F), g(N * F), o(N * H), x2(N * H), hf(N * H), mf(N), rf(N),
      logits(N * V);
  BP_CHECK(bp_embedding_fwd(tokens.data(), P("wte"), P("wpe"), x0.data(), B, T,
                            H, V));
  BP_CHECK(bp_layer_norm_fwd(x0.data(), P("ln1.g"), P("ln1.b"), h1.data(),
                             m1.data(), r1.data(), N, H, kEps));
  BP_CHECK(bp_linear_fwd(h1.data(), P("qkv.w"), P("qkv.b"), qkv.data(), N, H,
                         3 * H));
  BP_CHECK(
      bp_attention_fwd(qkv.data(), att.data(), lse.data(), B, T, H, nh, c));
  BP_CHECK(
      bp_linear_fwd(att.data(), P("proj.w"), P("proj.b"), a.data(), N, H, H));
  BP_CHECK(bp_add_fwd(x0.data(), a.data(), x1.data(), N * H));
  BP_CHECK(bp_layer_norm_fwd(x1.data(), P("ln2.g"), P("ln2.b"), h2.data(),
                             m2.data(), r2.data(), N, H, kEps));
  BP_CHECK(bp_linear_fwd(h2.data(), P("fc.w"), P("fc.b"), f.data(), N, H, F));
  BP_CHECK(bp_gelu_fwd(f.data(), g.data(), N * F));
  BP_CHECK(bp_linear_fwd(g.data(), P("out.w"), P("out.b"), o.data(), N, F, H));
  BP_CHECK(bp_add_fwd(x1.data(), o.data(), x2.data(), N * H));
  BP_CHECK(bp_layer_norm_fwd(x2.data(), P("lnf.g"), P("lnf.b"), hf.data(),
                             mf.data(), rf.data(), N, H, kEps));
  BP_CHECK(bp_linear_fwd(hf.data(), P("wte"), nullptr, logits.data(), N, H, V));
  std::vector<float> rowMax(N), logSum(N);
  BP_CHECK(bp_cross_entropy_fwd(logits.data(), labels.data(), &loss,
                                rowMax.data(), logSum.data(), N, V,
                                BP_IGNORE_INDEX));

  // Backward. Buffers are reused where the schedule of uses allows.
  std::vector<float> dlogits(N * V), dhf(N * H), dx2(N * H), dg(N * F),
      df(N * F), dh2(N * H), dx1(N * H), datt(N * H), dqkv(N * 3 * H),
      dh1(N * H), dx0(N * H);
  BP_CHECK(bp_cross_entropy_bwd(logits.data(), labels.data(), &kUnitLossGrad,
                                rowMax.data(), logSum.data(), dlogits.data(), N,
                                V, BP_IGNORE_INDEX));
  BP_CHECK(bp_linear_bwd_input(dlogits.data(), P("wte"), dhf.data(), N, H, V));
  BP_CHECK(bp_linear_bwd_weight(dlogits.data(), hf.data(), G("wte"), nullptr, N,
                                H, V));
  BP_CHECK(bp_layer_norm_bwd(dhf.data(), x2.data(), P("lnf.g"), mf.data(),
                             rf.data(), dx2.data(), G("lnf.g"), G("lnf.b"), N,
                             H));
  // x2 = x1 + o: both operands receive dx2.
  BP_CHECK(bp_linear_bwd_input(dx2.data(), P("out.w"), dg.data(), N, F, H));
  BP_CHECK(bp_linear_bwd_weight(dx2.data(), g.data(), G("out.w"), G("out.b"), N,
                                F, H));
  BP_CHECK(bp_gelu_bwd(dg.data(), f.data(), df.data(), N * F));
  BP_CHECK(bp_linear_bwd_input(df.data(), P("fc.w"), dh2.data(), N, H, F));
  BP_CHECK(bp_linear_bwd_weight(df.data(), h2.data(), G("fc.w"), G("fc.b"), N,
                                H, F));
  BP_CHECK(bp_layer_norm_bwd(dh2.data(), x1.data(), P("ln2.g"), m2.data(),
                             r2.data(), dx1.data(), G("ln2.g"), G("ln2.b"), N,
                             H));
  // x1 fans out to ln2 and the residual: sum the two gradients.
  BP_CHECK(bp_add_fwd(dx1.data(), dx2.data(), dx1.data(), N * H));
  BP_CHECK(bp_linear_bwd_input(dx1.data(), P("proj.w"), datt.data(), N, H, H));
  BP_CHECK(bp_linear_bwd_weight(dx1.data(), att.data(), G("proj.w"),
                                G("proj.b"), N, H, H));
  BP_CHECK(bp_attention_bwd(qkv.data(), att.data(), datt.data(), lse.data(),
                            dqkv.data(), B, T, H, nh, c));
  BP_CHECK(
      bp_linear_bwd_input(dqkv.data(), P("qkv.w"), dh1.data(), N, H, 3 * H));
  BP_CHECK(bp_linear_bwd_weight(dqkv.data(), h1.data(), G("qkv.w"), G("qkv.b"),
                                N, H, 3 * H));
  BP_CHECK(bp_layer_norm_bwd(dh1.data(), x0.data(), P("ln1.g"), m1.data(),
                             r1.data(), dx0.data(), G("ln1.g"), G("ln1.b"), N,
                             H));
  BP_CHECK(bp_add_fwd(dx0.data(), dx1.data(), dx0.data(), N * H));
  // Adds onto the output projection's contribution to the tied wte.
  BP_CHECK(bp_embedding_bwd(tokens.data(), dx0.data(), G("wte"), G("wpe"), B, T,
                            H, V));
}

void checkModel(bool causal, const std::vector<int32_t> &labels) {
  auto tokens = randomInts(N, 200, 0, V - 1);
  Params<float> p = initParams();
  Params<double> pd;
  for (auto &[name, v] : p)
    pd[name] = toDouble(v);

  Params<float> grads;
  float loss = 0.0f;
  runtimeStep(p, tokens, labels, causal, grads, loss);
  if (::testing::Test::HasFatalFailure())
    return;

  const double refLoss = referenceLoss(pd, tokens, labels, causal);
  EXPECT_NEAR(loss, refLoss, 1e-5 * refLoss);
  for (auto [name, size] : kParams) {
    auto fd = finiteDifferences(
        pd[name], [&] { return referenceLoss(pd, tokens, labels, causal); });
    EXPECT_TRUE(gradMatches(grads[name], fd)) << "parameter " << name;
  }
}

TEST(ModelGradCheck, GptLayerCausalNextToken) {
  // Every position labelled.
  checkModel(/*causal=*/true, randomInts(N, 201, 0, V - 1));
}

TEST(ModelGradCheck, BertLayerBidirectionalMaskedLm) {
  // Only a few positions labelled, as masked-LM; the rest ignored.
  std::vector<int32_t> labels(N, BP_IGNORE_INDEX);
  labels[1] = 4;
  labels[6] = 0;
  labels[8] = 10;
  checkModel(/*causal=*/false, labels);
}

} // namespace
