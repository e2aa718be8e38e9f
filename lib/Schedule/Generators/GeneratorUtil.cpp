//===- GeneratorUtil.cpp - Helpers shared by the generators ---------------===//

#include "GeneratorUtil.h"

#include <algorithm>
#include <tuple>

namespace bitpipe::sched::detail {

std::string checkCounts(const std::string &schedule, int devices,
                        int microbatches) {
  if (devices < 1)
    return schedule + " needs at least 1 device, got " +
           std::to_string(devices);
  if (microbatches < 1)
    return schedule + " needs at least 1 micro-batch, got " +
           std::to_string(microbatches);
  return {};
}

std::string checkEvenDevices(const std::string &schedule, int devices) {
  if (devices % 2 != 0)
    return schedule + " needs an even number of devices, got " +
           std::to_string(devices);
  return {};
}

std::vector<int> bidirectionalMicrobatchPipelines(int devices,
                                                  int microbatches) {
  std::vector<int> pipe(microbatches);
  int fullUnits = microbatches / devices;
  int rest = microbatches % devices;
  for (int m = 0; m < microbatches; ++m) {
    int unit = m / devices, pos = m % devices;
    int down = unit < fullUnits ? devices / 2 : (rest + 1) / 2;
    pipe[m] = pos < down ? 0 : 1;
  }
  return pipe;
}

void insertAllReducesAfterLastBackward(
    Schedule &schedule,
    const std::function<std::vector<std::vector<int>>(int rank)> &groupsOfRank) {
  for (int r = 0; r < schedule.numRanks(); ++r) {
    std::vector<Action> &actions = schedule.ranks[r];
    // Position (index) of the last B/W of each group. A group with no
    // backward here (no micro-batch took that direction through this rank)
    // still needs its AR, at the end: the partner's gradient must reach
    // this replica. Insert from the back so that earlier positions stay
    // valid; ties (only at the end) in reverse group order so that the
    // groups keep their order.
    struct Insert {
      int pos, order;
      std::vector<int> group;
    };
    std::vector<Insert> inserts;
    int order = 0;
    for (std::vector<int> group : groupsOfRank(r)) {
      std::sort(group.begin(), group.end());
      int last = -1;
      for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
        const Action &a = actions[i];
        if ((a.kind == ActionKind::Backward ||
             a.kind == ActionKind::WeightGrad) &&
            std::binary_search(group.begin(), group.end(), a.stage))
          last = i;
      }
      if (last < 0)
        last = static_cast<int>(actions.size()) - 1;
      inserts.push_back({last, order++, std::move(group)});
    }
    std::sort(inserts.begin(), inserts.end(),
              [](const Insert &x, const Insert &y) {
                return std::tie(x.pos, x.order) > std::tie(y.pos, y.order);
              });
    for (Insert &in : inserts)
      actions.insert(actions.begin() + in.pos + 1,
                     Action::allReduce(std::move(in.group)));
  }
}

namespace {

/// Done flags of (micro-batch, stage, kind) for F, B, W.
class DoneTable {
public:
  DoneTable(int microbatches, int stages)
      : stages(stages), flags(static_cast<size_t>(microbatches) * stages * 3) {}
  bool inRange(int m, int s) const {
    return m >= 0 && s >= 0 && s < stages &&
           static_cast<size_t>(m) * stages * 3 < flags.size();
  }
  int &at(int m, int s, ActionKind k) {
    return flags[(static_cast<size_t>(m) * stages + s) * 3 +
                 static_cast<int>(k)];
  }

private:
  int stages;
  std::vector<int> flags;
};

} // namespace

