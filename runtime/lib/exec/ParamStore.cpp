//===- ParamStore.cpp - One rank's parameters, gradients, moments ---------===//
//-*-===//

#include "ParamStore.h"

#include "bitpipe/base/CheckedArithmetic.h"

#include <algorithm>
#include <limits>

namespace bitpipe::runtime {

ParamStore::ParamStore(const Manifest &manifest, int rank)
    : manifest_(manifest), offset_(manifest.params.size(), -1) {
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
  for (const BucketSpec &b : spec.buckets) {
    if (!align() && !b.params.empty())
      overflow(b.params.front());
    ElementRange range{next, 0};
    for (int p : b.params)
      place(p);
    range.count = next - range.offset;
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
    if (manifest.ownerRank(p) == rank)
      layout_.norm.push_back(seg);
  }
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
