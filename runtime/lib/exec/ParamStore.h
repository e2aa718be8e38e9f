//===- ParamStore.h - One rank's parameters, gradients, moments -*- C++ -*-===//
//
// The fp32 master weights of the parameters a rank holds, their gradient
// accumulators and AdamW's two moments: arrays with one layout, kept where
// the target keeps them (Backend.h's ParamArrays: host memory on the CPU,
// where the master weights are also what the stage functions read; device
// memory on CUDA, with a bf16 copy for the stage functions under bf16).
//
// The layout is DDP's bucket views: the parameters of the rank's all-reduce
// buckets come first, bucket after bucket in the manifest's bucket order,
// each bucket's parameters in its listed order; the parameters in no bucket
// follow in the rank's order. A bucket's gradients are then one contiguous
// range, and its all-reduce runs in place on it with no packing. Replicas
// list the same buckets in the same order (Manifest checks it), so the
// ranges line up element by element across the group. Each tensor starts
// on a kParamAlignment-element boundary (zero-filled gaps between them).
//
// Under a sharded optimizer (docs/data-parallel.md, "Sharded optimizer")
// each bucket's range is padded with zeros to a multiple of its group's
// world ranks, and the rank holds AdamW's state of its shard of each bucket
// only (ParamLayout::owned), plus the parameters in no bucket.
//
// The layout is known at construction; the arrays come from the target's
// backend (attach), which may fail (device memory).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_PARAMSTORE_H
#define BITPIPE_RUNTIME_EXEC_PARAMSTORE_H

#include "Backend.h"
#include "Manifest.h"
#include "train/Checkpoint.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace bitpipe::runtime {

/// Where each parameter tensor starts in the arrays, in elements: 128
/// elements are 256 bytes of bf16 (what cuBLASLt and 16-byte vector loads
/// want on the CUDA target) and 512 of fp32.
constexpr int64_t kParamAlignment = 128;

/// A contiguous range of the rank's arrays, in elements.
struct ElementRange {
  int64_t offset = 0;
  int64_t count = 0;
};

class ParamStore {
public:
  /// The layout of world rank \p rank; \p shardOptimizer shards AdamW's
  /// state across each bucket's replicas (the same on every rank).
  ParamStore(const Manifest &manifest, int rank, bool shardOptimizer = false);

  /// Allocates the arrays on \p backend's target, zeroed. Fails, naming
  /// what and how many bytes, when the layout overflows 64-bit offsets or
  /// the target has no room (the parameter store is then unusable).
  Status attach(Backend &backend);
  ParamArrays &arrays() { return *arrays_; }

  /// Manifest indices of the parameters held, in layout order.
  const std::vector<int> &layoutOrder() const { return order_; }
  bool holds(int param) const { return offset_[param] >= 0; }
  /// The element offset of parameter \p param (held) in every array.
  int64_t offset(int param) const { return offset_[param]; }
  const ParamLayout &layout() const { return layout_; }

  /// The host image of parameter \p param's master weights and moments
  /// (ParamArrays::hostParams: current between toHost() and toTarget()).
  float *hostParam(int param) { return arrays_->hostParams() + offset_[param]; }
  /// Under a sharded optimizer the moments' host image is the whole one
  /// (layout order) that ParamStore keeps between toHost() and toTarget():
  /// the rank's own parts, and its peers' after gatherHostImage().
  float *hostM(int param) { return hostMoments(0) + offset_[param]; }
  float *hostV(int param) { return hostMoments(1) + offset_[param]; }
  float *hostParamsData() { return arrays_->hostParams(); }
  /// ParamArrays::targetBytes.
  int64_t targetBytes() const { return arrays_->targetBytes(); }
  Status toHost();
  /// Sharded, the owned parts of the whole moments' image go back to the
  /// compact moments (a loaded checkpoint's: every rank reads it whole).
  Status toTarget();
  void releaseHost();

