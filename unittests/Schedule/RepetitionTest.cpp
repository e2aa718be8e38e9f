//===- RepetitionTest.cpp - Repeated runs of rank programs ----------------===//
//
// segmentRepetitions must be exact (unroll gives back the input) on every
// sequence, find the runs of hand-made sequences, and keep a number of items
// that does not grow with N on every schedule of the registry
// (docs/repetition.md).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Repetition.h"

#include "bitpipe/Schedule/Comms.h"
#include "bitpipe/Schedule/Registry.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

using namespace bitpipe::sched;

namespace {

constexpr int64_t kAbsent = ItemSequence::kAbsent;

struct Item {
  int64_t shape;
  std::vector<int64_t> lanes;
};

ItemSequence sequence(int numLanes, const std::vector<Item> &items) {
  ItemSequence out(numLanes);
  for (const Item &item : items)
    out.append(item.shape, item.lanes);
  return out;
}

std::string describe(const std::vector<Segment> &segments) {
  std::string out;
  for (const Segment &s : segments) {
    out += "[" + std::to_string(s.begin) + " P" + std::to_string(s.period) +
           " x" + std::to_string(s.count);
    for (int64_t stride : s.strides)
      out += " " + std::to_string(stride);
    out += "] ";
  }
  return out;
}

/// Segments `items`, checks that the segments tile it in order and that
/// unrolling the kept items gives it back; returns the segments.
std::vector<Segment> segmentAndCheck(const ItemSequence &items) {
  std::vector<Segment> segments = segmentRepetitions(items);
  size_t next = 0;
  for (const Segment &s : segments) {
    EXPECT_EQ(s.begin, next) << describe(segments);
    EXPECT_GE(s.period, 1u) << describe(segments);
    next += s.length();
  }
  EXPECT_EQ(next, items.size()) << describe(segments);
  ItemSequence kept = keptItems(items, segments);
  EXPECT_EQ(kept.size(), keptSize(segments));
  Result<ItemSequence> back = unroll(segments, kept);
  EXPECT_TRUE(back.ok()) << back.error;
  if (back.ok()) {
    EXPECT_TRUE(*back == items) << describe(segments);
  }
  return segments;
}

/// `count` repetitions of shapes A=1, B=2 with micro-batches 2k, 2k+1.
std::vector<Item> alternating(int count, int firstMicrobatch = 0) {
  std::vector<Item> items;
  for (int k = 0; k < count; ++k) {
    items.push_back({1, {firstMicrobatch + 2 * k}});
    items.push_back({2, {firstMicrobatch + 2 * k + 1}});
  }
  return items;
}

} // namespace

//===----------------------------------------------------------------------===//
// Hand-made sequences
//===----------------------------------------------------------------------===//

TEST(Repetition, PureRunIsOneLoop) {
  std::vector<Segment> segments = segmentAndCheck(sequence(1, alternating(10)));
  ASSERT_EQ(segments.size(), 1u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 2, 10, {2, 2}}));
  EXPECT_EQ(keptSize(segments), 2u);
}

TEST(Repetition, PrefixRunSuffix) {
  std::vector<Item> items = {{7, {100}}};
  for (const Item &item : alternating(6))
    items.push_back(item);
  items.push_back({8, {-5}});
  items.push_back({9, {kAbsent}});
  std::vector<Segment> segments = segmentAndCheck(sequence(1, items));
  ASSERT_EQ(segments.size(), 3u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 1, 1, {}}));
  EXPECT_EQ(segments[1], (Segment{1, 2, 6, {2, 2}}));
  EXPECT_EQ(segments[2], (Segment{13, 2, 1, {}}));
  EXPECT_EQ(keptSize(segments), 5u);
}

