//===- BlockPoolTest.cpp - The device pool's bookkeeping on the host ------===//
//
// BlockPool over a fake source of host segments that can run out of memory
// and records what it was given back and on which stream: splitting,
// merging, stream order, out-of-memory, and what the pool holds against its
// peak in use over phases of different sizes (the reason for the design).
//
//===----------------------------------------------------------------------===//

#include "core/BlockPool.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <vector>

using namespace bitpipe::runtime;

namespace {

constexpr size_t KiB = 1024, MiB = 1024 * 1024;

/// Host memory as segments, up to a capacity.
class FakeSource : public SegmentSource {
public:
  explicit FakeSource(size_t capacity = SIZE_MAX, bool canGiveBack = true)
      : capacity_(capacity), canGiveBack_(canGiveBack) {}
  ~FakeSource() override {
    for (auto &[p, bytes] : live_)
      std::free(p);
  }

  Segment obtain(size_t bytes, const void *) override {
    ++obtained;
    if (held_ + bytes > capacity_)
      return {};
    void *p = std::malloc(bytes);
    live_[p] = bytes;
    held_ += bytes;
    return {p, returnable};
  }
  bool canGiveBack(const void *stream) const override {
    return canGiveBack_ && stream != capturing;
  }
  void giveBack(void *segment, size_t bytes, const void *stream) override {
    EXPECT_EQ(live_.at(segment), bytes);
    givenBack.push_back({bytes, stream});
    live_.erase(segment);
    held_ -= bytes;
    std::free(segment);
  }

