//===- RateTarget.h - What bench-kernel-rates times, per target -*- C++ -*-===//
//
// The measuring program (kernel-rates.cpp: flags, jobs, the kernel_rates
// JSON) is one for every target; what it times is the target's: the CPU
// kernels of runtime.h (CpuKernels.cpp, bench-kernel-rates) or the CUDA
// target's bf16 kernels (CudaKernels.cpp, bitpipe-gpu-kernel-rates, which
// bench/gpu/check.sh runs on the GPU machine). A target gives, per shape,
// the operands and calls of the kernels a compiled stage function makes,
// and times one call; the FLOPs each call counts are the cost analysis's
// (lib/Dialect/NN/IR/NNCost.cpp), defined once below, so that the
// planner's count over a measured rate is the kernel's time.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BENCH_CALIBRATION_RATETARGET_H
#define BITPIPE_BENCH_CALIBRATION_RATETARGET_H

#include "bitpipe/Schedule/ComputeWork.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bitpipe::bench {

/// The shapes the rates are measured at: the planner's (sched::ComputeWork).
using sched::AttentionShape;
using sched::LinearShape;

/// Each of a linear layer's three products.
inline double linearFlops(const LinearShape &s) { return s.productFlops(); }

/// Attention's forward on \p batch sequences of \p heads heads: the whole
/// T x T square, causal or not; its backward counts twice that.
inline double attentionForwardFlops(const AttentionShape &s, int64_t batch,
                                    int64_t heads) {
  return 4.0 * static_cast<double>(batch) * static_cast<double>(s.seqLen) *
         static_cast<double>(s.seqLen) * static_cast<double>(heads * s.headDim);
}

/// The other kernels' FLOPs per element: layer norm 5 forward and 10
/// backward, GELU 8 and 16, the residual add 1.
constexpr double kOtherFlopsPerElement = 5 + 10 + 8 + 16 + 1;

/// One kernel to time and the FLOPs one call of it counts.
struct Timed {
  double flops;
  std::function<void()> call;
};

/// The operands of one shape and the calls that use them: alive while the
/// calls are timed.
class KernelsAt {
public:
  virtual ~KernelsAt() = default;
  virtual std::vector<Timed> kernels() const = 0;
};

class RateTarget {
public:
  virtual ~RateTarget() = default;
  /// forward, input_grad, weight_grad.
  virtual std::unique_ptr<KernelsAt> linear(const LinearShape &s) = 0;
  /// forward, backward, on \p batch sequences of \p heads heads.
  virtual std::unique_ptr<KernelsAt>
  attention(const AttentionShape &s, int64_t batch, int64_t heads) = 0;
  /// One call: layer norm, GELU (each forward and backward) and the
  /// residual add on [tokens, dim], kOtherFlopsPerElement an element.
  virtual std::unique_ptr<KernelsAt> other(int64_t tokens, int64_t dim) = 0;
  /// The median seconds of one call of \p call: one untimed call, then
  /// timed ones until \p minTime seconds have passed and at least three
  /// were timed.
  virtual double medianSeconds(const std::function<void()> &call,
                               double minTime) = 0;
};

/// What this program is built for (CpuKernels.cpp or CudaKernels.cpp).
struct TargetInfo {
  const char *program; ///< Its name in messages and in `measured`.
  const char *kernels; ///< "the CPU kernels of runtime.h", ...
  bool threads;        ///< Whether --threads means anything.
  int64_t maxJobs;     ///< Measuring processes at once it allows.
};
extern const TargetInfo kTarget;

/// The target, its kernels on \p threads threads where that applies. Made
/// in the process that measures (a job), after any fork.
std::unique_ptr<RateTarget> makeRateTarget(int64_t threads);

/// What ran the kernels, for `measured`: the CPU's or the GPU's name.
std::string machineDescription();

/// Prints "PROGRAM: MESSAGE" and ends the process with status 1, where a
/// job cannot go on; _Exit, because a job may be a forked child whose
/// parent's state it must not tear down.
[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt,
                                                             ...);

} // namespace bitpipe::bench

#endif // BITPIPE_BENCH_CALIBRATION_RATETARGET_H
