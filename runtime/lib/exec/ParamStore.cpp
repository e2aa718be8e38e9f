//===- ParamStore.cpp - One rank's parameters, gradients, moments ---------===//
//-*-===//

#include "ParamStore.h"
#include "OwnedParts.h"

#include "bitpipe/base/CheckedArithmetic.h"
#include "bitpipe/base/GradientSyncGroups.h"

#include <algorithm>
#include <limits>

namespace bitpipe::runtime {

ParamStore::ParamStore(const Manifest &manifest, int rank, bool shardOptimizer)
    : manifest_(manifest), rank_(rank), offset_(manifest.params.size(), -1),
      bucketOf_(manifest.params.size(), -1) {
  const RankSpec &spec = manifest.rankSpec(rank);
  int64_t next = 0;
  // Every tensor starts on a kParamAlignment-element boundary: on the CUDA
  // target cuBLASLt picks its fast kernels and bias epilogue only for
  // 16-byte-aligned (ideally 256-byte-aligned) operands, and the
  // element-wise kernels load 16 bytes at a time only from aligned rows.
  // The gaps are zero in every array and belong to no parameter, so they
  // change no result (a bucket's all-reduce adds zeros to zeros).
  // The manifest's element counts are the user's (a hidden size of 2^40
  // is a valid number): the layout's size is summed with overflow checks,
  // up to what the largest array (fp64 gradients) can address in bytes,
  // and a layout past it is attach()'s error, not a wrapped offset.
  const int64_t limit = std::numeric_limits<int64_t>::max() /
                        static_cast<int64_t>(sizeof(double));
  auto overflow = [&](int p) {
    if (layoutError_.isOk())
      layoutError_ = Status::error(
          ErrorCode::OutOfMemory,
          formatString("the parameter store of rank %d cannot be laid out: "
                       "with parameter '%s' (%lld elements) its arrays "
                       "exceed %lld elements, more than 64-bit byte "
                       "offsets address",
                       rank, manifest.params[p].name.c_str(),
                       static_cast<long long>(manifest.params[p].numel),
                       static_cast<long long>(limit)));
  };
  auto align = [&] {
    if (next > limit - kParamAlignment)
      return false;
    next = (next + kParamAlignment - 1) / kParamAlignment * kParamAlignment;
    return true;
  };
  auto place = [&](int p) {
    int64_t end = 0;
    if (!align() || !checkedAdd(next, manifest.params[p].numel, &end) ||
        end > limit) {
      overflow(p);
      return;
    }
    offset_[p] = next;
    next = end;
    order_.push_back(p);
  };
  // Buckets first, each one contiguous (the manifest guarantees that a
  // parameter is in at most one bucket and held by the rank).
  // A bucket starts aligned, so its internal gaps are the same on every
  // replica and the ranges line up element by element.
  // Sharded, a bucket ends padded to a multiple of its shards (zeros, as
  // the gaps): equal shards, no tail (docs/data-parallel.md).
  auto pad = [&](const BucketSpec &b, ElementRange &range) {
    const int64_t shards = base::optimizerShards(
        static_cast<int64_t>(manifest.groups[b.group].size()),
        manifest.schedule.dataParallel);
    const int64_t padded = base::padForShards(range.count, shards);
    if (padded > limit - range.offset) {
      overflow(b.params.back());
      return;
    }
    range.count = padded;
    next = range.offset + padded;
  };
  for (const BucketSpec &b : spec.buckets) {
    if (!align() && !b.params.empty())
      overflow(b.params.front());
    ElementRange range{next, 0};
    for (int p : b.params) {
      place(p);
      bucketOf_[p] = static_cast<int>(buckets_.size());
    }
    range.count = next - range.offset;
    if (shardOptimizer && !b.params.empty())
      pad(b, range);
    buckets_.push_back(range);
  }
  for (int p : spec.params)
    if (offset_[p] < 0)
      place(p);
  layout_.numFloats = next;
  segment_.assign(manifest.params.size(), -1);
  for (int p : order_) {
    const ParamSpec &ps = manifest.params[p];
    ParamSegment seg{ps.name,  offset_[p], ps.numel,
                     ps.decay, ps.init,    ps.stddev};
    segment_[p] = static_cast<int>(layout_.all.size());
    layout_.all.push_back(seg);
    // Each parameter is counted once in the global norm, by the lowest rank
    // holding it (replicas hold the same summed gradient).
    if (manifest.ownerRank(p) == rank && !shardOptimizer)
      layout_.norm.push_back(seg);
  }
  shards_ = buckets_;
  if (shardOptimizer)
    this->shardOptimizer();
}

/// Where world rank \p rank stands in group \p g: its member index (the
/// group's pipeline ranks) and its copy.
static std::pair<int, int> memberAndCopy(const Manifest &m, int g, int rank) {
  const std::vector<int> &members = m.groups[g];
  const int pipeline = m.pipelineRank(rank);
  return {static_cast<int>(std::find(members.begin(), members.end(), pipeline) -
                           members.begin()),
          m.copyOf(rank)};
}

void ParamStore::shardOptimizer() {
  const int copies = static_cast<int>(manifest_.schedule.dataParallel);
  const RankSpec &spec = manifest_.rankSpec(rank_);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const int g = spec.buckets[b].group;
    const auto [member, copy] = memberAndCopy(manifest_, g, rank_);
    const base::OptimizerShard s = base::optimizerShard(
        buckets_[b].count, static_cast<int>(manifest_.groups[g].size()), copies,
        member, copy, manifest_.syncsInTwoLevels(g));
    shards_[b] = ElementRange{buckets_[b].offset + s.offset, s.count};
  }
  layout_.shardedOptimizer = true;
  int64_t moment = 0;
  for (size_t k = 0; k < layout_.all.size(); ++k) {
    const int p = order_[k];
    ParamSegment part = layout_.all[k];
    if (bucketOf_[p] >= 0) {
      // A bucket's elements are updated, and counted in the norm, by the
      // rank whose shard holds them.
      const ElementRange &shard = shards_[bucketOf_[p]];
      const int64_t begin = std::max(part.offset, shard.offset);
      const int64_t end =
          std::min(part.offset + part.count, shard.offset + shard.count);
      if (end <= begin)
        continue;
      part.offset = begin;
      part.count = end - begin;
      layout_.norm.push_back(part);
    } else if (manifest_.ownerRank(p) == rank_) {
      // In no bucket: held by one rank only, whole.
      layout_.norm.push_back(part);
    }
    layout_.owned.push_back(
        OptimizerPart{static_cast<int>(k), part.offset, part.count, moment});
    moment += part.count;
  }
  layout_.numMoments = moment;
}

