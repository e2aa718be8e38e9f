//===- GradientSync.cpp - Sync points and gradient buckets ----------------===//

#include "bitpipe/Schedule/GradientSync.h"

#include "bitpipe/base/GradientSyncGroups.h"
#include "bitpipe/program.h"

#include <algorithm>
#include <map>
#include <set>

namespace bitpipe::sched {

static_assert(static_cast<int>(GradientSync::Flat) == BP_GRADIENT_SYNC_FLAT &&
                  static_cast<int>(GradientSync::Hierarchical) ==
                      BP_GRADIENT_SYNC_HIERARCHICAL &&
                  BP_NUM_GRADIENT_SYNCS == 2,
              "GradientSync must number the schemes as program.h does");

const char *gradientSyncName(GradientSync sync) {
  return bp_gradient_sync_names[static_cast<int>(sync)];
}

std::optional<GradientSync> parseGradientSync(std::string_view name) {
  for (GradientSync s : {GradientSync::Flat, GradientSync::Hierarchical})
    if (name == gradientSyncName(s))
      return s;
  return std::nullopt;
}

std::string gradientSyncChoices() {
  return std::string("'") + gradientSyncName(GradientSync::Flat) + "' or '" +
         gradientSyncName(GradientSync::Hierarchical) + "'";
}

bool syncsInTwoLevels(GradientSync sync, int members, const World &world) {
  return base::syncsInTwoLevels(static_cast<bp_gradient_sync>(sync), members,
                                world.dataParallel);
}

std::vector<int> stageReplicaRanks(const Placement &placement, int stage,
                                   const World &world) {
  std::set<int> devices;
  for (const Pipeline &p : placement.pipelines)
    devices.insert(p.stageDevice[stage]);
  return worldGroup(std::vector<int>(devices.begin(), devices.end()), world);
}

std::vector<int> worldGroup(const std::vector<int> &pipelineRanks,
                            const World &world) {
  std::vector<int> ranks;
  ranks.reserve(pipelineRanks.size() * world.dataParallel);
  for (int copy = 0; copy < world.dataParallel; ++copy)
    for (int d : pipelineRanks)
      ranks.push_back(world.rank(copy, d));
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<int> pipelineGroup(const std::vector<int> &worldRanks,
                               const World &world) {
  std::vector<int> ranks;
  for (int r : worldRanks)
    if (world.copy(r) == 0)
      ranks.push_back(r);
  std::sort(ranks.begin(), ranks.end());
  return ranks;
}

std::vector<SyncPoint> gradientSyncPoints(const Schedule &schedule,
                                          int device) {
  const std::vector<Action> &actions = schedule.ranks[device];
  std::vector<SyncPoint> points;
  for (int i = 0; i < static_cast<int>(actions.size()); ++i)
    if (actions[i].kind == ActionKind::AllReduce)
      points.push_back({i, actions[i].stages});
  if (!points.empty())
    return points;

  // No AR actions: each stage syncs after its last backward work here.
  std::map<int, int> lastBackward; // stage -> action index
  for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
    const Action &a = actions[i];
    bool backwardWork = a.kind == ActionKind::WeightGrad ||
                        (a.kind == ActionKind::Backward &&
                         !schedule.splitBackward);
    if (backwardWork)
      lastBackward[a.stage] = i;
  }
  for (auto [stage, index] : lastBackward)
    points.push_back({index, {stage}});
  std::sort(points.begin(), points.end(),
            [](const SyncPoint &a, const SyncPoint &b) {
              return a.afterAction < b.afterAction;
            });
  return points;
}

Schedule withGradientSync(Schedule schedule) {
  for (const std::vector<Action> &actions : schedule.ranks)
    for (const Action &a : actions)
      if (a.kind == ActionKind::AllReduce)
        return schedule;
  for (int d = 0; d < schedule.numRanks(); ++d) {
    std::vector<SyncPoint> points = gradientSyncPoints(schedule, d);
    std::vector<Action> &actions = schedule.ranks[d];
    // From the last point back, so that earlier indices stay valid.
    for (auto it = points.rbegin(); it != points.rend(); ++it)
      actions.insert(actions.begin() + it->afterAction + 1,
                     Action::allReduce(it->stages));
  }
  return schedule;
}

Result<std::vector<GradientBucket>>
planGradientBuckets(const std::vector<GradientTensor> &tensors,
                    const std::vector<SyncPoint> &syncPoints,
                    const Placement &placement, const World &world, int rank,
                    int64_t capBytes) {
  using R = Result<std::vector<GradientBucket>>;
  if (capBytes <= 0)
    return R::failure("bucket size must be positive, got " +
                      std::to_string(capBytes) + " bytes");
  std::map<int, int> pointOfStage;
  for (int p = 0; p < static_cast<int>(syncPoints.size()); ++p)
    for (int stage : syncPoints[p].stages)
      pointOfStage[stage] = p;

  // One open bucket per (sync point, replica group), filled in tensor order.
  std::vector<GradientBucket> buckets;
  std::map<std::pair<int, std::vector<int>>, int> open;
  for (int t = 0; t < static_cast<int>(tensors.size()); ++t) {
    const GradientTensor &g = tensors[t];
    if (g.stage < 0 || g.stage >= placement.numStages)
      return R::failure("gradient '" + g.name + "' names stage " +
                        std::to_string(g.stage) + ", but the placement has " +
                        std::to_string(placement.numStages) + " stages");
    auto point = pointOfStage.find(g.stage);
    if (point == pointOfStage.end())
      return R::failure("gradient '" + g.name + "' of stage " +
                        std::to_string(g.stage) + " has no sync point on rank " +
                        std::to_string(rank));
    std::vector<int> group = stageReplicaRanks(placement, g.stage, world);
    if (group.size() < 2)
      continue;
    if (!std::binary_search(group.begin(), group.end(), rank))
      return R::failure("rank " + std::to_string(rank) +
                        " does not hold stage " + std::to_string(g.stage) +
                        " of gradient '" + g.name + "'");
    auto key = std::make_pair(point->second, group);
    auto it = open.find(key);
    if (it != open.end() &&
        buckets[it->second].bytes + g.bytes > capBytes &&
        buckets[it->second].bytes > 0) {
      open.erase(it);
      it = open.end();
    }
    if (it == open.end()) {
      buckets.push_back({group, {}, 0, point->second});
      it = open.emplace(key, static_cast<int>(buckets.size()) - 1).first;
    }
    GradientBucket &b = buckets[it->second];
    b.tensors.push_back(t);
    b.bytes += g.bytes;
  }
  // Start order: by sync point, then in the order buckets were opened.
  std::stable_sort(buckets.begin(), buckets.end(),
                   [](const GradientBucket &a, const GradientBucket &b) {
                     return a.syncPoint < b.syncPoint;
                   });
  return R::success(std::move(buckets));
}

} // namespace bitpipe::sched
