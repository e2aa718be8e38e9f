//===- OptimalSchedule.h - Exhaustive search for the best order -*- C++ -*-===//
//
// Test-only oracle. Given pipelines (stage -> rank), the pipeline of every
// micro-batch and unit costs (F, B; free communication), finds the smallest
// makespan over EVERY per-rank order of the F/B actions that respects the
// dependencies
//
//   F(m,s) after F(m,s-1);  B(m,s) after F(m,s) and after B(m,s+1)
//
// (stage numbers along m's own pipeline), each action starting as soon as
// its rank is free and its inputs are done: how the library's simulator and
// TestUtil's player run an order. Optionally (channelsInOrder) only orders
// whose transfers on each (src, dst) channel are consumed in the order they
// are produced, which the project requires (Comms.h: sends and receives are
// matched one-to-one in program order) and its verifier checks. Like the
// player, it restates the rules itself instead of calling the library, so
// that it can catch the library's mistakes.
//
// How it covers every order. Run as early as possible, an order gives one
// start time per action, and it can be rebuilt by taking its actions by
// increasing (start, rank): each action's inputs started earlier. The
// search builds exactly those sequences: at every node it may append any
// action whose inputs are placed, at the time it would start, as long as
// (start, rank) does not go below the previous one's. So each order is
// reached once, on one path.
//
// Pruning, both exact:
//  - bounds: the search asks "is there an order of makespan T?" for T =
//    the lower bound, T+1, ... and stops at the first yes. A node is dropped
//    when a lower bound on every completion of it exceeds T (critical path
//    from the earliest possible starts; per rank, for subsets of its
//    remaining tasks: earliest start + their work + shortest tail);
//  - symmetry: micro-batches of one pipeline are interchangeable (same
//    costs, same ranks), so renaming them in the order in which their first
//    forwards start maps every order to one with those forwards in
//    micro-batch order, with the same makespan. The search only builds
//    those (N_p! fewer per pipeline).
//
// Cost: BaselineSchedulesTest runs it for D = 4, 6 and N up to 16 (up to
// 96 actions) in a fraction of a second in a Release build. Where the
// optimum is above the lower bound, every pass below it is exhaustive and
// grows fast: D=8, N=8 takes about a second with channels in order and 15 s
// without.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_UNITTESTS_SCHEDULE_OPTIMALSCHEDULE_H
#define BITPIPE_UNITTESTS_SCHEDULE_OPTIMALSCHEDULE_H

#include "bitpipe/Schedule/Schedule.h"

#include <algorithm>
#include <climits>
#include <map>
#include <tuple>
#include <utility>
#include <vector>

namespace bitpipe::sched::test {

struct SearchProblem {
  int numRanks = 0;
  /// stageRank[p][s]: the rank that runs stage s of pipeline p.
  std::vector<std::vector<int>> stageRank;
  /// microbatchPipeline[m]: the pipeline micro-batch m travels.
  std::vector<int> microbatchPipeline;
  long forwardCost = 1;
  long backwardCost = 2;
  /// Only orders whose channels deliver in the order they send.
  bool channelsInOrder = false;
};

struct SearchResult {
  long makespan = -1;                      ///< -1: nothing runs.
  std::vector<std::vector<Action>> orders; ///< A best order, per rank.
  long nodes = 0;                          ///< Search nodes visited.
};

class OptimalScheduleSearch {
public:
  explicit OptimalScheduleSearch(const SearchProblem &p) : p_(p) { build(); }

  /// Runs `orders` (F and B only; AR entries are skipped) as early as
  /// possible under the problem's rules; -1 when it cannot run to the end
  /// or (channelsInOrder) a channel delivers out of order.
  long makespanOf(const std::vector<std::vector<Action>> &orders) const;

  /// The best makespan over all orders, with one order that reaches it.
  SearchResult solve();

private:
  struct Task {
    Action action = Action::forward(-1, -1);
    int rank = -1;
    long dur = 0;
    int preds[2] = {-1, -1}; ///< Data inputs.
    int input = -1;          ///< The pred whose output crosses ranks, if any.
    int channel = -1;        ///< Index of the (src, dst) channel of `input`.
    int after = -1;          ///< Symmetry rule: placed after this task.
    long tail = 0;           ///< Longest chain of work that must follow it.
  };

