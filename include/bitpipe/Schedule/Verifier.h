//===- Verifier.h - Checks a schedule can run and is complete -*- C++ -*-===//
//
// The verifier answers "is this a correct training step?" before anything
// runs: every (stage, micro-batch) computed exactly once on the device the
// placement assigns, dependencies in an order a rank can honour, sends and
// receives that pair up, all-reduces that meet, and no deadlock (decided by
// the simulator with unit costs, under NCCL's rules unless told MPI's: one
// simulation loop in the library). A deadlock's diagnostic names its cycle
// of waits (which rank waits at which step for which batch of which peer)
// and marks every step in it.
//
// Each diagnostic states the problem in words and carries the whole per-rank
// grid with the offending step marked (GridText's formatGrid), e.g.
// `P2: F0.s2 >>B3.s2<< ...`.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_VERIFIER_H
#define BITPIPE_SCHEDULE_VERIFIER_H

#include "bitpipe/Schedule/Comms.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Schedule.h"

#include <string>
#include <vector>

namespace bitpipe::sched {

enum class DiagKind {
  Malformed,                ///< Ranks/pipelines/placement do not fit together.
  OutOfRange,               ///< Micro-batch or stage that does not exist.
  Duplicate,                ///< A compute action that runs twice.
  Missing,                  ///< A compute action that runs nowhere.
  WrongDevice,              ///< Runs on a rank the placement does not assign.
  UnexpectedWeightGrad,     ///< W in a schedule whose backward is not split.
  BackwardBeforeForward,    ///< B before its own F on the same rank.
  WeightGradBeforeBackward, ///< W before its own B on the same rank.
  AllReduceForeignStage,    ///< AR of a stage the rank does not hold.
  AllReduceMixedGroups,     ///< AR of stages with different replica groups.
  AllReduceBeforeGradients, ///< AR before a B/W of its stages on that rank.
  AllReduceMismatch,        ///< Group members' ARs disagree in order/stages.
  AllReduceMissing,         ///< (Option) a replicated stage never reduced.
  ChannelOrder,             ///< Sends and receives of a channel out of order.
  Deadlock,                 ///< The simulated run cannot finish.
};

struct Diagnostic {
  DiagKind kind = DiagKind::Malformed;
  int rank = -1;        ///< Rank at fault, or -1.
  int actionIndex = -1; ///< Offending step in Schedule::ranks[rank], or -1.
  std::string message;  ///< In words, one sentence (a deadlock: several lines).
  std::string grid;     ///< formatGrid with the offending step(s) marked.
  /// message, newline, grid.
  std::string str() const;
};

struct VerifyOptions {
  /// Require every stage held by more than one device to be all-reduced
  /// on each holder (at least once: a stage's gradients may be split over
  /// its own buckets and a tied parameter's). Off by default: some
  /// pipelines insert the all-reduces after scheduling.
  bool requireAllReduce = false;
  /// Check the channels' order and run the simulator for a deadlock. A
  /// caller that has just done both on the same program (bitpipe-verify,
  /// which reports them at the ops) turns it off rather than pay twice.
  bool checkExecution = true;
  /// The rules the deadlock check runs the transfers under (Transport.h).
  /// NCCL's, the stricter, by default: a program that runs under them runs
  /// under MPI's too.
  Transport transport = Transport::Nccl;
};

/// All problems of `schedule`; empty when it is valid. Structural problems
/// (range, duplicates, missing, device, order on a rank) suppress the
/// channel and deadlock checks, which would only repeat them.
std::vector<Diagnostic> verify(const Schedule &schedule,
                               const VerifyOptions &options = {});

/// Same, checking a lowered program (e.g. from a pass) instead of the one
/// lowerComms derives: its channels, and deadlock freedom when running it.
std::vector<Diagnostic> verify(const Schedule &schedule,
                               const CommProgram &program,
                               const VerifyOptions &options = {});

/// Every diagnostic's str(), separated by blank lines.
std::string formatDiagnostics(const std::vector<Diagnostic> &diagnostics);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_VERIFIER_H
