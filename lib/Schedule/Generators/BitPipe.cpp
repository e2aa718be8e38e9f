//===- BitPipe.cpp - The BitPipe schedule (reference per-rank order) ------===//
//
// Reproduces, action for action, the per-rank order of the BitPipe authors'
// reference implementation: each rank builds a list of its forwards and a
// list of its backwards from its four chunks, then plays them in a warm-up,
// a steady phase of forward/backward pairs and a cool-down, with units of D
// micro-batches concatenated without a flush. docs/bitpipe-order.md derives
// every quantity used here and works the D = 4 examples.
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Describe.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

#include <algorithm>
#include <array>

namespace bitpipe::sched {

namespace {

/// The chunks of a rank (docs/bitpipe-order.md, "Placement"): the first
/// and second half of the down and the up pipeline.
enum Chunk { kDownFirst = 0, kUpFirst = 1, kDownSecond = 2, kUpSecond = 3 };

/// The per-rank order of the reference implementation for `numUnits` full
/// units of D micro-batches.
std::vector<Action> referenceOrder(int D, int numUnits, int rank) {
  // Each unit sends half its micro-batches down and half up.
  const int perDirection = D / 2;
  // How far the rank is from the nearer end of the row of devices: 0 for
  // the first and last rank, perDirection - 1 for the two middle ones.
  const int fromEdge = std::min(rank, D - 1 - rank);
  // The direction whose first stages sit on this rank's side: down for the
  // first half of the ranks, up for the second. Its chunks lead, the other
  // direction's trail.
  const bool leadsUp = rank >= perDirection;
  const int leadFirst = leadsUp ? kUpFirst : kDownFirst;
  const int trailFirst = leadsUp ? kDownFirst : kUpFirst;
  const int leadSecond = leadsUp ? kUpSecond : kDownSecond;
  const int trailSecond = leadsUp ? kDownSecond : kUpSecond;
  // Forwards of the leading first half the rank runs before the trailing
  // direction's first micro-batch reaches it; also the number of F/B pairs
  // of the steady phase.
  const int leadRun = perDirection - fromEdge;

  // Chunk c of this rank holds stage stageOf[c] and travels direction c % 2.
  const std::array<int, 4> stageOf = {rank, D - 1 - rank, 2 * D - 1 - rank,
                                      D + rank};
  // Each chunk's micro-batches are taken in order, by separate cursors for
  // the forward and the backward list. The k-th micro-batch of a direction
  // is number k mod perDirection of unit k / perDirection; a unit's
  // micro-batches go down first, then up.
  std::array<int, 4> nextForward = {0, 0, 0, 0}, nextBackward = {0, 0, 0, 0};
  auto take = [&](std::array<int, 4> &cursor, int chunk, bool forward) {
    int k = cursor[chunk]++;
    int mb = (k / perDirection) * D + (chunk % 2 ? perDirection : 0) +
             k % perDirection;
    return forward ? Action::forward(mb, stageOf[chunk])
                   : Action::backward(mb, stageOf[chunk]);
  };

  // The two lists, unit by unit. Forwards: the leading first half alone,
  // then the trailing first half joins, then the trailing direction goes
  // on into its second half, then the leading one does. Backwards mirror
  // that with the halves swapped: the second halves (nearest the losses)
  // start.
  std::vector<Action> forwards, backwards;
  auto repeat = [&](int times, std::initializer_list<int> chunks,
                    bool forward) {
    for (int i = 0; i < times; ++i)
      for (int c : chunks)
        (forward ? forwards : backwards)
            .push_back(take(forward ? nextForward : nextBackward, c, forward));
  };
  // The runs of alternating pairs are perDirection - leadRun = fromEdge
  // long.
  for (int unit = 0; unit < numUnits; ++unit) {
    repeat(leadRun, {leadFirst}, true);
    repeat(fromEdge, {trailFirst, leadFirst}, true);
    repeat(leadRun, {trailFirst, trailSecond}, true);
    repeat(fromEdge, {leadSecond, trailSecond}, true);
    repeat(leadRun, {leadSecond}, true);

    repeat(leadRun, {leadSecond}, false);
    repeat(fromEdge, {trailSecond, leadSecond}, false);
    repeat(leadRun, {trailSecond, trailFirst}, false);
    repeat(fromEdge, {leadFirst, trailFirst}, false);
    repeat(leadRun, {leadFirst}, false);
  }

  // Gradient all-reduces with the replica partner (rank D-1-rank): first
  // the second halves' stages (their backwards finish first), then the
  // first halves'. On the two middle ranks both come at the end; elsewhere
  // the first one precedes the last backward, by which time the second
  // halves are done.
  auto sorted = [](int x, int y) {
    return std::vector<int>{std::min(x, y), std::max(x, y)};
  };
  Action syncSecond =
      Action::allReduce(sorted(stageOf[kDownSecond], stageOf[kUpSecond]));
  Action syncFirst =
      Action::allReduce(sorted(stageOf[kDownFirst], stageOf[kUpFirst]));
  if (fromEdge == perDirection - 1)
    backwards.push_back(syncSecond);
  else
    backwards.insert(backwards.end() - 1, syncSecond);
  backwards.push_back(syncFirst);

  // The phases. A unit gives each rank 2D forwards and 2D backwards; the
  // rank runs `warmup` of its forwards before its first backward, then
  // `steady` (= leadRun) forward/backward pairs.
  const int perUnit = 2 * D;
  const int warmup = D + perDirection + fromEdge;
  const int steady = perUnit - warmup;
  std::vector<Action> out;
  auto forward = [&](int i) { out.push_back(forwards[i]); };
  auto backward = [&](int i) { out.push_back(backwards[i]); };
  for (int k = 0; k < warmup; ++k)
    forward(k);
  // Between two units (no flush): the steady pairs of this unit, its
  // remaining backwards, then the next unit's warm-up forwards, the first
  // steady - 1 of them paired with this unit's last backwards.
  for (int unit = 0; unit + 1 < numUnits; ++unit) {
    const int at = unit * perUnit; // this unit's first entry in each list
    for (int k = 0; k < steady; ++k)
      forward(warmup + at + k), backward(at + k);
    for (int k = 0; k <= warmup - steady; ++k)
      backward(at + steady + k);
    for (int k = 0; k + 1 < steady; ++k)
      forward(perUnit + at + k), backward(warmup + 1 + at + k);
    for (int k = 0; k <= warmup - steady; ++k)
      forward(perUnit + at + steady - 1 + k);
  }
  // The last unit: its steady pairs, then the cool-down (its remaining
  // backwards and the two all-reduces).
  const int last = (numUnits - 1) * perUnit;
  for (int k = 0; k < steady; ++k)
    forward(warmup + last + k), backward(last + k);
  for (int k = last + steady; k < static_cast<int>(backwards.size()); ++k)
    backward(k);
  return out;
}

} // namespace

Result<Schedule> generateBitPipe(int devices, int microbatches) {
  Result<Schedule> made = detail::emptySchedule(
      "bitpipe", devices, microbatches, /*chunksPerDevice=*/0);
  if (!made)
    return made;
  Schedule &s = *made;

  const int D = devices;
  const int fullUnits = microbatches / D;
  const int rest = microbatches % D;
  if (rest == 0) {
    for (int r = 0; r < D; ++r)
      s.ranks[r] = referenceOrder(D, fullUnits, r);
    return Result<Schedule>::success(std::move(s));
  }

  // N is not a multiple of D. The reference order needs whole units, so the
  // full units keep it (without its markers) and the final partial unit is
  // appended, list-scheduled greedily on the same placement. Its rank lists
  // start after the full units' lists end, which is valid because the two
  // parts share no micro-batch; AR markers then follow each rank's last
  // backward of its second-half and first-half chunks, as in the reference.
  for (int r = 0; r < D && fullUnits > 0; ++r)
    for (const Action &a : referenceOrder(D, fullUnits, r))
      if (a.kind != ActionKind::AllReduce)
        s.ranks[r].push_back(a);
  std::vector<int> tail;
  for (int m = fullUnits * D; m < microbatches; ++m)
    tail.push_back(m);
  detail::appendListSchedule(s, tail, s.ranks);
  detail::insertAllReducesAfterLastBackward(
      s, detail::bitPipeSyncGroups(s.placement));
  std::string tailDesc = quantity(rest, "micro-batch", "micro-batches") + " (" +
                         std::to_string((rest + 1) / 2) + " down, " +
                         std::to_string(rest / 2) + " up)";
  std::string how = "greedy list scheduling (backward first) on the "
                    "bidirectional-v placement";
  s.note = "N=" + std::to_string(microbatches) +
           " is not a multiple of D=" + std::to_string(D) + ": " +
           (fullUnits > 0
                ? "the first " + std::to_string(fullUnits * D) +
                      " micro-batches follow the reference order, then a "
                      "partial unit of " +
                      tailDesc + " is appended, built by " + how
                : "the reference order needs whole units, so the order of " +
                      tailDesc + " is built by " + how);
  return Result<Schedule>::success(std::move(s));
}

} // namespace bitpipe::sched
