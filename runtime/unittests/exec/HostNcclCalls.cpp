//===- HostNcclCalls.cpp - NcclDeviceCalls over MPI, in host memory -------===//

#include "HostNcclCalls.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

namespace bitpipe::runtime {

namespace {

MPI_Datatype mpiTypeOf(NcclElement t) {
  switch (t) {
  case NcclElement::Float32:
    return MPI_FLOAT;
  case NcclElement::BFloat16:
    return MPI_UINT16_T; // moved, never summed (as the executor does)
  case NcclElement::Float64:
    return MPI_DOUBLE;
  case NcclElement::Int32:
    return MPI_INT32_T;
  }
  return MPI_DATATYPE_NULL;
}

Status mpiStatus(int err, const char *what) {
  if (err == MPI_SUCCESS)
    return Status::ok();
  return Status::error(ErrorCode::CommFailure,
                       formatString("%s failed (MPI error %d)", what, err));
}

/// Starts one MPI operation into its request.
using Start = std::function<int(MPI_Request *)>;
/// What an operation does once it is done (a reduce-scatter's copy into
/// place); may be empty.
using Finish = std::function<void()>;

struct Unit;
using UnitRef = std::shared_ptr<Unit>;

/// What a stream runs as one (the file comment of HostNcclCalls.h).
struct Unit {
  std::vector<Start> starts;
  std::vector<Finish> finishes;
  /// Other streams' units it must not be posted before (their events'
  /// units, which its stream waited for).
  std::vector<UnitRef> after;
  std::vector<MPI_Request> requests; // once posted
  bool done = false;

  bool ready() const {
    for (const UnitRef &u : after)
      if (!u->done)
        return false;
    return true;
  }
};

/// \p units without the ones done.
void dropDone(std::vector<UnitRef> *units) {
  std::vector<UnitRef> left;
  for (UnitRef &u : *units)
    if (!u->done)
      left.push_back(std::move(u));
  units->swap(left);
}

/// Adds to \p units those of \p more that are not done and not there yet.
/// Each: streams wait for each other's events over and over (a two-level
/// sum's steps alternate between two streams), and an event holds its
/// stream's waits, so lists copied without it would double at every step.
void addPending(std::vector<UnitRef> *units, const std::vector<UnitRef> &more) {
  std::unordered_set<const Unit *> there;
  for (const UnitRef &u : *units)
    there.insert(u.get());
  for (const UnitRef &u : more)
    if (!u->done && there.insert(u.get()).second)
      units->push_back(u);
}

/// A communicator and its stream: the units not yet done, in issue order,
/// and the other streams' units it was told to wait for, not yet done.
struct Stream {
  MPI_Comm comm = MPI_COMM_NULL;
  std::deque<UnitRef> units;
  std::vector<UnitRef> waits;
};

class HostNcclCalls final : public NcclDeviceCalls {
public:
  explicit HostNcclCalls(HostNcclRules rules) : rules_(rules) {}
  ~HostNcclCalls() override {
    for (Stream &s : streams_)
      if (s.comm != MPI_COMM_NULL)
        MPI_Comm_free(&s.comm);
  }

