//===- CriticalPathOrder.cpp - List scheduling over FIFO channels ---------===//
//
// Event-driven: an action enters its rank's ready set when its last input
// finishes, so each step looks only at what can run (N micro-batches x D
// stages take about 3N + D steps of D ranks, not N x D scans each). A
// pipeline's first-stage forwards need no input and are taken in
// micro-batch order (the priority ranks them so), one candidate each.
//
// Why "inputs done first" before "longest chain": it keeps each channel's
// transfers consumed in about the order they were sent, so that a ready
// action is rarely held back behind an older transfer of its channel; on
// Chimera it reaches the optimum wherever the exhaustive search of
// unittests/Schedule/OptimalSchedule.h can tell (BaselineSchedulesTest),
// where the longest chain alone stayed 1-11 slots above it.
//
//===----------------------------------------------------------------------===//

#include "CriticalPathOrder.h"
#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Dependencies.h"

#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace bitpipe::sched::detail {

namespace {

constexpr int kForward = 1, kBackward = 2; // The library's unit costs.

/// The priority: backward before forward, then the one whose inputs were
/// done first, then the longest chain of work from the action's start to
/// the step's end, then micro-batch, stage. Smaller is first.
using Key = std::tuple<bool, int, int, int, int>;

Key keyOf(const Action &a, int numStages, int readyAt) {
  const bool forward = a.kind == ActionKind::Forward;
  // Work that must follow it: the later forwards and every backward after
  // a forward, the earlier backwards after a backward.
  const int tail =
      forward ? (numStages - 1 - a.stage) * kForward + numStages * kBackward
              : a.stage * kBackward;
  return {forward, readyAt, -((forward ? kForward : kBackward) + tail),
          a.microbatch, a.stage};
}

Action actionOf(const Key &k) {
  return std::get<0>(k) ? Action::forward(std::get<3>(k), std::get<4>(k))
                        : Action::backward(std::get<3>(k), std::get<4>(k));
}

} // namespace

