//===- GradientSyncGroups.h - Who sums with whom, and over which part -*- C++
//-*-===//
//
// A manifest group names pipeline ranks and stands for each of them in
// every data-parallel copy (docs/data-parallel.md). Under the schedule's
// "gradient_sync" word such a group sums its buckets either in one
// all-reduce over all of those world ranks ("flat") or in two levels
// ("hierarchical"): a reduce-scatter among the group's members of one copy
// (BitPipe's or Chimera's mirror pair, on one node), an all-reduce of each
// member's shard across the copies (one pipeline rank's copies), and an
// all-gather among the members of the copy. A rank then moves across the
// copies only its shard: for a pair, half of what the flat all-reduce
// moves, which is what a 1F1B rank holding one copy of the stage moves.
//
// The compiler's cost model, the simulator and the runtime's communicators
// all take the rule, the groups and the shards from here, so that what is
// simulated is what runs.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_GRADIENTSYNCGROUPS_H
#define BITPIPE_BASE_GRADIENTSYNCGROUPS_H

#include "bitpipe/program.h"

#include <cstdint>
#include <vector>

namespace bitpipe::base {

/// Whether a group of \p groupMembers pipeline ranks in \p dataParallel
/// copies sums in two levels under \p sync: only a group of two or more
/// pipeline ranks with two or more copies has two levels to use.
bool syncsInTwoLevels(bp_gradient_sync sync, int64_t groupMembers,
                      int64_t dataParallel);

/// The world ranks of the two levels of a group of pipeline ranks
/// \p group (sorted) in \p dataParallel copies of \p devices pipeline
/// ranks. Each level is a partition of the group's world ranks: a rank is
/// in exactly one part of each.
struct TwoLevelGroups {
  /// Per copy c: c * devices + p for p in the group (the reduce-scatter's
  /// and the all-gather's members, in the group's order).
  std::vector<std::vector<int>> withinCopy;
  /// Per member p of the group: c * devices + p for every copy c (the
  /// shard's all-reduce).
  std::vector<std::vector<int>> acrossCopies;
};
TwoLevelGroups twoLevelGroups(const std::vector<int> &group, int devices,
                              int dataParallel);

/// How a bucket of \p count elements splits among the \p parts members of
/// a copy: \p parts equal shards of `shard` elements from the start, member
/// i's at i * shard (what NCCL's reduce-scatter and all-gather need: equal
/// counts), and a tail of fewer than \p parts elements after them, which
/// is summed over the whole group in one all-reduce (it has nothing to
/// shard).
struct ShardLayout {
  int64_t shard = 0;
  int64_t tail = 0;
  int parts = 1;

  int64_t offset(int member) const { return shard * member; }
  /// The elements the shards cover: parts * shard.
  int64_t sharded() const { return shard * parts; }
};
ShardLayout shardLayout(int64_t count, int parts);

/// Under a sharded optimizer (docs/data-parallel.md, "Sharded optimizer")
/// every world rank of a group holds AdamW's state of one equal part of
/// each of the group's buckets: \p members pipeline ranks in \p copies
/// copies make members * copies shards. A bucket is padded (with zeros)
/// to a multiple of that, so that no shard has a tail.
int64_t optimizerShards(int64_t members, int64_t copies);
/// \p count rounded up to a multiple of \p shards (>= 1).
int64_t padForShards(int64_t count, int64_t shards);

/// The elements [offset, offset + count) of a padded bucket whose optimizer
/// state member \p member (the group's member-th pipeline rank) of copy
/// \p copy holds. It is the part of the bucket's sum that the
/// reduce-scatter leaves that rank: summed flat, over the group's world
/// ranks in increasing order, the rank at position copy * members + member
/// gets the shard of that index; in two levels, member i of copy c first
/// gets [i * s, (i + 1) * s) of the copy's sum (s = count / members), and
/// the reduce-scatter across the copies leaves it [i * s + c * s2, + s2)
/// of that (s2 = s / copies). \p count must be a multiple of
/// optimizerShards(members, copies).
struct OptimizerShard {
  int64_t offset = 0;
  int64_t count = 0;
};
OptimizerShard optimizerShard(int64_t count, int members, int copies,
                              int member, int copy, bool twoLevels);

} // namespace bitpipe::base

#endif // BITPIPE_BASE_GRADIENTSYNCGROUPS_H
