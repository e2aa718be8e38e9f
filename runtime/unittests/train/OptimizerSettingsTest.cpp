//===- OptimizerSettingsTest.cpp - The learning-rate schedule -------------===//

#include "train/OptimizerSettings.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace bitpipe::runtime;

namespace {

/// The schedule written out independently, in long double, from its
/// definition in OptimizerSettings.h.
long double referenceLr(long double peak, long double minLr, int64_t w,
                        int64_t d, LrDecayStyle style, int64_t u) {
  if (u <= w)
    return peak * u / w;
  if (style == LrDecayStyle::Constant)
    return peak;
  if (u >= d)
    return minLr;
  long double p = static_cast<long double>(u - w) / (d - w);
  long double f =
      style == LrDecayStyle::Linear
          ? 1 - p
          : (1 + std::cos(3.14159265358979323846264338327950L * p)) / 2;
  return minLr + (peak - minLr) * f;
}

TEST(LearningRate, FollowsItsDefinition) {
  for (LrDecayStyle style :
       {LrDecayStyle::Constant, LrDecayStyle::Linear, LrDecayStyle::Cosine})
    for (int64_t warmup : {0, 1, 7}) {
      OptimizerSettings s;
      s.adam.lr = 3e-4;
      s.lr = {warmup, style, 40, 3e-5};
      for (int64_t u = 1; u <= 50; ++u) {
        long double want = referenceLr(3e-4L, 3e-5L, warmup, 40, style, u);
        EXPECT_NEAR(learningRateAt(s, u), static_cast<double>(want),
                    1e-15 * 3e-4)
            << lrDecayStyleName(style) << " warm-up " << warmup << " update "
            << u;
      }
    }
}

TEST(LearningRate, LandmarksOfTheSchedule) {
  OptimizerSettings s;
  s.adam.lr = 1e-3;
  s.lr = {4, LrDecayStyle::Cosine, 104, 1e-4};
  EXPECT_DOUBLE_EQ(learningRateAt(s, 1), 2.5e-4);  // no update at lr 0
  EXPECT_DOUBLE_EQ(learningRateAt(s, 4), 1e-3);    // the peak, once
  EXPECT_DOUBLE_EQ(learningRateAt(s, 54), 5.5e-4); // halfway: the mean
  EXPECT_DOUBLE_EQ(learningRateAt(s, 104), 1e-4);
  EXPECT_DOUBLE_EQ(learningRateAt(s, 500), 1e-4); // stays at the minimum
  s.lr.decay = LrDecayStyle::Linear;
  EXPECT_DOUBLE_EQ(learningRateAt(s, 29), 7.75e-4);
}

TEST(OptimizerSettings, TextReadsBackExactly) {
  for (double v : {0.999, 1e-8, 3e-4, 0.1, 6.02214076e23, 1.0 / 3.0}) {
    std::string text = settingText(v);
    double back = 0;
    ASSERT_TRUE(parseSetting(text, &back)) << text;
    EXPECT_EQ(back, v) << text;
  }
  EXPECT_EQ(settingText(0.999), "0.999");
  LrDecayStyle style;
  EXPECT_FALSE(parseSetting("cosin", &style));
  int64_t n = 0;
  EXPECT_FALSE(parseSetting("-3", &n));
  EXPECT_FALSE(parseSetting("3x", &n));
  double d = 0;
  EXPECT_FALSE(parseSetting("nan", &d));
}

TEST(OptimizerSettings, Describes) {
  OptimizerSettings s;
  EXPECT_EQ(describeOptimizer(s), "AdamW lr 0.001, betas 0.9 0.999, eps "
                                  "1e-08, weight decay 0.01, no clipping");
  s.lr = {10, LrDecayStyle::Cosine, 100, 0};
  s.adam.maxGradNorm = 1;
  EXPECT_EQ(describeOptimizer(s),
            "AdamW lr 0.001 after 10 warm-up steps, then cosine decay to 0 "
            "by step 100, betas 0.9 0.999, eps 1e-08, weight decay 0.01, "
            "gradient norm clipped to 1");
}

} // namespace