TEST(Repetition, GPipeLikeTwoRuns) {
  // F0..F9 then B9..B0: two runs of one item, strides +1 and -1.
  std::vector<Item> items;
  for (int m = 0; m < 10; ++m)
    items.push_back({1, {m}});
  for (int m = 9; m >= 0; --m)
    items.push_back({2, {m}});
  std::vector<Segment> segments = segmentAndCheck(sequence(1, items));
  ASSERT_EQ(segments.size(), 2u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 1, 10, {1}}));
  EXPECT_EQ(segments[1], (Segment{10, 1, 10, {-1}}));
}

TEST(Repetition, NoRepetitionStaysStraight) {
  std::vector<Item> items;
  for (int k = 0; k < 50; ++k)
    items.push_back({k, {k * k}});
  std::vector<Segment> segments = segmentAndCheck(sequence(1, items));
  ASSERT_EQ(segments.size(), 1u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 50, 1, {}}));
}

TEST(Repetition, EachBodyItemHasItsOwnStrides) {
  // A rank's sends count transfers by 2 and its receives by 1 in one lane:
  // (F m, SEND t=32+2m, RECV t=m) with lanes (micro-batch, transfer).
  std::vector<Item> items;
  for (int m = 0; m < 10; ++m) {
    items.push_back({1, {m, kAbsent}});
    items.push_back({2, {m, 32 + 2 * m}});
    items.push_back({3, {m, m}});
  }
  std::vector<Segment> segments = segmentAndCheck(sequence(2, items));
  ASSERT_EQ(segments.size(), 1u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 3, 10, {1, 0, 1, 2, 1, 1}}));
}

TEST(Repetition, ARunSavingOneItemStaysStraight) {
  // Two items of one shape are a run of two, but it saves only one item,
  // which its loop would cost back.
  std::vector<Segment> segments =
      segmentAndCheck(sequence(1, {{1, {0}}, {1, {5}}, {2, {0}}}));
  ASSERT_EQ(segments.size(), 1u) << describe(segments);
  EXPECT_FALSE(segments[0].repeated());
}

TEST(Repetition, RunBrokenByOneOddItem) {
  std::vector<Item> items = alternating(5);
  items.push_back({3, {kAbsent}});
  for (const Item &item : alternating(5, 10))
    items.push_back(item);
  std::vector<Segment> segments = segmentAndCheck(sequence(1, items));
  ASSERT_EQ(segments.size(), 3u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 2, 5, {2, 2}}));
  EXPECT_EQ(segments[1], (Segment{10, 1, 1, {}}));
  EXPECT_EQ(segments[2], (Segment{11, 2, 5, {2, 2}}));
}

TEST(Repetition, LanesWithDifferentStrides) {
  // Lane 0 +1, lane 1 +3, lane 2 -2, lane 3 constant (stride 0).
  std::vector<Item> items;
  for (int k = 0; k < 8; ++k) {
    items.push_back({1, {k, 3 * k, 40 - 2 * k, 5}});
    items.push_back({2, {k, 3 * k + 1, 41 - 2 * k, 6}});
  }
  std::vector<Segment> segments = segmentAndCheck(sequence(4, items));
  ASSERT_EQ(segments.size(), 1u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 2, 8, {1, 3, -2, 0, 1, 3, -2, 0}}));
}

TEST(Repetition, AStrideChangeEndsARun) {
  // 0 1 2 3 5 7 9 11: stride 1, then stride 2.
  std::vector<Item> items;
  for (int m : {0, 1, 2, 3, 5, 7, 9, 11})
    items.push_back({1, {m}});
  std::vector<Segment> segments = segmentAndCheck(sequence(1, items));
  ASSERT_EQ(segments.size(), 2u) << describe(segments);
  EXPECT_EQ(segments[0].strides, std::vector<int64_t>{1});
  EXPECT_EQ(segments[1].strides, std::vector<int64_t>{2});
}

