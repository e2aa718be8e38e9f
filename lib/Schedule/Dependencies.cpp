//===- Dependencies.cpp - What each action of a training step needs -------===//

#include "bitpipe/Schedule/Dependencies.h"

namespace bitpipe::sched {

ActionInputs inputsOf(const Action &action, int numStages) {
  ActionInputs in;
  const int m = action.microbatch, s = action.stage;
  switch (action.kind) {
  case ActionKind::Forward:
    if (s > 0)
      in.crossStage = Action::forward(m, s - 1);
    break;
  case ActionKind::Backward:
    in.sameStage = Action::forward(m, s);
    if (s + 1 < numStages)
      in.crossStage = Action::backward(m, s + 1);
    break;
  case ActionKind::WeightGrad:
    in.sameStage = Action::backward(m, s);
    break;
  case ActionKind::AllReduce:
    break;
  }
  return in;
}

} // namespace bitpipe::sched
