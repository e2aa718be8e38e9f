//===- OptimizerSettings.cpp - What an update depends on, but gradients ---===//

#include "train/OptimizerSettings.h"

#include "core/Status.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace bitpipe::runtime {

const char *lrDecayStyleName(LrDecayStyle style) {
  switch (style) {
  case LrDecayStyle::Constant:
    return "constant";
  case LrDecayStyle::Linear:
    return "linear";
  case LrDecayStyle::Cosine:
    return "cosine";
  }
  return "?";
}

std::optional<LrDecayStyle> parseLrDecayStyle(std::string_view name) {
  for (LrDecayStyle s :
       {LrDecayStyle::Constant, LrDecayStyle::Linear, LrDecayStyle::Cosine})
    if (name == lrDecayStyleName(s))
      return s;
  return std::nullopt;
}

double learningRateAt(const OptimizerSettings &s, int64_t update) {
  const double peak = s.adam.lr;
  const LrSchedule &lr = s.lr;
  if (update <= lr.warmupSteps)
    return peak * static_cast<double>(update) /
           static_cast<double>(lr.warmupSteps);
  if (lr.decay == LrDecayStyle::Constant)
    return peak;
  if (update >= lr.decaySteps)
    return lr.minLr;
  // checkOptimizerSettings keeps decaySteps > warmupSteps here.
  double p = static_cast<double>(update - lr.warmupSteps) /
             static_cast<double>(lr.decaySteps - lr.warmupSteps);
  double f = lr.decay == LrDecayStyle::Linear
                 ? 1.0 - p
                 : 0.5 * (1.0 + std::cos(M_PI * p));
  return lr.minLr + (peak - lr.minLr) * f;
}

Status checkOptimizerSettings(const OptimizerSettings &s) {
  auto bad = [](const std::string &why) {
    return Status::error(ErrorCode::InvalidArgument, why);
  };
  for (auto [flag, beta] :
       {std::pair<const char *, double>{"--adam-beta1", s.adam.beta1},
        {"--adam-beta2", s.adam.beta2}})
    if (!(beta >= 0 && beta < 1))
      return bad(formatString("%s is %s; expected a number in [0, 1)", flag,
                              settingText(beta).c_str()));
  if (!(s.adam.eps > 0))
    return bad("--adam-eps is " + settingText(s.adam.eps) +
               "; expected a number above 0");
  if (s.lr.decay == LrDecayStyle::Constant)
    return Status::ok();
  if (s.lr.minLr > s.adam.lr)
    return bad("--min-lr " + settingText(s.lr.minLr) + " is above --lr " +
               settingText(s.adam.lr) +
               ": the decay would raise the learning rate");
  if (s.lr.decaySteps <= s.lr.warmupSteps)
    return bad(formatString(
        "--lr-decay-style %s decays until step %lld (--lr-decay-steps, else "
        "--steps), which is not after the %lld warm-up steps "
        "(--lr-warmup-steps)",
        lrDecayStyleName(s.lr.decay), static_cast<long long>(s.lr.decaySteps),
        static_cast<long long>(s.lr.warmupSteps)));
  return Status::ok();
}

std::string describeOptimizer(const OptimizerSettings &s) {
  std::string out = "AdamW lr " + settingText(s.adam.lr);
  if (s.lr.warmupSteps > 0)
    out += formatString(" after %lld warm-up step%s",
                        static_cast<long long>(s.lr.warmupSteps),
                        s.lr.warmupSteps == 1 ? "" : "s");
  if (s.lr.decay != LrDecayStyle::Constant)
    out += formatString(
        ", %s%s decay to %s by step %lld", s.lr.warmupSteps > 0 ? "then " : "",
        lrDecayStyleName(s.lr.decay), settingText(s.lr.minLr).c_str(),
        static_cast<long long>(s.lr.decaySteps));
  out += ", betas " + settingText(s.adam.beta1) + " " +
         settingText(s.adam.beta2) + ", eps " + settingText(s.adam.eps) +
         ", weight decay " + settingText(s.adam.weightDecay) + ", ";
  out += s.adam.maxGradNorm > 0
             ? "gradient norm clipped to " + settingText(s.adam.maxGradNorm)
             : std::string("no clipping");
  return out;
}

std::string settingText(double value) {
  // The shortest of 15, 16 or 17 digits that reads back exactly: 0.999,
  // not 0.99899999999999999.
  char buf[32];
  for (int digits = 15; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, value);
    if (std::strtod(buf, nullptr) == value)
      break;
  }
  return buf;
}

std::string settingText(int64_t value) { return std::to_string(value); }

std::string settingText(LrDecayStyle value) { return lrDecayStyleName(value); }

bool parseSetting(std::string_view text, double *out) {
  std::string s(text);
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v))
    return false;
  *out = v;
  return true;
}

bool parseSetting(std::string_view text, int64_t *out) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    return false;
  *out = v;
  return true;
}

bool parseSetting(std::string_view text, LrDecayStyle *out) {
  std::optional<LrDecayStyle> s = parseLrDecayStyle(text);
  if (!s)
    return false;
  *out = *s;
  return true;
}

} // namespace bitpipe::runtime
