//===- ZeroBubbleFill.cpp - Placing split backwards under unit costs ------===//

#include "ZeroBubbleFill.h"
#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Dependencies.h"

#include <algorithm>
#include <deque>
#include <optional>

namespace bitpipe::sched::detail {

namespace {

/// When each F and B of a unit-cost run ends; -1 while it has not run.
class UnitClock {
public:
  UnitClock(int microbatches, int stages)
      : stages_(stages),
        end_(static_cast<size_t>(microbatches) * stages * 2, -1) {}

  /// The action's inputs (Dependencies.h) have all ended by `now`.
  bool ready(const Action &a, long now) const {
    ActionInputs in = inputsOf(a, stages_);
    for (const std::optional<Action> &input : {in.sameStage, in.crossStage})
      if (input) {
        long e = end_[slot(*input)];
        if (e < 0 || e > now)
          return false;
      }
    return true;
  }
  void ran(const Action &a, long end) {
    if (a.kind != ActionKind::WeightGrad)
      end_[slot(a)] = end;
  }

private:
  size_t slot(const Action &a) const {
    return (static_cast<size_t>(a.microbatch) * stages_ + a.stage) * 2 +
           (a.kind == ActionKind::Backward ? 1 : 0);
  }
  int stages_;
  std::vector<long> end_;
};

/// One rank's running record: what it ran and the stashes it holds.
struct RankState {
  std::vector<Action> out;
  std::deque<Action> waitingW; ///< W halves whose B has run, oldest first.
  int live = 0;                ///< Stashes from F to W.
  long busyUntil = 0;

