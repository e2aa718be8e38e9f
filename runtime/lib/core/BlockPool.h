//===- BlockPool.h - Blocks split from cached segments ----------*- C++ -*-===//
//
// The bookkeeping of the device memory pool (cuda/DeviceMemory.cpp), free of
// CUDA so that CPU tests drive it with a fake source of segments.
//
// Why not cache freed blocks by their exact size: such a cache keeps, for
// every size, as many blocks as were ever live at once, so what it holds is
// the sum of the per-size peaks. A pipeline's phases use different sizes at
// different times (saved activations through the forwards, kernel scratch
// and gradients in transit through the backwards), and that sum is well
// above the peak in use. Here a free block serves any smaller request by
// splitting, and freed neighbours merge again, so what the pool holds
// follows its peak in use, plus the granularity of its segments.
//
// Stream order: a block freed on stream s may still be read by work queued
// on s, so it is handed out again only to requests on s (a free block
// carries the stream it was freed on), and neighbours merge only when they
// were freed on the same stream. A segment that is one free block goes back
// to the source in its stream's order, when the source can do that without
// waiting on the host (an out-of-memory gives every such segment back and
// tries once more).
//
// Sizes: requests round up to 512 bytes. Requests up to 1 MiB ("small")
// come from 2 MiB segments, larger ones from segments of 20 MiB (requests
// under 10 MiB) or of the request rounded up to 2 MiB; small and large
// blocks never share a segment, so that a long-lived small block cannot pin
// a large segment. A block is split when what is left is at least 512 bytes
// (small) or more than 1 MiB (large): a smaller rest stays with the block.
//
// Deterministic: the same calls from the same state give the same
// addresses. Freed neighbours merge back, so once a training step needs no
// new segment, a step that frees what it allocates leaves the pool as it
// found it, and the next step gets the same addresses (what replaying a
// captured step needs).
//
// Not thread-safe: the caller holds a lock.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_BLOCKPOOL_H
#define BITPIPE_RUNTIME_CORE_BLOCKPOOL_H

#include "core/PoolCounters.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace bitpipe::runtime {

/// Where a BlockPool's segments come from, and where they go back.
class SegmentSource {
public:
  virtual ~SegmentSource() = default;
  struct Segment {
    void *base = nullptr; ///< Null when there is no memory for it.
    /// False for a segment giveBack cannot take (one obtained outside
    /// stream order, while a stream was being captured into a graph): the
    /// pool keeps it for good.
    bool returnable = true;
  };
  /// A new segment of exactly \p bytes, usable by work on \p stream (the
  /// source has said why, if anything other than lack of memory failed).
  virtual Segment obtain(size_t bytes, const void *stream) = 0;
  /// Whether segments may go back now to serve a request on \p stream:
  /// giveBack must wait for nothing on the host, and no capture of the
  /// stream may record it. If not, the pool gives nothing back.
  virtual bool canGiveBack(const void *stream) const = 0;
  /// Takes back a returnable segment of obtain's, once every use of it
  /// enqueued on \p stream (or ordered before) has run.
  virtual void giveBack(void *segment, size_t bytes, const void *stream) = 0;
};

class BlockPool {
public:
  static constexpr size_t kUnit = 512;
  static constexpr size_t kSmallLimit = size_t(1) << 20;
  static constexpr size_t kSmallSegment = size_t(2) << 20;
  static constexpr size_t kLargeSegment = size_t(20) << 20;
  static constexpr size_t kLargeSegmentBelow = size_t(10) << 20;

  explicit BlockPool(SegmentSource &source) : source_(source) {}
  /// Forgets its segments without giving them back: the pool lives as long
  /// as the process, whose device memory goes with it.
  ~BlockPool();
  BlockPool(const BlockPool &) = delete;
  BlockPool &operator=(const BlockPool &) = delete;

  /// A block of at least \p bytes (at least 1) for work on \p stream,
  /// starting at a segment's start or a multiple of kUnit past it; null
  /// when the source has no memory even after every free segment went back.
  void *allocate(size_t bytes, const void *stream);

  enum class Release { Done, NotABlock, AlreadyFree };
  /// Returns a block of allocate's in \p stream's order. NotABlock for a
  /// pointer that starts no block of this pool (never allocated, or freed
  /// and merged into a neighbour), AlreadyFree for a block that is free:
  /// both change nothing.
  Release release(void *ptr, const void *stream);

  /// Gives every returnable segment that is one free block back to the
  /// source, if it can take them back to serve a request on \p stream;
  /// returns the bytes given back.
  size_t giveBackFreeSegments(const void *stream);

  const PoolCounters &counters() const { return counters_; }
  size_t segments() const { return segments_; }

  // What CUDA graphs of a step need to know (bitpipe/cuda.h, "The pool's
  // blocks"): every hand-out gets a serial number, and the pool can record
  // its hand-outs and say who holds a range of memory.

  /// One hand-out: the block's address, rounded size and serial.
  struct HandOut {
    const void *address;
    size_t bytes;
    uint64_t serial;
  };
  /// Starts (clearing the record) or stops recording every hand-out.
  void record(bool on);
  const std::vector<HandOut> &recorded() const { return recorded_; }
  /// The blocks handed out now, by address.
  std::vector<HandOut> held() const;

  enum class RangeState {
    Absent, ///< Not all of it in the pool's segments (given back, or never
            ///< the pool's).
    Free,   ///< Free blocks of one segment, whatever they merged into.
    Held,   ///< Some of it is in a handed-out block.
  };
  /// Who has [\p address, + \p bytes) now; for Held, \p serial receives
  /// the serial of the hand-out that holds its first held byte.
  RangeState rangeState(const void *address, size_t bytes,
                        uint64_t *serial) const;

private:
  struct Block {
    char *addr;
    size_t size;
    bool large;
    bool free;
    const void *stream; // While free: the stream it was freed on.
    Block *prev, *next; // Neighbours within the segment.
    uint64_t serial;    // While handed out: which hand-out.
  };
  /// Free blocks in the order of a best-fit search: class, stream, size,
  /// address.
  struct FitOrder {
    bool operator()(const Block *a, const Block *b) const;
  };

  static size_t segmentSize(size_t size);
  Block *bestFit(bool large, const void *stream, size_t size);
  /// Splits \p b (handed out now) so that it keeps \p size bytes, if the
  /// rest is worth a block of its own; the rest is free on \p stream.
  void split(Block *b, size_t size, const void *stream);
  /// Merges \p b (free, not in free_) with \p n, its next neighbour (free,
  /// in free_); returns the merged block.
  Block *mergeNext(Block *b, Block *n);

  SegmentSource &source_;
  std::set<Block *, FitOrder> free_;
  /// Every block, by address (ordered: rangeState finds the block that
  /// contains an address).
  std::map<const char *, Block *> blocks_;
  std::set<const char *> keptSegments_; // Not returnable: their bases.
  PoolCounters counters_;
  size_t segments_ = 0;
  uint64_t lastSerial_ = 0;
  bool recording_ = false;
  std::vector<HandOut> recorded_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_BLOCKPOOL_H
