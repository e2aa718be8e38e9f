//===- BlockPool.cpp - Blocks split from cached segments ------------------===//
//
// The pool that BlockPool.h describes.
//
//===----------------------------------------------------------------------===//

#include "core/BlockPool.h"

#include <algorithm>
#include <functional>
#include <iterator>
#include <tuple>
#include <vector>

namespace bitpipe::runtime {

namespace {

size_t roundUp(size_t bytes, size_t unit) {
  return (std::max<size_t>(bytes, 1) + unit - 1) / unit * unit;
}

} // namespace

bool BlockPool::FitOrder::operator()(const Block *a, const Block *b) const {
  // std::less, not <: the streams and addresses are unrelated pointers.
  std::less<const void *> before;
  if (a->large != b->large)
    return a->large < b->large;
  if (a->stream != b->stream)
    return before(a->stream, b->stream);
  if (a->size != b->size)
    return a->size < b->size;
  return before(a->addr, b->addr);
}

BlockPool::~BlockPool() {
  for (auto &[addr, block] : blocks_)
    delete block;
}

size_t BlockPool::segmentSize(size_t size) {
  if (size <= kSmallLimit)
    return kSmallSegment;
  if (size < kLargeSegmentBelow)
    return kLargeSegment;
  return roundUp(size, kSmallSegment);
}

BlockPool::Block *BlockPool::bestFit(bool large, const void *stream,
                                     size_t size) {
  Block probe{nullptr, size, large, true, stream, nullptr, nullptr, 0};
  auto it = free_.lower_bound(&probe);
  if (it == free_.end() || (*it)->large != large || (*it)->stream != stream)
    return nullptr;
  Block *b = *it;
  free_.erase(it);
  return b;
}

void BlockPool::split(Block *b, size_t size, const void *stream) {
  const size_t rest = b->size - size;
  if (b->large ? rest <= kSmallLimit : rest < kUnit)
    return;
  auto *r =
      new Block{b->addr + size, rest, b->large, true, stream, b, b->next, 0};
  if (b->next)
    b->next->prev = r;
  b->next = r;
  b->size = size;
  blocks_[r->addr] = r;
  // No merge needed: b's old next neighbour is not a block free on the same
  // stream, or release would have merged the two.
  free_.insert(r);
}

BlockPool::Block *BlockPool::mergeNext(Block *b, Block *n) {
  b->size += n->size;
  b->next = n->next;
  if (n->next)
    n->next->prev = b;
  blocks_.erase(n->addr);
  delete n;
  return b;
}

void *BlockPool::allocate(size_t bytes, const void *stream) {
  const size_t size = roundUp(bytes, kUnit);
  const bool large = size > kSmallLimit;
  Block *b = bestFit(large, stream, size);
  if (!b) {
    const size_t bytesOfSegment = segmentSize(size);
    SegmentSource::Segment segment = source_.obtain(bytesOfSegment, stream);
    if (!segment.base && giveBackFreeSegments(stream) > 0)
      segment = source_.obtain(bytesOfSegment, stream);
    if (!segment.base)
      return nullptr;
    b = new Block{static_cast<char *>(segment.base),
                  bytesOfSegment,
                  large,
                  true,
                  stream,
                  nullptr,
                  nullptr,
                  0};
    blocks_[b->addr] = b;
    if (!segment.returnable)
      keptSegments_.insert(b->addr);
    counters_.reserved(bytesOfSegment);
    ++segments_;
  }
  split(b, size, stream);
  b->free = false;
  b->serial = ++lastSerial_;
  counters_.handedOut(b->size);
  if (recording_)
    recorded_.push_back({b->addr, b->size, b->serial});
  return b->addr;
}

BlockPool::Release BlockPool::release(void *ptr, const void *stream) {
  auto it = blocks_.find(static_cast<const char *>(ptr));
  if (it == blocks_.end())
    return Release::NotABlock;
  Block *b = it->second;
  if (b->free)
    return Release::AlreadyFree;
  counters_.takenBack(b->size);
  b->free = true;
  b->stream = stream;
  if (b->next && b->next->free && b->next->stream == stream) {
    free_.erase(b->next);
    b = mergeNext(b, b->next);
  }
  if (b->prev && b->prev->free && b->prev->stream == stream) {
    Block *p = b->prev;
    free_.erase(p);
    b = mergeNext(p, b);
  }
  free_.insert(b);
  return Release::Done;
}

size_t BlockPool::giveBackFreeSegments(const void *stream) {
  if (!source_.canGiveBack(stream))
    return 0;
  std::vector<Block *> whole;
  for (Block *b : free_)
    if (!b->prev && !b->next && !keptSegments_.count(b->addr))
      whole.push_back(b);
  size_t bytes = 0;
  for (Block *b : whole) {
    free_.erase(b);
    blocks_.erase(b->addr);
    source_.giveBack(b->addr, b->size, b->stream);
    counters_.returned(b->size);
    bytes += b->size;
    --segments_;
    delete b;
  }
  return bytes;
}

void BlockPool::record(bool on) {
  recording_ = on;
  if (on)
    recorded_.clear();
}

std::vector<BlockPool::HandOut> BlockPool::held() const {
  std::vector<HandOut> out;
  for (const auto &[addr, b] : blocks_)
    if (!b->free)
      out.push_back({b->addr, b->size, b->serial});
  return out;
}

BlockPool::RangeState BlockPool::rangeState(const void *address, size_t bytes,
                                            uint64_t *serial) const {
  const char *begin = static_cast<const char *>(address);
  const char *end = begin + std::max<size_t>(bytes, 1);
  // The block that contains `begin`: the last one starting at or before it.
  auto it = blocks_.upper_bound(begin);
  if (it == blocks_.begin())
    return RangeState::Absent;
  const Block *b = std::prev(it)->second;
  if (begin >= b->addr + b->size)
    return RangeState::Absent;
  // Walk the neighbours within the segment until the range is covered.
  for (; b; b = b->next) {
    if (!b->free) {
      if (serial)
        *serial = b->serial;
      return RangeState::Held;
    }
    if (end <= b->addr + b->size)
      return RangeState::Free;
  }
  return RangeState::Absent; // Runs past its segment's end.
}

} // namespace bitpipe::runtime