  Expected<std::string> uniqueId() override { return std::string("host"); }
  Status initWorld(const std::string &, int, int) override {
    MPI_Comm world = MPI_COMM_NULL;
    BP_TRY(mpiStatus(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup"));
    streams_.push_back({world, {}, {}});
    return Status::ok();
  }
  Expected<int> split(int color, int key) override {
    MPI_Comm c = MPI_COMM_NULL;
    BP_TRY(mpiStatus(MPI_Comm_split(streams_[0].comm,
                                    color < 0 ? MPI_UNDEFINED : color, key,
                                    &c),
                     "MPI_Comm_split"));
    if (color < 0)
      return -1;
    streams_.push_back({c, {}, {}});
    return static_cast<int>(streams_.size() - 1);
  }
  Expected<void *> scratch(int64_t count) override {
    if (scratch_.empty())
      scratch_.assign(static_cast<size_t>(count), 0);
    return static_cast<void *>(scratch_.data());
  }
  Status groupStart() override {
    if (inGroup_)
      return Status::error(ErrorCode::InvalidArgument,
                           "host NCCL: groups nest");
    inGroup_ = true;
    groupComm_ = -1;
    return Status::ok();
  }
  Status groupEnd() override {
    if (!inGroup_)
      return Status::error(ErrorCode::InvalidArgument,
                           "host NCCL: a group ends that did not start");
    inGroup_ = false;
    std::vector<Start> group;
    std::vector<Finish> finishes;
    group.swap(group_);
    finishes.swap(groupFinishes_);
    return group.empty() ? Status::ok()
                         : enqueue(groupComm_, group, std::move(finishes));
  }
  Status send(int comm, const void *buf, int64_t count, NcclElement type,
              int peer) override {
    MPI_Comm c = streams_[comm].comm;
    // Strict: done only once matched, as an NCCL send beyond its buffer.
    const bool synchronous = rules_ == HostNcclRules::Strict;
    return issue(comm, [=](MPI_Request *r) {
      return synchronous ? MPI_Issend(buf, static_cast<int>(count),
                                      mpiTypeOf(type), peer, 0, c, r)
                         : MPI_Isend(buf, static_cast<int>(count),
                                     mpiTypeOf(type), peer, 0, c, r);
    });
  }
  Status recv(int comm, void *buf, int64_t count, NcclElement type,
              int peer) override {
    MPI_Comm c = streams_[comm].comm;
    return issue(comm, [=](MPI_Request *r) {
      return MPI_Irecv(buf, static_cast<int>(count), mpiTypeOf(type), peer, 0,
                       c, r);
    });
  }
  Status allReduce(int comm, void *buf, int64_t count,
                   NcclElement type) override {
    if (inGroup_)
      return Status::error(ErrorCode::InvalidArgument,
                           "host NCCL: an all-reduce inside a p2p group");
    MPI_Comm c = streams_[comm].comm;
    return issue(comm, [=](MPI_Request *r) {
      return MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count),
                            mpiTypeOf(type), MPI_SUM, c, r);
    });
  }
  Status reduceScatter(int comm, void *buf, int64_t shardCount,
                       NcclElement type) override {
    if (inGroup_)
      return Status::error(ErrorCode::InvalidArgument,
                           "host NCCL: a reduce-scatter inside a p2p group");
    MPI_Comm c = streams_[comm].comm;
    int rank = 0;
    BP_TRY(mpiStatus(MPI_Comm_rank(c, &rank), "MPI_Comm_rank"));
    const size_t bytes =
        static_cast<size_t>(shardCount) * ncclElementSize(type);
    // The unit's own: MPI writes it, the finish copies it to the shard.
    auto shard = std::make_shared<std::vector<char>>(bytes);
    char *mine = static_cast<char *>(buf) + static_cast<size_t>(rank) * bytes;
    return issue(
        comm,
        [=](MPI_Request *r) {
          return MPI_Ireduce_scatter_block(buf, shard->data(),
                                           static_cast<int>(shardCount),
                                           mpiTypeOf(type), MPI_SUM, c, r);
        },
        [=] { std::memcpy(mine, shard->data(), bytes); });
  }
  Status allGather(int comm, void *buf, int64_t shardCount,
                   NcclElement type) override {
    if (inGroup_)
      return Status::error(ErrorCode::InvalidArgument,
                           "host NCCL: an all-gather inside a p2p group");
    MPI_Comm c = streams_[comm].comm;
    return issue(comm, [=](MPI_Request *r) {
      return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf,
                            static_cast<int>(shardCount), mpiTypeOf(type), c,
                            r);
    });
  }
  Status streamWaitsForCompute(int) override { return Status::ok(); }
  Status streamWaitsForEvent(int comm, int event) override {
    // Copied: the slot may be released and recorded again.
    std::vector<UnitRef> &waits = streams_[comm].waits;
    dropDone(&waits);
    addPending(&waits, events_[event]);
    return Status::ok();
  }
  Expected<int> recordEvent(int comm) override {
    BP_TRY(progress());
    // The stream's units, and what it waits for: a CUDA event recorded
    // after a wait completes only once the wait is met.
    Stream &stream = streams_[comm];
    dropDone(&stream.waits);
    std::vector<UnitRef> units(stream.units.begin(), stream.units.end());
    addPending(&units, stream.waits);
    int slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      events_[slot] = std::move(units);
    } else {
      events_.push_back(std::move(units));
      slot = static_cast<int>(events_.size() - 1);
    }
    return slot;
  }
  Expected<bool> eventDone(int event) override {
    BP_TRY(progress());
    for (const UnitRef &u : events_[event])
      if (!u->done)
        return false;
    return true;
  }
  Status computeWaitsFor(int event) override {
    // NcclCommunicator bounded this wait already (hostComputes).
    for (;;) {
      BP_ASSIGN(done, eventDone(event));
      if (done)
        return Status::ok();
    }
  }
  void releaseEvent(int event) override {
    events_[event].clear();
    free_.push_back(event);
  }
  // Timing: only the CUDA backend turns it on (NcclCommunicator::
  // setDeviceTiming), and the fake runs under a host backend; its slots
  // are kept and recycled all the same, but there is no device clock to
  // read them against.
  Expected<int> recordTimingEvent(int) override {
    if (!timingFree_.empty()) {
      int slot = timingFree_.back();
      timingFree_.pop_back();
      return slot;
    }
    return timingSlots_++;
  }
  Expected<float> timingEventMs(void *, int) override {
    return Status::error(ErrorCode::InvalidArgument,
                         "host NCCL: no device clock to time operations by "
                         "(expected a host backend to leave timing off)");
  }
  void releaseTimingEvent(int slot) override { timingFree_.push_back(slot); }
  Status asyncError(int) override { return Status::ok(); }
  void abortAll() override {}
  bool hostComputes() const override { return true; }

private:
  /// An operation on \p comm: into the open group, or a unit of its own.
  Status issue(int comm, Start start, Finish finish = nullptr) {
    std::vector<Finish> finishes;
    if (finish)
      finishes.push_back(std::move(finish));
    if (!inGroup_)
      return enqueue(comm, {std::move(start)}, std::move(finishes));
    // NcclCommunicator never spans communicators with a group (a batch is
    // one channel's, a warm-up one communicator's); the fake relies on it.
    if (groupComm_ >= 0 && groupComm_ != comm)
      return Status::error(ErrorCode::InvalidArgument,
                           formatString("host NCCL: a group spans "
                                        "communicators %d and %d",
                                        groupComm_, comm));
    groupComm_ = comm;
    group_.push_back(std::move(start));
    for (Finish &f : finishes)
      groupFinishes_.push_back(std::move(f));
    return Status::ok();
  }

