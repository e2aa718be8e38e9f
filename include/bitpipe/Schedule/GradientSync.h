//===- GradientSync.h - Where and how replica gradients are summed -*- C++ -*-===//
//
// Data parallelism as the PyTorch DDP paper does it, on top of a pipeline
// schedule. The world is `dataParallel` copies of the pipeline's devices
// (rank = copy * D + device). The gradients of a stage are summed over every
// rank that holds a copy of it: BitPipe's or Chimera's mirror partner and
// the data-parallel copies, in one all-reduce, not one per kind of replica.
// They are packed into buckets in the order the backward finishes them; a
// bucket's all-reduce starts at the stage's sync point (after its last
// backward on that rank: earlier micro-batches only accumulate) and is
// waited for before the optimizer step.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_GRADIENTSYNC_H
#define BITPIPE_SCHEDULE_GRADIENTSYNC_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitpipe::sched {

/// Ranks of `dataParallel` copies of a pipeline of `pipelineDevices`.
/// Device d of copy c is world rank c * D + d; the IR and the runtime call
/// d the *pipeline rank* (docs/data-parallel.md): a compiled module holds
/// one program per pipeline rank, which every copy runs.
struct World {
  int pipelineDevices = 1;
  int dataParallel = 1;

  int size() const { return pipelineDevices * dataParallel; }
  int rank(int copy, int device) const { return copy * pipelineDevices + device; }
  int device(int rank) const { return rank % pipelineDevices; }
  int copy(int rank) const { return rank / pipelineDevices; }
};

/// How a group of pipeline ranks sums its gradients across the
/// data-parallel copies (docs/data-parallel.md, "Two levels"). The numbering
/// and the names are the manifest's ("gradient_sync", bp_gradient_sync),
/// the rule of which groups have two levels and their shards
/// bitpipe/base/GradientSyncGroups.h's.
enum class GradientSync {
  /// One all-reduce over every replica of the group's stages.
  Flat,
  /// A group of two or more pipeline ranks in two or more copies:
  /// reduce-scatter among its members in each copy, all-reduce of each
  /// member's shard across the copies, all-gather in each copy. A rank
  /// sends across copies only its shard. Other groups sum flat.
  Hierarchical,
};

/// "flat", "hierarchical": the manifest's words.
const char *gradientSyncName(GradientSync sync);
std::optional<GradientSync> parseGradientSync(std::string_view name);
/// "'flat' or 'hierarchical'", for messages that list what is accepted.
std::string gradientSyncChoices();
/// Whether a group of `members` pipeline ranks sums in two levels under
/// `sync` in `world`.
bool syncsInTwoLevels(GradientSync sync, int members, const World &world);

/// Every rank holding a copy of `stage`, sorted: the placement's holders in
/// each data-parallel copy.
std::vector<int> stageReplicaRanks(const Placement &placement, int stage,
                                   const World &world);

/// The world ranks of a group named by pipeline ranks: each of them in
/// every copy, sorted. The IR and the manifest name an all-reduce group so,
/// since every copy reduces alike (docs/data-parallel.md).
std::vector<int> worldGroup(const std::vector<int> &pipelineRanks,
                            const World &world);

/// The inverse of worldGroup: the pipeline ranks of a world group that
/// spans every copy alike (copy 0's members), sorted.
std::vector<int> pipelineGroup(const std::vector<int> &worldRanks,
                               const World &world);

/// A point in one rank's program where gradients become final.
struct SyncPoint {
  /// Index in the rank's action list after which the all-reduces start.
  int afterAction = -1;
  /// The stages whose gradients are final there, sorted.
  std::vector<int> stages;
};

/// The sync points of a device's program. Where the schedule has AR actions
/// (BitPipe's eager all-reduce, Chimera's), they are the sync points, in
/// order. Otherwise each stage the device holds gets one after its last
/// backward or weight-gradient action.
std::vector<SyncPoint> gradientSyncPoints(const Schedule &schedule,
                                          int device);

/// The schedule with its gradient all-reduces, as the compiler inserts them
/// (bitpipe-insert-allreduce, docs/data-parallel.md): a schedule whose
/// generator places AR actions (BitPipe's eager all-reduce, Chimera's) is
/// returned as it is; any other (GPipe, 1F1B, interleaved 1F1B, ZB-H1,
/// ZB-V) gets one AR of each sync point's stages right after that point's
/// action (gradientSyncPoints). Whatever simulates or compares schedules
/// with data-parallel copies should run this one: without it the
/// simulator charges those schedules no all-reduce at all.
Schedule withGradientSync(Schedule schedule);

/// One gradient tensor of a stage.
struct GradientTensor {
  std::string name;
  int stage = -1;
  int64_t bytes = 0;
};

/// Gradients all-reduced together.
struct GradientBucket {
  std::vector<int> ranks;   ///< The replica group, sorted.
  std::vector<int> tensors; ///< Indices into the planned tensors.
  int64_t bytes = 0;
  int syncPoint = -1;       ///< Index into the sync points.
};

/// Packs the gradients of one rank into buckets. `tensors` lists them in the
/// order the backward finishes them; `syncPoints` says when each stage's
/// gradients are final. Buckets hold at most `capBytes` (a larger tensor
/// gets a bucket of its own, as in DDP), belong to one sync point and one
/// replica group, and follow the tensors' order. Stages held by a single
/// rank need no all-reduce and get no bucket.
Result<std::vector<GradientBucket>>
planGradientBuckets(const std::vector<GradientTensor> &tensors,
                    const std::vector<SyncPoint> &syncPoints,
                    const Placement &placement, const World &world, int rank,
                    int64_t capBytes);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_GRADIENTSYNC_H