TEST(Repetition, AbsentValuesMatchOnlyAbsent) {
  // (F m, AR) repeated: the AR's lane is absent in every body.
  std::vector<Item> items;
  for (int k = 0; k < 6; ++k) {
    items.push_back({1, {k}});
    items.push_back({2, {kAbsent}});
  }
  std::vector<Segment> segments = segmentAndCheck(sequence(1, items));
  ASSERT_EQ(segments.size(), 1u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 2, 6, {1, 0}}));

  // Same shapes, but one AR carries a value: absent does not match it.
  items[7].lanes = {3};
  segments = segmentAndCheck(sequence(1, items));
  for (const Segment &s : segments)
    if (s.repeated()) {
      EXPECT_TRUE(s.begin >= 8 || s.begin + s.length() <= 7)
          << describe(segments);
    }
}

TEST(Repetition, LaneAbsentInTheWholeRunHasStrideZero) {
  std::vector<Item> items;
  for (int k = 0; k < 4; ++k)
    items.push_back({1, {kAbsent, k}});
  std::vector<Segment> segments = segmentAndCheck(sequence(2, items));
  ASSERT_EQ(segments.size(), 1u) << describe(segments);
  EXPECT_EQ(segments[0], (Segment{0, 1, 4, {0, 1}}));
}

TEST(Repetition, ExtremeValuesRoundTrip) {
  // Strides wrap modulo 2^64: values at the ends of int64 still round-trip.
  std::vector<Item> items;
  for (int k = 0; k < 5; ++k)
    items.push_back({1, {INT64_MAX - k, INT64_MIN + 1 + k}});
  items.push_back({1, {INT64_MAX, kAbsent}});
  segmentAndCheck(sequence(2, items));
}

TEST(Repetition, EmptyAndSingleItem) {
  EXPECT_TRUE(segmentAndCheck(ItemSequence(1)).empty());
  std::vector<Segment> one = segmentAndCheck(sequence(1, {{4, {2}}}));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0], (Segment{0, 1, 1, {}}));
}

TEST(Repetition, LongBodyWithInnerRepetitions) {
  // A body of 3 inner runs of 20 (F s0 x20, F s1 x20, B x20), repeated 12
  // times with micro-batch stride 20: the body is found, not the inner runs.
  std::vector<Item> items;
  for (int unit = 0; unit < 12; ++unit)
    for (int shape : {1, 2, 3})
      for (int m = 0; m < 20; ++m)
        items.push_back({shape, {unit * 20 + m}});
  std::vector<Segment> segments = segmentAndCheck(sequence(1, items));
  EXPECT_LE(keptSize(segments), 60u) << describe(segments);
}

TEST(Repetition, UnrollRejectsMismatchedKeptItems) {
  ItemSequence items = sequence(1, alternating(4));
  std::vector<Segment> segments = segmentRepetitions(items);
  ItemSequence kept = keptItems(items, segments);

  ItemSequence shorter(1);
  shorter.appendItem(kept, 0);
  Result<ItemSequence> r = unroll(segments, shorter);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("segment 0"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("only 1 kept items"), std::string::npos) << r.error;

  ItemSequence longer = kept;
  longer.appendItem(kept, 0);
  r = unroll(segments, longer);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("keep 2 items, but 3"), std::string::npos) << r.error;

  std::vector<Segment> noStrides = segments;
  noStrides[0].strides.clear();
  r = unroll(noStrides, kept);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error.find("one stride per body item and lane, 2, got 0"),
            std::string::npos)
      << r.error;
}