  int numStages() const { return static_cast<int>(p_.stageRank[0].size()); }
  int index(int m, int s, bool backward) const {
    return (m * numStages() + s) * 2 + (backward ? 1 : 0);
  }
  int channelOf(int src, int dst);
  void build();
  void dfs();
  bool placeable(int t) const;
  long startOf(int t) const {
    long start = rankFree_[tasks_[t].rank];
    for (int q : tasks_[t].preds)
      if (q >= 0)
        start = std::max(start, finish_[q]);
    return start;
  }
  long lowerBound() const;
  void place(int t, long start);
  void unplace(int t, long savedFree, long savedCurrent,
               std::pair<long, int> savedLast);

  SearchProblem p_;
  std::vector<Task> tasks_;
  std::vector<int> topo_; ///< Task indices, every task after its preds.
  std::map<std::pair<int, int>, int> channelIds_;
  // Search state.
  std::vector<long> finish_; ///< -1 while unplaced.
  std::vector<long> rankFree_, rankLeft_;
  std::vector<std::vector<Action>> order_;
  /// Per channel: producers of its transfers in send order, and how many
  /// of them have been consumed.
  std::vector<std::vector<int>> sent_;
  std::vector<size_t> received_;
  std::pair<long, int> last_; ///< (start, rank) of the last placed task.
  int placed_ = 0;
  long current_ = 0; ///< Makespan of what is placed.
  long target_ = 0;  ///< The makespan the current pass looks for.
  SearchResult best_;
};

inline int OptimalScheduleSearch::channelOf(int src, int dst) {
  auto [it, added] = channelIds_.emplace(std::pair{src, dst},
                                         static_cast<int>(channelIds_.size()));
  return it->second;
}

inline void OptimalScheduleSearch::build() {
  const int N = static_cast<int>(p_.microbatchPipeline.size());
  const int S = numStages();
  const long F = p_.forwardCost, B = p_.backwardCost;
  tasks_.assign(static_cast<size_t>(N) * S * 2, Task());
  std::vector<int> lastOfPipeline(p_.stageRank.size(), -1);
  for (int m = 0; m < N; ++m) {
    const std::vector<int> &ranks = p_.stageRank[p_.microbatchPipeline[m]];
    for (int s = 0; s < S; ++s) {
      Task &f = tasks_[index(m, s, false)];
      f.action = Action::forward(m, s);
      f.rank = ranks[s];
      f.dur = F;
      f.preds[0] = s > 0 ? index(m, s - 1, false) : -1;
      if (s > 0 && ranks[s - 1] != ranks[s]) {
        f.input = f.preds[0];
        f.channel = channelOf(ranks[s - 1], ranks[s]);
      }
      // After F(m,s): the forwards of the later stages, then every backward.
      f.tail = (S - 1 - s) * F + S * B;
      Task &b = tasks_[index(m, s, true)];
      b.action = Action::backward(m, s);
      b.rank = ranks[s];
      b.dur = B;
      b.preds[0] = index(m, s, false);
      b.preds[1] = s + 1 < S ? index(m, s + 1, true) : -1;
      if (s + 1 < S && ranks[s + 1] != ranks[s]) {
        b.input = b.preds[1];
        b.channel = channelOf(ranks[s + 1], ranks[s]);
      }
      b.tail = s * B; // The backwards of the earlier stages.
    }
    // Symmetry: the first forwards of one pipeline in micro-batch order.
    int &prev = lastOfPipeline[p_.microbatchPipeline[m]];
    tasks_[index(m, 0, false)].after = prev >= 0 ? index(prev, 0, false) : -1;
    prev = m;
    for (int s = 0; s < S; ++s)
      topo_.push_back(index(m, s, false));
    for (int s = S - 1; s >= 0; --s)
      topo_.push_back(index(m, s, true));
  }
}

inline long OptimalScheduleSearch::makespanOf(
    const std::vector<std::vector<Action>> &orders) const {
  const int N = static_cast<int>(p_.microbatchPipeline.size());
  std::vector<long> done(tasks_.size(), -1), freeAt(p_.numRanks, 0);
  std::vector<size_t> next(orders.size(), 0);
  // Per channel: position of each producer in its rank's list, in order.
  std::vector<std::vector<int>> sent(channelIds_.size());
  std::vector<size_t> received(channelIds_.size(), 0);
  auto taskOf = [&](const Action &a) {
    return index(a.microbatch, a.stage, a.kind == ActionKind::Backward);
  };
  long makespan = 0;
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t r = 0; r < orders.size(); ++r) {
      while (next[r] < orders[r].size()) {
        const Action &a = orders[r][next[r]];
        if (a.kind == ActionKind::AllReduce) {
          ++next[r];
          continue;
        }
        if (a.microbatch < 0 || a.microbatch >= N || a.stage < 0 ||
            a.stage >= numStages() || a.kind == ActionKind::WeightGrad)
          return -1;
        const int id = taskOf(a);
        const Task &t = tasks_[id];
        if (t.rank != static_cast<int>(r) || done[id] >= 0)
          return -1;
        long start = freeAt[r];
        bool inputsDone = true;
        for (int q : t.preds)
          if (q >= 0) {
            inputsDone = inputsDone && done[q] >= 0;
            start = std::max(start, done[q]);
          }
        if (!inputsDone)
          break;
        if (t.input >= 0) {
          const std::vector<int> &queue = sent[t.channel];
          size_t &head = received[t.channel];
          if (p_.channelsInOrder &&
              (head >= queue.size() || queue[head] != t.input))
            return -1;
          ++head;
        }
        done[id] = freeAt[r] = start + t.dur;
        for (const Task &c : tasks_)
          if (c.input == id)
            sent[c.channel].push_back(id);
        makespan = std::max(makespan, freeAt[r]);
        ++next[r];
        progress = true;
      }
    }
  }
  for (long d : done)
    if (d < 0)
      return -1;
  return makespan;
}

