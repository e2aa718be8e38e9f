//===- Dependencies.h - What each action of a step needs -------*- C++ -*-===//
//
// The data dependencies of a pipeline step, written down once. lowerComms
// turns the cross-stage ones into transfers, the simulator waits for them,
// the verifier checks their order on one rank, and the generators' list
// scheduler only starts what is ready by them:
//
//   F(m,s) needs F(m,s-1)   the activation (nothing for s = 0)
//   B(m,s) needs F(m,s)     its own stash, on the same device
//          and   B(m,s+1)   the gradient (nothing for s = S-1)
//   W(m,s) needs B(m,s)     on the same device
//   AR     needs the rank's gradients of its stages to be final: it must come
//          after the rank's last B/W of them (a rule about positions, not an
//          input: see producesGradients).
//
// Stage numbers are positions along a micro-batch's own pipeline, so s-1 is
// the predecessor of s whichever pipeline m travels.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_DEPENDENCIES_H
#define BITPIPE_SCHEDULE_DEPENDENCIES_H

#include "bitpipe/Schedule/Schedule.h"

#include <optional>

namespace bitpipe::sched {

/// The inputs of one compute action; both empty for an all-reduce.
struct ActionInputs {
  /// The earlier action of the same (micro-batch, stage): B's forward, W's
  /// backward. The placement puts it on the same device.
  std::optional<Action> sameStage;
  /// The neighbouring stage's action whose output crosses the stage
  /// boundary: F's predecessor forward, B's successor backward. It may run
  /// on another device (then it needs a transfer).
  std::optional<Action> crossStage;
};

/// The inputs of `action` in a model of `numStages` stages.
ActionInputs inputsOf(const Action &action, int numStages);

/// True for B and W: the actions that add to a stage's parameter gradients,
/// after all of which that stage may be all-reduced.
inline bool producesGradients(const Action &action) {
  return action.kind == ActionKind::Backward ||
         action.kind == ActionKind::WeightGrad;
}

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_DEPENDENCIES_H
