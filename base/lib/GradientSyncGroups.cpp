//===- GradientSyncGroups.cpp - Who sums with whom ------------------------===//

#include "bitpipe/base/GradientSyncGroups.h"

namespace bitpipe::base {

bool syncsInTwoLevels(bp_gradient_sync sync, int64_t groupMembers,
                      int64_t dataParallel) {
  return sync == BP_GRADIENT_SYNC_HIERARCHICAL && groupMembers >= 2 &&
         dataParallel >= 2;
}

TwoLevelGroups twoLevelGroups(const std::vector<int> &group, int devices,
                              int dataParallel) {
  TwoLevelGroups g;
  for (int c = 0; c < dataParallel; ++c) {
    std::vector<int> copy;
    for (int p : group)
      copy.push_back(c * devices + p);
    g.withinCopy.push_back(std::move(copy));
  }
  for (int p : group) {
    std::vector<int> copies;
    for (int c = 0; c < dataParallel; ++c)
      copies.push_back(c * devices + p);
    g.acrossCopies.push_back(std::move(copies));
  }
  return g;
}

ShardLayout shardLayout(int64_t count, int parts) {
  ShardLayout l;
  l.parts = parts < 1 ? 1 : parts;
  l.shard = count / l.parts;
  l.tail = count - l.shard * l.parts;
  return l;
}

} // namespace bitpipe::base
