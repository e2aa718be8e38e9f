//===- AdamW.h - AdamW on fp32 master weights -------------------*- C++ -*-===//
//
// PyTorch's torch.optim.AdamW (Loshchilov & Hutter), on fp32 master weights:
//
//   g  = grad / numMicroBatches          (the kernels summed the micro-batch
//                                          gradients; the loss is their mean)
//   g *= min(1, maxGradNorm / (||g||_2 + 1e-6))   if maxGradNorm > 0,
//        ||g|| the global norm over every parameter of the model
//   p *= 1 - lr * weightDecay             only where decay is on: no decay
//                                          for biases and layer-norm gains
//   m  = beta1 m + (1 - beta1) g
//   v  = beta2 v + (1 - beta2) g^2
//   p -= lr * (m / (1 - beta1^t)) / (sqrt(v / (1 - beta2^t)) + eps)
//
// The step counter t lives in the optimizer (and in checkpoints, so resume is
// exact). Gradients are read, not cleared: the caller zeroes them before the
// next step's accumulation (zeroGradients()).
//
// Pipeline parallelism splits the parameters across ranks, so the global norm
// is a sum over ranks: call sumSquaredGradients() on each rank, all-reduce
// the sums over one copy of every parameter (replica ranks hold identical
// gradients after their all-reduce: count them once), and pass the result
// to stepWithGlobalNorm(). step() is the one-process shortcut.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_ADAMW_H
#define BITPIPE_RUNTIME_TRAIN_ADAMW_H

#include "core/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::runtime {

struct AdamWConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.01;
  double maxGradNorm = 0; // <= 0: no clipping
};

/// One parameter tensor and its state; every array has \p count elements.
/// The gradient is a float64 accumulator: summing the micro-batches' fp32
/// gradients in float64 makes the sum (nearly always exactly) independent of
/// the order the schedule adds them in, so every schedule and rank count
/// reaches the parameters of a one-process run, not just approximately.
struct AdamWParam {
  std::string name;
  float *param = nullptr;
  const double *grad = nullptr;
  float *m = nullptr; // first moment, zero-initialised by the caller
  float *v = nullptr; // second moment, zero-initialised by the caller
  int64_t count = 0;
  bool decay = true; // false for biases and layer-norm gains/biases
};

/// The per-step constants of the update, formed in double and rounded once
/// (AdamW::beginStep). Both targets apply the same float arithmetic per
/// element with them: this loop on the CPU, bp_cuda_adamw_step (whose
/// bp_cuda_adamw_constants has these fields) on CUDA.
///   g = (float)(grad * gradScale)
///   m = beta1 m + oneMinusBeta1 g;  v = beta2 v + oneMinusBeta2 g g
///   p = p * (decay ? decayFactor : 1) - stepSize m / (sqrt(v) / rootBc2 + eps)
struct AdamWConstants {
  double gradScale = 1; // clip / micro-batches
  float beta1 = 0, beta2 = 0, oneMinusBeta1 = 0, oneMinusBeta2 = 0, eps = 0;
  float stepSize = 0;    // lr / (1 - beta1^t)
  float rootBc2 = 0;     // sqrt(1 - beta2^t)
  float decayFactor = 1; // 1 - lr * weightDecay
};

struct AdamWStepInfo {
  double gradNorm = 0;  // global norm of the scaled gradient, before clipping
  double clipScale = 1; // factor applied by clipping (1: none)
};

class AdamW {
public:
  explicit AdamW(const AdamWConfig &config) : config_(config) {}

  /// Sum over \p params of (grad / numMicroBatches)^2, in double.
  static Expected<double> sumSquaredGradients(
      const std::vector<AdamWParam> &params, int numMicroBatches);

  /// One step, with the norm taken over \p params only.
  Status step(const std::vector<AdamWParam> &params, int numMicroBatches,
              AdamWStepInfo *info = nullptr);
  /// One step with the norm's square summed over the whole model.
  Status stepWithGlobalNorm(const std::vector<AdamWParam> &params,
                            int numMicroBatches, double globalSumSquares,
                            AdamWStepInfo *info = nullptr);

  /// Starts a step: checks the norm, counts the step and returns its
  /// constants (clipping folded into gradScale). stepWithGlobalNorm calls
  /// it; a target that updates its parameters elsewhere (the CUDA backend)
  /// calls it instead and applies the constants itself.
  Expected<AdamWConstants> beginStep(int numMicroBatches,
                                     double globalSumSquares,
                                     AdamWStepInfo *info = nullptr);

  int64_t stepCount() const { return step_; }
  /// Restores the step counter when resuming from a checkpoint.
  void setStepCount(int64_t step) { step_ = step; }
  /// The settings a run resolved at start-up (a resume may take them from
  /// its checkpoint).
  void setConfig(const AdamWConfig &config) { config_ = config; }
  /// The caller's learning-rate schedule sets this before each step.
  void setLearningRate(double lr) { config_.lr = lr; }
  const AdamWConfig &config() const { return config_; }

private:
  AdamWConfig config_;
  int64_t step_ = 0;
};

/// Zeroes every gradient of \p params (before a step's accumulation).
void zeroGradients(const std::vector<AdamWParam> &params);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_ADAMW_H
