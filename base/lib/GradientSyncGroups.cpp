//===- GradientSyncGroups.cpp - Who sums with whom ------------------------===//

#include "bitpipe/base/GradientSyncGroups.h"

#include <algorithm>

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

int64_t optimizerShards(int64_t members, int64_t copies) {
  return std::max<int64_t>(members, 1) * std::max<int64_t>(copies, 1);
}

int64_t padForShards(int64_t count, int64_t shards) {
  shards = std::max<int64_t>(shards, 1);
  return (count + shards - 1) / shards * shards;
}

OptimizerShard optimizerShard(int64_t count, int members, int copies,
                              int member, int copy, bool twoLevels) {
  const int64_t size = count / optimizerShards(members, copies);
  const int64_t index = twoLevels
                            ? static_cast<int64_t>(member) * copies + copy
                            : static_cast<int64_t>(copy) * members + member;
  return OptimizerShard{index * size, size};
}

} // namespace bitpipe::base
