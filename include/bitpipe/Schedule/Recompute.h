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

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_RECOMPUTE_H
