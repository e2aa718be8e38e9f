//===- BitPipePeriodic.cpp - BitPipe's placement in one steady state ------===//
//
// bitpipe-periodic: an order on BitPipe's bidirectional-V placement whose
// bubble falls with N as 1F1B's does. Where the reference order
// (BitPipe.cpp) repeats a unit of D micro-batches, warm-up to cool-down,
// this one has a single steady state: every rank repeats one pattern of 12
// slots per (down, up) pair of micro-batches, the four forwards and four
// backwards a pair brings it, with no idle slot, so that the only bubbles
// are the fill at the start and the drain at the end. docs/bitpipe-order.md,
// "The periodic order", derives the pattern and gives its figures.
//
// The pattern, with unit costs F = 1, B = 2 (the costs the reference order
// is built for). Pair k's down micro-batch runs stage s's forward at
// forward[s] + 12k and its backward at backward[s] + 12k; its up
// micro-batch runs at the same times on the mirrored ranks. Rank q then
// runs the down micro-batch's stages q and 2D-1-q and the up one's stages
// D-1-q and D+q, and its mirror D-1-q runs the same four stages' steps at
// the same times the other way round: one wheel of 12 slots per mirror
// pair, on which those four stages' forwards (1 slot) and backwards (2)
// must fall on distinct slots modulo 12.
//  - The backward chain runs without a wait: backward[s] = beta - 2s, with
//    one wait of 4 slots at the bottom of the V when 6 divides D. The four
//    backwards of a wheel then start on four distinct even slots (their
//    differences 2D, 2D - 2 - 4q, -2 - 4q and 4D - 2 - 4q are never 0
//    modulo 12 when 6 does not divide D; with the wait, neither when it
//    does), which leaves each wheel four free slots for its forwards.
//  - Each forward takes the first free slot of its wheel at or after the
//    previous stage's forward ends (one slot later when D = 4 mod 6, at the
//    bottom of the V, so that every channel delivers in order); beta is the
//    first multiple of 12 that lets the last forward precede its backward.
// Each stage's steps keep the order of the micro-batches, each channel
// delivers in the order it sends, and a rank holds no more than the
// reference's peak of 2D (stage, micro-batch) pairs: BitPipePeriodicTest
// checks all three for every even D up to 64.
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Generators.h"

#include <algorithm>
#include <array>
#include <utility>

namespace bitpipe::sched {

namespace {

/// The slots a rank spends on one (down, up) pair: four forwards of one
/// slot and four backwards of two.
constexpr int kPeriod = 12;

/// The mirror pair {q, D-1-q} whose wheel stage s's steps fall on.
int wheelOf(int D, int s) {
  if (s < D)
    return std::min(s, D - 1 - s);
  return std::min(s - D, 2 * D - 1 - s);
}

/// The times of pair 0's down micro-batch at every stage.
struct PairPattern {
  std::vector<int> forward, backward;
};

Result<PairPattern> periodicPattern(int D) {
  const int S = 2 * D;
  const int vBottomBackwardWait = D % 6 == 0 ? 4 : 0;
  const int vBottomForwardWait = D % 6 == 4 ? 1 : 0;
  // Backward times relative to beta (a multiple of kPeriod).
  std::vector<int> backwardOffset(S);
  for (int s = 0; s < S; ++s)
    backwardOffset[s] = -2 * s + (s < D ? vBottomBackwardWait : 0);

  auto slot = [](int t) { return ((t % kPeriod) + kPeriod) % kPeriod; };
  std::vector<std::array<bool, kPeriod>> taken(D / 2);
  for (auto &wheel : taken)
    wheel.fill(false);
  for (int s = 0; s < S; ++s)
    for (int i = 0; i < 2; ++i) {
      bool &cell = taken[wheelOf(D, s)][slot(backwardOffset[s] + i)];
      if (cell)
        return Result<PairPattern>::failure(
            "bitpipe-periodic: no steady pattern for D=" + std::to_string(D) +
            " (two backwards share a slot of rank " +
            std::to_string(wheelOf(D, s)) + "'s period)");
      cell = true;
    }

  PairPattern p;
  p.forward.resize(S);
  p.backward.resize(S);
  int t = 0;
  for (int s = 0; s < S; ++s) {
    if (s == D)
      t += vBottomForwardWait;
    std::array<bool, kPeriod> &wheel = taken[wheelOf(D, s)];
    while (wheel[slot(t)])
      ++t;
    wheel[slot(t)] = true;
    p.forward[s] = t++;
  }
  // The last stage's backward follows its forward: beta - 2(S-1) >= t.
  const int least = t + 2 * (S - 1);
  const int beta = (least + kPeriod - 1) / kPeriod * kPeriod;
  for (int s = 0; s < S; ++s)
    p.backward[s] = beta + backwardOffset[s];
  return Result<PairPattern>::success(std::move(p));
}

} // namespace

Result<Schedule> generateBitPipePeriodic(int devices, int microbatches) {
  Result<Schedule> made = detail::emptySchedule(
      "bitpipe-periodic", devices, microbatches, /*chunksPerDevice=*/0);
  if (!made)
    return made;
  Schedule &s = *made;
  const int D = devices;
  Result<PairPattern> pattern = periodicPattern(D);
  if (!pattern)
    return Result<Schedule>::failure(pattern.error);

  // The k-th micro-batch of each direction forms pair k.
  std::array<std::vector<int>, 2> byDirection;
  for (int m = 0; m < microbatches; ++m)
    byDirection[s.microbatchPipeline[m]].push_back(m);

  std::vector<std::vector<std::pair<int, Action>>> timed(D);
  for (int dir = 0; dir < 2; ++dir)
    for (size_t k = 0; k < byDirection[dir].size(); ++k) {
      const int m = byDirection[dir][k];
      const int base = static_cast<int>(k) * kPeriod;
      for (int stage = 0; stage < 2 * D; ++stage) {
        const int rank = s.placement.device(dir, stage);
        timed[rank].push_back(
            {base + pattern->forward[stage], Action::forward(m, stage)});
        timed[rank].push_back(
            {base + pattern->backward[stage], Action::backward(m, stage)});
      }
    }
  // No two steps of a rank share a start time (each wheel slot holds one
  // step), so sorting by it is the pattern's order.
  for (int r = 0; r < D; ++r) {
    std::sort(timed[r].begin(), timed[r].end(),
              [](const auto &a, const auto &b) { return a.first < b.first; });
    for (auto &[time, action] : timed[r])
      s.ranks[r].push_back(std::move(action));
  }
  detail::insertAllReducesAfterLastBackward(
      s, detail::bitPipeSyncGroups(s.placement));
  return Result<Schedule>::success(std::move(s));
}

} // namespace bitpipe::sched
