//===- AdamW.cpp - AdamW on fp32 master weights -----------------*- C++ -*-===//

#include "AdamW.h"

#include <cmath>
#include <cstring>

namespace bitpipe::runtime {

static Status checkParams(const std::vector<AdamWParam> &params,
                          int numMicroBatches) {
  if (numMicroBatches <= 0)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("AdamW: %d micro-batches; need at least "
                                      "one",
                                      numMicroBatches));
  for (const AdamWParam &p : params)
    if (!p.param || !p.grad || !p.m || !p.v || p.count <= 0)
      return Status::error(ErrorCode::InvalidArgument,
                           "AdamW: parameter '" + p.name +
                               "' has a null buffer or no elements");
  return Status::ok();
}

Expected<double>
AdamW::sumSquaredGradients(const std::vector<AdamWParam> &params,
                           int numMicroBatches) {
  Status s = checkParams(params, numMicroBatches);
  if (!s.isOk())
    return s;
  double scale = 1.0 / numMicroBatches;
  double sum = 0;
  for (const AdamWParam &p : params)
    for (int64_t i = 0; i < p.count; ++i) {
      double g = p.grad[i] * scale;
      sum += g * g;
    }
  return sum;
}

Status AdamW::step(const std::vector<AdamWParam> &params, int numMicroBatches,
                   AdamWStepInfo *info) {
  double sum = 0;
  // The norm is only needed for clipping and the log; skip the pass when
  // neither wants it.
  if (config_.maxGradNorm > 0 || info) {
    Expected<double> s = sumSquaredGradients(params, numMicroBatches);
    if (!s.isOk())
      return s.status();
    sum = *s;
  }
  return stepWithGlobalNorm(params, numMicroBatches, sum, info);
}

Expected<AdamWConstants> AdamW::beginStep(int numMicroBatches,
                                          double globalSumSquares,
                                          AdamWStepInfo *info) {
  if (numMicroBatches <= 0)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("AdamW: %d micro-batches; need at least "
                                      "one",
                                      numMicroBatches));
  if (!(globalSumSquares >= 0) || !std::isfinite(globalSumSquares))
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("AdamW: gradient norm^2 is %g (a NaN or "
                                      "infinite gradient?)",
                                      globalSumSquares));
  double norm = std::sqrt(globalSumSquares);
  double clip = 1.0;
  if (config_.maxGradNorm > 0 && norm > config_.maxGradNorm)
    clip = config_.maxGradNorm / (norm + 1e-6); // as clip_grad_norm_
  if (info) {
    info->gradNorm = norm;
    info->clipScale = clip;
  }

  ++step_;
  AdamWConstants c;
  c.gradScale = clip / numMicroBatches;
  // Every constant is formed in double and rounded once: 1.0f - 0.999f is
  // 9.99987e-4, not 1e-3, which would leave the second moment 1.3e-5 low
  // against PyTorch's (docs/training-semantics.md).
  c.beta1 = static_cast<float>(config_.beta1);
  c.beta2 = static_cast<float>(config_.beta2);
  c.oneMinusBeta1 = static_cast<float>(1.0 - config_.beta1);
  c.oneMinusBeta2 = static_cast<float>(1.0 - config_.beta2);
  c.eps = static_cast<float>(config_.eps);
  // Bias corrections in double: beta^t underflows gracefully and 1 - beta^t
  // for beta2 = 0.999 at small t loses digits in float.
  double t = static_cast<double>(step_);
  c.stepSize =
      static_cast<float>(config_.lr / (1.0 - std::pow(config_.beta1, t)));
  c.rootBc2 = static_cast<float>(std::sqrt(1.0 - std::pow(config_.beta2, t)));
  c.decayFactor = static_cast<float>(1.0 - config_.lr * config_.weightDecay);
  return c;
}

Status AdamW::stepWithGlobalNorm(const std::vector<AdamWParam> &params,
                                 int numMicroBatches, double globalSumSquares,
                                 AdamWStepInfo *info) {
  Status s = checkParams(params, numMicroBatches);
  if (!s.isOk())
    return s;
  Expected<AdamWConstants> begun =
      beginStep(numMicroBatches, globalSumSquares, info);
  if (!begun.isOk())
    return begun.status();
  const AdamWConstants c = *begun;
  for (const AdamWParam &p : params) {
    const float decay = p.decay ? c.decayFactor : 1.0f;
    for (int64_t i = 0; i < p.count; ++i) {
      float g = static_cast<float>(p.grad[i] * c.gradScale);
      float m = c.beta1 * p.m[i] + c.oneMinusBeta1 * g;
      float v = c.beta2 * p.v[i] + c.oneMinusBeta2 * g * g;
      p.m[i] = m;
      p.v[i] = v;
      float denom = std::sqrt(v) / c.rootBc2 + c.eps;
      p.param[i] = p.param[i] * decay - c.stepSize * m / denom;
    }
  }
  return Status::ok();
}

void zeroGradients(const std::vector<AdamWParam> &params) {
  for (const AdamWParam &p : params)
    if (p.grad && p.count > 0)
      std::memset(const_cast<double *>(p.grad), 0,
                  static_cast<size_t>(p.count) * sizeof(double));
}

} // namespace bitpipe::runtime
