//===- KernelRates.h - Compute rates measured by kernel shape ---*- C++ -*-===//
//
// A cluster file's optional `kernel_rates` (docs/clusters.md, "Compute rates
// by kernel shape"): FLOP/s that a machine's kernels reached, measured by
// bench/calibration/kernel-rates.cpp, on a grid of linear shapes (tokens x
// in x out) and of attention shapes (sequence length x head dimension, causal
// and not), plus one rate for the memory-bound rest. A shape between grid
// points gets the rate interpolated linearly in the logarithms of its
// dimensions; one beyond the grid gets the rate of the nearest edge.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_KERNELRATES_H
#define BITPIPE_SCHEDULE_KERNELRATES_H

#include "bitpipe/Schedule/ComputeWork.h"
#include "bitpipe/Schedule/Error.h"

#include <string>
#include <vector>

namespace bitpipe::sched {

/// The names of kernel_rates' fields (docs/clusters.md): the one
/// definition that the cluster file's parser (Cluster.cpp) reads by and
/// KernelRates::toJson writes by.
namespace kernel_rates_field {
inline constexpr const char *kObject = "kernel_rates";
inline constexpr const char *kMeasured = "measured";
inline constexpr const char *kLinear = "linear";
inline constexpr const char *kAttention = "attention";
inline constexpr const char *kOther = "other";
inline constexpr const char *kRunFraction = "run_fraction";
inline constexpr const char *kSplitFraction = "split_fraction";
inline constexpr const char *kTokens = "tokens";
inline constexpr const char *kIn = "in";
inline constexpr const char *kOut = "out";
inline constexpr const char *kSeqLen = "seq_len";
inline constexpr const char *kHeadDim = "head_dim";
inline constexpr const char *kCausal = "causal";
inline constexpr const char *kForward = "forward";
inline constexpr const char *kInputGrad = "input_grad";
inline constexpr const char *kWeightGrad = "weight_grad";
inline constexpr const char *kBackward = "backward";
} // namespace kernel_rates_field

struct LinearRate {
  LinearShape shape;
  double forward = 0, inputGrad = 0, weightGrad = 0; ///< FLOP/s.
};

struct AttentionRate {
  AttentionShape shape;
  double forward = 0, backward = 0; ///< FLOP/s.
};

/// Seconds of a piece of ComputeWork: its forward and the two halves of its
/// backward.
struct ComputeTimes {
  double forward = 0, inputGrad = 0, weightGrad = 0;
  double backward() const { return inputGrad + weightGrad; }
};

class KernelRates {
public:
  /// Checks that the linear entries form a full grid (every combination of
  /// the tokens, in and out values that occur, each once), that the
  /// attention entries form one for each of causal and not, and that every
  /// rate is positive; the error names \p path and what is missing.
  static Result<KernelRates> create(std::vector<LinearRate> linear,
                                    std::vector<AttentionRate> attention,
                                    double other, std::string measured,
                                    const std::string &path);

  /// The share of the measured rates a training step reaches (operands
  /// cold in cache, the executor's work between calls): fitted on a real
  /// run (docs/calibration.md), 1 until then. Every time is divided by it.
  double runFraction = 1;
  /// The share of those times' speed that a backward split into its two
  /// halves reaches, B and W each on its own (they read the stage's
  /// activations and gradients twice, and the kernels run as separate
  /// calls): fitted on a split schedule's real run against the same
  /// schedule unsplit (docs/calibration.md), 1 until then. The backward's
  /// halves are divided by it where a schedule splits them
  /// (Cluster::computeTimes).
  double splitFraction = 1;

  LinearRate linear(const LinearShape &shape) const;
  AttentionRate attention(const AttentionShape &shape) const;
  double other() const { return other_; }
  const std::string &measured() const { return measured_; }
  const std::vector<LinearRate> &linearEntries() const { return linear_; }
  const std::vector<AttentionRate> &attentionEntries() const {
    return attention_;
  }

  /// The seconds \p work takes at these rates.
  ComputeTimes timesOf(const ComputeWork &work) const;

  /// The rates as a cluster file's kernel_rates object, one entry a line,
  /// rates to four significant digits (what a measurement repeats to);
  /// run_fraction and split_fraction only where they are not 1.
  std::string toJson() const;

  /// The entries of a full grid over sorted axes.
  struct Grid {
    std::vector<std::vector<double>> axes; ///< Sorted, distinct, > 0.
    std::vector<size_t> entryAt;           ///< Row-major over the axes.
  };

private:
  std::vector<LinearRate> linear_;
  std::vector<AttentionRate> attention_;
  Grid linearGrid_;
  Grid attentionGrid_[2]; ///< Not causal, causal.
  double other_ = 0;
  std::string measured_;
};

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_KERNELRATES_H