  Status enqueue(int comm, std::vector<Start> starts,
                 std::vector<Finish> finishes) {
    auto unit = std::make_shared<Unit>();
    unit->starts = std::move(starts);
    unit->finishes = std::move(finishes);
    // Behind every wait of its stream so far (a CUDA stream's wait holds
    // all later work; under loose rules the units of a stream do not hold
    // each other, so each must carry them).
    Stream &stream = streams_[comm];
    dropDone(&stream.waits);
    unit->after = stream.waits;
    stream.units.push_back(std::move(unit));
    return progress();
  }

  static Status post(Unit &u) {
    // Its waits are met: holding them would keep every unit before it.
    u.after.clear();
    u.requests.assign(u.starts.size(), MPI_REQUEST_NULL);
    for (size_t i = 0; i < u.starts.size(); ++i)
      BP_TRY(mpiStatus(u.starts[i](&u.requests[i]), "posting an operation"));
    return Status::ok();
  }
  static Expected<bool> test(Unit &u) {
    int flag = 0;
    BP_TRY(mpiStatus(MPI_Testall(static_cast<int>(u.requests.size()),
                                 u.requests.data(), &flag,
                                 MPI_STATUSES_IGNORE),
                     "MPI_Testall"));
    if (flag != 0 && !u.done)
      for (Finish &f : u.finishes)
        f();
    u.done = flag != 0;
    return u.done;
  }

  /// Posts what each stream's rules allow and retires the units that are
  /// done: called from every poll, so that a stream moves on while the
  /// host waits for anything.
  Status progress() {
    for (Stream &s : streams_) {
      if (rules_ == HostNcclRules::Loose) {
        // Every unit posted once its waits are met; they end in any order.
        // A later unit waits for all an earlier one does, so the units of
        // a communicator are still posted in issue order, as MPI's
        // collectives must be.
        for (const UnitRef &u : s.units)
          if (u->requests.empty() && u->ready())
            BP_TRY(post(*u));
        for (auto it = s.units.begin(); it != s.units.end();) {
          if ((*it)->requests.empty()) {
            ++it;
            continue;
          }
          BP_ASSIGN(done, test(**it));
          it = done ? s.units.erase(it) : std::next(it);
        }
        continue;
      }
      // Strict: the first unit alone runs; the next is posted once it is
      // done, as a stream runs its kernels one after another.
      while (!s.units.empty()) {
        Unit &head = *s.units.front();
        if (head.requests.empty() && !head.ready())
          break;
        if (head.requests.empty())
          BP_TRY(post(head));
        BP_ASSIGN(done, test(head));
        if (!done)
          break;
        s.units.pop_front();
      }
    }
    return Status::ok();
  }

  HostNcclRules rules_;
  std::vector<Stream> streams_; // [0]: the world's
  std::vector<int32_t> scratch_;
  bool inGroup_ = false;
  int groupComm_ = -1;
  std::vector<Start> group_;
  std::vector<Finish> groupFinishes_;
  std::vector<std::vector<UnitRef>> events_;
  std::vector<int> free_;
  int timingSlots_ = 0;
  std::vector<int> timingFree_;
};

} // namespace

std::unique_ptr<NcclDeviceCalls> createHostNcclCalls(HostNcclRules rules) {
  return std::make_unique<HostNcclCalls>(rules);
}

Expected<std::optional<HostNcclRules>> hostNcclRulesFromEnv(const char *var) {
  const char *value = std::getenv(var);
  if (!value || !*value)
    return std::optional<HostNcclRules>();
  const std::string v = value;
  if (v == "1" || v == "strict")
    return std::optional<HostNcclRules>(HostNcclRules::Strict);
  if (v == "loose")
    return std::optional<HostNcclRules>(HostNcclRules::Loose);
  return Status::error(ErrorCode::InvalidArgument,
                       formatString("%s='%s': expected strict (or 1: NCCL's "
                                    "rules) or loose (MPI's)",
                                    var, value));
}

} // namespace bitpipe::runtime
