//===- AdamWTest.cpp - AdamW against a float64 reference ------------------===//

#include "train/AdamW.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace bitpipe::runtime;

namespace {

/// PyTorch's AdamW, written out in double from the formulas (not from the
/// implementation under test): decoupled decay, bias correction, gradient
/// divided by the micro-batch count, clip_grad_norm_ semantics.
struct RefTensor {
  std::vector<double> p, m, v;
  bool decay;
};

void referenceStep(std::vector<RefTensor> &ts,
                   const std::vector<std::vector<double>> &grads, int micro,
                   const AdamWConfig &c, int t) {
  double sq = 0;
  for (const auto &g : grads)
    for (double x : g)
      sq += (x / micro) * (x / micro);
  double norm = std::sqrt(sq);
  double clip = (c.maxGradNorm > 0 && norm > c.maxGradNorm)
                    ? c.maxGradNorm / (norm + 1e-6)
                    : 1.0;
  for (size_t k = 0; k < ts.size(); ++k) {
    RefTensor &r = ts[k];
    for (size_t i = 0; i < r.p.size(); ++i) {
      double g = grads[k][i] / micro * clip;
      if (r.decay)
        r.p[i] *= 1 - c.lr * c.weightDecay;
      r.m[i] = c.beta1 * r.m[i] + (1 - c.beta1) * g;
      r.v[i] = c.beta2 * r.v[i] + (1 - c.beta2) * g * g;
      double mh = r.m[i] / (1 - std::pow(c.beta1, t));
      double vh = r.v[i] / (1 - std::pow(c.beta2, t));
      r.p[i] -= c.lr * mh / (std::sqrt(vh) + c.eps);
    }
  }
}

struct Fixture {
  std::vector<std::vector<float>> p, m, v;
  std::vector<std::vector<double>> g; // float64 accumulators, as the runtime
  std::vector<RefTensor> ref;
  std::vector<AdamWParam> params;

  explicit Fixture(const std::vector<std::pair<int, bool>> &sizes) {
    for (auto [n, decay] : sizes) {
      std::vector<float> pp(n);
      for (int i = 0; i < n; ++i)
        pp[i] = 0.1f * std::sin(1.0f + i + 7 * p.size());
      p.push_back(pp);
      g.emplace_back(n);
      m.emplace_back(n, 0.f);
      v.emplace_back(n, 0.f);
      RefTensor r;
      r.p.assign(pp.begin(), pp.end());
      r.m.assign(n, 0);
      r.v.assign(n, 0);
      r.decay = decay;
      ref.push_back(r);
    }
    for (size_t k = 0; k < sizes.size(); ++k)
      params.push_back({"t" + std::to_string(k), p[k].data(), g[k].data(),
                        m[k].data(), v[k].data(),
                        static_cast<int64_t>(p[k].size()), sizes[k].second});
  }
  /// Deterministic, step-dependent gradients in float and double.
  std::vector<std::vector<double>> setGrads(int step, double magnitude) {
    std::vector<std::vector<double>> out;
    for (size_t k = 0; k < g.size(); ++k) {
      std::vector<double> gd(g[k].size());
      for (size_t i = 0; i < g[k].size(); ++i) {
        // Values an fp32 kernel could produce, held in the accumulator.
        g[k][i] = static_cast<float>(magnitude *
                                     std::cos(0.3 * i + step + 2.0 * k));
        gd[i] = g[k][i];
      }
      out.push_back(gd);
    }
    return out;
  }
  void expectMatches(double tol) const {
    for (size_t k = 0; k < p.size(); ++k)
      for (size_t i = 0; i < p[k].size(); ++i) {
        EXPECT_NEAR(p[k][i], ref[k].p[i], tol) << "tensor " << k << " " << i;
        EXPECT_NEAR(m[k][i], ref[k].m[i], tol);
        EXPECT_NEAR(v[k][i], ref[k].v[i], tol * 1e-2 + 1e-12);
      }
  }
};

TEST(AdamWTest, MatchesFloat64ReferenceWithDecayMaskAndMicroBatchScaling) {
  AdamWConfig c;
  c.lr = 1e-2;
  c.beta1 = 0.9;
  c.beta2 = 0.95;
  c.weightDecay = 0.1;
  Fixture f({{37, true}, {5, false}, {64, true}});
  AdamW opt(c);
  for (int step = 1; step <= 5; ++step) {
    auto gd = f.setGrads(step, 0.5);
    ASSERT_TRUE(opt.step(f.params, 4).isOk());
    referenceStep(f.ref, gd, 4, c, step);
  }
  EXPECT_EQ(opt.stepCount(), 5);
  f.expectMatches(2e-6);
}

TEST(AdamWTest, ClipsToTheGlobalNorm) {
  AdamWConfig c;
  c.lr = 1e-3;
  c.maxGradNorm = 0.5;
  Fixture f({{50, true}, {20, false}});
  AdamW opt(c);
  for (int step = 1; step <= 3; ++step) {
    auto gd = f.setGrads(step, 3.0);
    AdamWStepInfo info;
    ASSERT_TRUE(opt.step(f.params, 2, &info).isOk());
    double sq = 0;
    for (auto &g : gd)
      for (double x : g)
        sq += x * x / 4;
    EXPECT_NEAR(info.gradNorm, std::sqrt(sq), 1e-6 * std::sqrt(sq));
    EXPECT_LT(info.clipScale, 1.0); // norm ~ 8 > 0.5: clipping is active
    referenceStep(f.ref, gd, 2, c, step);
  }
  f.expectMatches(1e-6);
}

TEST(AdamWTest, FirstStepMovesEachWeightByLrTimesSignOfGradient) {
  // An independent check of bias correction: at t = 1, m^ = g and
  // v^ = g^2, so the update is lr * g / (|g| + eps).
  AdamWConfig c;
  c.lr = 0.01;
  c.weightDecay = 0;
  Fixture f({{10, true}});
  std::vector<float> before = f.p[0];
  f.setGrads(1, 1.0);
  ASSERT_TRUE(AdamW(c).step(f.params, 1).isOk());
  for (int i = 0; i < 10; ++i)
    EXPECT_NEAR(f.p[0][i], before[i] - 0.01 * (f.g[0][i] > 0 ? 1 : -1),
                1e-6);
}

TEST(AdamWTest, DecayAppliesOnlyWhereTheMaskSaysSo) {
  AdamWConfig c;
  c.lr = 0.1;
  c.weightDecay = 0.5;
  Fixture f({{4, true}, {4, false}});
  std::vector<float> d0 = f.p[0], n0 = f.p[1];
  // Zero gradients: Adam's update is 0 / (0 + eps) = 0; only decay acts.
  ASSERT_TRUE(AdamW(c).step(f.params, 1).isOk());
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(f.p[0][i], d0[i] * 0.95f);
    EXPECT_EQ(f.p[1][i], n0[i]);
  }
}

