//===- StepGraphPolicy.h - When a step is captured or replayed --*- C++ -*-===//
//
// The decisions behind --cuda-graphs (cuda/backend/StepGraph.h does the
// CUDA side), in plain C++ so that a CPU test walks every path:
//  - whether the run can use graphs at all (stepGraphsUnusableReason): not
//    with --trace, whose transfer rows come from timing events that a
//    graph does not record; not with BITPIPE_CUDA_SYNC=1, which waits for
//    the device inside the step; not with an NCCL (headers or library)
//    older than 2.9.6, the first that captures its operations, where ranks
//    communicate; not on a driver older than CUDA 11.3;
//  - when to capture: after `eagerSteps` eager training steps, the last of
//    them steady (the pool took no new memory from CUDA and no cuDNN plan
//    was made: what a first use sets up must not happen inside a capture),
//    waiting at most `maxEagerSteps` for a steady one;
//  - when to replay: while the graph's memory is where it was
//    (GraphFootprint); when not, the step runs eagerly, the graph is
//    dropped and the next step is captured again, at most `maxCaptures`
//    captures in all.
// A graph that holds NCCL operations must be captured and launched by
// every rank of those operations together, so each rank gives a verdict
// before each training step (verdict), the ranks agree on the worst one,
// and every rank decides from that same agreed verdict (decide): their
// policies move in step, and every rank gets the same mode.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_BACKEND_STEPGRAPHPOLICY_H
#define BITPIPE_RUNTIME_CUDA_BACKEND_STEPGRAPHPOLICY_H

#include "Backend.h"

#include <cstdint>
#include <string>

namespace bitpipe::runtime {

/// A rank's view before a training step, by how much it holds graphs back:
/// the ranks agree on the worst (the largest).
enum class GraphVerdict : int32_t {
  /// Nothing holds the step back.
  Ready = 0,
  /// The last eager step still set something up at first use.
  Unsteady = 1,
  /// The graph's memory is not where the capture left it.
  Stale = 2,
  /// Graphs cannot be used for the rest of the run.
  Unusable = 3,
};
const char *graphVerdictName(GraphVerdict v);

/// What a run brings that decides, once, whether graphs can be used.
struct StepGraphRunFacts {
  bool trace = false;
  /// BITPIPE_CUDA_SYNC=1: a host wait after every stage call.
  bool syncEachCall = false;
  /// More than one rank: the step's transfers and all-reduces are NCCL's.
  bool usesNccl = false;
  /// NCCL's version code (NCCL_VERSION(X, Y, Z)): the headers built with
  /// and the library loaded (ncclGetVersion).
  int ncclHeaderVersion = 0;
  int ncclLibraryVersion = 0;
  /// cudaDriverGetVersion's (11030 for CUDA 11.3).
  int cudaDriverVersion = 0;
};

/// "" when graphs may be tried; else why not, as a clause ("--trace wants
/// ...").
std::string stepGraphsUnusableReason(const StepGraphRunFacts &facts);

struct StepGraphSettings {
  /// Eager training steps before the first capture.
  int eagerSteps = 2;
  /// The most eager steps in a row spent waiting for a steady one.
  int maxEagerSteps = 8;
  /// Captures in all; a mismatch after the last turns graphs off.
  int maxCaptures = 3;
};

/// What a rank knows before a training step.
struct StepGraphFacts {
  /// Why graphs cannot be used on this rank any more ("" when they can):
  /// the run's reason, or what the capture met.
  std::string unusable;
  /// Whether the last training step run eagerly was steady.
  bool lastStepSteady = false;
  /// GraphFootprint::check of the graph held ("" when it holds).
  std::string mismatch;
};

class StepGraphPolicy {
public:
  struct Decision {
    StepMode mode = StepMode::Eager;
    /// The graph held until now is dropped before this step.
    bool dropGraph = false;
    /// What changes, as rank 0 says it after the reason: "capturing again
    /// at step 9", "every step runs eagerly from now on"; "" when nothing
    /// is worth a line.
    std::string change;
  };

  explicit StepGraphPolicy(StepGraphSettings settings = {});

  /// Whether the next training step needs the ranks' verdicts: false once
  /// graphs are off (on every rank at the same step).
  bool active() const { return state_ != State::Off; }
  /// Whether a graph is held: the step before was captured or replayed.
  bool holdsGraph() const { return state_ == State::Holding; }
  int captures() const { return captures_; }

  /// This rank's verdict before the next training step.
  GraphVerdict verdict(const StepGraphFacts &facts) const;
  /// The mode of training step \p step (1-based, for the words), from the
  /// verdict all ranks agreed on; moves the policy on.
  Decision decide(GraphVerdict agreed, int64_t step);

private:
  enum class State { Warming, Holding, Off };

  StepGraphSettings settings_;
  State state_ = State::Warming;
  /// Eager training steps run since warming began, and how many it needs.
  int eagerRun_ = 0;
  int eagerNeeded_ = 0;
  int captures_ = 0;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CUDA_BACKEND_STEPGRAPHPOLICY_H
