//===- IdleTime.h - What a run's ranks did when not computing --*- C++ -*-===//
//
// The calibration (Calibration.h) measures a rank's bubble as the part of a
// step it spent outside compute. This file says what that time was: each
// stretch between two of the rank's compute events is matched with the
// rank's other traced spans inside it (a wait for a received tensor, a
// send's post, an all-reduce's start or wait, the optimizer), and what no
// span covers is host time the trace does not name (polling sends,
// posting receives, the executor itself). Time between steps (a rank's
// last compute of a step to its first of the next: the all-reduce waits,
// the optimizer step) is broken down alike (docs/calibration.md).
//
// Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_IDLETIME_H
#define BITPIPE_SCHEDULE_IDLETIME_H

#include "bitpipe/Schedule/Calibration.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace bitpipe::sched {

/// What a span's name says the rank was doing, without the tensor's tag or
/// the bucket: "recv r1 t5" -> "recv r1", "allreduce.wait b0" ->
/// "allreduce.wait", "optimizer" -> "optimizer".
std::string idleCause(const std::string &spanName);

/// The cause of time no span covers.
inline constexpr const char *kUntraced = "untraced";

/// One stretch of a rank's time without compute.
struct IdleGap {
  int rank = 0;
  int step = 0;
  /// Inside the step's window (MeasuredRun::stepTime's), or from the
  /// rank's last compute of the step to its first of the next.
  bool betweenSteps = false;
  double stepStart = 0; ///< The step's first compute start over all ranks.
  double start = 0, end = 0;
  /// The rank's non-compute spans inside the gap, in time order, each with
  /// the time it covers there that no earlier span did.
  std::vector<std::pair<std::string, double>> spans;
  double length() const { return end - start; }
  double untraced() const;
};

/// A rank's time without compute, by cause (idleCause, or kUntraced), mean
/// microseconds per step.
using IdleByCause = std::map<std::string, double>;

struct IdleBreakdown {
  MeasuredRun measured;
  /// Mean time from a step's first compute start to the next step's (the
  /// training step as the job sees it), over the measured steps but the
  /// last; 0 when only one step is measured.
  double stepPeriod = 0;
  /// Per rank: inside the step window; the sum is rankBubble * stepTime.
  std::vector<IdleByCause> inStep;
  /// Per rank: from its last compute of a step to its first of the next,
  /// over the measured steps but the last.
  std::vector<IdleByCause> betweenSteps;
  /// Every gap, in rank, then step order.
  std::vector<IdleGap> gaps;
};

/// Steps [skip, ...) of a run of `schedule`; fails as measureRun does.
Result<IdleBreakdown> explainIdle(const Schedule &schedule,
                                  const std::vector<RunEvent> &events,
                                  int skip);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_IDLETIME_H