// Reads (ItemSequence::addRead): a run's last repetition may read only
// items of the run, so that a loop carries each value across fewer
// repetitions than it has.
TEST(Repetition, ReadsKeepRunsThatCarryLessThanTheirLength) {
  // Ten forwards, then ten backwards each reading the forward ten back:
  // without reads the backwards are one run; with them no run of the
  // backwards holds what its last repetition reads.
  std::vector<Item> items;
  for (int k = 0; k < 10; ++k)
    items.push_back({1, {k}});
  for (int k = 0; k < 10; ++k)
    items.push_back({2, {k}});
  ItemSequence plain = sequence(1, items);
  ItemSequence withReads = sequence(1, items);
  for (size_t i = 10; i < 20; ++i)
    withReads.addRead(i, i - 10);
  EXPECT_FALSE(plain.hasReads());
  EXPECT_EQ(withReads.earliestRead(13), 3u);
  EXPECT_EQ(withReads.earliestRead(4), 4u);

  std::vector<Segment> free = segmentAndCheck(plain);
  ASSERT_EQ(free.size(), 2u) << describe(free);
  EXPECT_EQ(free[1], (Segment{10, 1, 10, {1}}));

  // The forwards' run reads nothing and stays; the backwards stay
  // straight.
  std::vector<Segment> bound = segmentAndCheck(withReads);
  ASSERT_EQ(bound.size(), 2u) << describe(bound);
  EXPECT_EQ(bound[0], (Segment{0, 1, 10, {1}}));
  EXPECT_FALSE(bound[1].repeated()) << describe(bound);

  // A 1F1B-like steady state (F k+1, B k) reads one repetition back: it
  // stays one run with reads.
  ItemSequence steady(1);
  steady.append(1, {0});
  for (int k = 0; k < 8; ++k) {
    steady.append(1, {k + 1});
    steady.append(2, {k});
    steady.addRead(steady.size() - 1, steady.size() - 3);
  }
  std::vector<Segment> oneRun = segmentAndCheck(steady);
  ASSERT_EQ(oneRun.size(), 2u) << describe(oneRun);
  EXPECT_EQ(oneRun[1], (Segment{1, 2, 8, {1, 1}}));
}

TEST(Repetition, ItemStr) {
  ItemSequence items = sequence(2, {{7, {3, kAbsent}}, {-1, {-4, 0}}});
  EXPECT_EQ(items.str(0), "7(3,-)");
  EXPECT_EQ(items.str(1), "-1(-4,0)");
}

TEST(Repetition, ShapeTableInterns) {
  ShapeTable table;
  int64_t a = table.key({1, 2});
  int64_t b = table.key({1, 2, 3});
  EXPECT_NE(a, b);
  EXPECT_EQ(table.key({1, 2}), a);
  EXPECT_EQ(table.description(b), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(table.size(), 2u);
}

TEST(Repetition, ActionAndCommAdapters) {
  std::vector<Action> actions = {Action::forward(0, 1), Action::forward(1, 1),
                                 Action::backward(0, 1),
                                 Action::allReduce({1, 4})};
  ShapeTable shapes;
  ItemSequence items = actionItems(actions, shapes);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items.shape(0), items.shape(1));
  EXPECT_NE(items.shape(0), items.shape(2));
  EXPECT_EQ(items.lane(1, 0), 1);
  EXPECT_EQ(items.lane(3, 0), kAbsent);
  EXPECT_EQ(shapes.description(items.shape(3)).back(), 4);

  CommAction send{CommKind::SendF, Action::forward(3, 1), 7, 12, 2};
  CommAction compute{CommKind::Compute, Action::forward(3, 1), 7, -1, -1};
  ItemSequence comms = commItems({compute, send}, shapes);
  ASSERT_EQ(comms.numLanes(), kNumCommLanes);
  EXPECT_NE(comms.shape(0), comms.shape(1));
  EXPECT_EQ(comms.lane(1, kCommMicrobatch), 3);
  EXPECT_EQ(comms.lane(1, kCommTransfer), 12);
  EXPECT_EQ(comms.lane(0, kCommTransfer), kAbsent);
  EXPECT_EQ(comms.lane(1, kCommActionIndex), 7);
}

//===----------------------------------------------------------------------===//
// Every schedule of the registry
//===----------------------------------------------------------------------===//