float *ParamStore::hostMoments(int which) {
  if (layout_.shardedOptimizer)
    return wholeMoments_[which].data();
  return which == 0 ? arrays_->hostM() : arrays_->hostV();
}

Status ParamStore::toHost() {
  BP_TRY(arrays_->toHost());
  if (!layout_.shardedOptimizer)
    return Status::ok();
  // The owned parts where the whole layout has them; the rest zero until
  // gatherHostImage (or a checkpoint's load) fills it.
  const float *compact[2] = {arrays_->hostM(), arrays_->hostV()};
  for (int which : {0, 1}) {
    std::vector<float> &whole = wholeMoments_[which];
    whole.assign(static_cast<size_t>(layout_.numFloats), 0.0f);
    expandOwnedParts(layout_, compact[which], whole.data());
  }
  return Status::ok();
}

Status ParamStore::toTarget() {
  if (layout_.shardedOptimizer && !wholeMoments_[0].empty()) {
    float *compact[2] = {arrays_->hostM(), arrays_->hostV()};
    for (int which : {0, 1})
      compactOwnedParts(layout_, wholeMoments_[which].data(), compact[which]);
  }
  return arrays_->toTarget();
}

void ParamStore::releaseHost() {
  arrays_->releaseHost();
  for (std::vector<float> &whole : wholeMoments_)
    std::vector<float>().swap(whole);
}

void ParamStore::useGroups(std::vector<GroupId> groups,
                           std::vector<std::optional<TwoLevelGroup>> twoLevel) {
  groups_ = std::move(groups);
  twoLevel_ = std::move(twoLevel);
}