inline bool OptimalScheduleSearch::placeable(int t) const {
  const Task &task = tasks_[t];
  if (finish_[t] >= 0)
    return false;
  for (int q : task.preds)
    if (q >= 0 && finish_[q] < 0)
      return false;
  if (task.after >= 0 && finish_[task.after] < 0)
    return false;
  if (p_.channelsInOrder && task.input >= 0) {
    // Its transfer must be the oldest one not yet received.
    const std::vector<int> &queue = sent_[task.channel];
    size_t head = received_[task.channel];
    if (head >= queue.size() || queue[head] != task.input)
      return false;
  }
  return true;
}

inline long OptimalScheduleSearch::lowerBound() const {
  // Earliest possible start of every unplaced task, ignoring that ranks run
  // one task at a time (except for what they already ran). Nothing starts
  // before the last placed task: the search places tasks by start time.
  std::vector<long> es(tasks_.size(), 0);
  long bound = current_;
  std::vector<std::vector<int>> left(p_.numRanks);
  for (int t : topo_) {
    if (finish_[t] >= 0)
      continue;
    const Task &task = tasks_[t];
    long e = std::max(rankFree_[task.rank], last_.first);
    for (int q : task.preds)
      if (q >= 0)
        e = std::max(e, finish_[q] >= 0 ? finish_[q] : es[q] + tasks_[q].dur);
    es[t] = e;
    bound = std::max(bound, e + task.dur + task.tail);
    left[task.rank].push_back(t);
  }
  // A rank runs any subset of its remaining tasks one at a time: not before
  // the earliest of their starts, and the last is followed by its tail.
  // Subsets: the tasks that can start no earlier than a given one, and
  // those with a tail no shorter than a given one's.
  for (const std::vector<int> &tasks : left)
    for (int i : tasks) {
      long work = 0, tail = LONG_MAX, start = LONG_MAX, work2 = 0;
      for (int j : tasks) {
        if (es[j] >= es[i]) {
          work += tasks_[j].dur;
          tail = std::min(tail, tasks_[j].tail);
        }
        if (tasks_[j].tail >= tasks_[i].tail) {
          work2 += tasks_[j].dur;
          start = std::min(start, es[j]);
        }
      }
      bound = std::max(
          {bound, es[i] + work + tail, start + work2 + tasks_[i].tail});
    }
  return bound;
}

