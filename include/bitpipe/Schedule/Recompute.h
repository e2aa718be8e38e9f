//===- Recompute.h - What a backward computes again -------------*- C++ -*-===//
//
// The user's choice between memory and time for what a stage keeps from its
// forward for its backward, as Megatron-LM's --recompute-granularity
// (docs/recompute.md). One definition for bitpipe-compile's flag, the
// pipeline's option and bitpipe-generate-backward's.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_RECOMPUTE_H
#define BITPIPE_SCHEDULE_RECOMPUTE_H

#include <optional>
#include <string>
#include <string_view>

namespace bitpipe::sched {

enum class Recompute {
  /// Keep every value the backward reads, the forward's statistics too
  /// (attention's log-sum-exps, the norms' mean and rstd).
  None,
  /// Keep the activations; compute the statistics again in the backward
  /// (attention's probabilities are computed again in every mode: the
  /// kernels never store them).
  Selective,
  /// Keep only the stage's inputs; run the whole forward again at the
  /// start of each backward.
  Full,
};

/// "none", "selective", "full".
const char *recomputeName(Recompute recompute);
std::optional<Recompute> parseRecompute(std::string_view name);
/// "'none', 'selective' or 'full'", for messages that list what is accepted.
std::string recomputeChoices();

/// One stage's work and memory per micro-batch with everything kept
/// (Recompute::None), as the cost analysis counts them.
struct StageKeeping {
  double forwardFlops = 0;
  double backwardFlops = 0;
  /// What the forward keeps for the backward: activations and statistics.
  double keptBytes = 0;
  /// Of keptBytes, the statistics (log-sum-exps, means, rstds).
  double statisticBytes = 0;
  /// The forward FLOPs of the ops that have statistics, which a backward
  /// without them runs again (a flash-style attention backward recomputes
  /// its forward's softmax to get them).
  double statisticFlops = 0;
  /// What the stage receives per micro-batch (activations, token ids,
  /// labels): all that full recomputation keeps.
  double inputBytes = 0;
};

/// The backward's FLOPs and the bytes kept per micro-batch in flight under
/// `recompute` (docs/recompute.md): the one rule of bitpipe-plan's search
/// and of the costs bitpipe-simulate and the lowering read from IR.
struct RecomputedStage {
  double backwardFlops = 0;
  double keptBytes = 0;
};
RecomputedStage recomputedStage(Recompute recompute, const StageKeeping &stage);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_RECOMPUTE_H
