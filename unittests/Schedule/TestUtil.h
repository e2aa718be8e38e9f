//===- TestUtil.h - A unit-cost player for schedule tests -------*- C++ -*-===//
//
// Test-only. Plays per-rank lists under unit costs with free communication:
// each rank starts its next action as soon as the rank is free and the
// action's inputs are done. F(m,s) needs F(m,s-1); B(m,s) needs F(m,s) and
// B(m,s+1) (the last stage only its F); W(m,s) needs B(m,s); AR takes no
// time. Costs: F=1, B=2 for a whole backward (or `wholeBackward`), B=1 and
// W=1 when split.
//
// This is a second, deliberately independent implementation of what the
// library's simulator and Dependencies.h do: an oracle. Tests that check the
// generators against it would not notice a shared mistake if it called the
// simulator, so it restates the dependency rules itself; do not "deduplicate"
// it into the library.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_UNITTESTS_SCHEDULE_TESTUTIL_H
#define BITPIPE_UNITTESTS_SCHEDULE_TESTUTIL_H

#include "bitpipe/Schedule/Schedule.h"

#include <algorithm>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace bitpipe::sched::test {

struct PlayResult {
  bool finished = false;   ///< False when some rank got stuck.
  std::string stuck;       ///< Where, when not finished.
  long makespan = 0;
  long busy = 0;           ///< Sum of compute time over all ranks.
  int numRanks = 0;
  double bubbleRatio() const {
    return 1.0 - static_cast<double>(busy) /
                     (static_cast<double>(numRanks) * makespan);
  }
};

inline PlayResult play(const Schedule &s, long wholeBackward = 2) {
  using Key = std::tuple<int, int, int>; // (kind, micro-batch, stage)
  const int S = s.placement.numStages;
  std::map<Key, long> finish;
  auto done = [&](ActionKind k, int m, int st, long &t) {
    auto it = finish.find({static_cast<int>(k), m, st});
    if (it == finish.end())
      return false;
    t = std::max(t, it->second);
    return true;
  };
  auto cost = [&](ActionKind k) -> long {
    switch (k) {
    case ActionKind::Forward:
      return 1;
    case ActionKind::Backward:
      return s.splitBackward ? 1 : wholeBackward;
    case ActionKind::WeightGrad:
      return 1;
    case ActionKind::AllReduce:
      return 0;
    }
    return 0;
  };
  PlayResult res;
  res.numRanks = s.numRanks();
  std::vector<size_t> next(s.numRanks(), 0);
  std::vector<long> freeAt(s.numRanks(), 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (int r = 0; r < s.numRanks(); ++r) {
      while (next[r] < s.ranks[r].size()) {
        const Action &a = s.ranks[r][next[r]];
        long start = freeAt[r];
        bool ready = true;
        if (a.kind == ActionKind::Forward && a.stage > 0)
          ready = done(ActionKind::Forward, a.microbatch, a.stage - 1, start);
        if (a.kind == ActionKind::Backward)
          ready = done(ActionKind::Forward, a.microbatch, a.stage, start) &&
                  (a.stage == S - 1 ||
                   done(ActionKind::Backward, a.microbatch, a.stage + 1, start));
        if (a.kind == ActionKind::WeightGrad)
          ready = done(ActionKind::Backward, a.microbatch, a.stage, start);
        if (!ready)
          break;
        long end = start + cost(a.kind);
        if (a.kind != ActionKind::AllReduce)
          finish[{static_cast<int>(a.kind), a.microbatch, a.stage}] = end;
        res.busy += cost(a.kind);
        freeAt[r] = end;
        res.makespan = std::max(res.makespan, end);
        ++next[r];
        progress = true;
      }
    }
  }
  res.finished = true;
  for (int r = 0; r < s.numRanks(); ++r)
    if (next[r] < s.ranks[r].size()) {
      res.finished = false;
      res.stuck += "rank " + std::to_string(r) + " at " +
                   s.ranks[r][next[r]].str() + "; ";
    }
  return res;
}

/// Peak, over a rank's list, of forwards done whose backward is not yet
/// done (in chunk units: one per (micro-batch, stage)).
inline int peakInFlight(const std::vector<Action> &actions) {
  int live = 0, peak = 0;
  for (const Action &a : actions) {
    if (a.kind == ActionKind::Forward)
      peak = std::max(peak, ++live);
    else if (a.kind == ActionKind::Backward)
      --live;
  }
  return peak;
}

} // namespace bitpipe::sched::test

#endif // BITPIPE_UNITTESTS_SCHEDULE_TESTUTIL_H
