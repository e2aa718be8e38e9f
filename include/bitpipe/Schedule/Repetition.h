//===- Repetition.h - The repeated runs of a rank program -------*- C++ -*-===//
//
// The steady state of a pipeline schedule repeats: BitPipe per unit of D
// micro-batches, 1F1B per micro-batch, GPipe as a run of forwards and a run
// of backwards. This file finds that repetition in any sequence of items, so
// that a rank program can be kept as loops whose length does not grow with
// the number of micro-batches (docs/repetition.md).
//
// Generic over what the items are: an item is a *shape* (an integer key for
// everything about it except its progressing numbers) and a fixed number of
// *lanes* (the progressing numbers: micro-batch, transfer, ...). Adapters at
// the end build item sequences from the library's own action lists.
//
// Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_REPETITION_H
#define BITPIPE_SCHEDULE_REPETITION_H

#include "bitpipe/Schedule/Comms.h"
#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

namespace bitpipe::sched {

/// A sequence of items, each a shape and numLanes() lane values, stored flat.
class ItemSequence {
public:
  /// The value of an absent lane (an all-reduce has no micro-batch). An
  /// absent value matches only an absent value and never takes a stride.
  static constexpr int64_t kAbsent = std::numeric_limits<int64_t>::min();

  explicit ItemSequence(int numLanes = 1) : numLanes_(numLanes) {}

  int numLanes() const { return numLanes_; }
  size_t size() const { return shapes_.size(); }
  bool empty() const { return shapes_.empty(); }

  /// Appends one item; `lanes` must hold numLanes() values.
  void append(int64_t shape, const std::vector<int64_t> &lanes);
  /// Appends item `index` of `other` (same numLanes()), without its reads.
  void appendItem(const ItemSequence &other, size_t index);

  /// Records that item `index` reads item `earlier` (earlier <= index): a
  /// value a loop body uses. segmentRepetitions then keeps, in the last
  /// repetition of every run, only items whose reads stay inside the run,
  /// so that a loop carries each value across fewer repetitions than it
  /// has (docs/repetition.md, "Loops in the program IR").
  void addRead(size_t index, size_t earlier);
  /// The earliest item `index` reads; itself when it reads none.
  size_t earliestRead(size_t index) const {
    return earliest_.empty() ? index : earliest_[index];
  }
  bool hasReads() const { return !earliest_.empty(); }

  int64_t shape(size_t index) const { return shapes_[index]; }
  int64_t lane(size_t index, int lane) const {
    return lanes_[index * numLanes_ + lane];
  }

  /// Same lane count and the same items, bit for bit.
  bool operator==(const ItemSequence &o) const {
    return numLanes_ == o.numLanes_ && shapes_ == o.shapes_ &&
           lanes_ == o.lanes_;
  }
  bool operator!=(const ItemSequence &o) const { return !(*this == o); }

  /// Item `index` as "shape(lane,lane,...)", "-" for an absent lane.
  std::string str(size_t index) const;

private:
  int numLanes_;
  std::vector<int64_t> shapes_;
  std::vector<int64_t> lanes_;
  /// Per item, the earliest item it reads; empty until addRead.
  std::vector<size_t> earliest_;
};

/// A piece of a segmented sequence: items [begin, begin + period * count) of
/// the input. Straight (count == 1): those items as they are. Repeated
/// (count >= 2): a *repeated run*, whose body is items [begin, begin +
/// period), and item begin + k*period + j (0 <= k < count, 0 <= j < period)
/// has the shape of item begin + j and, in every lane l, its value plus
/// k * strides[j * numLanes + l] (an absent value stays absent).
///
/// Each body item has its own stride per lane, as each op of a loop body
/// has its own affine function of the induction variable: one lane can
/// count several things (a rank's sends and its receives advance the
/// transfer numbers at different rates). Strides are any integers, 0 and
/// negative included; the arithmetic wraps modulo 2^64, so that unrolling is
/// exact for every value.
struct Segment {
  size_t begin = 0;
  size_t period = 0; ///< Items kept: the body, or the straight items.
  size_t count = 1;  ///< Repetitions of the body; 1 for a straight segment.
  /// A repeated run: period * numLanes values, body item by body item (0
  /// for an absent lane). Empty for a straight segment.
  std::vector<int64_t> strides;

  bool repeated() const { return count >= 2; }
  size_t length() const { return period * count; }
  bool operator==(const Segment &o) const {
    return begin == o.begin && period == o.period && count == o.count &&
           strides == o.strides;
  }
};

/// Covers `items` in order with straight segments and repeated runs so that
/// the items kept (keptSize) are few. With reads (ItemSequence::addRead),
/// every item of a run's last repetition reads only items of the run. Exact
/// whatever the input: unroll() of the result gives back `items`. The candidate
/// periods are derived from the sequence, and among segmentations that use runs
/// of those periods the result minimises the items kept plus one per run (then
/// the runs); see docs/repetition.md for the heuristic and its cost, about
/// linear in the length. Consecutive straight items form one straight segment.
std::vector<Segment> segmentRepetitions(const ItemSequence &items);

/// The items a segmentation keeps: its straight items plus one body per run.
size_t keptSize(const std::vector<Segment> &segments);

/// Those items, in order: what a rolled program holds.
ItemSequence keptItems(const ItemSequence &items,
                       const std::vector<Segment> &segments);

/// The inverse: the whole sequence from the segments and the kept items
/// alone (Segment::begin is not read). Fails, naming the segment, when the
/// kept items do not match the segments' sizes or a run lacks its strides.
Result<ItemSequence> unroll(const std::vector<Segment> &segments,
                            const ItemSequence &kept);

/// Interns shape descriptions (any list of integers) into dense keys, so
/// that an adapter can turn "kind F, stage 3" into one integer. Share one
/// table between sequences whose shapes must compare equal.
class ShapeTable {
public:
  int64_t key(const std::vector<int64_t> &description);
  /// The description of `key`.
  const std::vector<int64_t> &description(int64_t key) const {
    return descriptions_[key];
  }
  size_t size() const { return descriptions_.size(); }

private:
  std::map<std::vector<int64_t>, int64_t> keys_;
  std::vector<std::vector<int64_t>> descriptions_;
};

/// A rank's actions (Schedule::ranks[r]) as items: the shape is the kind,
/// the stage and an all-reduce's stages; one lane, the micro-batch (absent
/// for an all-reduce).
ItemSequence actionItems(const std::vector<Action> &actions,
                         ShapeTable &shapes);

/// The lanes of commItems().
enum CommLane : int {
  kCommMicrobatch = 0,  ///< The action's (or producer's) micro-batch.
  kCommTransfer = 1,    ///< Index into CommProgram::transfers, or absent.
  kCommActionIndex = 2, ///< CommAction::actionIndex.
  kNumCommLanes = 3,
};

/// A rank of a CommProgram (lowerComms) as items: the shape is the step's
/// kind, its action's kind, stage and all-reduce stages, and its peer; the
/// lanes are CommLane's.
ItemSequence commItems(const std::vector<CommAction> &actions,
                       ShapeTable &shapes);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_REPETITION_H
