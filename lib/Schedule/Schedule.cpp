//===- Schedule.cpp - Placements and actions ------------------------------===//

#include "bitpipe/Schedule/Schedule.h"

#include <algorithm>
#include <set>

namespace bitpipe::sched {

std::vector<std::vector<int>> Placement::replicaGroups() const {
  std::vector<std::set<int>> holders(numStages);
  for (const Pipeline &p : pipelines)
    for (int s = 0; s < numStages; ++s)
      holders[s].insert(p.stageDevice[s]);
  std::vector<std::vector<int>> groups;
  groups.reserve(numStages);
  for (const std::set<int> &h : holders)
    groups.emplace_back(h.begin(), h.end());
  return groups;
}

std::string Action::str() const {
  switch (kind) {
  case ActionKind::Forward:
    return "F" + std::to_string(microbatch) + ".s" + std::to_string(stage);
  case ActionKind::Backward:
    return "B" + std::to_string(microbatch) + ".s" + std::to_string(stage);
  case ActionKind::WeightGrad:
    return "W" + std::to_string(microbatch) + ".s" + std::to_string(stage);
  case ActionKind::AllReduce: {
    std::string s = "AR(";
    for (size_t i = 0; i < stages.size(); ++i)
      s += (i ? "," : "") + std::to_string(stages[i]);
    return s + ")";
  }
  }
  return "?";
}

int peakStashes(const std::vector<Action> &actions, bool splitBackward) {
  const ActionKind frees =
      splitBackward ? ActionKind::WeightGrad : ActionKind::Backward;
  int live = 0, peak = 0;
  for (const Action &a : actions) {
    if (a.kind == ActionKind::Forward)
      peak = std::max(peak, ++live);
    else if (a.kind == frees)
      --live;
  }
  return peak;
}

} // namespace bitpipe::sched
