//===- Repetition.cpp - The repeated runs of a rank program ---------------===//
//
// segmentRepetitions works in three steps (docs/repetition.md):
//  1. candidate periods: the short ones, and for windows of 1, 2, 4, ...
//     items the most frequent distances from a window to the next window of
//     the same shapes;
//  2. for each candidate period P, one linear scan finds the maximal regions
//     where item i + P repeats item i's shape and steps from it as item i
//     steps from item i - P (so each body item has its own strides);
//  3. a dynamic program over positions picks the runs (any part of a region
//     at least two periods long) that keep the fewest items, counting one
//     more per run for the loop itself.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Repetition.h"

#include <algorithm>
#include <cassert>

namespace bitpipe::sched {

//===----------------------------------------------------------------------===//
// ItemSequence, ShapeTable
//===----------------------------------------------------------------------===//

void ItemSequence::append(int64_t shape, const std::vector<int64_t> &lanes) {
  assert(static_cast<int>(lanes.size()) == numLanes_ &&
         "ItemSequence::append: one value per lane");
  shapes_.push_back(shape);
  lanes_.insert(lanes_.end(), lanes.begin(), lanes.end());
  if (!earliest_.empty())
    earliest_.push_back(shapes_.size() - 1);
}

void ItemSequence::addRead(size_t index, size_t earlier) {
  assert(index < size() && earlier <= index && "addRead: an earlier item");
  if (earliest_.empty())
    for (size_t i = 0; i < size(); ++i)
      earliest_.push_back(i);
  earliest_[index] = std::min(earliest_[index], earlier);
}

void ItemSequence::appendItem(const ItemSequence &other, size_t index) {
  assert(other.numLanes_ == numLanes_ && "appendItem: same lane count");
  shapes_.push_back(other.shapes_[index]);
  const int64_t *first = &other.lanes_[index * numLanes_];
  lanes_.insert(lanes_.end(), first, first + numLanes_);
  if (!earliest_.empty())
    earliest_.push_back(shapes_.size() - 1);
}

std::string ItemSequence::str(size_t index) const {
  std::string out = std::to_string(shape(index)) + "(";
  for (int l = 0; l < numLanes_; ++l) {
    int64_t v = lane(index, l);
    out +=
        (l ? "," : "") + (v == kAbsent ? std::string("-") : std::to_string(v));
  }
  return out + ")";
}

int64_t ShapeTable::key(const std::vector<int64_t> &description) {
  auto [it, inserted] = keys_.try_emplace(
      description, static_cast<int64_t>(descriptions_.size()));
  if (inserted)
    descriptions_.push_back(description);
  return it->second;
}

//===----------------------------------------------------------------------===//
// Wrapping arithmetic: strides are differences modulo 2^64, so that any two
// values have one and unrolling gives back every value exactly.
//===----------------------------------------------------------------------===//

namespace {

uint64_t wrap(int64_t v) { return static_cast<uint64_t>(v); }
int64_t unwrap(uint64_t v) { return static_cast<int64_t>(v); }

uint64_t mix(uint64_t x) { // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
uint64_t combine(uint64_t h, uint64_t v) { return mix(h ^ mix(v)); }

//===----------------------------------------------------------------------===//
// Step 1: candidate periods
//===----------------------------------------------------------------------===//

/// Item i's token: its shape and which lanes are present, the part of an
/// item that a run repeats unchanged.
std::vector<uint64_t> shapeTokens(const ItemSequence &items) {
  std::vector<uint64_t> tokens(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    uint64_t h = mix(wrap(items.shape(i)));
    for (int l = 0; l < items.numLanes(); ++l)
      h = combine(h, items.lane(i, l) == ItemSequence::kAbsent ? 1 : 2);
    tokens[i] = h;
  }
  return tokens;
}

/// Periods always tried: short bodies (a run of forwards, 1F1B's pair) are
/// cheap to scan for and easy to crowd out of the frequency ranking.
constexpr size_t kShortPeriods = 4;
/// The widest window compared: a body whose longest internal repetition is
/// shorter than this shows its period as the distance between equal windows.
constexpr size_t kMaxWindow = 1024;
/// Distances kept per window width, the most frequent first.
constexpr size_t kPeriodsPerWidth = 8;

/// 1..kShortPeriods, and for windows of 1, 2, 4, ..., kMaxWindow tokens the
/// kPeriodsPerWidth most frequent distances from a window to the next
/// equal one. In a run of K repetitions of a body of P items, every window
/// that occurs once per body recurs at distance P, about (K-1)*P times: long
/// runs are among the candidates.
std::vector<size_t> candidatePeriods(const std::vector<uint64_t> &tokens) {
  const size_t n = tokens.size();
  std::vector<size_t> periods;
  for (size_t p = 1; p <= kShortPeriods && 2 * p <= n; ++p)
    periods.push_back(p);
  constexpr uint64_t kBase = 0x100000001b3ULL; // odd: powers never vanish
  // Shared by every width: a hash table of window starts, at most half
  // full, and a count per distance (distances are below n / 2).
  constexpr size_t kEmpty = std::numeric_limits<size_t>::max();
  size_t capacity = 16;
  while (capacity < 2 * n)
    capacity *= 2;
  const size_t mask = capacity - 1;
  std::vector<size_t> slots(capacity);
  std::vector<size_t> distanceCount(n / 2 + 1, 0);
  for (size_t width = 1; width <= kMaxWindow && 2 * width <= n; width *= 2) {
    uint64_t power = 1; // kBase^width
    for (size_t j = 0; j < width; ++j)
      power *= kBase;
    // hashes[i]: the window [i, i + width), polynomial in kBase.
    std::vector<uint64_t> hashes(n - width + 1);
    uint64_t h = 0;
    for (size_t j = 0; j < width; ++j)
      h = h * kBase + tokens[j];
    hashes[0] = h;
    for (size_t i = 1; i + width <= n; ++i) {
      h = h * kBase - tokens[i - 1] * power + tokens[i + width - 1];
      hashes[i] = h;
    }
    // For each window from the last, the distance to the next equal one:
    // the latest start seen of each hash, in an open-addressed table (a
    // node-based map cost an allocation per window, per width, per rank).
    std::fill(slots.begin(), slots.end(), kEmpty);
    std::vector<size_t> touched;
    for (size_t i = hashes.size(); i-- > 0;) {
      size_t at = mix(hashes[i]) & mask;
      while (slots[at] != kEmpty && hashes[slots[at]] != hashes[i])
        at = (at + 1) & mask;
      if (slots[at] != kEmpty) {
        size_t distance = slots[at] - i;
        if (distance > kShortPeriods && 2 * distance <= n &&
            distanceCount[distance]++ == 0)
          touched.push_back(distance);
      }
      slots[at] = i;
    }
    std::vector<std::pair<size_t, size_t>> byCount; // (count, distance)
    for (size_t distance : touched) {
      byCount.push_back({distanceCount[distance], distance});
      distanceCount[distance] = 0;
    }
    size_t keep = std::min(kPeriodsPerWidth, byCount.size());
    std::partial_sort(byCount.begin(), byCount.begin() + keep, byCount.end(),
                      [](auto a, auto b) {
                        return a.first != b.first ? a.first > b.first
                                                  : a.second < b.second;
                      });
    for (size_t k = 0; k < keep; ++k)
      periods.push_back(byCount[k].second);
  }
  std::sort(periods.begin(), periods.end());
  periods.erase(std::unique(periods.begin(), periods.end()), periods.end());
  return periods;
}

//===----------------------------------------------------------------------===//
// Step 2: the regions of one period
//===----------------------------------------------------------------------===//

/// Items [begin, end), at least two periods long, any part of which that is
/// a whole number (>= 2) of periods is a run: item i + period has item i's
/// shape and absent lanes, and its present lanes step by the same amount
/// from item i as item i's do from item i - period.
struct Region {
  size_t begin = 0;
  size_t end = 0;
  size_t period = 0;
};

/// Item i + period repeats item i: same shape, same absent lanes.
bool sameShape(const ItemSequence &items, size_t i, size_t period) {
  size_t j = i + period;
  if (items.shape(i) != items.shape(j))
    return false;
  for (int l = 0; l < items.numLanes(); ++l)
    if ((items.lane(i, l) == ItemSequence::kAbsent) !=
        (items.lane(j, l) == ItemSequence::kAbsent))
      return false;
  return true;
}

/// Item i steps from item i - period as item i + period steps from item i.
bool sameStep(const ItemSequence &items, size_t i, size_t period) {
  for (int l = 0; l < items.numLanes(); ++l) {
    int64_t v = items.lane(i, l);
    if (v == ItemSequence::kAbsent)
      continue;
    if (wrap(items.lane(i + period, l)) - wrap(v) !=
        wrap(v) - wrap(items.lane(i - period, l)))
      return false;
  }
  return true;
}

/// The most repetitions of a shape period a lane period is tried as: the
/// lanes can repeat less often than the shapes (Chimera's two micro-batch
/// streams share one shape period, and advance in turn).
constexpr size_t kMaxMultiple = 8;

/// The maximal regions of `period` among positions [lo, hi) (position i
/// pairs item i with item i + period), in one scan. A position joins the
/// open region when it repeats its shape and, one period into the region,
/// its step; a step that changes at i starts a new region at i - period + 1,
/// the first position it does not constrain. Every maximal interval of
/// repeated shapes that breaks into several regions is scanned again for
/// the multiples of `period` (when `tryMultiples`; not again for those).
void findRegions(const ItemSequence &items, size_t period, size_t lo, size_t hi,
                 bool tryMultiples, std::vector<Region> &out) {
  bool open = false;
  size_t start = 0;
  size_t shapeStart = lo; // the interval of repeated shapes
  size_t stepBreaks = 0;  // regions it broke into, minus one
  // Positions [start, stop) pair with their item one period later: items
  // [start, stop + period).
  auto close = [&](size_t stop) {
    // Kept only if a run in it can save more than the one item its loop
    // costs (see Cost): two periods of at least two items, or three of one.
    size_t repetitions = (stop - start) / period + 1;
    if (open && repetitions >= 2 && period * (repetitions - 1) >= 2)
      out.push_back({start, stop + period, period});
    open = false;
  };
  auto closeShapes = [&](size_t stop) {
    close(stop);
    // A lane period m * period needs m * period positions of repeated
    // shapes to pair with the next repetition.
    if (tryMultiples && stepBreaks > 0)
      for (size_t m = 2;
           m <= kMaxMultiple && stop - shapeStart >= 2 * m * period; ++m)
        findRegions(items, m * period, shapeStart, stop - (m - 1) * period,
                    /*tryMultiples=*/false, out);
    stepBreaks = 0;
  };
  for (size_t i = lo; i < hi; ++i) {
    if (!sameShape(items, i, period)) {
      if (open)
        closeShapes(i);
      continue;
    }
    if (!open) {
      open = true;
      start = shapeStart = i;
    } else if (i >= start + period && !sameStep(items, i, period)) {
      close(i);
      open = true;
      start = i - period + 1;
      ++stepBreaks;
    }
  }
  if (open)
    closeShapes(hi);
}

/// The maximal regions of `period` in the whole sequence.
void findRegions(const ItemSequence &items, size_t period,
                 std::vector<Region> &out) {
  if (items.size() >= 2 * period)
    findRegions(items, period, 0, items.size() - period,
                /*tryMultiples=*/true, out);
}

/// The strides of the run of `period` that starts at item `begin`: per body
/// item, per lane, the step to the next repetition (0 where absent).
std::vector<int64_t> runStrides(const ItemSequence &items, size_t begin,
                                size_t period) {
  const int numLanes = items.numLanes();
  std::vector<int64_t> strides(period * numLanes);
  for (size_t j = 0; j < period; ++j)
    for (int l = 0; l < numLanes; ++l) {
      int64_t v = items.lane(begin + j, l);
      if (v != ItemSequence::kAbsent)
        strides[j * numLanes + l] =
            unwrap(wrap(items.lane(begin + period + j, l)) - wrap(v));
    }
  return strides;
}

//===----------------------------------------------------------------------===//
// Step 3: the segmentation that keeps the fewest items
//===----------------------------------------------------------------------===//

/// What a prefix costs: items kept plus one per run (the loop itself, so
/// that a run saving a single item stays straight), then fewer runs.
struct Cost {
  size_t kept = 0;
  size_t runs = 0;
  bool operator<(const Cost &o) const {
    return kept + runs != o.kept + o.runs ? kept + runs < o.kept + o.runs
                                          : runs < o.runs;
  }
};

/// How the best segmentation of a prefix [0, x) ends.
struct Last {
  int region = -1; ///< -1: item x-1 straight; else a run of this region...
  size_t from = 0; ///< ...over items [from, x).
};

/// The earliest item read by any item of a range, in O(1) per query (a
/// sparse table over ItemSequence::earliestRead); without reads, every
/// range reads nothing before itself.
class ReadBounds {
public:
  explicit ReadBounds(const ItemSequence &items) {
    if (!items.hasReads())
      return;
    const size_t n = items.size();
    levels.emplace_back(n);
    for (size_t i = 0; i < n; ++i)
      levels[0][i] = items.earliestRead(i);
    for (size_t w = 1; 2 * w <= n; w *= 2) {
      const std::vector<size_t> &prev = levels.back();
      std::vector<size_t> next(n - 2 * w + 1);
      for (size_t i = 0; i < next.size(); ++i)
        next[i] = std::min(prev[i], prev[i + w]);
      levels.push_back(std::move(next));
    }
  }
  /// min earliestRead over [begin, end), end > begin.
  size_t earliest(size_t begin, size_t end) const {
    if (levels.empty())
      return begin;
    size_t level = 0;
    while ((size_t(2) << level) <= end - begin)
      ++level;
    return std::min(levels[level][begin],
                    levels[level][end - (size_t(1) << level)]);
  }

private:
  std::vector<std::vector<size_t>> levels;
};

} // namespace

std::vector<Segment> segmentRepetitions(const ItemSequence &items) {
  const size_t n = items.size();
  std::vector<Region> regions;
  for (size_t period : candidatePeriods(shapeTokens(items)))
    findRegions(items, period, regions);
  // A run of region r can end at x in [begin + 2P, end]; it starts at some
  // s = x - 2P, x - 3P, ... >= begin, and, with reads, at or before the
  // earliest item its last repetition [x - P, x) reads. Per region, starts
  // are recorded as s advances with, per residue of s mod P, the best start
  // so far (prefix minima), so each end costs one step per region that
  // covers it.
  std::sort(regions.begin(), regions.end(),
            [](const Region &a, const Region &b) {
              return a.begin + 2 * a.period < b.begin + 2 * b.period;
            });
  ReadBounds reads(items);
  // prefix[r][i]: the best start of region r among begin + i, begin + i - P,
  // ... (fewest kept, then the earliest).
  std::vector<std::vector<size_t>> prefix(regions.size());
  std::vector<size_t> active;
  size_t nextRegion = 0;
  std::vector<Cost> best(n + 1);
  std::vector<Last> last(n + 1);
  for (size_t x = 1; x <= n; ++x) {
    best[x] = {best[x - 1].kept + 1, best[x - 1].runs};
    last[x] = {-1, x - 1};
    while (nextRegion < regions.size() &&
           regions[nextRegion].begin + 2 * regions[nextRegion].period == x)
      active.push_back(nextRegion++);
    for (size_t k = 0; k < active.size();) {
      size_t r = active[k];
      const Region &region = regions[r];
      const size_t P = region.period;
      std::vector<size_t> &starts = prefix[r];
      size_t s = x - 2 * P;
      size_t i = s - region.begin;
      size_t pick = s;
      if (i >= P && !(best[s] < best[starts[i - P]]))
        pick = starts[i - P];
      starts.push_back(pick);
      // The latest start allowed, of the residue of x.
      size_t bound = std::min(s, reads.earliest(x - P, x));
      size_t back = (s - bound + P - 1) / P * P;
      if (back <= s - region.begin) {
        size_t from = starts[s - back - region.begin];
        {
          Cost viaRun{best[from].kept + P, best[from].runs + 1};
          if (viaRun < best[x]) {
            best[x] = viaRun;
            last[x] = {static_cast<int>(r), from};
          }
        }
      }
      if (x == region.end) { // no run of it ends later
        prefix[r] = {};
        active[k] = active.back();
        active.pop_back();
      } else {
        ++k;
      }
    }
  }
  // Trace back, merging consecutive straight items.
  std::vector<Segment> reversed;
  for (size_t x = n; x > 0;) {
    const Last &l = last[x];
    if (l.region < 0) {
      if (!reversed.empty() && !reversed.back().repeated() &&
          reversed.back().begin == x) {
        --reversed.back().begin;
        ++reversed.back().period;
      } else {
        reversed.push_back({x - 1, 1, 1, {}});
      }
      x -= 1;
      continue;
    }
    const Region &region = regions[l.region];
    reversed.push_back({l.from, region.period, (x - l.from) / region.period,
                        runStrides(items, l.from, region.period)});
    x = l.from;
  }
  return {reversed.rbegin(), reversed.rend()};
}

size_t keptSize(const std::vector<Segment> &segments) {
  size_t kept = 0;
  for (const Segment &s : segments)
    kept += s.period;
  return kept;
}

ItemSequence keptItems(const ItemSequence &items,
                       const std::vector<Segment> &segments) {
  ItemSequence kept(items.numLanes());
  for (const Segment &s : segments)
    for (size_t j = 0; j < s.period; ++j)
      kept.appendItem(items, s.begin + j);
  return kept;
}

Result<ItemSequence> unroll(const std::vector<Segment> &segments,
                            const ItemSequence &kept) {
  const int numLanes = kept.numLanes();
  ItemSequence out(numLanes);
  std::vector<int64_t> lanes(numLanes);
  size_t next = 0; // first kept item of the current segment
  for (size_t k = 0; k < segments.size(); ++k) {
    const Segment &s = segments[k];
    std::string where = "unroll: segment " + std::to_string(k) + " (begin " +
                        std::to_string(s.begin) + ")";
    if (s.period == 0 || s.count == 0)
      return Result<ItemSequence>::failure(
          where + ": period and count must be at least 1, got period " +
          std::to_string(s.period) + ", count " + std::to_string(s.count));
    if (next + s.period > kept.size())
      return Result<ItemSequence>::failure(
          where + " keeps items [" + std::to_string(next) + ", " +
          std::to_string(next + s.period) + ") but only " +
          std::to_string(kept.size()) + " kept items were given");
    if (s.repeated() && s.strides.size() != s.period * numLanes)
      return Result<ItemSequence>::failure(
          where + ": a run needs one stride per body item and lane, " +
          std::to_string(s.period * numLanes) + ", got " +
          std::to_string(s.strides.size()));
    for (size_t rep = 0; rep < s.count; ++rep)
      for (size_t j = 0; j < s.period; ++j) {
        for (int l = 0; l < numLanes; ++l) {
          int64_t v = kept.lane(next + j, l);
          lanes[l] =
              v == ItemSequence::kAbsent || rep == 0
                  ? v
                  : unwrap(wrap(v) + rep * wrap(s.strides[j * numLanes + l]));
        }
        out.append(kept.shape(next + j), lanes);
      }
    next += s.period;
  }
  if (next != kept.size())
    return Result<ItemSequence>::failure(
        "unroll: the segments keep " + std::to_string(next) + " items, but " +
        std::to_string(kept.size()) + " kept items were given");
  return Result<ItemSequence>::success(std::move(out));
}

//===----------------------------------------------------------------------===//
// Adapters
//===----------------------------------------------------------------------===//

namespace {

/// Shape descriptions start with a tag, so that the two adapters' shapes
/// never collide in a shared table.
enum ShapeTag : int64_t { kActionShape = 1, kCommShape = 2 };

int64_t microbatchLane(const Action &a) {
  return a.kind == ActionKind::AllReduce ? ItemSequence::kAbsent : a.microbatch;
}

} // namespace

ItemSequence actionItems(const std::vector<Action> &actions,
                         ShapeTable &shapes) {
  ItemSequence items(1);
  for (const Action &a : actions) {
    std::vector<int64_t> description = {kActionShape,
                                        static_cast<int64_t>(a.kind), a.stage};
    description.insert(description.end(), a.stages.begin(), a.stages.end());
    items.append(shapes.key(description), {microbatchLane(a)});
  }
  return items;
}

ItemSequence commItems(const std::vector<CommAction> &actions,
                       ShapeTable &shapes) {
  ItemSequence items(kNumCommLanes);
  std::vector<int64_t> lanes(kNumCommLanes);
  for (const CommAction &c : actions) {
    std::vector<int64_t> description = {
        kCommShape, static_cast<int64_t>(c.kind),
        static_cast<int64_t>(c.action.kind), c.action.stage, c.peer};
    description.insert(description.end(), c.action.stages.begin(),
                       c.action.stages.end());
    lanes[kCommMicrobatch] = microbatchLane(c.action);
    lanes[kCommTransfer] = c.transfer < 0 ? ItemSequence::kAbsent : c.transfer;
    lanes[kCommActionIndex] = c.actionIndex;
    items.append(shapes.key(description), lanes);
  }
  return items;
}

} // namespace bitpipe::sched