std::vector<std::vector<Action>>
criticalPathOrder(const Schedule &shape, int injectionCap,
                  const std::vector<int> &rankCaps) {
  const Placement &pl = shape.placement;
  const int S = pl.numStages, N = shape.numMicrobatches, D = pl.numDevices;
  const int numPipelines = static_cast<int>(pl.pipelines.size());
  auto pipeOf = [&](const Action &a) {
    return shape.microbatchPipeline[a.microbatch];
  };
  auto deviceOf = [&](const Action &a) {
    return pl.device(pipeOf(a), a.stage);
  };
  // finish[(m * S + s) * 2 + backward]: end time, -1 while not run.
  std::vector<int> finish(static_cast<size_t>(N) * S * 2, -1);
  auto fin = [&](const Action &a) -> int & {
    return finish[(static_cast<size_t>(a.microbatch) * S + a.stage) * 2 +
                  (a.kind == ActionKind::Backward)];
  };
  auto inputsDone = [&](const Action &a) {
    ActionInputs in = inputsOf(a, S);
    for (const std::optional<Action> &i : {in.sameStage, in.crossStage})
      if (i && fin(*i) < 0)
        return false;
    return true;
  };

  // Per pipeline: its micro-batches in order, and how many have entered.
  std::vector<std::vector<int>> entering(numPipelines);
  for (int m = 0; m < N; ++m)
    entering[shape.microbatchPipeline[m]].push_back(m);
  std::vector<size_t> entered(numPipelines, 0);
  std::vector<int> inFlight(numPipelines, 0);
  // Per rank: (stage, micro-batch) pairs whose forward ran there and whose
  // backward has not; a forward may start only below the rank's cap.
  std::vector<int> rankHolds(D, 0);
  auto rankFull = [&](int r) {
    return !rankCaps.empty() && rankHolds[r] >= rankCaps[r];
  };

  std::vector<std::set<Key>> ready(D);
  ChannelOrder channels(D);
  // The input of `a` that crosses ranks, with its channel, if any.
  auto crossing = [&](const Action &a)
      -> std::optional<std::pair<Action, std::pair<int, int>>> {
    std::optional<Action> in = inputsOf(a, S).crossStage;
    if (!in || deviceOf(*in) == deviceOf(a))
      return std::nullopt;
    return std::pair{*in, std::pair{deviceOf(*in), deviceOf(a)}};
  };
  auto channelAllows = [&](const Action &a) {
    auto c = crossing(a);
    return !c || channels.isNext(c->second.first, c->second.second, c->first);
  };

  std::vector<std::vector<Action>> ranks(D);
  std::vector<std::vector<Action>> finishing; // finishing[t]: ends at t.
  std::vector<int> busyUntil(D, 0);
  size_t left = static_cast<size_t>(N) * S * 2;
  for (int now = 0, lastRun = 0; left > 0; ++now) {
    if (now - lastRun > kBackward)
      return {}; // Every rank idle and nothing running: nothing ever will.
    // What ends now makes its consumers ready.
    if (now < static_cast<int>(finishing.size()))
      for (const Action &done : finishing[now]) {
        std::vector<Action> consumers;
        if (done.kind == ActionKind::Forward) {
          if (done.stage + 1 < S)
            consumers.push_back(
                Action::forward(done.microbatch, done.stage + 1));
          consumers.push_back(Action::backward(done.microbatch, done.stage));
        } else if (done.stage > 0) {
          consumers.push_back(
              Action::backward(done.microbatch, done.stage - 1));
        }
        for (const Action &c : consumers)
          if (fin(c) < 0 && inputsDone(c))
            ready[deviceOf(c)].insert(keyOf(c, S, now));
      }
    for (int r = 0; r < D; ++r) {
      if (busyUntil[r] > now)
        continue;
      std::optional<Key> best;
      for (auto it = ready[r].begin(); it != ready[r].end(); ++it)
        if (channelAllows(actionOf(*it)) &&
            !(std::get<0>(*it) && rankFull(r))) {
          best = *it;
          break;
        }
      // The next micro-batch of each pipeline that enters on this rank.
      for (int p = 0; p < numPipelines; ++p) {
        if (pl.device(p, 0) != r || entered[p] >= entering[p].size() ||
            inFlight[p] >= injectionCap || rankFull(r))
          continue;
        // No inputs: ready from the start.
        Key k = keyOf(Action::forward(entering[p][entered[p]], 0), S, 0);
        if (!best || k < *best)
          best = k;
      }
      if (!best)
        continue;
      const Action a = actionOf(*best);
      const int pipe = pipeOf(a);
      if (a.kind == ActionKind::Forward && a.stage == 0) {
        ++entered[pipe];
        ++inFlight[pipe];
      } else {
        ready[r].erase(*best);
        if (a.kind == ActionKind::Backward && a.stage == 0)
          --inFlight[pipe];
      }
      --left;
      lastRun = now;
      const bool forward = a.kind == ActionKind::Forward;
      rankHolds[r] += forward ? 1 : -1;
      busyUntil[r] = fin(a) = now + (forward ? kForward : kBackward);
      if (static_cast<int>(finishing.size()) <= fin(a))
        finishing.resize(fin(a) + 1);
      finishing[fin(a)].push_back(a);
      ranks[r].push_back(a);
      if (auto c = crossing(a))
        channels.deliver(c->second.first, c->second.second);
      // Its output goes to the next stage (forward) or the previous one
      // (backward), over a channel if that runs elsewhere.
      const int to = forward ? a.stage + 1 : a.stage - 1;
      if (to >= 0 && to < S && pl.device(pipe, to) != r)
        channels.send(r, pl.device(pipe, to), a);
    }
  }
  return ranks;
}

} // namespace bitpipe::sched::detail
