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
  if (!cycle.empty()) {
    out += "  a cycle of " + std::to_string(cycle.size()) +
           " waits, each on the next and the last on the first:\n";
    for (const BlockedRank &b : cycle)
      out += "    " + b.reason + "\n";
    out += "  every blocked rank:\n";
  }
  for (const BlockedRank &b : blocked)
    out += "  " + b.reason + "\n";
  return out;
}

namespace {

/// One all-reduce collective: the matching ARs of a replica group.
struct Collective {
  std::vector<int> members; ///< The group, sorted.
  int group = 0;            ///< Index of `members` among the distinct groups.
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
  /// NCCL: the batches of the lowered program as groups on their streams,
  /// or why they cannot be issued so.
  std::string prepareGroups();
  /// NCCL: launches group `g` if it is issued and the group before it on
  /// its stream has completed, starting the transfers whose two ends are
  /// then both launched.
  void tryLaunch(int g);
  /// NCCL: one end of transfer `t` is launched (`receiving` says which);
  /// starts it when the other end is too.
  void launchEnd(int t, bool receiving);
  /// NCCL: transfer `t` arrived; completes the groups it was the last of,
  /// wakes what waits for them and launches what they held back.
  void finishTransferInGroups(int t);
  /// NCCL: the transfer a compute step reads has arrived with its group.
  bool received(int t) const;
  void finishCompute(int rank);
  void finalize();
  /// After a deadlock: the cycle of waits (SimResult::cycle).
  void findCycle();
  /// "batch 3 (SEND_F1.s0->P1 RECV_B0.s1<-P1)" of group `g`.
  std::string batchName(int g) const;
  /// "rank 1 at step 7 (F1.s1)": where `rank`'s program stands.
  std::string rankAt(int rank) const;
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
  /// rank per event, which grew as D^2 N.
  /// A rank waits for one thing at a time, so the lists share one link
  /// per rank rather than owning a vector each.
  std::vector<WaitList> transferWaiters_, slotWaiters_, groupWaiters_;
  std::vector<int> nextWaiter_;

  /// NCCL (CostModel::transport): one batch of a rank's program, issued as
  /// one group on its stream.
  struct Group {
    int rank = -1;
    int batch = -1;
    /// Its items, [begin, end) of groupItems_ (indices into
    /// program_.ranks[rank]); the same range of groupTransfers_ holds their
    /// transfers. Flat: a program at D=64, N=512 has some 400,000 groups.
    int begin = 0, end = 0;
    int pending = 0;        ///< Transfers not yet arrived.
    int previous = -1, next = -1; ///< Neighbours on its stream.
    /// The stream: -1 for the rank's one (Shared), else the channel's peer
    /// and direction (Channel).
    int peer = -1;
    bool sending = false;
    bool posted = false, launched = false, complete = false;
  };
  std::vector<Group> groups_;
  std::vector<int> groupItems_, groupTransfers_;
  /// [rank][item index] -> the group of a Send/Recv item, or -1.
  std::vector<std::vector<int>> groupOfItem_;
  /// [transfer] -> the sending and the receiving end's group launched.
  std::vector<bool> sendLaunched_, recvLaunched_;
  std::vector<int> sendGroup_, recvGroup_;
  /// NCCL: when each rank's all-reduce stream of each group is free, by
  /// rank * numAllReduceGroups_ + Collective::group.
  std::vector<double> groupLaneFree_;
  int numAllReduceGroups_ = 0;
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

  if (cost_.transport == Transport::Nccl)
    if (std::string why = prepareGroups(); !why.empty())
      return why;