TEST(AdamWTest, SplitParametersWithSummedNormEqualOneProcess) {
  // Pipeline ranks each hold part of the model; summing their squared norms
  // must give the same clipped step as one process holding everything.
  AdamWConfig c;
  c.lr = 1e-2;
  c.maxGradNorm = 0.1;
  Fixture whole({{30, true}, {12, false}});
  Fixture split({{30, true}, {12, false}});
  whole.setGrads(1, 1.0);
  split.setGrads(1, 1.0);
  ASSERT_TRUE(AdamW(c).step(whole.params, 3).isOk());
  std::vector<AdamWParam> rank0 = {split.params[0]}, rank1 = {split.params[1]};
  double sq = *AdamW::sumSquaredGradients(rank0, 3) +
              *AdamW::sumSquaredGradients(rank1, 3);
  AdamW opt0(c), opt1(c);
  ASSERT_TRUE(opt0.stepWithGlobalNorm(rank0, 3, sq).isOk());
  ASSERT_TRUE(opt1.stepWithGlobalNorm(rank1, 3, sq).isOk());
  for (size_t k = 0; k < 2; ++k)
    EXPECT_EQ(whole.p[k], split.p[k]);
}

TEST(AdamWTest, RejectsBadInputs) {
  Fixture f({{3, true}});
  AdamW opt({});
  EXPECT_FALSE(opt.step(f.params, 0).isOk());
  EXPECT_FALSE(opt.stepWithGlobalNorm(f.params, 1, NAN).isOk());
  std::vector<AdamWParam> bad = f.params;
  bad[0].m = nullptr;
  Status s = opt.step(bad, 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("'t0'"), std::string::npos);
  EXPECT_EQ(opt.stepCount(), 0);
}

TEST(AdamWTest, ZeroGradientsClearsEveryGradient) {
  Fixture f({{3, true}, {2, false}});
  f.setGrads(1, 1.0);
  zeroGradients(f.params);
  for (auto &g : f.g)
    for (float x : g)
      EXPECT_EQ(x, 0.f);
}

} // namespace