inline void OptimalScheduleSearch::place(int t, long start) {
  const Task &task = tasks_[t];
  finish_[t] = rankFree_[task.rank] = start + task.dur;
  rankLeft_[task.rank] -= task.dur;
  current_ = std::max(current_, finish_[t]);
  order_[task.rank].push_back(task.action);
  last_ = {start, task.rank};
  if (task.input >= 0)
    ++received_[task.channel];
  for (const Task &c : tasks_)
    if (c.input == t)
      sent_[c.channel].push_back(t);
  ++placed_;
}

inline void OptimalScheduleSearch::unplace(int t, long savedFree,
                                           long savedCurrent,
                                           std::pair<long, int> savedLast) {
  const Task &task = tasks_[t];
  --placed_;
  for (const Task &c : tasks_)
    if (c.input == t)
      sent_[c.channel].pop_back();
  if (task.input >= 0)
    --received_[task.channel];
  last_ = savedLast;
  order_[task.rank].pop_back();
  current_ = savedCurrent;
  rankLeft_[task.rank] += task.dur;
  rankFree_[task.rank] = savedFree;
  finish_[t] = -1;
}

inline void OptimalScheduleSearch::dfs() {
  ++best_.nodes;
  if (best_.makespan >= 0 || lowerBound() > target_)
    return;
  if (placed_ == static_cast<int>(tasks_.size())) {
    best_.makespan = current_;
    best_.orders = order_;
    return;
  }
  // Candidates by start time, so that good orders are found early and the
  // bound prunes more.
  std::vector<std::pair<long, int>> candidates;
  for (int t = 0; t < static_cast<int>(tasks_.size()); ++t) {
    if (!placeable(t))
      continue;
    long start = startOf(t);
    if (std::pair{start, tasks_[t].rank} < last_)
      continue; // Reached on another path, where it is placed earlier.
    candidates.emplace_back(start, t);
  }
  // Earliest start first, then the longest chain after it (critical path
  // first): the first orders found are good, so the bound prunes early.
  std::sort(candidates.begin(), candidates.end(),
            [&](const std::pair<long, int> &a, const std::pair<long, int> &b) {
              long ta = tasks_[a.second].dur + tasks_[a.second].tail;
              long tb = tasks_[b.second].dur + tasks_[b.second].tail;
              return std::tie(a.first, tb, a.second) <
                     std::tie(b.first, ta, b.second);
            });
  for (auto [start, t] : candidates) {
    const int r = tasks_[t].rank;
    const long savedFree = rankFree_[r], savedCurrent = current_;
    const std::pair<long, int> savedLast = last_;
    place(t, start);
    dfs();
    unplace(t, savedFree, savedCurrent, savedLast);
  }
}

inline SearchResult OptimalScheduleSearch::solve() {
  finish_.assign(tasks_.size(), -1);
  rankFree_.assign(p_.numRanks, 0);
  rankLeft_.assign(p_.numRanks, 0);
  for (const Task &t : tasks_)
    rankLeft_[t.rank] += t.dur;
  order_.assign(p_.numRanks, {});
  sent_.assign(channelIds_.size(), {});
  received_.assign(channelIds_.size(), 0);
  last_ = {LONG_MIN, -1};
  placed_ = 0;
  current_ = 0;
  best_ = SearchResult();
  // Is there an order of makespan <= target? Asked for target = the root's
  // lower bound, then one more, ...: the first yes is the optimum. A tight
  // target prunes far more than the best order found so far would. Some
  // task always runs until an order ends, so none takes longer than all the
  // work done one task at a time.
  long total = 0;
  for (const Task &t : tasks_)
    total += t.dur;
  for (target_ = lowerBound(); target_ <= total && best_.makespan < 0;
       ++target_)
    dfs();
  return best_;
}

} // namespace bitpipe::sched::test

#endif // BITPIPE_UNITTESTS_SCHEDULE_OPTIMALSCHEDULE_H