  void run(const Action &a, long now, UnitClock &clock) {
    out.push_back(a);
    busyUntil = now + 1;
    clock.ran(a, now + 1);
    if (a.kind == ActionKind::Forward)
      ++live;
    else if (a.kind == ActionKind::Backward)
      waitingW.push_back(Action::weightGrad(a.microbatch, a.stage));
    else
      --live;
  }
  std::optional<Action> takeW() {
    if (waitingW.empty())
      return std::nullopt;
    Action w = waitingW.front();
    waitingW.pop_front();
    return w;
  }
};

} // namespace

std::vector<std::vector<Action>>
splitAndFillWeightGrads(const Schedule &unsplit,
                        const std::vector<int> &liveCap) {
  const int R = unsplit.numRanks();
  std::vector<std::vector<Action>> order(R);
  size_t left = 0;
  for (int r = 0; r < R; ++r)
    for (const Action &a : unsplit.ranks[r])
      if (a.kind == ActionKind::Forward || a.kind == ActionKind::Backward) {
        order[r].push_back(a);
        left += a.kind == ActionKind::Backward ? 2 : 1; // B adds its W
      }
  UnitClock clock(unsplit.numMicrobatches, unsplit.placement.numStages);
  std::vector<RankState> ranks(R);
  std::vector<size_t> next(R, 0);
  for (long now = 0; left > 0; ++now) {
    bool active = false;
    for (int r = 0; r < R; ++r) {
      RankState &rank = ranks[r];
      if (rank.busyUntil > now) {
        active = true;
        continue;
      }
      std::optional<Action> step;
      if (next[r] < order[r].size()) {
        const Action &a = order[r][next[r]];
        bool overCap = a.kind == ActionKind::Forward &&
                       rank.live >= liveCap[r] && !rank.waitingW.empty();
        if (!overCap && clock.ready(a, now)) {
          step = a;
          ++next[r];
        }
      }
      if (!step)
        step = rank.takeW();
      if (!step)
        continue;
      rank.run(*step, now, clock);
      --left;
      active = true;
    }
    // The F/B order cannot run (not a valid schedule): hand back the rest
    // unplayed, so that the verifier says why.
    if (!active) {
      for (int r = 0; r < R; ++r) {
        ranks[r].out.insert(ranks[r].out.end(), order[r].begin() + next[r],
                            order[r].end());
        for (const Action &w : ranks[r].waitingW)
          ranks[r].out.push_back(w);
      }
      break;
    }
  }
  std::vector<std::vector<Action>> out(R);
  for (int r = 0; r < R; ++r)
    out[r] = std::move(ranks[r].out);
  return out;
}

std::vector<std::vector<Action>>
listScheduleSplit(const Schedule &shape, int liveCap, bool &capExceeded) {
  const Placement &pl = shape.placement;
  const int R = pl.numDevices, S = pl.numStages;
  // A chunk: one stage of one pipeline on its device, with the micro-batches
  // of that pipeline in order and a cursor for its F's and one for its B's.
  struct Chunk {
    int stage;
    std::vector<int> microbatches;
    size_t nextF = 0, nextB = 0;
  };
  std::vector<std::vector<Chunk>> chunks(R);
  size_t left = 0;
  for (int p = 0; p < static_cast<int>(pl.pipelines.size()); ++p)
    for (int s = 0; s < S; ++s) {
      Chunk c{s, {}};
      for (int m = 0; m < shape.numMicrobatches; ++m)
        if (shape.microbatchPipeline[m] == p)
          c.microbatches.push_back(m);
      left += 3 * c.microbatches.size();
      if (!c.microbatches.empty())
        chunks[pl.device(p, s)].push_back(std::move(c));
    }
  // Furthest along its pipeline first (for F, until the rank's first B:
  // see `pick`).
  for (std::vector<Chunk> &held : chunks)
    std::stable_sort(
        held.begin(), held.end(),
        [](const Chunk &x, const Chunk &y) { return x.stage > y.stage; });
  auto deviceOf = [&](int m, int s) {
    return pl.device(shape.microbatchPipeline[m], s);
  };

  // A (src, dst) channel delivers in the order its sender produced (the
  // verifier's channel check): a consumer whose input crosses ranks may run
  // only when that input is the channel's oldest undelivered message. So
  // that the head of a channel never waits for memory, memory is granted
  // per micro-batch, on admission (its first F): it reserves a stash for
  // each of its stages on every rank, which that stage's W returns, and is
  // admitted only when every rank has room. An admitted micro-batch then
  // runs to the end without waiting for memory.
  ChannelOrder channels(R);
  std::vector<std::vector<int>> stagesOn(pl.pipelines.size(),
                                         std::vector<int>(R, 0));
  for (size_t p = 0; p < pl.pipelines.size(); ++p)
    for (int s = 0; s < S; ++s)
      ++stagesOn[p][pl.device(static_cast<int>(p), s)];
  std::vector<int> reserved(R, 0);
  UnitClock clock(shape.numMicrobatches, S);
  std::vector<RankState> ranks(R);
  auto admissible = [&](int m) {
    const std::vector<int> &need = stagesOn[shape.microbatchPipeline[m]];
    for (int r = 0; r < R; ++r)
      if (reserved[r] + need[r] > liveCap)
        return false;
    return true;
  };
  // Can rank r run `a` now? Inputs done, first in its channel, and (unless
  // ignoreCap) room for the micro-batch it admits.
  auto runnable = [&](int r, const Action &a, long now, bool ignoreCap) {
    if (!clock.ready(a, now))
      return false;
    ActionInputs in = inputsOf(a, S);
    if (in.crossStage) {
      int src = deviceOf(in.crossStage->microbatch, in.crossStage->stage);
      if (src != r && !channels.isNext(src, r, *in.crossStage))
        return false;
    }
    return a.kind != ActionKind::Forward || a.stage != 0 || ignoreCap ||
           admissible(a.microbatch);
  };
  // Delivers `a`'s input and posts its output on their channels.
  auto communicate = [&](int r, const Action &a) {
    ActionInputs in = inputsOf(a, S);
    if (in.crossStage) {
      int src = deviceOf(in.crossStage->microbatch, in.crossStage->stage);
      if (src != r)
        channels.deliver(src, r);
    }
    if (a.kind == ActionKind::Forward && a.stage == 0) {
      const std::vector<int> &need =
          stagesOn[shape.microbatchPipeline[a.microbatch]];
      for (int q = 0; q < R; ++q)
        reserved[q] += need[q];
    }
    if (a.kind == ActionKind::WeightGrad)
      --reserved[r];
    std::optional<Action> consumer;
    if (a.kind == ActionKind::Forward && a.stage + 1 < S)
      consumer = Action::forward(a.microbatch, a.stage + 1);
    if (a.kind == ActionKind::Backward && a.stage > 0)
      consumer = Action::backward(a.microbatch, a.stage - 1);
    if (consumer) {
      int dst = deviceOf(consumer->microbatch, consumer->stage);
      if (dst != r)
        channels.send(r, dst, a);
    }
  };
  // The first chunk whose next F (or B) can run, or null. B's go furthest
  // along first (nearest the loss: the critical path). F's too during the
  // warm-up, to reach the loss and start the backwards sooner; once the
  // rank has run a B, the F's nearest the start go first, to keep the ranks
  // downstream supplied. (This order also settles into a steady state that
  // repeats every micro-batch, which the rolled rank programs need:
  // docs/repetition.md.)
  std::vector<bool> sawBackward(R, false);
  auto pick = [&](int r, bool forward, long now, bool ignoreCap) -> Chunk * {
    const int n = static_cast<int>(chunks[r].size());
    const bool firstArmFirst = forward && sawBackward[r];
    for (int i = 0; i < n; ++i) {
      Chunk &c = chunks[r][firstArmFirst ? n - 1 - i : i];
      size_t k = forward ? c.nextF : c.nextB;
      if (k >= c.microbatches.size())
        continue;
      Action a = forward ? Action::forward(c.microbatches[k], c.stage)
                         : Action::backward(c.microbatches[k], c.stage);
      if (runnable(r, a, now, ignoreCap))
        return &c;
    }
    return nullptr;
  };
  capExceeded = false;
  for (long now = 0; left > 0; ++now) {
    bool active = false;
    for (bool ignoreCap : {false, true}) {
      for (int r = 0; r < R; ++r) {
        RankState &rank = ranks[r];
        if (rank.busyUntil > now) {
          active = true;
          continue;
        }
        std::optional<Action> step;
        if (Chunk *c = pick(r, /*forward=*/false, now, ignoreCap)) {
          step = Action::backward(c->microbatches[c->nextB++], c->stage);
          sawBackward[r] = true;
        } else if (Chunk *c = pick(r, /*forward=*/true, now, ignoreCap)) {
          step = Action::forward(c->microbatches[c->nextF++], c->stage);
          capExceeded |= step->stage == 0 && !admissible(step->microbatch);
        } else {
          step = rank.takeW();
        }
        if (!step)
          continue;
        communicate(r, *step);
        rank.run(*step, now, clock);
        --left;
        active = true;
      }
      // Every rank stuck on the cap with nothing running: the second pass
      // lets them go over it.
      if (active)
        break;
    }
    if (!active)
      break; // Unreachable for a placement whose stages all have devices.
  }
  std::vector<std::vector<Action>> out(R);
  for (int r = 0; r < R; ++r)
    out[r] = std::move(ranks[r].out);
  return out;
}

} // namespace bitpipe::sched::detail