Status ParamStore::gatherShards(Communicator &comm, void *array, DType dtype) {
  // The reverse of the reduce-scatters that leave each rank its shard
  // (base::optimizerShard): flat, one all-gather over the group's world
  // ranks; in two levels, the member's part from its copies, then the
  // copy's members' parts. Every bucket's first gather is in flight before
  // any is waited for: ranks that share several groups may list their
  // buckets in another order (only a group's own buckets are in the same
  // order on all of its members), and a wait for one must not hold up the
  // other's.
  const RankSpec &spec = manifest_.rankSpec(rank_);
  const int64_t width = static_cast<int64_t>(dtypeSize(dtype));
  auto at = [&](int64_t element) {
    return static_cast<char *>(array) + element * width;
  };
  std::vector<RequestHandle> pending;
  std::vector<size_t> secondLevel;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const int g = spec.buckets[b].group;
    const ElementRange &range = buckets_[b];
    const int64_t shard = shards_[b].count;
    if (static_cast<size_t>(g) < twoLevel_.size() && twoLevel_[g]) {
      const int64_t part =
          range.count / static_cast<int64_t>(manifest_.groups[g].size());
      const int member = memberAndCopy(manifest_, g, rank_).first;
      BP_ASSIGN(across,
                comm.allGatherStart(at(range.offset + member * part), shard,
                                    dtype, twoLevel_[g]->acrossCopies));
      pending.push_back(across);
      secondLevel.push_back(b);
    } else {
      BP_ASSIGN(all, comm.allGatherStart(at(range.offset), shard, dtype,
                                         groups_[static_cast<size_t>(g)]));
      pending.push_back(all);
    }
  }
  for (RequestHandle h : pending)
    BP_TRY(comm.wait(h));
  pending.clear();
  for (size_t b : secondLevel) {
    const int g = spec.buckets[b].group;
    const ElementRange &range = buckets_[b];
    const int64_t part =
        range.count / static_cast<int64_t>(manifest_.groups[g].size());
    BP_ASSIGN(within, comm.allGatherStart(at(range.offset), part, dtype,
                                          twoLevel_[g]->withinCopy));
    pending.push_back(within);
  }
  for (RequestHandle h : pending)
    BP_TRY(comm.wait(h));
  return Status::ok();
}

Status ParamStore::gatherWeights(Communicator &comm) {
  const ParamArrays::GatheredWeights weights = arrays_->shardedWeights();
  if (!weights.data)
    return Status::error(ErrorCode::InvalidArgument,
                         "internal: a sharded optimizer's arrays have no "
                         "weights to gather (ParamArrays::shardedWeights)");
  return gatherShards(comm, weights.data, weights.dtype);
}

Status ParamStore::gatherHostImage(Communicator &comm, bool moments) {
  if (!layout_.shardedOptimizer)
    return Status::ok();
  // On the host, in the host image: the host transport's.
  Communicator &host = comm.hostCommunicator();
  if (arrays_->shardsMasterWeights())
    BP_TRY(gatherShards(host, arrays_->hostParams(), DType::F32));
  if (moments)
    for (std::vector<float> &whole : wholeMoments_)
      BP_TRY(gatherShards(host, whole.data(), DType::F32));
  return Status::ok();
}

Status ParamStore::attach(Backend &backend) {
  BP_TRY(layoutError_);
  BP_ASSIGN(arrays, backend.createParamArrays(layout_));
  // The stage functions add into the accumulators as the manifest's target
  // says they are laid out (program.h's "param" results).
  const DType want = manifest_.target.gradientDType();
  if (arrays->gradDType() != want)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("the backend's gradient accumulators are %s, but the "
                     "stage functions of a %s program add into %s ones",
                     dtypeName(arrays->gradDType()),
                     targetKindName(manifest_.target.kind), dtypeName(want)));
  arrays_ = std::move(arrays);
  return Status::ok();
}

Expected<std::pair<int, Status>> ParamStore::firstInvalidParam() {
  BP_ASSIGN(found, arrays_->findInvalid());
  for (size_t p = 0; p < manifest_.params.size(); ++p) {
    if (segment_[p] < 0)
      continue;
    if (const std::optional<InvalidState> &bad = found[segment_[p]])
      return std::pair{static_cast<int>(p),
                       invalidStateError(manifest_.params[p].name, *bad)};
  }
  return std::pair{-1, Status::ok()};
}

std::vector<CheckpointParam> ParamStore::checkpointParams() {
  std::vector<CheckpointParam> out;
  for (int p : order_) {
    const ParamSpec &spec = manifest_.params[p];
    out.push_back({spec.name, spec.shape, hostParam(p), hostM(p), hostV(p)});
  }
  return out;
}

} // namespace bitpipe::runtime
