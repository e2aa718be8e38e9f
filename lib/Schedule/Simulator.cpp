//===- Simulator.cpp - Event simulation of a pipeline schedule ------------===//
//
// A discrete-event loop: a min-heap of "compute finished" and "transfer
// arrived" events. After each event every rank advances through its lowered
// program as far as its dependencies allow. When the heap runs dry with
// program left on some rank, nothing can ever change again: a deadlock.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Simulator.h"

#include "bitpipe/Schedule/Dependencies.h"
#include "bitpipe/Schedule/Describe.h"

#include <algorithm>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <utility>

namespace bitpipe::sched {

std::string SimResult::deadlockReport() const {
  if (!deadlocked)
    return "";
  std::string out = "deadlock: no rank can make progress\n";
  for (const BlockedRank &b : blocked)
    out += "  " + b.reason + "\n";
  return out;
}

namespace {

/// One all-reduce collective: the matching ARs of a replica group.
struct Collective {
  std::vector<int> members; ///< The group, sorted.
  std::vector<int> stages;  ///< From the first member that issued it.
  double bytes = 0;
  int reached = 0;
  double lastReach = 0;
  bool started = false;
  std::map<int, int> actionIndexOf; ///< rank -> index of its AR action.
};

struct Event {
  double time;
  long seq;
  bool isCompute; ///< Otherwise a transfer arrival.
  int id;         ///< Rank, or transfer.
  bool operator>(const Event &o) const {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

class Simulation {
public:
  Simulation(const Schedule &schedule, const CommProgram &program,
             const CostModel &cost, const SimulateOptions &options)
      : schedule_(schedule), program_(program), cost_(cost), options_(options),
        numRanks_(schedule.numRanks()),
        numMicrobatches_(schedule.numMicrobatches),
        numStages_(schedule.placement.numStages) {}

  Result<SimResult> run();

private:
  std::string prepare();
  bool advance(int rank);
  bool computeReady(int rank, const Action &a, int actionIndex);
  /// Registers `rank`, which cannot run `a`, with what it waits for.
  void waitFor(int rank, const Action &a, int actionIndex);
  /// A FIFO list of blocked ranks, threaded through nextWaiter_.
  struct WaitList {
    int head = -1, tail = -1;
  };
  void enqueue(WaitList &list, int rank);
  /// Advances the ranks in `list`, in the order they blocked (and empties
  /// it).
  void wake(WaitList &list);
  /// Keeps `e` (SimulateOptions::recordTimeline) and extends the makespan.
  void record(const TimelineEvent &e) {
    makespan_ = std::max(makespan_, e.end);
    if (options_.recordTimeline)
      out_.timeline.push_back(e);
  }
  std::string waitReason(int rank, const Action &a, int actionIndex);
  void startCollective(int id);
  /// A member has issued collective `id`; the last one starts it.
  void reachAllReduce(int id);
  /// Moves transfer `t` over its channel from now on (or once the channel
  /// is free), and schedules its arrival.
  void startTransfer(int t);
  /// NCCL groups: launches `rank`'s posted groups in order, each once the
  /// one before it has completed, and starts the transfers whose two ends
  /// are then both launched.
  void launchGroups(int rank);
  /// NCCL groups: one end of transfer `t` is launched (`receiving` says
  /// which); starts it when the other end is too.
  void launchEnd(int t, bool receiving);
  /// NCCL groups: transfer `t` arrived; completes the groups it was the
  /// last of and launches what they held back.
  void finishTransferInGroups(int t);
  void finishCompute(int rank);
  void finalize();
  void sortTimeline();

  int slot(const Action &a) const {
    int k = a.kind == ActionKind::Forward    ? 0
            : a.kind == ActionKind::Backward ? 1
                                             : 2;
    return (k * numMicrobatches_ + a.microbatch) * numStages_ + a.stage;
  }
  double duration(const Action &a) const {
    switch (a.kind) {
    case ActionKind::Forward:
      return cost_.forwardTime(a.stage);
    case ActionKind::Backward:
      return cost_.backwardTime(a.stage);
    case ActionKind::WeightGrad:
      return cost_.weightGradTime(a.stage);
    case ActionKind::AllReduce:
      return 0;
    }
    return 0;
  }
  void push(double time, bool isCompute, int id) {
    events_.push({time, seq_++, isCompute, id});
  }

  const Schedule &schedule_;
  const CommProgram &program_;
  const CostModel &cost_;
  const SimulateOptions options_;
  int numRanks_, numMicrobatches_, numStages_;

  SimResult out_;
  double now_ = 0;
  double makespan_ = 0; ///< The latest end among the recorded events.
  long seq_ = 0;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;

  // Per rank.
  std::vector<size_t> pc_;
  std::vector<bool> busy_;
  std::vector<Action> running_;
  std::vector<int> inFlight_;
  std::vector<double> inFlightBytes_;
  std::map<std::pair<int, int>, double> channelFree_;
  std::vector<double> allReduceFree_;
  /// CostModel::allReduceAfterCompute: the collectives each rank reached,
  /// issued when its program ends.
  std::vector<std::vector<int>> reachedAllReduces_;
  // Per compute action (by slot): finished?, and the rank of each F.
  std::vector<bool> done_;
  std::vector<int> forwardRank_;
  // Per transfer.
  std::vector<bool> arrived_;
  /// [rank][action index] -> id of the transfer that action waits for, or -1.
  /// Flat per-rank tables rather than maps: the simulator looks these up for
  /// every step, and its run time should grow linearly with N.
  std::vector<std::vector<int>> inputTransfer_;
  // All-reduce.
  std::vector<Collective> collectives_;
  /// [rank][action index] -> id of that AR's collective, or -1.
  std::vector<std::vector<int>> collectiveOf_;
  std::vector<std::vector<std::pair<double, double>>> arIntervals_;
  /// The ranks blocked on a transfer's arrival (by transfer) and on a
  /// compute step (by slot). An event wakes only the ranks it can unblock,
  /// so that a run costs O(steps + events) rather than a pass over every
  /// rank per event, which grew as D^2 N (issue 15).
  /// A rank waits for one thing at a time, so the lists share one link
  /// per rank rather than owning a vector each.
  std::vector<WaitList> transferWaiters_, slotWaiters_;
  std::vector<int> nextWaiter_;

  /// NCCL groups (CostModel::ncclGroups): a rank's transfers between two
  /// of its compute or all-reduce steps.
  struct Group {
    std::vector<int> transfers;
    int pending = 0; ///< Transfers not yet arrived.
    bool posted = false, launched = false, complete = false;
  };
  std::vector<Group> groups_;
  /// [rank] -> its groups, in program order; the next one to launch.
  std::vector<std::vector<int>> rankGroups_;
  std::vector<size_t> nextGroup_;
  /// [rank][item index] -> the group of a Send/Recv item, or -1.
  std::vector<std::vector<int>> groupOfItem_;
  /// [transfer] -> the sending and the receiving end's group launched.
  std::vector<bool> sendLaunched_, recvLaunched_;
  std::vector<int> sendGroup_, recvGroup_;
};

std::string Simulation::prepare() {
  const Placement &p = schedule_.placement;
  for (size_t k = 0; k < p.pipelines.size(); ++k) {
    const std::vector<int> &devs = p.pipelines[k].stageDevice;
    if (static_cast<int>(devs.size()) != numStages_)
      return "pipeline " + std::to_string(k) + " places " +
             quantity(static_cast<int>(devs.size()), "stage", "stages") +
             ", the placement has " + std::to_string(numStages_);
    for (int st = 0; st < numStages_; ++st)
      if (devs[st] < 0 || devs[st] >= numRanks_)
        return "pipeline " + std::to_string(k) + " places stage " +
               std::to_string(st) + " on device " + std::to_string(devs[st]) +
               ", but the schedule has " + quantity(numRanks_, "rank", "ranks");
  }
  if (cost_.deployment)
    if (std::string why = cost_.deployment->check(numRanks_); !why.empty())
      return "cost model: " + why;
  if (static_cast<int>(program_.ranks.size()) != numRanks_)
    return "the lowered program has " +
           quantity(static_cast<int>(program_.ranks.size()), "rank", "ranks") +
           ", the schedule " + std::to_string(numRanks_);

  pc_.assign(numRanks_, 0);
  busy_.assign(numRanks_, false);
  running_.assign(numRanks_, Action::forward(-1, -1));
  inFlight_.assign(numRanks_, 0);
  inFlightBytes_.assign(numRanks_, 0);
  allReduceFree_.assign(numRanks_, 0);
  reachedAllReduces_.assign(numRanks_, {});
  size_t slots = 3 * static_cast<size_t>(std::max(0, numMicrobatches_)) *
                 std::max(0, numStages_);
  done_.assign(slots, false);
  forwardRank_.assign(slots, -1);
  arrived_.assign(program_.transfers.size(), false);
  transferWaiters_.assign(program_.transfers.size(), {});
  slotWaiters_.assign(slots, {});
  nextWaiter_.assign(numRanks_, -1);
  arIntervals_.assign(numRanks_, {});
  out_.ranks.assign(numRanks_, RankStats());
  // One event per compute and all-reduce step, two per transfer (an end
  // each; counted once among the steps): reserved, so that a run of
  // hundreds of thousands of steps does not copy its timeline as it grows.
  size_t events = program_.transfers.size();
  for (const std::vector<CommAction> &steps : program_.ranks)
    events += steps.size();
  if (options_.recordTimeline)
    out_.timeline.reserve(events);

  inputTransfer_.assign(numRanks_, {});
  collectiveOf_.assign(numRanks_, {});
  for (int r = 0; r < numRanks_; ++r) {
    inputTransfer_[r].assign(schedule_.ranks[r].size(), -1);
    collectiveOf_[r].assign(schedule_.ranks[r].size(), -1);
  }
  for (size_t t = 0; t < program_.transfers.size(); ++t) {
    const Transfer &tr = program_.transfers[t];
    if (tr.dst < 0 || tr.dst >= numRanks_ || tr.consumerIndex < 0 ||
        tr.consumerIndex >= static_cast<int>(inputTransfer_[tr.dst].size()))
      return "transfer " + std::to_string(t) + " names rank " +
             std::to_string(tr.dst) + "'s action " +
             std::to_string(tr.consumerIndex) + ", which does not exist";
    inputTransfer_[tr.dst][tr.consumerIndex] = static_cast<int>(t);
  }

  if (cost_.ncclGroups) {
    // A group: the transfers between two compute or all-reduce steps
    // (local copies are no NCCL calls: they neither join nor end one).
    rankGroups_.assign(numRanks_, {});
    nextGroup_.assign(numRanks_, 0);
    groupOfItem_.assign(numRanks_, {});
    sendLaunched_.assign(program_.transfers.size(), false);
    recvLaunched_.assign(program_.transfers.size(), false);
    sendGroup_.assign(program_.transfers.size(), -1);
    recvGroup_.assign(program_.transfers.size(), -1);
    for (int r = 0; r < numRanks_; ++r) {
      const std::vector<CommAction> &items = program_.ranks[r];
      groupOfItem_[r].assign(items.size(), -1);
      int open = -1;
      for (size_t i = 0; i < items.size(); ++i) {
        CommKind k = items[i].kind;
        if (k == CommKind::Compute || k == CommKind::AllReduce) {
          open = -1;
          continue;
        }
        bool send = k == CommKind::SendF || k == CommKind::SendB;
        bool recv = k == CommKind::RecvF || k == CommKind::RecvB;
        if (!send && !recv)
          continue;
        if (open < 0) {
          open = static_cast<int>(groups_.size());
          groups_.emplace_back();
          rankGroups_[r].push_back(open);
        }
        int t = items[i].transfer;
        groups_[open].transfers.push_back(t);
        ++groups_[open].pending;
        groupOfItem_[r][i] = open;
        (send ? sendGroup_ : recvGroup_)[t] = open;
      }
    }
  }

  // Match all-reduces: the k-th AR of a rank with replica group G meets the
  // k-th AR of every other member of G.
  std::vector<std::vector<int>> groups = p.replicaGroups();
  std::map<std::pair<std::vector<int>, int>, int> byKey;
  for (int r = 0; r < numRanks_; ++r) {
    std::map<std::vector<int>, int> seen;
    const std::vector<Action> &actions = schedule_.ranks[r];
    for (int i = 0; i < static_cast<int>(actions.size()); ++i) {
      const Action &a = actions[i];
      if (a.kind == ActionKind::AllReduce) {
        std::set<int> members;
        for (int s : a.stages) {
          if (s < 0 || s >= numStages_)
            return "rank " + std::to_string(r) + ": " + a.str() +
                   " names a stage that does not exist";
          members.insert(groups[s].begin(), groups[s].end());
          if (!std::count(groups[s].begin(), groups[s].end(), r))
            return "rank " + std::to_string(r) + ": " + a.str() +
                   " all-reduces stage " + std::to_string(s) + ", which rank " +
                   std::to_string(r) + " does not hold";
        }
        std::vector<int> group(members.begin(), members.end());
        int k = seen[group]++;
        auto [it, fresh] = byKey.insert({{group, k}, 0});
        if (fresh) {
          it->second = static_cast<int>(collectives_.size());
          Collective c;
          c.members = group;
          c.stages = a.stages;
          for (int s : a.stages)
            c.bytes += cost_.gradient(s);
          collectives_.push_back(c);
        }
        collectives_[it->second].actionIndexOf[r] = i;
        collectiveOf_[r][i] = it->second;
      } else if (!(a.microbatch >= 0 && a.microbatch < numMicrobatches_ &&
                   a.stage >= 0 && a.stage < numStages_)) {
        return "rank " + std::to_string(r) + ": " + a.str() +
               " is out of range";
      }
    }
  }
  return "";
}

bool Simulation::computeReady(int rank, const Action &a, int actionIndex) {
  int in = inputTransfer_[rank][actionIndex];
  if (in >= 0 && !arrived_[in])
    return false;
  // The cross-stage input is the transfer above (or a local copy); the
  // same-stage one never travels.
  std::optional<Action> own = inputsOf(a, numStages_).sameStage;
  return !own || done_[slot(*own)];
}

void Simulation::waitFor(int rank, const Action &a, int actionIndex) {
  // What computeReady found missing, in its order.
  int in = inputTransfer_[rank][actionIndex];
  if (in >= 0 && !arrived_[in]) {
    enqueue(transferWaiters_[in], rank);
    return;
  }
  std::optional<Action> own = inputsOf(a, numStages_).sameStage;
  if (own && !done_[slot(*own)])
    enqueue(slotWaiters_[slot(*own)], rank);
}

void Simulation::enqueue(WaitList &list, int rank) {
  nextWaiter_[rank] = -1;
  if (list.tail >= 0)
    nextWaiter_[list.tail] = rank;
  else
    list.head = rank;
  list.tail = rank;
}

void Simulation::wake(WaitList &list) {
  // Detached first: a woken rank that blocks again joins a list afresh,
  // and advancing one rank never blocks another.
  int r = list.head;
  list = WaitList();
  while (r >= 0) {
    int next = nextWaiter_[r];
    nextWaiter_[r] = -1;
    advance(r);
    r = next;
  }
}

std::string Simulation::waitReason(int rank, const Action &a, int actionIndex) {
  std::string head = "rank " + std::to_string(rank) + ": " + a.str() + " (" +
                     describe(a) + ") waits for ";
  int in = inputTransfer_[rank][actionIndex];
  if (in >= 0 && !arrived_[in]) {
    const Transfer &t = program_.transfers[in];
    Action producer = t.producer();
    std::string what =
        (t.gradient ? "the gradient of " : "the activation of ") +
        producer.str() + " from rank " + std::to_string(t.src);
    if (done_[slot(producer)] && cost_.ncclGroups)
      return head + what + ", whose NCCL group has not launched on " +
             (sendLaunched_[in] ? "this rank" : "the sender") +
             " (a group launches when the one before it completes)";
    if (done_[slot(producer)])
      return head + what + ", which was never sent";
    std::string why = ", which has not run";
    if (t.src != rank && pc_[t.src] < program_.ranks[t.src].size())
      why +=
          " (rank " + std::to_string(t.src) + " is itself blocked at " +
          schedule_.ranks[t.src][program_.ranks[t.src][pc_[t.src]].actionIndex]
              .str() +
          ")";
    return head + what + why;
  }
  std::optional<Action> own = inputsOf(a, numStages_).sameStage;
  if (own && !done_[slot(*own)])
    return head +
           (own->kind == ActionKind::Forward ? "its forward "
                                             : "its backward ") +
           own->str() + ", which has not run";
  return head + "nothing (simulator bug)";
}

void Simulation::startCollective(int id) {
  Collective &c = collectives_[id];
  c.started = true;
  double start = now_;
  for (int m : c.members)
    start = std::max(start, allReduceFree_[m]);
  // With a deployment the collective spans every data-parallel copy, and
  // each member sends its algorithm's share of the whole group (the ring's
  // or the tree's, CostModel::allReduceAlgorithmFor).
  double dur = cost_.allReduceTime(c.bytes, c.members);
  double perRank = cost_.allReduceBytesPerRank(c.bytes, c.members);
  out_.allReduceTime += dur;
  for (int m : c.members) {
    allReduceFree_[m] = start + dur;
    TimelineEvent e;
    e.lane = Lane::AllReduce;
    e.rank = m;
    e.kind = CommKind::AllReduce;
    e.actionIndex = c.actionIndexOf[m];
    e.action = schedule_.ranks[m][e.actionIndex];
    e.start = start;
    e.end = start + dur;
    e.bytes = perRank;
    record(e);
    RankStats &st = out_.ranks[m];
    st.allReduceTime += dur;
    st.allReduceBytesSent += perRank;
    arIntervals_[m].push_back({start, start + dur});
  }
}

void Simulation::startTransfer(int id) {
  const Transfer &t = program_.transfers[id];
  double bytes = cost_.boundary(t.gradient ? t.toStage : t.fromStage);
  double &free = channelFree_[{t.src, t.dst}];
  double start = std::max(now_, free);
  double end = start + cost_.p2pTime(bytes, t.src, t.dst);
  free = end;
  out_.ranks[t.src].bytesSent += bytes;
  out_.totalBytesSent += bytes;
  TimelineEvent e;
  e.lane = Lane::P2P;
  e.action = t.producer();
  e.start = start;
  e.end = end;
  e.bytes = bytes;
  e.rank = t.src;
  e.peer = t.dst;
  e.kind = t.gradient ? CommKind::SendB : CommKind::SendF;
  record(e);
  e.rank = t.dst;
  e.peer = t.src;
  e.kind = t.gradient ? CommKind::RecvB : CommKind::RecvF;
  record(e);
  push(end, /*isCompute=*/false, id);
}

void Simulation::launchGroups(int r) {
  while (nextGroup_[r] < rankGroups_[r].size()) {
    size_t next = nextGroup_[r];
    Group &g = groups_[rankGroups_[r][next]];
    if (!g.posted)
      return;
    if (next > 0 && !groups_[rankGroups_[r][next - 1]].complete)
      return;
    g.launched = true;
    ++nextGroup_[r];
    // Copied: launching an end may complete nothing, but keeps g's list
    // safe from any growth of groups_ (there is none after prepare).
    for (int t : std::vector<int>(g.transfers))
      launchEnd(t, program_.transfers[t].dst == r);
  }
}

void Simulation::launchEnd(int t, bool receiving) {
  (receiving ? recvLaunched_ : sendLaunched_)[t] = true;
  if (sendLaunched_[t] && recvLaunched_[t])
    startTransfer(t);
}

void Simulation::finishTransferInGroups(int t) {
  for (int id : {sendGroup_[t], recvGroup_[t]}) {
    if (id < 0)
      continue;
    Group &g = groups_[id];
    if (--g.pending == 0)
      g.complete = true;
  }
  const Transfer &tr = program_.transfers[t];
  launchGroups(tr.src);
  launchGroups(tr.dst);
}

bool Simulation::advance(int r) {
  bool progressed = false;
  const std::vector<CommAction> &items = program_.ranks[r];
  while (!busy_[r] && pc_[r] < items.size()) {
    const CommAction &c = items[pc_[r]];
    switch (c.kind) {
    case CommKind::Compute: {
      const Action &a = schedule_.ranks[r][c.actionIndex];
      if (!computeReady(r, a, c.actionIndex)) {
        waitFor(r, a, c.actionIndex);
        return progressed;
      }
      double dur = duration(a);
      if (static_cast<size_t>(r) < cost_.actionTimes.size() &&
          static_cast<size_t>(c.actionIndex) < cost_.actionTimes[r].size())
        dur = cost_.actionTimes[r][c.actionIndex];
      dur *= cost_.computeScale(r);
      TimelineEvent e;
      e.lane = Lane::Compute;
      e.rank = r;
      e.action = a;
      e.actionIndex = c.actionIndex;
      e.start = now_;
      e.end = now_ + dur;
      record(e);
      out_.ranks[r].busy += dur;
      busy_[r] = true;
      running_[r] = a;
      push(now_ + dur, /*isCompute=*/true, r);
      break;
    }
    case CommKind::AllReduce: {
      if (int id = collectiveOf_[r][c.actionIndex]; id < 0)
        break;
      else if (cost_.allReduceAfterCompute)
        reachedAllReduces_[r].push_back(id);
      else
        reachAllReduce(id);
      if (cost_.allReducePostTime > 0) {
        // The post occupies the rank (CostModel::allReducePostTime); it is
        // no compute: it neither completes an action nor counts as busy.
        double end = now_ + cost_.allReducePostTime;
        TimelineEvent e;
        e.lane = Lane::Compute;
        e.rank = r;
        e.kind = CommKind::AllReduce;
        e.action = schedule_.ranks[r][c.actionIndex];
        e.actionIndex = c.actionIndex;
        e.start = now_;
        e.end = end;
        record(e);
        busy_[r] = true;
        running_[r] = e.action;
        push(end, /*isCompute=*/true, r);
      }
      break;
    }
    case CommKind::SendF:
    case CommKind::SendB:
      if (cost_.ncclGroups) {
        // Posting the item's group is all the program does; the
        // transfer moves once both ends' groups are launched.
        groups_[groupOfItem_[r][pc_[r]]].posted = true;
        launchGroups(r);
      } else {
        startTransfer(c.transfer);
      }
      break;
    case CommKind::LocalCopyF:
    case CommKind::LocalCopyB:
      // Free: the consumer may start at once.
      arrived_[c.transfer] = true;
      break;
    case CommKind::RecvF:
    case CommKind::RecvB:
      if (cost_.ncclGroups && !groups_[groupOfItem_[r][pc_[r]]].posted) {
        groups_[groupOfItem_[r][pc_[r]]].posted = true;
        launchGroups(r);
      }
      if (!arrived_[c.transfer]) {
        enqueue(transferWaiters_[c.transfer], r);
        return progressed;
      }
      break;
    }
    ++pc_[r];
    progressed = true;
  }
  // All-reduces that move only while their members wait are issued when
  // the program has ended (CostModel::allReduceAfterCompute).
  if (pc_[r] >= items.size() && !busy_[r]) {
    for (int id : reachedAllReduces_[r])
      reachAllReduce(id);
    reachedAllReduces_[r].clear();
  }
  return progressed;
}

void Simulation::reachAllReduce(int id) {
  Collective &col = collectives_[id];
  col.lastReach = now_;
  if (++col.reached == static_cast<int>(col.members.size()))
    startCollective(id);
}

void Simulation::finishCompute(int r) {
  const Action &a = running_[r];
  busy_[r] = false;
  if (a.kind == ActionKind::AllReduce) // A post ended.
    return;
  done_[slot(a)] = true;
  out_.ranks[r].computeEnd = now_;
  if (a.kind == ActionKind::Forward) {
    forwardRank_[slot(a)] = r;
    RankStats &st = out_.ranks[r];
    st.peakInFlight = std::max(st.peakInFlight, ++inFlight_[r]);
    inFlightBytes_[r] += cost_.stash(a.stage);
    st.peakInFlightBytes = std::max(st.peakInFlightBytes, inFlightBytes_[r]);
  } else if (a.kind == ActionKind::Backward) {
    // The stash lives where the forward ran.
    int f = forwardRank_[slot(Action::forward(a.microbatch, a.stage))];
    if (f >= 0) {
      --inFlight_[f];
      inFlightBytes_[f] -= cost_.stash(a.stage);
    }
  }
}

void Simulation::sortTimeline() {
  // By rank, lane and start. Events are recorded as the simulation reaches
  // them, so each (rank, lane) group is nearly always in order already: a
  // stable bucket pass, then a sort of the groups that need one, keeps this
  // linear where a comparison sort of the whole timeline was not.
  constexpr int kLanes = 3;
  std::vector<size_t> begin(static_cast<size_t>(numRanks_) * kLanes + 1, 0);
  auto group = [&](const TimelineEvent &e) {
    return static_cast<size_t>(e.rank) * kLanes + static_cast<size_t>(e.lane);
  };
  for (const TimelineEvent &e : out_.timeline)
    ++begin[group(e) + 1];
  for (size_t g = 1; g < begin.size(); ++g)
    begin[g] += begin[g - 1];
  std::vector<TimelineEvent> sorted(out_.timeline.size());
  std::vector<size_t> next(begin.begin(), begin.end() - 1);
  for (TimelineEvent &e : out_.timeline)
    sorted[next[group(e)]++] = std::move(e);
  auto byStart = [](const TimelineEvent &a, const TimelineEvent &b) {
    return a.start < b.start;
  };
  for (size_t g = 0; g + 1 < begin.size(); ++g) {
    auto first = sorted.begin() + begin[g],
         last = sorted.begin() + begin[g + 1];
    if (!std::is_sorted(first, last, byStart))
      std::stable_sort(first, last, byStart);
  }
  out_.timeline = std::move(sorted);
}

void Simulation::finalize() {
  const double makespan = makespan_;
  out_.makespan = makespan;
  double idle = 0, arTime = 0, arHidden = 0;
  for (int r = 0; r < numRanks_; ++r) {
    RankStats &st = out_.ranks[r];
    st.idle = makespan - st.busy;
    st.bubbleRatio = makespan > 0 ? st.idle / makespan : 0;
    idle += st.idle;
    for (auto [s, e] : arIntervals_[r])
      st.allReduceHidden += std::max(0.0, std::min(e, st.computeEnd) - s);
    arTime += st.allReduceTime;
    arHidden += st.allReduceHidden;
  }
  out_.bubbleRatio =
      makespan > 0 && numRanks_ > 0 ? idle / (numRanks_ * makespan) : 0;
  out_.allReduceOverlap = arTime > 0 ? arHidden / arTime : 1;
  if (options_.recordTimeline)
    sortTimeline();

  // Whatever is left over explains a deadlock.
  for (int r = 0; r < numRanks_; ++r) {
    const std::vector<CommAction> &items = program_.ranks[r];
    if (pc_[r] >= items.size())
      continue;
    const CommAction &c = items[pc_[r]];
    const Action &a = schedule_.ranks[r][c.actionIndex];
    out_.blocked.push_back({r, c.actionIndex, waitReason(r, a, c.actionIndex)});
  }
  for (const Collective &c : collectives_) {
    if (c.started)
      continue;
    for (auto [r, index] : c.actionIndexOf) {
      if (pc_[r] < program_.ranks[r].size())
        continue; // Already reported as blocked in its program.
      std::string who;
      for (int m : c.members) {
        if (m == r)
          continue;
        auto it = c.actionIndexOf.find(m);
        if (it == c.actionIndexOf.end())
          who += " rank " + std::to_string(m) + " has no matching all-reduce;";
        else if (pc_[m] < program_.ranks[m].size())
          who += " rank " + std::to_string(m) + " is blocked before it;";
      }
      if (!who.empty())
        who.pop_back();
      const Action &a = schedule_.ranks[r][index];
      out_.blocked.push_back(
          {r, index,
           "rank " + std::to_string(r) + ": " + a.str() + " (" + describe(a) +
               ") waits for its group " + formatSet(c.members) + ":" + who});
    }
  }
  out_.deadlocked = !out_.blocked.empty();
}

Result<SimResult> Simulation::run() {
  Result<SimResult> result;
  result.error = prepare();
  if (!result.error.empty())
    return result;
  // Every rank runs until it blocks; from then on only events unblock
  // ranks (a step's end its own rank and whoever waits for the step, a
  // transfer's arrival its receiver), and each wakes exactly those.
  for (int r = 0; r < numRanks_; ++r)
    advance(r);
  while (!events_.empty()) {
    Event e = events_.top();
    events_.pop();
    now_ = e.time;
    if (e.isCompute) {
      int done = slot(running_[e.id]);
      finishCompute(e.id);
      advance(e.id);
      wake(slotWaiters_[done]);
    } else {
      arrived_[e.id] = true;
      if (cost_.ncclGroups)
        finishTransferInGroups(e.id);
      wake(transferWaiters_[e.id]);
    }
  }
  finalize();
  result.value = std::move(out_);
  return result;
}

} // namespace

Result<SimResult> simulate(const Schedule &schedule, const CommProgram &program,
                           const CostModel &cost,
                           const SimulateOptions &options) {
  return Simulation(schedule, program, cost, options).run();
}

Result<SimResult> simulate(const Schedule &schedule, const CostModel &cost,
                           const SimulateOptions &options) {
  Result<CommProgram> program = lowerComms(schedule);
  if (!program) {
    Result<SimResult> result;
    result.error = program.error;
    return result;
  }
  return simulate(schedule, *program.value, cost, options);
}

} // namespace bitpipe::sched