namespace {

/// The schedule `info` generates for D and N, or nullopt where the registry
/// or the generator refuses the request (odd D for a bidirectional schedule,
/// N an interleaved order cannot run).
std::optional<Schedule> generated(const ScheduleInfo &info, int devices,
                                  int microbatches) {
  ScheduleOptions request{info.name, devices, microbatches};
  Result<Schedule> s = generateSchedule(request);
  if (!s.ok())
    return std::nullopt;
  return *s;
}

/// Items kept per rank: for the action lists, then the lowered programs.
struct KeptSizes {
  std::vector<size_t> actions, comms;
};

KeptSizes keptSizes(const Schedule &schedule) {
  KeptSizes sizes;
  ShapeTable shapes;
  for (const std::vector<Action> &rank : schedule.ranks)
    sizes.actions.push_back(
        keptSize(segmentRepetitions(actionItems(rank, shapes))));
  Result<CommProgram> program = lowerComms(schedule);
  EXPECT_TRUE(program.ok()) << program.error;
  if (program.ok())
    for (const std::vector<CommAction> &rank : program->ranks)
      sizes.comms.push_back(
          keptSize(segmentRepetitions(commItems(rank, shapes))));
  return sizes;
}

std::string join(const std::vector<size_t> &values) {
  std::string out;
  for (size_t v : values)
    out += (out.empty() ? "" : " ") + std::to_string(v);
  return out;
}

} // namespace

TEST(Repetition, EveryScheduleRoundTrips) {
  for (const ScheduleInfo &info : schedules())
    for (int devices : {2, 4, 8})
      for (int n : {1, 2, 3, 5, 8, 12, 16, 31, 64, 100, 128}) {
        std::optional<Schedule> s = generated(info, devices, n);
        if (!s)
          continue;
        SCOPED_TRACE(std::string(info.name) + " D=" + std::to_string(devices) +
                     " N=" + std::to_string(n));
        ShapeTable shapes;
        for (const std::vector<Action> &rank : s->ranks)
          segmentAndCheck(actionItems(rank, shapes));
        Result<CommProgram> program = lowerComms(*s);
        ASSERT_TRUE(program.ok()) << program.error;
        for (const std::vector<CommAction> &rank : program->ranks)
          segmentAndCheck(commItems(rank, shapes));
      }
}

TEST(Repetition, KeptSizeDoesNotGrowWithN) {
  // The point of rolling: from N = 16D on, every rank keeps the same number
  // of items, in its action list and in its lowered program; at N = 8D it
  // keeps no more. (Below the threshold a few short loops can keep fewer
  // items than the long body they become part of: interleaved-1f1b's
  // lowered rank 3 at D=8 keeps 105 at N=64 and 129 from N=128 on;
  // docs/repetition.md.)
  for (const ScheduleInfo &info : schedules())
    for (int devices : {2, 4, 8}) {
      std::vector<KeptSizes> sizes;
      for (int perDevice : {8, 16, 32, 64}) {
        std::optional<Schedule> s =
            generated(info, devices, perDevice * devices);
        ASSERT_TRUE(s.has_value()) << info.name << " D=" << devices;
        sizes.push_back(keptSizes(*s));
      }
      for (size_t k = 2; k < sizes.size(); ++k) {
        EXPECT_EQ(join(sizes[k].actions), join(sizes[1].actions))
            << info.name << " D=" << devices << ": actions kept per rank";
        EXPECT_EQ(join(sizes[k].comms), join(sizes[1].comms))
            << info.name << " D=" << devices << ": lowered steps kept per rank";
      }
      for (size_t r = 0; r < sizes[0].actions.size(); ++r)
        EXPECT_LE(sizes[0].actions[r], sizes[1].actions[r])
            << info.name << " D=" << devices << " rank " << r;
      for (size_t r = 0; r < sizes[0].comms.size(); ++r)
        EXPECT_LE(sizes[0].comms[r], sizes[1].comms[r])
            << info.name << " D=" << devices << " rank " << r;
    }
}
