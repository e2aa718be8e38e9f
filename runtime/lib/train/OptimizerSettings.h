//===- OptimizerSettings.h - AdamW and its schedule -------------*- C++ -*-===//
//
// AdamW's hyperparameters and the learning-rate schedule: set by the
// training executable's flags, stored in every checkpoint, and taken from
// the checkpoint on a resume unless a flag changes them
// (docs/training-semantics.md, "The learning-rate schedule" and
// "Resuming").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_OPTIMIZERSETTINGS_H
#define BITPIPE_RUNTIME_TRAIN_OPTIMIZERSETTINGS_H

#include "core/Status.h"
#include "train/AdamW.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace bitpipe::runtime {

/// How the learning rate falls after the warm-up.
enum class LrDecayStyle { Constant, Linear, Cosine };

const char *lrDecayStyleName(LrDecayStyle style);
std::optional<LrDecayStyle> parseLrDecayStyle(std::string_view name);

/// Update u (1 for the first update of a run) uses
///   lr * u / W                                   u <= W (the warm-up)
///   minLr + (lr - minLr) * f((u - W) / (D - W))  W < u <= D
///   minLr                                        u > D
/// with W = warmupSteps, D = decaySteps, f(p) = 1 (constant: then lr
/// throughout), 1 - p (linear) or (1 + cos(pi p)) / 2 (cosine). The first
/// update of a warm-up takes lr / W, not 0: no update is wasted.
struct LrSchedule {
  int64_t warmupSteps = 0;
  LrDecayStyle decay = LrDecayStyle::Constant;
  /// D; 0 until resolved: the executable takes its --steps.
  int64_t decaySteps = 0;
  double minLr = 0;
};

struct OptimizerSettings {
  AdamWConfig adam;
  LrSchedule lr;
};

/// The learning rate of update \p update (>= 1) under \p s, in double.
double learningRateAt(const OptimizerSettings &s, int64_t update);

/// Refuses settings no schedule can follow, naming the flags: a minimum
/// above the peak, a decay that ends before the warm-up does, betas
/// outside [0, 1), a non-positive epsilon.
Status checkOptimizerSettings(const OptimizerSettings &s);

/// "AdamW lr 0.001 after 10 warm-up steps, then cosine decay to 0 by step
/// 100, betas 0.9 0.999, eps 1e-08, weight decay 0.01, no clipping".
std::string describeOptimizer(const OptimizerSettings &s);

/// Calls \p visit(name, flag, field) for every setting, in one fixed order:
/// the one list that checkpoints (key "optimizer.<name>"), the flags and
/// the resume's comparison share. \p field is a double&, an int64_t& or an
/// LrDecayStyle&.
template <typename Settings, typename Visitor>
void forEachOptimizerSetting(Settings &s, Visitor &&visit) {
  visit("lr", "--lr", s.adam.lr);
  visit("beta1", "--adam-beta1", s.adam.beta1);
  visit("beta2", "--adam-beta2", s.adam.beta2);
  visit("eps", "--adam-eps", s.adam.eps);
  visit("weight_decay", "--weight-decay", s.adam.weightDecay);
  visit("max_grad_norm", "--max-grad-norm", s.adam.maxGradNorm);
  visit("lr_warmup_steps", "--lr-warmup-steps", s.lr.warmupSteps);
  visit("lr_decay_style", "--lr-decay-style", s.lr.decay);
  visit("lr_decay_steps", "--lr-decay-steps", s.lr.decaySteps);
  visit("min_lr", "--min-lr", s.lr.minLr);
}

/// A setting's value as checkpoints store it and messages print it: a
/// double with 17 significant digits (it reads back exactly), an integer,
/// a decay style's name.
std::string settingText(double value);
std::string settingText(int64_t value);
std::string settingText(LrDecayStyle value);
/// Reads what settingText wrote; false when \p text is not one.
bool parseSetting(std::string_view text, double *out);
bool parseSetting(std::string_view text, int64_t *out);
bool parseSetting(std::string_view text, LrDecayStyle *out);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_OPTIMIZERSETTINGS_H