std::string findDeadlock(const Schedule &schedule) {
  int S = schedule.placement.numStages;
  DoneTable done(schedule.numMicrobatches, S);
  std::vector<size_t> next(schedule.numRanks(), 0);
  auto ready = [&](const Action &a) {
    if (a.kind == ActionKind::AllReduce)
      return true;
    if (!done.inRange(a.microbatch, a.stage))
      return false;
    switch (a.kind) {
    case ActionKind::Forward:
      return a.stage == 0 || done.at(a.microbatch, a.stage - 1, a.kind);
    case ActionKind::Backward:
      return done.at(a.microbatch, a.stage, ActionKind::Forward) &&
             (a.stage == S - 1 ||
              done.at(a.microbatch, a.stage + 1, ActionKind::Backward));
    case ActionKind::WeightGrad:
      return done.at(a.microbatch, a.stage, ActionKind::Backward) != 0;
    default:
      return true;
    }
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < schedule.numRanks(); ++r) {
      const std::vector<Action> &list = schedule.ranks[r];
      while (next[r] < list.size() && ready(list[next[r]])) {
        const Action &a = list[next[r]];
        if (a.kind != ActionKind::AllReduce)
          done.at(a.microbatch, a.stage, a.kind) = 1;
        ++next[r];
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int r = 0; r < schedule.numRanks(); ++r)
    if (next[r] < schedule.ranks[r].size())
      stuck += (stuck.empty() ? "" : ", ") + std::string("rank ") +
               std::to_string(r) + " at " + schedule.ranks[r][next[r]].str();
  return stuck;
}

bool playTimes(const Schedule &schedule, int costF, int costB, int costW,
               std::vector<std::vector<int>> &start) {
  int S = schedule.placement.numStages;
  DoneTable end(schedule.numMicrobatches, S);
  // end.at() holds finish time + 1 (0 = not done yet).
  std::vector<size_t> next(schedule.numRanks(), 0);
  std::vector<int> freeAt(schedule.numRanks(), 0);
  start.assign(schedule.numRanks(), {});
  auto need = [&](int m, int s, ActionKind k, int &t) {
    if (!end.inRange(m, s) || end.at(m, s, k) == 0)
      return false;
    t = std::max(t, end.at(m, s, k) - 1);
    return true;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < schedule.numRanks(); ++r) {
      const std::vector<Action> &list = schedule.ranks[r];
      while (next[r] < list.size()) {
        const Action &a = list[next[r]];
        int t = freeAt[r], cost = 0;
        bool ready = true;
        switch (a.kind) {
        case ActionKind::Forward:
          ready = a.stage == 0 ||
                  need(a.microbatch, a.stage - 1, ActionKind::Forward, t);
          cost = costF;
          break;
        case ActionKind::Backward:
          ready = need(a.microbatch, a.stage, ActionKind::Forward, t) &&
                  (a.stage == S - 1 ||
                   need(a.microbatch, a.stage + 1, ActionKind::Backward, t));
          cost = costB;
          break;
        case ActionKind::WeightGrad:
          ready = need(a.microbatch, a.stage, ActionKind::Backward, t);
          cost = costW;
          break;
        case ActionKind::AllReduce:
          break;
        }
        if (!ready)
          break;
        if (a.kind != ActionKind::AllReduce)
          end.at(a.microbatch, a.stage, a.kind) = t + cost + 1;
        start[r].push_back(t);
        freeAt[r] = t + cost;
        ++next[r];
        progress = true;
      }
    }
  }
  for (int r = 0; r < schedule.numRanks(); ++r)
    if (next[r] < schedule.ranks[r].size())
      return false;
  return true;
}

void appendListSchedule(const Schedule &shape,
                        const std::vector<int> &microbatches,
                        std::vector<std::vector<Action>> &ranks) {
  const Placement &pl = shape.placement;
  int S = pl.numStages;
  int maxMb = 0;
  for (int m : microbatches)
    maxMb = std::max(maxMb, m + 1);
  // finish[(m*S+s)*2 + {0: F, 1: B}]: time the action ends, -1 if not started.
  std::vector<int> finish(static_cast<size_t>(maxMb) * S * 2, -1);
  auto fin = [&](int m, int s, int b) -> int & {
    return finish[(static_cast<size_t>(m) * S + s) * 2 + b];
  };
  std::vector<std::vector<Action>> pending(pl.numDevices);
  for (int m : microbatches) {
    int p = shape.microbatchPipeline[m];
    for (int s = 0; s < S; ++s) {
      pending[pl.device(p, s)].push_back(Action::forward(m, s));
      pending[pl.device(p, s)].push_back(Action::backward(m, s));
    }
  }
  // The time at which `a`'s inputs are ready, or -1 if some input has not
  // finished by `now`.
  auto readyAt = [&](const Action &a, int now) {
    int t = 0;
    auto need = [&](int m, int s, int b) {
      int f = fin(m, s, b);
      if (f < 0 || f > now)
        t = -1;
      else if (t >= 0)
        t = std::max(t, f);
    };
    if (a.kind == ActionKind::Forward) {
      if (a.stage > 0)
        need(a.microbatch, a.stage - 1, 0);
    } else {
      need(a.microbatch, a.stage, 0);
      if (a.stage < S - 1)
        need(a.microbatch, a.stage + 1, 1);
    }
    return t;
  };
  std::vector<int> busyUntil(pl.numDevices, 0);
  size_t left = 0;
  for (const auto &p : pending)
    left += p.size();
  for (int now = 0; left > 0; ++now) {
    for (int r = 0; r < pl.numDevices; ++r) {
      if (busyUntil[r] > now)
        continue;
      int best = -1;
      std::tuple<int, int, int, int> bestKey;
      for (int i = 0; i < static_cast<int>(pending[r].size()); ++i) {
        const Action &a = pending[r][i];
        int t = readyAt(a, now);
        if (t < 0)
          continue;
        std::tuple<int, int, int, int> key{
            a.kind == ActionKind::Backward ? 0 : 1, t, a.microbatch, a.stage};
        if (best < 0 || key < bestKey) {
          best = i;
          bestKey = key;
        }
      }
      if (best < 0)
        continue;
      Action a = pending[r][best];
      pending[r].erase(pending[r].begin() + best);
      --left;
      int cost = a.kind == ActionKind::Backward ? 2 : 1;
      busyUntil[r] = now + cost;
      fin(a.microbatch, a.stage, a.kind == ActionKind::Backward) = now + cost;
      ranks[r].push_back(a);
    }
  }
}

} // namespace bitpipe::sched::detail