  struct GivenBack {
    size_t bytes;
    const void *stream;
  };
  std::vector<GivenBack> givenBack;
  int obtained = 0;
  /// What the next segments are: returnable or kept for good.
  bool returnable = true;
  /// A stream being captured: nothing goes back for its requests.
  const void *capturing = nullptr;

private:
  size_t capacity_, held_ = 0;
  bool canGiveBack_;
  std::map<void *, size_t> live_;
};

/// Stand-ins for two streams: only their identity matters.
char streams[2];
const void *const A = &streams[0];
const void *const B = &streams[1];

ptrdiff_t distance(void *from, void *to) {
  return static_cast<char *>(to) - static_cast<char *>(from);
}

int64_t inUse(const BlockPool &pool) {
  int64_t v = 0;
  pool.counters().read(&v, nullptr, nullptr);
  return v;
}
int64_t peak(const BlockPool &pool) {
  int64_t v = 0;
  pool.counters().read(nullptr, &v, nullptr);
  return v;
}
int64_t reserved(const BlockPool &pool) {
  int64_t v = 0;
  pool.counters().read(nullptr, nullptr, &v);
  return v;
}

TEST(BlockPoolTest, SmallRequestsSplitOneSegment) {
  FakeSource source;
  BlockPool pool(source);
  void *a = pool.allocate(100, A);
  void *b = pool.allocate(700 * KiB, A);
  void *c = pool.allocate(1, A);
  EXPECT_EQ(source.obtained, 1);
  EXPECT_EQ(pool.segments(), 1u);
  EXPECT_EQ(distance(a, b), 512);              // 100 B rounds to 512.
  EXPECT_EQ(distance(a, c), 512 + 700 * 1024); // Units of 512 B.
  EXPECT_EQ(inUse(pool), int64_t(512 + 700 * KiB + 512));
  EXPECT_EQ(reserved(pool), int64_t(BlockPool::kSmallSegment));
}

TEST(BlockPoolTest, FreedNeighboursMergeAndServeALargerRequest) {
  FakeSource source;
  BlockPool pool(source);
  std::vector<void *> q;
  for (int i = 0; i < 4; ++i)
    q.push_back(pool.allocate(256 * KiB, A));
  ASSERT_EQ(pool.release(q[1], A), BlockPool::Release::Done);
  ASSERT_EQ(pool.release(q[2], A), BlockPool::Release::Done);
  // Best fit: the merged 512 KiB between q[0] and q[3], not the 1 MiB
  // left at the segment's end.
  EXPECT_EQ(pool.allocate(512 * KiB, A), q[1]);
  EXPECT_EQ(source.obtained, 1);
  // The first and last block freed: the segment is one free block again,
  // which an out-of-memory could give back.
  for (void *p : {q[0], q[1], q[3]})
    ASSERT_EQ(pool.release(p, A), BlockPool::Release::Done);
  EXPECT_EQ(inUse(pool), 0);
  EXPECT_EQ(pool.giveBackFreeSegments(A), BlockPool::kSmallSegment);
  EXPECT_EQ(pool.segments(), 0u);
  EXPECT_EQ(reserved(pool), 0);
}

TEST(BlockPoolTest, ABlockFreedOnAStreamGoesOnlyToThatStream) {
  FakeSource source;
  BlockPool pool(source);
  void *a = pool.allocate(64 * KiB, A);
  void *rest = pool.allocate(64 * KiB, A);
  ASSERT_EQ(pool.release(a, B), BlockPool::Release::Done);
  // Stream A's request does not get a (work on B may still use it), but
  // the segment's free tail, which is A's.
  void *forA = pool.allocate(64 * KiB, A);
  EXPECT_EQ(forA, static_cast<char *>(rest) + 64 * KiB);
  // B's request does get a.
  EXPECT_EQ(pool.allocate(64 * KiB, B), a);
  // Freed on B, `rest` merges with a (freed on B) but not with forA and
  // the tail (freed on A): the segment stays two free blocks, one per
  // stream, and cannot go back whole.
  ASSERT_EQ(pool.release(forA, A), BlockPool::Release::Done);
  ASSERT_EQ(pool.release(rest, B), BlockPool::Release::Done);
  ASSERT_EQ(pool.release(a, B), BlockPool::Release::Done);
  EXPECT_EQ(pool.giveBackFreeSegments(A), 0u);
  EXPECT_EQ(pool.allocate(128 * KiB, B), a);
  EXPECT_EQ(pool.allocate(128 * KiB, A), forA);
  EXPECT_EQ(source.obtained, 1);
}

TEST(BlockPoolTest, DoubleFreesAndForeignPointersChangeNothing) {
  FakeSource source;
  BlockPool pool(source);
  void *a = pool.allocate(4 * KiB, A);
  void *b = pool.allocate(4 * KiB, A);
  int local = 0;
  EXPECT_EQ(pool.release(&local, A), BlockPool::Release::NotABlock);
  EXPECT_EQ(pool.release(static_cast<char *>(a) + 512, A),
            BlockPool::Release::NotABlock);
  ASSERT_EQ(pool.release(b, A), BlockPool::Release::Done);
  EXPECT_EQ(pool.release(b, A), BlockPool::Release::AlreadyFree);
  EXPECT_EQ(inUse(pool), int64_t(4 * KiB));
  ASSERT_EQ(pool.release(a, A), BlockPool::Release::Done);
  // b merged into a: b no longer starts a block.
  EXPECT_EQ(pool.release(b, A), BlockPool::Release::NotABlock);
  EXPECT_EQ(inUse(pool), 0);
}

TEST(BlockPoolTest, LargeRequestsGetLargeSegments) {
  FakeSource source;
  BlockPool pool(source);
  void *a = pool.allocate(3 * MiB, A);      // A 20 MiB segment, split.
  void *b = pool.allocate(5 * MiB, A);      // From its rest.
  void *c = pool.allocate(12 * MiB + 1, A); // Its own, rounded to 2 MiB.
  EXPECT_EQ(distance(a, b), ptrdiff_t(3 * MiB));
  EXPECT_EQ(pool.segments(), 2u);
  EXPECT_EQ(reserved(pool), int64_t(20 * MiB + 14 * MiB));
  // 12 MiB + 1 rounds to 12 MiB + 512 B; the 2 MiB - 512 B left in its
  // segment is above the 1 MiB split limit, so it is a free block.
  EXPECT_EQ(inUse(pool), int64_t(3 * MiB + 5 * MiB + 12 * MiB + 512));
  // A small request never comes from a large segment.
  pool.allocate(4 * KiB, A);
  EXPECT_EQ(pool.segments(), 3u);
  (void)c;
}

TEST(BlockPoolTest, OutOfMemoryGivesFreeSegmentsBackInTheirStreamsOrder) {
  FakeSource source(/*capacity=*/24 * MiB);
  BlockPool pool(source);
  // A small segment filled by two blocks of A's, freed on B; a large one
  // that is one block of B's, freed on A.
  void *a1 = pool.allocate(1 * MiB, A), *a2 = pool.allocate(1 * MiB, A);
  void *b = pool.allocate(20 * MiB, B);
  ASSERT_EQ(pool.segments(), 2u);
  ASSERT_EQ(pool.release(a1, B), BlockPool::Release::Done);
  ASSERT_EQ(pool.release(a2, B), BlockPool::Release::Done);
  ASSERT_EQ(pool.release(b, A), BlockPool::Release::Done);
  // 24 MiB do not fit beside the 22 held: both free segments go back, each
  // in the order of the stream it was freed on, and the request succeeds.
  void *c = pool.allocate(24 * MiB, A);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(source.givenBack.size(), 2u);
  for (const FakeSource::GivenBack &g : source.givenBack)
    EXPECT_EQ(g.stream, g.bytes == BlockPool::kSmallSegment ? B : A);
  EXPECT_EQ(reserved(pool), int64_t(24 * MiB));
  // Nothing free to give back: the next request fails, and changes nothing.
  EXPECT_EQ(pool.allocate(1, A), nullptr);
  EXPECT_EQ(inUse(pool), int64_t(24 * MiB));
  EXPECT_EQ(pool.segments(), 1u);
}

TEST(BlockPoolTest, WithoutGivingBackAnOutOfMemoryFails) {
  FakeSource source(/*capacity=*/4 * MiB, /*canGiveBack=*/false);
  BlockPool pool(source);
  void *a = pool.allocate(1 * MiB, A);
  ASSERT_EQ(pool.release(a, A), BlockPool::Release::Done);
  EXPECT_EQ(pool.allocate(3 * MiB, A), nullptr);
  EXPECT_TRUE(source.givenBack.empty());
  EXPECT_EQ(pool.giveBackFreeSegments(A), 0u);
  // The cached small segment serves small requests only.
  EXPECT_EQ(pool.allocate(1 * MiB + 512, A), nullptr);
  EXPECT_EQ(pool.allocate(512 * KiB, A), a);
}

/// Phases that each hold many blocks of one size and free them before the
/// next, as a pipeline's forwards and backwards do: a cache by exact size
/// would hold the sum of the phases' peaks (here 3x the peak in use); this
/// pool holds the peak, plus less than one segment.
TEST(BlockPoolTest, WhatThePoolHoldsFollowsItsPeakInUse) {
  FakeSource source;
  BlockPool pool(source);
  const size_t sizes[] = {3 * MiB, 6 * MiB, 9 * MiB, 3 * MiB + 300 * KiB};
  const int counts[] = {24, 12, 8, 20};
  int64_t sumOfPhasePeaks = 0;
  for (int step = 0; step < 3; ++step) {
    for (int phase = 0; phase < 4; ++phase) {
      std::vector<void *> held;
      for (int i = 0; i < counts[phase]; ++i)
        held.push_back(pool.allocate(sizes[phase], A));
      if (step == 0)
        sumOfPhasePeaks += static_cast<int64_t>(inUse(pool));
      for (void *p : held)
        ASSERT_EQ(pool.release(p, A), BlockPool::Release::Done);
    }
  }
  EXPECT_EQ(peak(pool), int64_t(72 * MiB));
  EXPECT_GE(sumOfPhasePeaks, 3 * peak(pool));
  EXPECT_LE(reserved(pool), peak(pool) + int64_t(BlockPool::kLargeSegment));
}

/// After a first step, every step gets the same addresses in the same
/// order: a captured step's addresses stay valid when it is replayed.
TEST(BlockPoolTest, RepeatedStepsGetTheSameAddresses) {
  FakeSource source;
  BlockPool pool(source);
  auto step = [&] {
    std::vector<void *> got;
    std::vector<void *> saved;
    for (int mb = 0; mb < 4; ++mb) {
      saved.push_back(pool.allocate(5 * MiB + mb * KiB, A));
      void *scratch = pool.allocate(700 * KiB, A);
      got.push_back(saved.back());
      got.push_back(scratch);
      EXPECT_EQ(pool.release(scratch, A), BlockPool::Release::Done);
    }
    for (int mb = 3; mb >= 0; --mb) {
      void *grad = pool.allocate(2 * MiB, A);
      got.push_back(grad);
      EXPECT_EQ(pool.release(saved[mb], A), BlockPool::Release::Done);
      EXPECT_EQ(pool.release(grad, A), BlockPool::Release::Done);
    }
    return got;
  };
  step();
  const int obtained = source.obtained;
  std::vector<void *> second = step(), third = step();
  EXPECT_EQ(second, third);
  EXPECT_EQ(source.obtained, obtained);
}

/// What CUDA graphs of a step check before replaying one: hand-outs are
/// numbered and can be recorded, and a range of memory is free (whatever
/// its blocks merged into), held (by which hand-out) or not the pool's.
TEST(BlockPoolTest, HandOutsAreNumberedAndRangesKnown) {
  FakeSource source;
  BlockPool pool(source);
  pool.record(true);
  void *a = pool.allocate(3000, A);
  void *b = pool.allocate(3000, A);
  ASSERT_EQ(pool.release(a, A), BlockPool::Release::Done);
  void *c = pool.allocate(3000, A); // a's memory, another hand-out
  pool.record(false);
  void *d = pool.allocate(3000, A); // not recorded
  EXPECT_EQ(c, a);
  const std::vector<BlockPool::HandOut> &rec = pool.recorded();
  ASSERT_EQ(rec.size(), 3u);
  EXPECT_EQ(rec[0].address, a);
  EXPECT_EQ(rec[1].address, b);
  EXPECT_EQ(rec[2].address, a);
  EXPECT_EQ(rec[0].bytes, 3072u);
  EXPECT_LT(rec[0].serial, rec[1].serial);
  EXPECT_LT(rec[1].serial, rec[2].serial);
  uint64_t serial = 0;
  EXPECT_EQ(pool.rangeState(c, 3072, &serial), BlockPool::RangeState::Held);
  EXPECT_EQ(serial, rec[2].serial);
  std::vector<BlockPool::HandOut> held = pool.held();
  ASSERT_EQ(held.size(), 3u); // b, c, d by address: c (= a) first.
  EXPECT_EQ(held[0].address, c);
  EXPECT_EQ(held[1].address, b);
  EXPECT_EQ(held[2].address, d);
  // b freed: free whole, and still free once merged with d's freed
  // memory and the segment's tail into one block that b no longer starts.
  ASSERT_EQ(pool.release(b, A), BlockPool::Release::Done);
  EXPECT_EQ(pool.rangeState(b, 3072, nullptr), BlockPool::RangeState::Free);
  ASSERT_EQ(pool.release(d, A), BlockPool::Release::Done);
  EXPECT_EQ(pool.rangeState(d, 3072, nullptr), BlockPool::RangeState::Free);
  EXPECT_EQ(pool.rangeState(static_cast<char *>(b) + 256, 3072, nullptr),
            BlockPool::RangeState::Free);
  // A range that reaches into c is held, by c's hand-out.
  serial = 0;
  EXPECT_EQ(pool.rangeState(static_cast<char *>(c) + 512, 4096, &serial),
            BlockPool::RangeState::Held);
  EXPECT_EQ(serial, rec[2].serial);
  // Past the segment's end, or in no segment: absent.
  EXPECT_EQ(pool.rangeState(b, BlockPool::kSmallSegment, nullptr),
            BlockPool::RangeState::Absent);
  int local = 0;
  EXPECT_EQ(pool.rangeState(&local, 4, nullptr), BlockPool::RangeState::Absent);
}

/// A segment obtained while its stream was captured never goes back, and
/// nothing goes back to serve a captured stream's request.
TEST(BlockPoolTest, SegmentsFromACaptureStayAndCapturesGiveNothingBack) {
  FakeSource source(/*capacity=*/4 * MiB);
  BlockPool pool(source);
  source.returnable = false;
  void *kept = pool.allocate(1 * MiB, A);
  source.returnable = true;
  void *other = pool.allocate(1 * MiB, B);
  ASSERT_EQ(pool.release(kept, A), BlockPool::Release::Done);
  ASSERT_EQ(pool.release(other, B), BlockPool::Release::Done);
  // Both segments free, no room for a third. Stream A captured: its
  // request fails rather than give anything back.
  source.capturing = A;
  EXPECT_EQ(pool.allocate(3 * MiB, A), nullptr);
  EXPECT_EQ(pool.giveBackFreeSegments(A), 0u);
  EXPECT_TRUE(source.givenBack.empty());
  // Not captured: B's segment goes back, the kept one stays.
  source.capturing = nullptr;
  EXPECT_EQ(pool.giveBackFreeSegments(A), BlockPool::kSmallSegment);
  EXPECT_EQ(pool.segments(), 1u);
  EXPECT_EQ(pool.rangeState(kept, 1 * MiB, nullptr),
            BlockPool::RangeState::Free);
}

} // namespace
