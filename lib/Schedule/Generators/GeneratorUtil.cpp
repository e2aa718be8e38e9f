//===- GeneratorUtil.cpp - Helpers shared by the generators ---------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Dependencies.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"

#include <algorithm>
#include <optional>
#include <tuple>

namespace bitpipe::sched::detail {

Result<Schedule> emptySchedule(const std::string &name, int devices,
                               int microbatches, int chunksPerDevice,
                               std::optional<int> maxInFlight) {
  std::string err =
      checkArguments(name, devices, microbatches, chunksPerDevice, maxInFlight);
  if (!err.empty())
    return Result<Schedule>::failure(err);
  // checkArguments has found the entry.
  const PlacementKind kind = findSchedule(name)->placement;
  Result<Placement> placement = makePlacement(kind, devices, chunksPerDevice);
  if (!placement)
    return Result<Schedule>::failure(placement.error);
  Schedule s;
  s.name = name;
  s.placement = std::move(*placement);
  s.numMicrobatches = microbatches;
  if (pipelineCount(kind) == 2)
    s.microbatchPipeline =
        bidirectionalMicrobatchPipelines(devices, microbatches);
  else
    s.microbatchPipeline.assign(microbatches, 0);
  s.ranks.resize(devices);
  return Result<Schedule>::success(std::move(s));
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

namespace {

/// For every stage, the time its gradients are final on all of its holders
/// (end of its last B or W anywhere) when `schedule` runs under unit costs
/// with free communication. All zeros if it cannot run; the verifier then
/// says why.
std::vector<double> gradientsFinal(const Schedule &schedule) {
  std::vector<double> done(schedule.placement.numStages, 0.0);
  Result<SimResult> sim = simulate(schedule, CostModel());
  if (!sim || sim->deadlocked)
    return done;
  for (const TimelineEvent &e : sim->timeline)
    if (e.lane == Lane::Compute && producesGradients(e.action))
      done[e.action.stage] = std::max(done[e.action.stage], e.end);
  return done;
}

} // namespace

void insertAllReducesAfterLastBackward(
    Schedule &schedule,
    const std::function<std::vector<std::vector<int>>(int rank)>
        &groupsOfRank) {
  const std::vector<double> finalAt = gradientsFinal(schedule);
  const std::vector<std::vector<int>> replicas =
      schedule.placement.replicaGroups();
  auto ready = [&](const std::vector<int> &group) {
    double t = 0;
    for (int st : group)
      t = std::max(t, finalAt[st]);
    return t;
  };

  struct Item {
    std::vector<int> group;
    int last = -1; ///< Index of the rank's last B/W of the group, or -1.
    int pos = -1;  ///< The AR goes right after actions[pos].
    int order = 0; ///< Among ARs at the same pos.
  };
  for (int r = 0; r < schedule.numRanks(); ++r) {
    std::vector<Action> &actions = schedule.ranks[r];
    const int size = static_cast<int>(actions.size());
    std::vector<Item> items;
    for (std::vector<int> group : groupsOfRank(r)) {
      std::sort(group.begin(), group.end());
      Item item;
      for (int i = 0; i < size; ++i)
        if (producesGradients(actions[i]) &&
            std::binary_search(group.begin(), group.end(), actions[i].stage))
          item.last = i;
      item.group = std::move(group);
      items.push_back(std::move(item));
    }
    // The agreed order, within each replica group (ARs of different replica
    // groups never meet, so they need no common order).
    std::stable_sort(
        items.begin(), items.end(), [&](const Item &x, const Item &y) {
          const std::vector<int> &gx = replicas[x.group.front()];
          const std::vector<int> &gy = replicas[y.group.front()];
          double tx = ready(x.group), ty = ready(y.group);
          return std::tie(gx, tx, x.group) < std::tie(gy, ty, y.group);
        });
    for (size_t k = 0; k < items.size();) {
      const std::vector<int> &replica = replicas[items[k].group.front()];
      size_t end = k;
      while (end < items.size() &&
             replicas[items[end].group.front()] == replica)
        ++end;
      // As eager as the order allows: after the rank's last backward of the
      // group and after the replica group's previous AR.
      int prev = -1;
      std::vector<Item *> waiting; // No backward here: wait for the next AR.
      for (size_t i = k; i < end; ++i) {
        Item &item = items[i];
        if (item.last < 0) {
          waiting.push_back(&item);
          continue;
        }
        item.pos = prev = std::max(prev, item.last);
        for (Item *w : waiting)
          w->pos = prev;
        waiting.clear();
      }
      for (Item *w : waiting)
        w->pos = size - 1;
      k = end;
    }
    for (size_t i = 0; i < items.size(); ++i)
      items[i].order = static_cast<int>(i);
    // Insert from the back so that earlier positions stay valid; ties in
    // reverse order so that they end up in the agreed order.
    std::sort(items.begin(), items.end(), [](const Item &x, const Item &y) {
      return std::tie(x.pos, x.order) > std::tie(y.pos, y.order);
    });
    for (Item &item : items)
      actions.insert(actions.begin() + item.pos + 1,
                     Action::allReduce(std::move(item.group)));
  }
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
    ActionInputs inputs = inputsOf(a, S);
    for (const std::optional<Action> &input :
         {inputs.sameStage, inputs.crossStage}) {
      if (!input)
        continue;
      int f = fin(input->microbatch, input->stage,
                  input->kind == ActionKind::Backward);
      if (f < 0 || f > now)
        return -1;
      t = std::max(t, f);
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

std::function<std::vector<std::vector<int>>(int rank)>
bitPipeSyncGroups(const Placement &placement) {
  return [placement](int r) {
    const int half = placement.numStages / 2;
    std::vector<int> first, second;
    for (int stage = 0; stage < placement.numStages; ++stage)
      for (const Pipeline &p : placement.pipelines)
        if (p.stageDevice[stage] == r)
          (stage < half ? first : second).push_back(stage);
    return std::vector<std::vector<int>>{second, first};
  };
}

} // namespace bitpipe::sched::detail