  // Match all-reduces: the k-th AR of a rank with replica group G meets the
  // k-th AR of every other member of G.
  std::vector<std::vector<int>> groups = p.replicaGroups();
  std::map<std::pair<std::vector<int>, int>, int> byKey;
  std::map<std::vector<int>, int> groupIndex;
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
          c.group = groupIndex.insert({group, static_cast<int>(
                                                  groupIndex.size())})
                        .first->second;
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
  numAllReduceGroups_ = static_cast<int>(groupIndex.size());
  groupLaneFree_.assign(
      static_cast<size_t>(numRanks_) * std::max(1, numAllReduceGroups_), 0);
  return "";
}

std::string Simulation::prepareGroups() {
  groupOfItem_.assign(numRanks_, {});
  sendLaunched_.assign(program_.transfers.size(), false);
  recvLaunched_.assign(program_.transfers.size(), false);
  sendGroup_.assign(program_.transfers.size(), -1);
  recvGroup_.assign(program_.transfers.size(), -1);
  groups_.clear();
  groupItems_.clear();
  groupTransfers_.clear();
  const bool perChannel = program_.streams == TransferStreams::Channel;
  // [peer * 2 + sending] -> the last group on that stream of the rank (one
  // slot under Shared); reset per rank.
  std::vector<int> lastOnStream(perChannel ? 2 * numRanks_ : 1, -1);
  for (int r = 0; r < numRanks_; ++r) {
    const std::vector<CommAction> &items = program_.ranks[r];
    groupOfItem_[r].assign(items.size(), -1);
    std::fill(lastOnStream.begin(), lastOnStream.end(), -1);
    int open = -1; // the group of the last transfer seen
    // What came between it and this item: a compute step splits a batch,
    // which the runtime would issue in pieces; an all-reduce ends the open
    // group (a collective cannot join it), and the batch's further
    // transfers are a group of their own, as the runtime issues them.
    bool computeSince = false, allReduceSince = false;
    for (size_t i = 0; i < items.size(); ++i) {
      const CommAction &c = items[i];
      if (c.kind == CommKind::Compute) {
        computeSince = true;
        continue;
      }
      if (c.kind == CommKind::AllReduce) {
        allReduceSince = true;
        continue;
      }
      if (!c.isSendOrRecv())
        continue; // local copies are no NCCL call
      auto where = [&] { return "rank " + std::to_string(r) + ": " + c.str(); };
      if (c.batch < 0)
        return where() + " belongs to no batch; under NCCL's rules every "
                         "transfer is issued in one";
      const int openBatch = open >= 0 ? groups_[open].batch : -1;
      // Batches are issued in program order, each at its last transfer.
      if (c.batch < openBatch || (c.batch == openBatch && computeSince))
        return where() + " is in batch " + std::to_string(c.batch) +
               ", which " +
               (c.batch == openBatch
                    ? std::string("a compute step interrupts")
                    : "comes after batch " + std::to_string(openBatch)) +
               "; a batch's transfers must follow each other, and batch "
               "numbers grow along the program";
      if (c.batch != openBatch || allReduceSince) {
        Group g;
        g.rank = r;
        g.batch = c.batch;
        g.begin = g.end = static_cast<int>(groupItems_.size());
        if (perChannel) {
          g.peer = c.peer;
          g.sending = c.isSend();
        }
        int &last = lastOnStream[perChannel ? 2 * c.peer + c.isSend() : 0];
        g.previous = last;
        last = static_cast<int>(groups_.size());
        if (g.previous >= 0)
          groups_[g.previous].next = last;
        groups_.push_back(g);
        open = last;
      }
      Group &g = groups_[open];
      if (perChannel && (g.peer != c.peer || g.sending != c.isSend()))
        return where() + " is in batch " + std::to_string(c.batch) +
               " with " + items[groupItems_[g.begin]].str() +
               "; with one stream per channel a batch holds one channel's "
               "transfers";
      groupItems_.push_back(static_cast<int>(i));
      groupTransfers_.push_back(c.transfer);
      ++g.end;
      ++g.pending;
      groupOfItem_[r][i] = open;
      (c.isSend() ? sendGroup_ : recvGroup_)[c.transfer] = open;
      computeSince = allReduceSince = false;
    }
  }
  groupWaiters_.assign(groups_.size(), {});
  return "";
}

bool Simulation::received(int t) const {
  if (!arrived_[t])
    return false;
  // Under NCCL the receive's event follows its whole group.
  int g = cost_.transport == Transport::Nccl ? recvGroup_[t] : -1;
  return g < 0 || groups_[g].complete;
}

bool Simulation::computeReady(int rank, const Action &a, int actionIndex) {
  int in = inputTransfer_[rank][actionIndex];
  if (in >= 0 && !received(in))
    return false;
  // The cross-stage input is the transfer above (or a local copy); the
  // same-stage one never travels.
  std::optional<Action> own = inputsOf(a, numStages_).sameStage;
  return !own || done_[slot(*own)];
}

void Simulation::waitFor(int rank, const Action &a, int actionIndex) {
  // What computeReady found missing, in its order.
  int in = inputTransfer_[rank][actionIndex];
  if (in >= 0 && !received(in)) {
    int g = cost_.transport == Transport::Nccl ? recvGroup_[in] : -1;
    enqueue(g >= 0 ? groupWaiters_[g] : transferWaiters_[in], rank);
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
  if (in >= 0 && !received(in)) {
    const Transfer &t = program_.transfers[in];
    Action producer = t.producer();
    std::string what =
        (t.gradient ? "the gradient of " : "the activation of ") +
        producer.str() + " from rank " + std::to_string(t.src);
    if (cost_.transport == Transport::Nccl && recvGroup_[in] >= 0) {
      int g = recvGroup_[in];
      if (arrived_[in])
        return head + what + ", which arrived, but its " + batchName(g) +
               " has not completed (a receive's event follows its group)";
      if (!groups_[g].launched)
        return head + what + ", whose receive is in " + batchName(g) +
               ", not launched: " +
               (groups_[g].posted ? "the group before it on its stream has "
                                    "not completed"
                                  : "not issued yet");
      if (sendGroup_[in] >= 0 && !groups_[sendGroup_[in]].launched)
        return head + what + ", whose send on rank " +
               std::to_string(t.src) + " is in " +
               batchName(sendGroup_[in]) + ", not launched: " +
               (groups_[sendGroup_[in]].posted
                    ? "the group before it on its stream has not completed"
                    : "rank " + std::to_string(t.src) +
                          " has not issued it");
    }
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
  // NCCL: each group of ranks has a communicator and a stream of its own;
  // MPI: a rank's collectives progress one after another.
  const bool perGroup = cost_.transport == Transport::Nccl;
  auto lane = [&](int m) -> double & {
    return perGroup ? groupLaneFree_[static_cast<size_t>(m) *
                                         numAllReduceGroups_ +
                                     c.group]
                    : allReduceFree_[m];
  };
  for (int m : c.members)
    start = std::max(start, lane(m));
  // With a deployment the collective spans every data-parallel copy, and
  // each member sends its algorithm's share of the whole group (the ring's
  // or the tree's, CostModel::allReduceAlgorithmFor), or in two levels its
  // copy's ring and its shard's all-reduce (CostModel::gradientSync).
  double dur = cost_.allReduceTime(c.bytes, c.members);
  double perRank = cost_.allReduceBytesPerRank(c.bytes, c.members);
  double interNode = cost_.allReduceInterNodeBytesPerRank(c.bytes, c.members);
  out_.allReduceTime += dur;
  for (int m : c.members) {
    lane(m) = start + dur;
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
    st.allReduceInterNodeBytes += interNode;
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

void Simulation::tryLaunch(int id) {
  Group &g = groups_[id];
  if (g.launched || !g.posted ||
      (g.previous >= 0 && !groups_[g.previous].complete))
    return;
  g.launched = true;
  for (int k = g.begin; k < g.end; ++k) {
    int t = groupTransfers_[k];
    launchEnd(t, program_.transfers[t].dst == g.rank);
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
    if (--g.pending > 0)
      continue;
    g.complete = true;
    if (g.next >= 0)
      tryLaunch(g.next);
    wake(groupWaiters_[id]);
  }
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
    case CommKind::RecvF:
    case CommKind::RecvB:
      if (cost_.transport == Transport::Nccl) {
        // The program issues the group at its last transfer and goes on;
        // the transfers move once both ends' groups are launched, and
        // compute waits for the group of a receive it reads.
        int id = groupOfItem_[r][pc_[r]];
        if (groupItems_[groups_[id].end - 1] == static_cast<int>(pc_[r])) {
          groups_[id].posted = true;
          tryLaunch(id);
        }
      } else if (c.isSend()) {
        startTransfer(c.transfer);
      } else if (!arrived_[c.transfer]) {
        enqueue(transferWaiters_[c.transfer], r);
        return progressed;
      }
      break;
    case CommKind::LocalCopyF:
    case CommKind::LocalCopyB:
      // Free: the consumer may start at once.
      arrived_[c.transfer] = true;
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
  if (out_.deadlocked)
    findCycle();
}

std::string Simulation::batchName(int id) const {
  const Group &g = groups_[id];
  std::string out = "batch " + std::to_string(g.batch) + " (";
  for (int k = g.begin; k < g.end; ++k)
    out += (k > g.begin ? " " : "") +
           program_.ranks[g.rank][groupItems_[k]].str();
  return out + ")";
}

std::string Simulation::rankAt(int rank) const {
  const std::vector<CommAction> &items = program_.ranks[rank];
  std::string out = "rank " + std::to_string(rank);
  if (pc_[rank] >= items.size())
    return out + " (at its end)";
  int index = items[pc_[rank]].actionIndex;
  return out + " at step " + std::to_string(index + 1) + " (" +
         schedule_.ranks[rank][index].str() + ")";
}

void Simulation::findCycle() {
  // Every blocked rank and every stuck group waits on exactly one thing
  // (the first that holds it back), so following the waits from a blocked
  // rank either ends (a transfer no one sends) or comes back to a wait
  // seen before: that loop is the deadlock's cycle.
  struct Wait {
    int node = -1; ///< The next node, or -1: the chain ends here.
    int rank = -1, actionIndex = -1;
    std::string text;
  };
  const int rankNodes = numRanks_;
  auto groupNode = [&](int g) { return rankNodes + g; };
  auto waitOf = [&](int node) -> Wait {
    Wait w;
    if (node < rankNodes) {
      const int r = node;
      const std::vector<CommAction> &items = program_.ranks[r];
      if (pc_[r] >= items.size())
        return w;
      const CommAction &c = items[pc_[r]];
      w.rank = r;
      w.actionIndex = c.actionIndex;
      int in = c.kind == CommKind::Compute
                   ? inputTransfer_[r][c.actionIndex]
                   : (c.isSendOrRecv() && !c.isSend() ? c.transfer : -1);
      if (in < 0 || received(in))
        return w;
      const Transfer &t = program_.transfers[in];
      std::string what = std::string(t.gradient ? "gradient" : "activation") +
                         " of " + t.producer().str() + " from rank " +
                         std::to_string(t.src);
      int g = cost_.transport == Transport::Nccl ? recvGroup_[in] : -1;
      if (g >= 0) {
        w.node = groupNode(g);
        w.text = rankAt(r) + " waits for the " + what + ", received in its " +
                 batchName(g);
      } else {
        w.node = t.src;
        w.text = rankAt(r) + " waits for the " + what + ", which rank " +
                 std::to_string(t.src) +
                 (done_[slot(t.producer())] ? " has not sent yet"
                                            : " has not produced yet");
      }
      return w;
    }
    const int id = node - rankNodes;
    const Group &g = groups_[id];
    w.rank = g.rank;
    w.actionIndex = program_.ranks[g.rank][groupItems_[g.begin]].actionIndex;
    std::string self = "rank " + std::to_string(g.rank) + "'s " +
                       batchName(id);
    auto notLaunched = [&](int other, const std::string &head) {
      const Group &o = groups_[other];
      if (!o.posted) {
        w.node = o.rank;
        return head + ", which rank " + std::to_string(o.rank) +
               " has not issued: its program has not reached it";
      }
      w.node = groupNode(o.previous);
      return head + ", which waits on its stream (" +
             (program_.streams == TransferStreams::Channel
                  ? std::string("the channel's")
                  : "rank " + std::to_string(o.rank) + "'s only one") +
             ") for " + batchName(o.previous) + " to complete";
    };
    if (!g.launched) {
      w.text = notLaunched(id, self + " is not launched");
      return w;
    }
    for (int k = g.begin; k < g.end; ++k) {
      const int t = groupTransfers_[k];
      if (arrived_[t])
        continue;
      const Transfer &tr = program_.transfers[t];
      bool sending = tr.src == g.rank;
      int other = sending ? recvGroup_[t] : sendGroup_[t];
      if (other < 0 || groups_[other].launched)
        continue;
      int peer = sending ? tr.dst : tr.src;
      w.text = notLaunched(
          other, self + " cannot complete: its " +
                     (sending ? "send to" : "receive from") + " rank " +
                     std::to_string(peer) + " needs the matching " +
                     (sending ? "receive" : "send") + " in rank " +
                     std::to_string(peer) + "'s " + batchName(other));
      return w;
    }
    return w;
  };

  for (const BlockedRank &start : out_.blocked) {
    std::vector<int> path;
    std::vector<Wait> waits;
    std::map<int, size_t> seen;
    int node = start.rank;
    while (node >= 0 && !seen.count(node)) {
      seen[node] = path.size();
      path.push_back(node);
      waits.push_back(waitOf(node));
      node = waits.back().node;
    }
    if (node < 0)
      continue;
    // Told from a blocked rank where the cycle has one, as a user reads
    // it: a rank stuck at a step, then why.
    size_t first = seen[node], begin = first;
    for (size_t k = first; k < path.size(); ++k)
      if (path[k] < rankNodes) {
        begin = k;
        break;
      }
    for (size_t i = 0; i < path.size() - first; ++i) {
      const Wait &w = waits[first + (begin - first + i) % (path.size() - first)];
      out_.cycle.push_back({w.rank, w.actionIndex, w.text});
    }
    return;
  }
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
      if (cost_.transport == Transport::Nccl)
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
