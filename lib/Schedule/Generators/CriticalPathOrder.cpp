//===- CriticalPathOrder.cpp - List scheduling over FIFO channels ---------===//

#include "CriticalPathOrder.h"

#include "bitpipe/Schedule/Dependencies.h"

#include <map>
#include <optional>
#include <tuple>
#include <utility>

namespace bitpipe::sched::detail {

std::vector<std::vector<Action>> criticalPathOrder(const Schedule &shape,
                                                   int injectionCap) {
  const Placement &pl = shape.placement;
  const int S = pl.numStages, N = shape.numMicrobatches;
  const int kForward = 1, kBackward = 2; // The library's unit costs.
  auto deviceOf = [&](const Action &a) {
    return pl.device(shape.microbatchPipeline[a.microbatch], a.stage);
  };
  // finish[(m * S + s) * 2 + backward]: end time, -1 while not run.
  std::vector<int> finish(static_cast<size_t>(N) * S * 2, -1);
  auto fin = [&](const Action &a) -> int & {
    return finish[(static_cast<size_t>(a.microbatch) * S + a.stage) * 2 +
                  (a.kind == ActionKind::Backward)];
  };
  // Work that must follow an action on the way to the step's end: the
  // later forwards and every backward after a forward, the earlier
  // backwards after a backward.
  auto tail = [&](const Action &a) {
    return a.kind == ActionKind::Backward
               ? a.stage * kBackward
               : (S - 1 - a.stage) * kForward + S * kBackward;
  };
  std::vector<std::vector<Action>> pending(pl.numDevices), ranks(pl.numDevices);
  for (int m = 0; m < N; ++m)
    for (int s = 0; s < S; ++s) {
      pending[deviceOf(Action::forward(m, s))].push_back(Action::forward(m, s));
      pending[deviceOf(Action::backward(m, s))].push_back(
          Action::backward(m, s));
    }
  // Per (src, dst) channel: the actions whose outputs it carries, in send
  // order, and how many of them were delivered.
  std::map<std::pair<int, int>, std::vector<Action>> sent;
  std::map<std::pair<int, int>, size_t> delivered;
  std::vector<int> inFlight(pl.pipelines.size(), 0), busyUntil(pl.numDevices, 0);
  size_t left = static_cast<size_t>(N) * S * 2;
  for (int now = 0, lastRun = 0; left > 0; ++now) {
    if (now - lastRun > kBackward)
      return {}; // Every rank idle and nothing running: nothing ever will.
    for (int r = 0; r < pl.numDevices; ++r) {
      if (busyUntil[r] > now)
        continue;
      int best = -1;
      std::tuple<bool, int, int, int> bestKey;
      for (int i = 0; i < static_cast<int>(pending[r].size()); ++i) {
        const Action &a = pending[r][i];
        const int pipe = shape.microbatchPipeline[a.microbatch];
        ActionInputs inputs = inputsOf(a, S);
        bool ready = true;
        for (const std::optional<Action> &in :
             {inputs.sameStage, inputs.crossStage})
          ready = ready && (!in || (fin(*in) >= 0 && fin(*in) <= now));
        if (ready && inputs.crossStage && deviceOf(*inputs.crossStage) != r) {
          std::pair<int, int> channel{deviceOf(*inputs.crossStage), r};
          const std::vector<Action> &queue = sent[channel];
          const size_t head = delivered[channel];
          ready = head < queue.size() && queue[head] == *inputs.crossStage;
        }
        if (ready && a.kind == ActionKind::Forward && a.stage == 0 &&
            inFlight[pipe] >= injectionCap)
          ready = false;
        if (!ready)
          continue;
        const bool forward = a.kind == ActionKind::Forward;
        const int cost = forward ? kForward : kBackward;
        std::tuple<bool, int, int, int> key{forward, -(cost + tail(a)),
                                            a.microbatch, a.stage};
        if (best < 0 || key < bestKey) {
          best = i;
          bestKey = key;
        }
      }
      if (best < 0)
        continue;
      const Action a = pending[r][best];
      pending[r].erase(pending[r].begin() + best);
      --left;
      lastRun = now;
      const bool forward = a.kind == ActionKind::Forward;
      busyUntil[r] = fin(a) = now + (forward ? kForward : kBackward);
      ranks[r].push_back(a);
      const int pipe = shape.microbatchPipeline[a.microbatch];
      if (a.stage == 0)
        inFlight[pipe] += forward ? 1 : -1;
      ActionInputs inputs = inputsOf(a, S);
      if (inputs.crossStage && deviceOf(*inputs.crossStage) != r)
        ++delivered[{deviceOf(*inputs.crossStage), r}];
      // Its output goes to the next stage (forward) or the previous one
      // (backward), over a channel if that runs elsewhere.
      const int to = forward ? a.stage + 1 : a.stage - 1;
      if (to >= 0 && to < S && pl.device(pipe, to) != r)
        sent[{r, pl.device(pipe, to)}].push_back(a);
    }
  }
  return ranks;
}

} // namespace bitpipe::sched::detail
