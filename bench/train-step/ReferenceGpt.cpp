//===- ReferenceGpt.cpp - A hand-written GPT trainer on the kernels -------===//

#include "ReferenceGpt.h"

#include "bitpipe/runtime.h"
#include "train/Init.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using namespace bitpipe::runtime;

namespace bitpipe::bench {

namespace {

/// d loss / d loss, as runtime.h's bp_cross_entropy_bwd takes it: a pointer
/// to one float in the tensors' memory.
const float kUnitLossGrad = 1.0f;
/// A kernel error here is a bug of this benchmark: stop loudly.
void check(bp_status_t status, const char *what) {
  if (status != BP_OK) {
    std::fprintf(stderr, "reference: %s failed (%d)\n", what, status);
    std::abort();
  }
}
} // namespace

struct ReferenceGpt::Layer {
  Tensor *ln1G, *ln1B, *qkvW, *qkvB, *projW, *projB, *ln2G, *ln2B, *fcW, *fcB,
      *mlpW, *mlpB;
  // Saved activations: the layer's input x, and what the backward reads.
  std::vector<float> x, y1, mean1, rstd1, qkv, att, lse, x1, y2, mean2, rstd2,
      fc, gelu;
};

ReferenceGpt::Tensor &ReferenceGpt::param(const std::string &name,
                                          int64_t count, bool decay) {
  auto t = std::make_unique<Tensor>();
  t->name = name;
  t->value.assign(count, 0.0f);
  t->grad.assign(count, 0.0f);
  t->gradSum.assign(count, 0.0);
  t->m.assign(count, 0.0f);
  t->v.assign(count, 0.0f);
  t->decay = decay;
  params_.push_back(std::move(t));
  return *params_.back();
}

ReferenceGpt::ReferenceGpt(const GptShape &s, uint64_t seed,
                           const AdamWConfig &adam)
    : s_(s), adam_(adam) {
  const int64_t H = s.hidden, V = s.vocab, F = 4 * H;
  const int64_t N = s.microbatchSize * s.seqLen;
  const double std = 0.02, residualStd = 0.02 / std::sqrt(2.0 * s.layers);
  auto normal = [&](Tensor &t, double sd) {
    initNormal(t.value.data(), t.value.size(), sd, seed, t.name);
    return &t;
  };
  auto ones = [&](Tensor &t) {
    initOnes(t.value.data(), t.value.size());
    return &t;
  };
  // Parameter names, shapes and initialisation as bitpipe-import writes them.
  wte_ = normal(param("embed.tokens", V * H, true), std);
  wpe_ = normal(param("embed.positions", s.maxPositions * H, true), std);
  for (int64_t l = 0; l < s.layers; ++l) {
    std::string p = "layers." + std::to_string(l) + ".";
    auto layer = std::make_unique<Layer>();
    layer->ln1G = ones(param(p + "ln1.weight", H, false));
    layer->ln1B = &param(p + "ln1.bias", H, false);
    layer->qkvW = normal(param(p + "attn.qkv.weight", 3 * H * H, true), std);
    layer->qkvB = &param(p + "attn.qkv.bias", 3 * H, false);
    layer->projW =
        normal(param(p + "attn.proj.weight", H * H, true), residualStd);
    layer->projB = &param(p + "attn.proj.bias", H, false);
    layer->ln2G = ones(param(p + "ln2.weight", H, false));
    layer->ln2B = &param(p + "ln2.bias", H, false);
    layer->fcW = normal(param(p + "mlp.fc.weight", F * H, true), std);
    layer->fcB = &param(p + "mlp.fc.bias", F, false);
    layer->mlpW = normal(param(p + "mlp.proj.weight", H * F, true), residualStd);
    layer->mlpB = &param(p + "mlp.proj.bias", H, false);
    for (auto *buf : {&layer->x, &layer->y1, &layer->att, &layer->x1,
                      &layer->y2})
      buf->assign(N * H, 0.0f);
    for (auto *buf :
         {&layer->mean1, &layer->rstd1, &layer->mean2, &layer->rstd2})
      buf->assign(N, 0.0f);
    layer->qkv.assign(N * 3 * H, 0.0f);
    layer->lse.assign(s.microbatchSize * s.heads * s.seqLen, 0.0f);
    layer->fc.assign(N * F, 0.0f);
    layer->gelu.assign(N * F, 0.0f);
    layers_.push_back(std::move(layer));
  }
  lnfG_ = ones(param("final_ln.weight", H, false));
  lnfB_ = &param("final_ln.bias", H, false);

  for (auto *buf : {&x0_, &xf_, &yf_, &dx_, &dtmp_})
    buf->assign(N * H, 0.0f);
  dy_.assign(N * F, 0.0f); // large enough for every activation gradient
  meanf_.assign(N, 0.0f);
  rstdf_.assign(N, 0.0f);
  rowMax_.assign(N, 0.0f);
  logSum_.assign(N, 0.0f);
  logits_.assign(N * V, 0.0f);
  tokens_.assign(N, 0);
  targets_.assign(N, 0);
}

ReferenceGpt::~ReferenceGpt() = default;

int64_t ReferenceGpt::numParameters() const {
  int64_t n = 0;
  for (const auto &p : params_)
    n += p->value.size();
  return n;
}

void ReferenceGpt::forwardBackward(const int32_t *tokens,
                                   const int32_t *targets, float *loss) {
  const int64_t B = s_.microbatchSize, T = s_.seqLen, H = s_.hidden,
                V = s_.vocab, F = 4 * H, N = B * T, nh = s_.heads;
  const float eps = 1e-5f;
  float *dy = dy_.data(), *dx = dx_.data(), *dtmp = dtmp_.data();

  // Forward.
  check(bp_embedding_fwd(tokens, wte_->value.data(), wpe_->value.data(),
                         x0_.data(), B, T, H, V),
        "embedding");
  const float *x = x0_.data();
  for (auto &l : layers_) {
    std::copy(x, x + N * H, l->x.begin());
    check(bp_layer_norm_fwd(l->x.data(), l->ln1G->value.data(),
                            l->ln1B->value.data(), l->y1.data(),
                            l->mean1.data(), l->rstd1.data(), N, H, eps),
          "ln1");
    check(bp_linear_fwd(l->y1.data(), l->qkvW->value.data(),
                        l->qkvB->value.data(), l->qkv.data(), N, H, 3 * H),
          "qkv");
    check(bp_attention_fwd(l->qkv.data(), l->att.data(), l->lse.data(), B, T,
                           H, nh, 1),
          "attention");
    check(bp_linear_fwd(l->att.data(), l->projW->value.data(),
                        l->projB->value.data(), l->x1.data(), N, H, H),
          "proj");
    check(bp_add_fwd(l->x.data(), l->x1.data(), l->x1.data(), N * H), "add");
    check(bp_layer_norm_fwd(l->x1.data(), l->ln2G->value.data(),
                            l->ln2B->value.data(), l->y2.data(),
                            l->mean2.data(), l->rstd2.data(), N, H, eps),
          "ln2");
    check(bp_linear_fwd(l->y2.data(), l->fcW->value.data(),
                        l->fcB->value.data(), l->fc.data(), N, H, F),
          "fc");
    check(bp_gelu_fwd(l->fc.data(), l->gelu.data(), N * F), "gelu");
    check(bp_linear_fwd(l->gelu.data(), l->mlpW->value.data(),
                        l->mlpB->value.data(), xf_.data(), N, F, H),
          "mlp");
    check(bp_add_fwd(l->x1.data(), xf_.data(), xf_.data(), N * H), "add");
    x = xf_.data();
  }
  // xf_ holds the last layer's output; keep it for the final norm.
  check(bp_layer_norm_fwd(xf_.data(), lnfG_->value.data(),
                          lnfB_->value.data(), yf_.data(), meanf_.data(),
                          rstdf_.data(), N, H, eps),
        "final_ln");
  check(bp_linear_fwd(yf_.data(), wte_->value.data(), nullptr,
                      logits_.data(), N, H, V),
        "head");
  check(bp_cross_entropy_fwd(logits_.data(), targets, loss, rowMax_.data(),
                             logSum_.data(), N, V, BP_IGNORE_INDEX),
        "cross_entropy");

  // Backward (dloss = 1: the optimizer divides by the micro-batch count).
  check(bp_cross_entropy_bwd(logits_.data(), targets, &kUnitLossGrad,
                             rowMax_.data(), logSum_.data(), logits_.data(), N,
                             V, BP_IGNORE_INDEX),
        "cross_entropy_grad");
  check(bp_linear_bwd_input(logits_.data(), wte_->value.data(), dy, N, H, V),
        "head_grad");
  check(bp_linear_bwd_weight(logits_.data(), yf_.data(), wte_->grad.data(),
                             nullptr, N, H, V),
        "head_wgrad");
  check(bp_layer_norm_bwd(dy, xf_.data(), lnfG_->value.data(), meanf_.data(),
                          rstdf_.data(), dx, lnfG_->grad.data(),
                          lnfB_->grad.data(), N, H),
        "final_ln_grad");
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) {
    Layer &l = **it;
    // x_out = x1 + mlp(...): dx flows to x1 and into the MLP.
    check(bp_linear_bwd_input(dx, l.mlpW->value.data(), dy, N, F, H),
          "mlp_grad");
    check(bp_linear_bwd_weight(dx, l.gelu.data(), l.mlpW->grad.data(),
                               l.mlpB->grad.data(), N, F, H),
          "mlp_wgrad");
    check(bp_gelu_bwd(dy, l.fc.data(), dy, N * F), "gelu_grad");
    check(bp_linear_bwd_weight(dy, l.y2.data(), l.fcW->grad.data(),
                               l.fcB->grad.data(), N, H, F),
          "fc_wgrad");
    check(bp_linear_bwd_input(dy, l.fcW->value.data(), dtmp, N, H, F),
          "fc_grad");
    check(bp_layer_norm_bwd(dtmp, l.x1.data(), l.ln2G->value.data(),
                            l.mean2.data(), l.rstd2.data(), dy,
                            l.ln2G->grad.data(), l.ln2B->grad.data(), N, H),
          "ln2_grad");
    check(bp_add_fwd(dx, dy, dx, N * H), "residual_grad");
    // x1 = x + proj(attention(...)).
    check(bp_linear_bwd_input(dx, l.projW->value.data(), dtmp, N, H, H),
          "proj_grad");
    check(bp_linear_bwd_weight(dx, l.att.data(), l.projW->grad.data(),
                               l.projB->grad.data(), N, H, H),
          "proj_wgrad");
    check(bp_attention_bwd(l.qkv.data(), l.att.data(), dtmp, l.lse.data(), dy,
                           B, T, H, nh, 1),
          "attention_grad");
    check(bp_linear_bwd_weight(dy, l.y1.data(), l.qkvW->grad.data(),
                               l.qkvB->grad.data(), N, H, 3 * H),
          "qkv_wgrad");
    check(bp_linear_bwd_input(dy, l.qkvW->value.data(), dtmp, N, H, 3 * H),
          "qkv_grad");
    check(bp_layer_norm_bwd(dtmp, l.x.data(), l.ln1G->value.data(),
                            l.mean1.data(), l.rstd1.data(), dy,
                            l.ln1G->grad.data(), l.ln1B->grad.data(), N, H),
          "ln1_grad");
    check(bp_add_fwd(dx, dy, dx, N * H), "residual_grad");
  }
  check(bp_embedding_bwd(tokens, dx, wte_->grad.data(), wpe_->grad.data(), B,
                         T, H, V),
        "embedding_grad");
}

Expected<double> ReferenceGpt::step(const BatchSampler &sampler,
                                    int64_t stepIndex, int microbatches) {
  double lossSum = 0;
  for (int m = 0; m < microbatches; ++m) {
    uint64_t global = globalMicroBatchIndex(stepIndex, 0, 1, m, microbatches);
    Status s = sampler.gptBatch(global, tokens_.data(), targets_.data());
    if (!s.isOk())
      return s;
    float loss = 0;
    forwardBackward(tokens_.data(), targets_.data(), &loss);
    lossSum += loss;
    // Accumulate in float64, as the executables do (AdamWParam).
    for (auto &p : params_) {
      for (size_t i = 0; i < p->grad.size(); ++i)
        p->gradSum[i] += p->grad[i];
      std::fill(p->grad.begin(), p->grad.end(), 0.0f);
    }
  }
  std::vector<AdamWParam> adam;
  for (auto &p : params_)
    adam.push_back({p->name, p->value.data(), p->gradSum.data(), p->m.data(),
                    p->v.data(), int64_t(p->value.size()), p->decay});
  Status s = adam_.step(adam, microbatches);
  if (!s.isOk())
    return s;
  zeroGradients(adam);
  return lossSum / microbatches;
}

} // namespace bitpipe::bench
