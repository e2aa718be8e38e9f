//===- ParamStore.cpp - One rank's parameters, gradients, moments -*- C++ -*-===//

#include "ParamStore.h"

#include "train/Init.h"

#include <algorithm>

namespace bitpipe::runtime {

ParamStore::ParamStore(const Manifest &manifest, int rank)
    : manifest_(manifest), offset_(manifest.params.size(), -1) {
  const RankSpec &spec = manifest.ranks[rank];
  int64_t next = 0;
  auto place = [&](int p) {
    offset_[p] = next;
    next += manifest.params[p].numel;
    order_.push_back(p);
  };
  // Buckets first, each one contiguous (the manifest guarantees that a
  // parameter is in at most one bucket and held by the rank).
  for (const BucketSpec &b : spec.buckets) {
    ElementRange range{next, 0};
    for (int p : b.params)
      place(p);
    range.count = next - range.offset;
    buckets_.push_back(range);
  }
  for (int p : spec.params)
    if (offset_[p] < 0)
      place(p);
  params_.assign(next, 0.0f);
  grads_.assign(next, 0.0);
  m_.assign(next, 0.0f);
  v_.assign(next, 0.0f);
}

void ParamStore::initialize(uint64_t seed) {
  for (int p : order_) {
    const ParamSpec &spec = manifest_.params[p];
    switch (spec.init) {
    case InitKind::Normal:
      initNormal(param(p), spec.numel, spec.stddev, seed, spec.name);
      break;
    case InitKind::Zeros:
      initZeros(param(p), spec.numel);
      break;
    case InitKind::Ones:
      initOnes(param(p), spec.numel);
      break;
    }
  }
  std::fill(m_.begin(), m_.end(), 0.0f);
  std::fill(v_.begin(), v_.end(), 0.0f);
}

std::vector<AdamWParam> ParamStore::adamParams() {
  std::vector<AdamWParam> out;
  for (int p : order_) {
    const ParamSpec &spec = manifest_.params[p];
    out.push_back({spec.name, param(p), grad(p), m(p), v(p), spec.numel,
                   spec.decay});
  }
  return out;
}

std::vector<CheckpointParam> ParamStore::checkpointParams() {
  std::vector<CheckpointParam> out;
  for (int p : order_) {
    const ParamSpec &spec = manifest_.params[p];
    out.push_back({spec.name, spec.shape, param(p), m(p), v(p)});
  }
  return out;
}

void ParamStore::zeroGradients() { std::fill(grads_.begin(), grads_.end(), 0.0); }

} // namespace bitpipe::runtime
