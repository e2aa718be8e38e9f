//===- RunSteps.h - A traced run's compute cut into steps -------*- C++ -*-===//
//
// Private to the calibration (Calibration.cpp, IdleTime.cpp): both read a
// run's trace as the same steps.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_SCHEDULE_CALIBRATION_RUNSTEPS_H
#define BITPIPE_LIB_SCHEDULE_CALIBRATION_RUNSTEPS_H

#include "bitpipe/Schedule/Calibration.h"

#include <string>
#include <vector>

namespace bitpipe::sched::detail {

/// A compute event's name, "F3.s2", as the text grid spells actions
/// (GridText.h); false for anything else (transfers, all-reduces, ...).
bool parseCompute(const std::string &name, ActionKind &kind, int &stage);

/// True when `events` hold stage calls on a device's compute-stream row:
/// a GPU run's trace, read from its device rows (Calibration.h).
bool isDeviceTrace(const std::vector<RunEvent> &events);

struct Compute {
  ActionKind kind;
  int stage;
  double start, end;
};

/// An all-reduce post or wait of one bucket.
struct BucketSpan {
  int bucket;
  double start, end;
};

/// Each rank's compute events in time order, cut into steps, and its
/// all-reduce posts and waits.
struct Steps {
  std::vector<std::vector<Compute>> perRank;
  std::vector<size_t> perStep; ///< Compute actions per step, per rank.
  int complete = 0;            ///< Complete steps in the trace.
  /// Read from a GPU trace's device rows (isDeviceTrace): the compute is
  /// the compute stream's, the all-reduce waits are the collectives on the
  /// all-reduce stream (NCCL runs them beside compute), and there are no
  /// posts and no host-side gradient sums.
  bool device = false;
  /// Per rank, in time order.
  std::vector<std::vector<BucketSpan>> allReducePosts, allReduceWaits;

  /// Rank r's compute events of step s.
  const Compute *begin(int rank, int step) const {
    return perRank[rank].data() + step * perStep[rank];
  }
  const Compute *end(int rank, int step) const {
    return begin(rank, step) + perStep[rank];
  }
  /// Step s's first compute start over all ranks; +inf past the trace.
  double start(int step) const;
  /// Step s's window over all ranks: its first compute start to the latest
  /// end of its compute and its all-reduce waits (the optimizer step waits
  /// for the sums: the simulator's makespan). A span
  /// belongs to the step it starts in: from its start to the next's.
  std::pair<double, double> window(int step) const;
  /// The end of rank r's last compute of step s.
  double workEnd(int rank, int step) const;
  /// Rank r's spans of `all` that start in step s (as window() counts).
  std::vector<BucketSpan> inStep(const std::vector<BucketSpan> &all,
                                 int step) const;
};

/// Fails when the trace names a rank or stage the schedule lacks.
Result<Steps> cutSteps(const Schedule &schedule,
                       const std::vector<RunEvent> &events);

/// Why steps [skip, complete) cannot be measured, or "" when they can.
std::string skipError(const Steps &steps, int skip);

} // namespace bitpipe::sched::detail

#endif // BITPIPE_LIB_SCHEDULE_CALIBRATION_RUNSTEPS_H