  /// Under a sharded optimizer, collectively over every rank: the
  /// communicator's groups of the manifest's (Trainer's createGroups:
  /// each group's id and, for one that sums in two levels, its levels),
  /// which gatherWeights and gatherHostImage gather over.
  void useGroups(std::vector<GroupId> groups,
                 std::vector<std::optional<TwoLevelGroup>> twoLevel);
  /// Collective over every replica, after a sharded optimizer's update:
  /// every bucket's updated shards (ParamArrays::shardedWeights) from
  /// every replica, so that all hold the same weights.
  Status gatherWeights(Communicator &comm);
  /// Collective over every rank, between toHost() and toTarget(): makes
  /// the host image whole where a sharded optimizer left it in parts
  /// (what a checkpoint's save or a dump reads): the master weights of
  /// every bucket where the target shards them
  /// (ParamArrays::shardsMasterWeights) and, with \p moments, the moments.
  /// Nothing to do unsharded.
  Status gatherHostImage(Communicator &comm, bool moments);

  /// What a stage function reads for parameter \p param (held).
  void *computeParam(int param) {
    return arrays_->computeParams(offset_[param]);
  }
  /// The accumulator of parameter \p param's gradient (held), in target
  /// memory, which a backward stage function adds into.
  void *gradientAccumulator(int param) {
    return static_cast<char *>(arrays_->gradData()) +
           offset_[param] *
               static_cast<int64_t>(dtypeSize(arrays_->gradDType()));
  }

  /// The gradient (or parameter) range of the rank's bucket \p bucket.
  const ElementRange &bucketRange(int bucket) const { return buckets_[bucket]; }
  /// Under a sharded optimizer, the part of bucket \p bucket's range whose
  /// optimizer state the rank holds (absolute offsets); the whole range
  /// otherwise.
  const ElementRange &bucketShard(int bucket) const { return shards_[bucket]; }
  bool shardsOptimizer() const { return layout_.shardedOptimizer; }
  int64_t numFloats() const { return layout_.numFloats; }

  /// Initial values from \p seed, made on the target (ParamArrays::
  /// initialize): each parameter by its manifest init, drawn by name
  /// (Init.h), so every replica starts identical; moments zero.
  Status initialize(uint64_t seed) { return arrays_->initialize(seed); }

  /// The first held parameter, in manifest order, that holds a value a
  /// checkpoint may not (checkCheckpointValues' error for it), or -1 and ok.
  /// Scanned on the target (ParamArrays::findInvalid). Fails only when the
  /// target cannot be read, with a status saying so.
  Expected<std::pair<int, Status>> firstInvalidParam();

  /// Checkpoint view of the host image (layout order).
  std::vector<CheckpointParam> checkpointParams();

private:
  /// The optimizer's parts and the norm's segments of a sharded layout.
  void shardOptimizer();
  float *hostMoments(int which);
  /// In place over \p array (this store's layout, \p dtype elements),
  /// bucket by bucket: each replica's shard to every replica of the
  /// bucket.
  Status gatherShards(Communicator &comm, void *array, DType dtype);

  const Manifest &manifest_;
  int rank_;
  std::vector<int> order_;
  std::vector<int64_t> offset_; // by manifest index; -1 if not held
  std::vector<int> segment_;    // by manifest index: its index in layout_.all
  std::vector<ElementRange> buckets_;
  std::vector<ElementRange> shards_;
  std::vector<int> bucketOf_; // by manifest index; -1 if in no bucket
  ParamLayout layout_;
  Status layoutError_ = Status::ok(); // set when the layout overflows
  std::unique_ptr<ParamArrays> arrays_;
  /// Sharded: the moments' whole host image (m, v) while one exists.
  std::vector<float> wholeMoments_[2];
  std::vector<GroupId> groups_;
  std::vector<std::optional<TwoLevelGroup>> twoLevel_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_PARAMSTORE_H
