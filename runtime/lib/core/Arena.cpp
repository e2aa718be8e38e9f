//===- Arena.cpp - Per-rank arena with named bump regions -------*- C++ -*-===//

#include "Arena.h"

#include "bitpipe/base/CheckedArithmetic.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace bitpipe::runtime {

static uint64_t alignUp(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

Expected<std::unique_ptr<Arena>>
Arena::create(const std::vector<RegionSpec> &regions) {
  std::unique_ptr<Arena> arena(new Arena());
  uint64_t total = 0;
  for (const RegionSpec &spec : regions) {
    if (spec.name.empty())
      return Status::error(ErrorCode::InvalidArgument,
                           "arena: a region has an empty name");
    for (const Region &r : arena->regions_)
      if (r.spec.name == spec.name)
        return Status::error(ErrorCode::InvalidArgument,
                             "arena: region '" + spec.name +
                                 "' is declared twice");
    if (spec.bytes > std::numeric_limits<uint64_t>::max() / 2)
      return Status::error(ErrorCode::InvalidArgument,
                           "arena: region '" + spec.name + "' is too large");
    Region r;
    r.spec = spec;
    r.begin = total;
    r.capacity = alignUp(spec.bytes, kAlignment);
    // Each region is below 2^63, but their sum may not be.
    if (!checkedAdd(total, r.capacity, &total))
      return Status::error(
          ErrorCode::OutOfMemory,
          formatString("arena: the regions up to '%s' (%llu bytes) add up "
                       "to more than 2^64 bytes",
                       spec.name.c_str(),
                       static_cast<unsigned long long>(spec.bytes)));
    arena->regions_.push_back(r);
  }
  if (total > 0) {
    // aligned_alloc needs a size that is a multiple of the alignment, which
    // every capacity is.
    arena->base_ = static_cast<char *>(std::aligned_alloc(kAlignment, total));
    if (!arena->base_)
      return Status::error(
          ErrorCode::OutOfMemory,
          formatString("arena: cannot reserve %llu bytes (%.1f MiB) of host "
                       "memory for %zu regions",
                       static_cast<unsigned long long>(total),
                       static_cast<double>(total) / (1 << 20), regions.size()));
  }
  arena->total_ = total;
  return std::move(arena);
}

Arena::~Arena() { std::free(base_); }

RegionId Arena::findRegion(const std::string &name) const {
  for (size_t i = 0; i < regions_.size(); ++i)
    if (regions_[i].spec.name == name)
      return static_cast<RegionId>(i);
  return -1;
}

Expected<void *> Arena::allocate(RegionId region, uint64_t bytes,
                                 const std::string &what) {
  if (region < 0 || static_cast<size_t>(region) >= regions_.size())
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("arena: allocation of '%s' names region %d, but the arena "
                     "has %zu regions",
                     what.c_str(), region, regions_.size()));
  Region &r = regions_[region];
  // Round the size, not just the start, so the next allocation stays aligned.
  uint64_t rounded = alignUp(bytes == 0 ? 1 : bytes, kAlignment);
  uint64_t left = r.capacity - r.used;
  if (rounded > left || bytes > rounded)
    return Status::error(
        ErrorCode::OutOfMemory,
        formatString("arena: region '%s' exhausted: '%s' asked for %llu bytes "
                     "(%llu aligned), but only %llu of %llu bytes are left; "
                     "the region needs at least %llu bytes",
                     r.spec.name.c_str(), what.c_str(),
                     static_cast<unsigned long long>(bytes),
                     static_cast<unsigned long long>(rounded),
                     static_cast<unsigned long long>(left),
                     static_cast<unsigned long long>(r.capacity),
                     static_cast<unsigned long long>(r.used + rounded)));
  void *p = base_ + r.begin + r.used;
  r.used += rounded;
  r.peak = std::max(r.peak, r.used);
  return p;
}

Expected<TensorView> Arena::allocateTensor(RegionId region,
                                           const std::string &name, DType dtype,
                                           const std::vector<int64_t> &shape) {
  int64_t n = numElements(shape);
  if (n < 0 || static_cast<uint64_t>(n) >
                   std::numeric_limits<uint64_t>::max() / dtypeSize(dtype))
    return Status::error(ErrorCode::InvalidArgument,
                         "arena: tensor '" + name + "' has an invalid shape " +
                             shapeToString(shape));
  Expected<void *> p =
      allocate(region, static_cast<uint64_t>(n) * dtypeSize(dtype), name);
  if (!p.isOk())
    return p.status();
  TensorView t;
  t.data = *p;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

void Arena::resetStep() {
  for (Region &r : regions_)
    if (r.spec.lifetime == RegionLifetime::PerStep)
      r.used = 0;
}

uint64_t Arena::capacity(RegionId region) const {
  return regions_[region].capacity;
}
uint64_t Arena::used(RegionId region) const { return regions_[region].used; }
uint64_t Arena::peak(RegionId region) const { return regions_[region].peak; }
const std::string &Arena::regionName(RegionId region) const {
  return regions_[region].spec.name;
}

} // namespace bitpipe::runtime
