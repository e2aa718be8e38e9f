//===- NcclCommunicatorLogicTest.cpp - NcclCommunicator on a fake device --===//
//
// The NCCL communicator's bookkeeping without a GPU: its calls go to a fake
// NcclDeviceCalls that logs them (one line per call) and whose events
// complete when the test says, and its bootstrap is a one-process fake.
// Checked: the unique id's broadcast, group creation order and ids and the
// groups' warm-ups; the channels: "channel" communicators split in rounds
// (colours and keys) and warmed up after each split, "shared" connecting
// only the listed pairs; routing of transfers to their channel's
// communicator and stream, transfers on unlisted channels and batches that
// mix channels refused; batches opened lazily and closed by endBatch / a
// wait / an all-reduce, the event a batch shares, the streams' waits for
// compute, all-reduces on their group's stream, partitions (one split
// coloured by part), two-level all-reduces (their steps on three streams
// ordered by events, the tail joined back, the step a timeout blames),
// device waits and their drain (and the host's deadline first where
// compute runs on the host),
// the timeout and async-error paths (abort once, message naming the rank,
// op and peer), request ids, dtypes; the device spans (a pair of timing
// events per operation on its stream, a batch's pair around its group's
// end, the pool's reuse, the spans' names and rows in the trace); CUDA
// graph capture (streams forked into the capture and joined back before
// it ends, no event queried and no host wait or timing inside it, the
// captured operations completed by the launched graph's event, a replay's
// wait bounded by the deadline and the graph's communicators' async
// errors); and the rank -> GPU plan and the NCCL_HOSTID arrangement. The real
// calls run in runtime/unittests/cuda/NcclCommunicatorTest.cpp (GPU).
//
//===----------------------------------------------------------------------===//

#include "comm/nccl/GpuSharing.h"
#include "comm/nccl/NcclCommunicator.h"
#include "train/Trace.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>

using namespace bitpipe::runtime;

namespace {

/// Logs every call; events are done once the test marks them (or all of
/// them, while everyEventDone).
class FakeCalls final : public NcclDeviceCalls {
public:
  std::vector<std::string> *log;
  std::set<int> doneEvents;
  bool everyEventDone = false;
  std::set<int> liveEvents;
  Status nextAsyncError = Status::ok();
  int aborts = 0;
  int comms = 1; // the world's
  bool onHost = false;
  int32_t scratchMemory[64] = {};
  /// The test's data buffer, whose offsets the log names.
  const char *dataBase = nullptr;

  explicit FakeCalls(std::vector<std::string> *log) : log(log) {}

  Expected<std::string> uniqueId() override {
    log->push_back("uniqueId");
    return std::string("ID-OF-RANK-0");
  }
  Status initWorld(const std::string &id, int nranks, int rank) override {
    log->push_back(formatString("initWorld %s %d %d", id.c_str(), nranks,
                                rank));
    return Status::ok();
  }
  Expected<int> split(int color, int key) override {
    log->push_back(formatString("split color %d key %d", color, key));
    return color >= 0 ? comms++ : -1;
  }
  Expected<void *> scratch(int64_t count) override {
    EXPECT_LE(count, 64);
    return static_cast<void *>(scratchMemory);
  }
  Status groupStart() override {
    log->push_back("groupStart");
    return Status::ok();
  }
  Status groupEnd() override {
    log->push_back("groupEnd");
    return Status::ok();
  }
  static const char *name(NcclElement t) {
    switch (t) {
    case NcclElement::Float32:
      return "f32";
    case NcclElement::BFloat16:
      return "bf16";
    case NcclElement::Float64:
      return "f64";
    case NcclElement::Int32:
      return "i32";
    }
    return "?";
  }
  Status send(int comm, const void *, int64_t count, NcclElement t,
              int peer) override {
    log->push_back(formatString("send c%d n%lld %s to %d", comm,
                                static_cast<long long>(count), name(t), peer));
    return Status::ok();
  }
  Status recv(int comm, void *, int64_t count, NcclElement t,
              int peer) override {
    log->push_back(formatString("recv c%d n%lld %s from %d", comm,
                                static_cast<long long>(count), name(t), peer));
    return Status::ok();
  }
  Status allReduce(int comm, void *buf, int64_t count, NcclElement t) override {
    // Where in the test's data buffer, for the two-level sums' shards.
    const std::ptrdiff_t at = offsetOf(buf);
    log->push_back(at > 0
                       ? formatString("allReduce c%d at %td n%lld %s", comm, at,
                                      static_cast<long long>(count), name(t))
                       : formatString("allReduce c%d n%lld %s", comm,
                                      static_cast<long long>(count), name(t)));
    return Status::ok();
  }
  /// The byte offset of \p buf in dataBase's buffer (0 elsewhere).
  std::ptrdiff_t offsetOf(const void *buf) const {
    const char *p = static_cast<const char *>(buf);
    return dataBase && p >= dataBase && p < dataBase + 1024 ? p - dataBase : 0;
  }
  Status reduceScatter(int comm, void *buf, int64_t count,
                       NcclElement t) override {
    log->push_back(formatString("reduceScatter c%d at %td n%lld %s", comm,
                                offsetOf(buf), static_cast<long long>(count),
                                name(t)));
    return Status::ok();
  }
  Status allGather(int comm, void *buf, int64_t count, NcclElement t) override {
    log->push_back(formatString("allGather c%d at %td n%lld %s", comm,
                                offsetOf(buf), static_cast<long long>(count),
                                name(t)));
    return Status::ok();
  }
  Status streamWaitsForCompute(int comm) override {
    log->push_back(formatString("c%d waits for compute", comm));
    return Status::ok();
  }
  Status streamWaitsForEvent(int comm, int event) override {
    EXPECT_TRUE(liveEvents.count(event)) << "wait for released event " << event;
    log->push_back(formatString("c%d waits for e%d", comm, event));
    return Status::ok();
  }
  Expected<int> recordEvent(int comm) override {
    int e = nextEvent++;
    liveEvents.insert(e);
    log->push_back(formatString("record e%d on c%d", e, comm));
    return e;
  }
  Expected<bool> eventDone(int event) override {
    EXPECT_TRUE(liveEvents.count(event)) << "query of released event " << event;
    ++queries;
    return everyEventDone || doneEvents.count(event) > 0;
  }
  Expected<int> recordComputeEvent() override {
    int e = nextEvent++;
    liveEvents.insert(e);
    log->push_back(formatString("record e%d on compute", e));
    return e;
  }
  Status computeWaitsFor(int event) override {
    log->push_back(formatString("compute waits for e%d", event));
    return Status::ok();
  }
  void releaseEvent(int event) override {
    EXPECT_TRUE(liveEvents.erase(event)) << "event " << event
                                         << " released twice";
  }
  // Timing events: logged as "time tN on cC" and measured from the
  // reference "step start" as the test set in timingMs.
  Expected<int> recordTimingEvent(int comm) override {
    int t;
    if (!timingFree.empty()) {
      t = timingFree.back();
      timingFree.pop_back();
    } else {
      t = timingSlots++;
    }
    EXPECT_TRUE(liveTiming.insert(t).second) << "timing event " << t
                                             << " recorded while in use";
    log->push_back(formatString("time t%d on c%d", t, comm));
    return t;
  }
  Expected<float> timingEventMs(void *reference, int slot) override {
    EXPECT_EQ(reference, static_cast<void *>(&stepStart));
    EXPECT_TRUE(liveTiming.count(slot)) << "reading released " << slot;
    auto it = timingMs.find(slot);
    if (it == timingMs.end())
      return Status::error(ErrorCode::DeviceFailure, "not complete");
    return it->second;
  }
  void releaseTimingEvent(int slot) override {
    EXPECT_TRUE(liveTiming.erase(slot)) << "timing event " << slot
                                        << " released twice";
    timingFree.push_back(slot);
  }
  Status asyncError(int comm) override {
    asyncAsked.insert(comm);
    return nextAsyncError;
  }
  void abortAll() override {
    ++aborts;
    log->push_back("abortAll");
  }
  bool hostComputes() const override { return onHost; }

  int nextEvent = 0;
  int queries = 0;          // eventDone calls
  std::set<int> asyncAsked; // communicators asked for their async error
  int stepStart = 0; // its address is the reference event
  std::set<int> liveTiming;
  std::vector<int> timingFree;
  int timingSlots = 0;
  std::map<int, float> timingMs;
};

/// A bootstrap of \p size ranks seen from \p rank: groups get ids in call
/// order, broadcasts take their payloads from `incoming` on non-roots.
class FakeBootstrap final : public Communicator {
public:
  FakeBootstrap(int rank, int size) : rank_(rank), size_(size) {
    std::vector<int> all;
    for (int r = 0; r < size; ++r)
      all.push_back(r);
    groups_.push_back(all);
  }
  std::vector<std::string> incoming;
  std::vector<std::string> broadcasts; // what rank 0 sent

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Expected<GroupId> createGroup(const std::vector<int> &ranks) override {
    groups_.push_back(ranks);
    return static_cast<GroupId>(groups_.size() - 1);
  }
  Expected<GroupId>
  createPartition(const std::vector<std::vector<int>> &parts) override {
    std::vector<int> mine;
    for (const std::vector<int> &part : parts)
      for (int r : part)
        if (r == rank_)
          mine = part;
    groups_.push_back(mine);
    return static_cast<GroupId>(groups_.size() - 1);
  }
  bool isMember(GroupId g) const override {
    for (int r : groups_[g])
      if (r == rank_)
        return true;
    return false;
  }
  const std::vector<int> &groupRanks(GroupId g) const override {
    return groups_[g];
  }
  Status openChannels(TransferStreams, const std::vector<Channel> &) override {
    return Status::ok();
  }
  Expected<RequestHandle> send(const void *, int64_t, DType, int,
                               int) override {
    return Status::error(ErrorCode::InvalidArgument, "not in this test");
  }
  Expected<RequestHandle> recv(void *, int64_t, DType, int, int) override {
    return Status::error(ErrorCode::InvalidArgument, "not in this test");
  }
  Expected<RequestHandle> allReduceStart(void *, int64_t, DType,
                                         GroupId) override {
    return Status::error(ErrorCode::InvalidArgument, "not in this test");
  }
  Expected<RequestHandle>
  hierarchicalAllReduceStart(void *, int64_t, DType,
                             const TwoLevelGroup &) override {
    return Status::error(ErrorCode::InvalidArgument, "not in this test");
  }
  Expected<RequestHandle> allGatherStart(void *, int64_t, DType,
                                         GroupId) override {
    return Status::error(ErrorCode::InvalidArgument, "not in this test");
  }
  Expected<RequestHandle> reduceScatterStart(void *, int64_t, DType,
                                             GroupId) override {
    return Status::error(ErrorCode::InvalidArgument, "not in this test");
  }
  Status waitFor(RequestHandle, double) override {
    return Status::error(ErrorCode::InvalidArgument, "not in this test");
  }
  Expected<bool> test(RequestHandle) override {
    return Status::error(ErrorCode::InvalidArgument, "not in this test");
  }
  Status broadcast(void *buf, int64_t count, DType dtype, GroupId) override {
    size_t bytes = static_cast<size_t>(count) * dtypeSize(dtype);
    if (rank_ == 0) {
      broadcasts.emplace_back(static_cast<const char *>(buf), bytes);
      return Status::ok();
    }
    if (incoming.empty() || incoming.front().size() != bytes)
      return Status::error(ErrorCode::CommFailure, "unexpected broadcast");
    std::memcpy(buf, incoming.front().data(), bytes);
    incoming.erase(incoming.begin());
    return Status::ok();
  }
  Status barrier(GroupId) override { return Status::ok(); }
  Status gatherBytes(const std::string &, int,
                     std::vector<std::string> *) override {
    return Status::ok();
  }
  [[noreturn]] void abort(int, const std::string &) override { std::abort(); }

private:
  int rank_, size_;
  std::vector<std::vector<int>> groups_;
};

/// Every directed channel between two of \p size ranks.
std::vector<Channel> allPairs(int size) {
  std::vector<Channel> all;
  for (int a = 0; a < size; ++a)
    for (int b = 0; b < size; ++b)
      if (a != b)
        all.push_back({a, b});
  return all;
}

/// BitPipe's channels on 4 devices: neighbours both ways.
const std::vector<Channel> kNeighbours = {{0, 1}, {1, 0}, {1, 2},
                                         {2, 1}, {2, 3}, {3, 2}};
/// A ring of 4 ranks, one way.
const std::vector<Channel> kRing = {{0, 1}, {1, 2}, {2, 3}, {3, 0}};

/// Rank \p rank of \p size, its communicator made and, unless
/// \p channels is none, those channels opened with \p streams (every
/// start-up wait done at once); the log and the event numbers then start
/// afresh.
struct Fixture {
  std::vector<std::string> log;
  FakeBootstrap bootstrap;
  FakeCalls *calls = nullptr;
  std::unique_ptr<NcclCommunicator> comm;

  /// Every pair of ranks a channel, on the world's communicator.
  explicit Fixture(int rank = 0, int size = 4)
      : Fixture(rank, size, TransferStreams::Shared, allPairs(size)) {}
  Fixture(int rank, int size, TransferStreams streams,
          std::optional<std::vector<Channel>> channels)
      : bootstrap(rank, size) {
    const int64_t length = 2;
    bootstrap.incoming = {
        std::string(reinterpret_cast<const char *>(&length), sizeof length),
        "ID"};
    auto owned = std::make_unique<FakeCalls>(&log);
    calls = owned.get();
    Expected<std::unique_ptr<NcclCommunicator>> c =
        NcclCommunicator::create(bootstrap, std::move(owned));
    EXPECT_TRUE(c.isOk()) << c.status().message();
    if (!c.isOk())
      return;
    comm = c.take();
    if (channels) {
      calls->everyEventDone = true;
      Status opened = comm->openChannels(streams, *channels);
      EXPECT_TRUE(opened.isOk()) << opened.message();
    }
    settle();
  }
  /// createGroup with its warm-up done at once, then settle().
  GroupId group(const std::vector<int> &ranks) {
    calls->everyEventDone = true;
    Expected<GroupId> g = comm->createGroup(ranks);
    EXPECT_TRUE(g.isOk()) << g.status().message();
    settle();
    return g.isOk() ? *g : -1;
  }
  /// createPartition, as group().
  GroupId partition(const std::vector<std::vector<int>> &parts) {
    calls->everyEventDone = true;
    Expected<GroupId> g = comm->createPartition(parts);
    EXPECT_TRUE(g.isOk()) << g.status().message();
    settle();
    return g.isOk() ? *g : -1;
  }
  void settle() {
    EXPECT_TRUE(calls->liveEvents.empty());
    calls->everyEventDone = false;
    calls->nextEvent = 0;
    log.clear();
  }
  /// The log's lines that start with \p prefix.
  std::vector<std::string> linesOf(const std::string &prefix) const {
    std::vector<std::string> out;
    for (const std::string &line : log)
      if (line.rfind(prefix, 0) == 0)
        out.push_back(line);
    return out;
  }
};

float data[16];

/// 2 copies of 2 pipeline ranks (world ranks 0-3), the group of both in two
/// levels as the trainer makes it: the whole group (group 1, communicator
/// c1), the copies' partition (group 2, c2: {0, 1}, {2, 3}) and the
/// pipeline ranks' (group 3, c3: {0, 2}, {1, 3}). The log names offsets in
/// `data`.
TwoLevelGroup twoLevelGroupOf(Fixture &f) {
  TwoLevelGroup g;
  g.whole = f.group({0, 1, 2, 3});
  g.withinCopy = f.partition({{0, 1}, {2, 3}});
  g.acrossCopies = f.partition({{0, 2}, {1, 3}});
  f.calls->dataBase = reinterpret_cast<const char *>(data);
  return g;
}

} // namespace

TEST(NcclCommunicatorLogic, RankZeroBroadcastsTheUniqueId) {
  Fixture f(0, 4);
  ASSERT_EQ(f.bootstrap.broadcasts.size(), 2u);
  int64_t length = 0;
  std::memcpy(&length, f.bootstrap.broadcasts[0].data(), sizeof length);
  EXPECT_EQ(length, 12);
  EXPECT_EQ(f.bootstrap.broadcasts[1], "ID-OF-RANK-0");
}

TEST(NcclCommunicatorLogic, OtherRanksInitialiseWithRankZerosId) {
  std::vector<std::string> log;
  FakeBootstrap bootstrap(2, 4);
  int64_t length = 5;
  bootstrap.incoming = {std::string(reinterpret_cast<char *>(&length), 8),
                        "HELLO"};
  auto c = NcclCommunicator::create(bootstrap,
                                    std::make_unique<FakeCalls>(&log));
  ASSERT_TRUE(c.isOk()) << c.status().message();
  // Nothing is connected before the channels are known.
  EXPECT_EQ(log, (std::vector<std::string>{"initWorld HELLO 4 2"}));
  EXPECT_EQ((*c)->rank(), 2);
  EXPECT_EQ((*c)->size(), 4);
}

TEST(NcclCommunicatorLogic, RankZeroWithoutAnIdFailsEveryone) {
  std::vector<std::string> log;
  FakeBootstrap bootstrap(1, 2);
  int64_t zero = 0;
  bootstrap.incoming = {std::string(reinterpret_cast<char *>(&zero), 8)};
  auto c = NcclCommunicator::create(bootstrap,
                                    std::make_unique<FakeCalls>(&log));
  ASSERT_FALSE(c.isOk());
  EXPECT_NE(c.status().message().find("rank 0 could not create the NCCL "
                                      "unique id"),
            std::string::npos);
  EXPECT_TRUE(log.empty()); // never entered ncclCommInitRank
}

TEST(NcclCommunicatorLogic, GroupsSplitInCallOrderWithTheBootstrapsIds) {
  Fixture f(1, 4);
  f.calls->everyEventDone = true;
  auto a = f.comm->createGroup({1, 3});
  auto b = f.comm->createGroup({0, 2});
  auto c = f.comm->createGroup({3, 1, 0});
  ASSERT_TRUE(a.isOk() && b.isOk() && c.isOk());
  EXPECT_EQ(*a, 1);
  EXPECT_EQ(*b, 2);
  EXPECT_EQ(*c, 3);
  // Key = position in the list, so that group rank i is ranks[i]; each
  // member connects its new communicator with a one-element all-reduce,
  // waited for before the next split.
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "split color 0 key 0", "allReduce c1 n1 i32",
                       "record e0 on c1", "split color -1 key 0",
                       "split color 0 key 1", "allReduce c2 n1 i32",
                       "record e1 on c2"}));
  EXPECT_TRUE(f.calls->liveEvents.empty());
  EXPECT_TRUE(f.comm->isMember(kWorldGroup));
  EXPECT_TRUE(f.comm->isMember(*a));
  EXPECT_FALSE(f.comm->isMember(*b));
  EXPECT_EQ(f.comm->groupRanks(*c), (std::vector<int>{3, 1, 0}));
  auto refused = f.comm->allReduceStart(data, 4, DType::F32, *b);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("does not contain this rank"),
            std::string::npos);
}

TEST(NcclCommunicatorLogic, AGroupWhoseWarmUpNeverEndsFailsTheStart) {
  Fixture f(0, 4);
  f.comm->setTimeout(0.05);
  auto g = f.comm->createGroup({0, 2});
  ASSERT_FALSE(g.isOk());
  EXPECT_EQ(g.status().code(), ErrorCode::Timeout);
  EXPECT_NE(g.status().message().find("rank 0: timeout after 0.1 s waiting "
                                      "for warm-up allreduce over group 1 "
                                      "(ranks 0,2, 1 x i32)"),
            std::string::npos)
      << g.status().message();
  EXPECT_EQ(f.calls->aborts, 1);
}

/// The (colour, key) of each split a rank makes when it opens \p channels
/// under "channel" streams.
std::vector<std::string> channelSplits(int rank, int size,
                                       const std::vector<Channel> &channels) {
  Fixture f(rank, size, TransferStreams::Shared, std::nullopt);
  f.calls->everyEventDone = true;
  Status s = f.comm->openChannels(TransferStreams::Channel, channels);
  EXPECT_TRUE(s.isOk()) << s.message();
  return f.linesOf("split");
}

TEST(NcclCommunicatorLogic, ChannelCommunicatorsOfARingAreSplitInTwoRounds) {
  // Round 0: 0 -> 1 and 2 -> 3; round 1: 1 -> 2 and 3 -> 0 (rank 1 and
  // rank 3 are busy in round 0). Colour: the channel's index in the list;
  // key 0 for the sender, 1 for the receiver.
  const std::vector<std::vector<std::string>> want = {
      {"split color 0 key 0", "split color 3 key 1"},
      {"split color 0 key 1", "split color 1 key 0"},
      {"split color 2 key 0", "split color 1 key 1"},
      {"split color 2 key 1", "split color 3 key 0"},
  };
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(channelSplits(r, 4, kRing), want[r]) << "rank " << r;
}

TEST(NcclCommunicatorLogic, NeighbourChannelsAreSplitInFourRounds) {
  // BitPipe's neighbours, sorted: 0->1 1->0 1->2 2->1 2->3 3->2. Ranks 1
  // and 2 have four channels each: four rounds, each rank in at most one
  // channel of a round; ranks 0 and 3 sit out of the last two.
  const std::vector<std::vector<std::string>> want = {
      {"split color 0 key 0", "split color 1 key 1", "split color -1 key 0",
       "split color -1 key 0"},
      {"split color 0 key 1", "split color 1 key 0", "split color 2 key 0",
       "split color 3 key 1"},
      {"split color 4 key 0", "split color 5 key 1", "split color 2 key 1",
       "split color 3 key 0"},
      {"split color 4 key 1", "split color 5 key 0", "split color -1 key 0",
       "split color -1 key 0"},
  };
  for (int r = 0; r < 4; ++r)
    EXPECT_EQ(channelSplits(r, 4, kNeighbours), want[r]) << "rank " << r;
}

TEST(NcclCommunicatorLogic, EachChannelIsWarmedUpRightAfterItsSplit) {
  Fixture f(1, 4, TransferStreams::Shared, std::nullopt);
  f.calls->everyEventDone = true;
  ASSERT_TRUE(f.comm->openChannels(TransferStreams::Channel, kNeighbours)
                  .isOk());
  // Rank 1 is rank 1 of its receiving channels' communicators and rank 0
  // of its sending ones': one element from the sender, waited for (the
  // event released) before the next split.
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "split color 0 key 1", "recv c1 n1 i32 from 0",
                       "record e0 on c1", "split color 1 key 0",
                       "send c2 n1 i32 to 1", "record e1 on c2",
                       "split color 2 key 0", "send c3 n1 i32 to 1",
                       "record e2 on c3", "split color 3 key 1",
                       "recv c4 n1 i32 from 0", "record e3 on c4"}));
  EXPECT_TRUE(f.calls->liveEvents.empty());
}

TEST(NcclCommunicatorLogic, AWarmUpThatNeverEndsStopsTheSplitsNamingThePeer) {
  Fixture f(1, 4, TransferStreams::Shared, std::nullopt);
  f.comm->setTimeout(0.05);
  Status s = f.comm->openChannels(TransferStreams::Channel, kNeighbours);
  ASSERT_EQ(s.code(), ErrorCode::Timeout);
  EXPECT_NE(s.message().find("rank 1: timeout after 0.1 s waiting for "
                             "warm-up recv with rank 0 (1 x i32)"),
            std::string::npos)
      << s.message();
  // Waited for before the next split.
  EXPECT_EQ(f.linesOf("split"),
            (std::vector<std::string>{"split color 0 key 1"}));
  EXPECT_EQ(f.calls->aborts, 1);
}

TEST(NcclCommunicatorLogic, SharedStreamsConnectOnlyTheListedPairs) {
  Fixture f(1, 4, TransferStreams::Shared, std::nullopt);
  f.calls->everyEventDone = true;
  ASSERT_TRUE(
      f.comm->openChannels(TransferStreams::Shared, kNeighbours).isOk());
  // One group on the world's communicator: one element each way with
  // ranks 0 and 2, nothing with rank 3; no split.
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "groupStart", "recv c0 n1 i32 from 0",
                       "send c0 n1 i32 to 0", "send c0 n1 i32 to 2",
                       "recv c0 n1 i32 from 2", "groupEnd",
                       "record e0 on c0"}));
  EXPECT_TRUE(f.calls->liveEvents.empty());

  // A rank in no listed channel connects nothing.
  Fixture idle(3, 4, TransferStreams::Shared, std::nullopt);
  idle.log.clear();
  ASSERT_TRUE(
      idle.comm->openChannels(TransferStreams::Shared, {{0, 1}}).isOk());
  EXPECT_TRUE(idle.log.empty());
}

TEST(NcclCommunicatorLogic, ASharedWarmUpThatNeverEndsNamesThePeers) {
  Fixture f(1, 3, TransferStreams::Shared, std::nullopt);
  f.comm->setTimeout(0.05);
  Status s = f.comm->openChannels(TransferStreams::Shared,
                                  {{0, 1}, {1, 2}, {2, 0}});
  ASSERT_EQ(s.code(), ErrorCode::Timeout);
  EXPECT_NE(s.message().find("rank 1: timeout after 0.1 s waiting for "
                             "warm-up of the channels (from rank 0, to rank "
                             "2) (1 x i32)"),
            std::string::npos)
      << s.message();
}

TEST(NcclCommunicatorLogic, ChannelsAreCheckedAndOpenedOnce) {
  Fixture f(0, 4, TransferStreams::Shared, std::vector<Channel>{});
  Status again = f.comm->openChannels(TransferStreams::Shared, kRing);
  ASSERT_FALSE(again.isOk());
  EXPECT_NE(again.message().find("rank 0: the channels are opened twice"),
            std::string::npos)
      << again.message();

  Fixture two(0, 2, TransferStreams::Channel, std::nullopt);
  for (const auto &[channels, want] :
       std::vector<std::pair<std::vector<Channel>, std::string>>{
           {{{0, 2}}, "channel 0 (rank 0 -> rank 2) is a rank outside the "
                      "world; expected distinct channels between two ranks "
                      "in [0, 2)"},
           {{{1, 1}}, "channel 0 (rank 1 -> rank 1) is a rank sending to "
                      "itself"},
           {{{0, 1}, {0, 1}}, "channel 1 (rank 0 -> rank 1) is listed "
                              "twice"}}) {
    Status s = two.comm->openChannels(TransferStreams::Channel, channels);
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find(want), std::string::npos) << s.message();
  }
  // Refused before any split (the fixture's start-up logged nothing).
  EXPECT_TRUE(two.log.empty()) << two.log.front();
}

TEST(NcclCommunicatorLogic, TransfersGoToTheirChannelsCommunicator) {
  // Rank 1's communicators: c1 receives from 0, c2 sends to 0, c3 sends to
  // 2, c4 receives from 2 (the splits' order). The other end of a channel
  // is rank 1 of it when this rank sends, rank 0 when it receives.
  Fixture f(1, 4, TransferStreams::Channel, kNeighbours);
  auto s0 = f.comm->send(data, 4, DType::F32, 0, 7);
  ASSERT_TRUE(s0.isOk()) << s0.status().message();
  ASSERT_TRUE(f.comm->endBatch().isOk());
  auto r0 = f.comm->recv(data + 4, 4, DType::F32, 0, 8);
  auto r0b = f.comm->recv(data + 8, 4, DType::F32, 0, 9);
  ASSERT_TRUE(r0.isOk() && r0b.isOk());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  auto s2 = f.comm->send(data, 4, DType::BF16, 2, 10);
  ASSERT_TRUE(s2.isOk());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  auto r2 = f.comm->recv(data, 4, DType::BF16, 2, 11);
  ASSERT_TRUE(r2.isOk());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "groupStart", "c2 waits for compute",
                       "send c2 n4 f32 to 1", "groupEnd", "record e0 on c2",
                       "groupStart", "c1 waits for compute",
                       "recv c1 n4 f32 from 0", "c1 waits for compute",
                       "recv c1 n4 f32 from 0", "groupEnd",
                       "record e1 on c1", "groupStart",
                       "c3 waits for compute", "send c3 n4 bf16 to 1",
                       "groupEnd", "record e2 on c3", "groupStart",
                       "c4 waits for compute", "recv c4 n4 bf16 from 0",
                       "groupEnd", "record e3 on c4"}));
  // A wait asks the async error of the request's own communicator.
  f.calls->doneEvents = {0, 1, 2, 3};
  for (RequestHandle h : {*s0, *r0, *r0b, *s2, *r2})
    ASSERT_TRUE(f.comm->wait(h).isOk());
  EXPECT_TRUE(f.calls->liveEvents.empty());
}

TEST(NcclCommunicatorLogic, ATransferOnAnUnlistedChannelIsRefused) {
  Fixture f(0, 4, TransferStreams::Channel, kNeighbours);
  auto s = f.comm->send(data, 4, DType::F32, 2, 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.status().message().find("rank 0: send with rank 2: the "
                                      "program lists no channel rank 0 -> "
                                      "rank 2 (schedule.channels)"),
            std::string::npos)
      << s.status().message();
  auto r = f.comm->recv(data, 4, DType::F32, 3, 1);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("no channel rank 3 -> rank 0"),
            std::string::npos)
      << r.status().message();
  // The same under "shared": the world's communicator, listed pairs only.
  Fixture shared(0, 4, TransferStreams::Shared, kNeighbours);
  EXPECT_FALSE(shared.comm->send(data, 4, DType::F32, 3, 1).isOk());
  EXPECT_TRUE(shared.comm->send(data, 4, DType::F32, 1, 1).isOk());
  EXPECT_TRUE(f.log.empty());
  EXPECT_FALSE(f.comm->batchOpen());
}

TEST(NcclCommunicatorLogic, ABatchThatMixesChannelsIsRefused) {
  Fixture f(1, 4, TransferStreams::Channel, kNeighbours);
  auto s = f.comm->send(data, 4, DType::F32, 0, 7);
  ASSERT_TRUE(s.isOk());
  auto r = f.comm->recv(data + 4, 4, DType::F32, 0, 8);
  ASSERT_FALSE(r.isOk());
  EXPECT_NE(r.status().message().find("rank 1: a batch mixes channels: it "
                                      "holds a send with rank 0 (tag 7, 4 x "
                                      "f32), and now a recv with rank 0 "
                                      "(tag 8, 4 x f32) is posted on "
                                      "another channel"),
            std::string::npos)
      << r.status().message();
  auto other = f.comm->send(data, 4, DType::F32, 2, 9);
  ASSERT_FALSE(other.isOk());
  EXPECT_NE(other.status().message().find("send with rank 2 (tag 9, 4 x f32)"),
            std::string::npos);
  // The batch keeps its own transfer and ends as usual.
  EXPECT_TRUE(f.comm->batchOpen());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  EXPECT_EQ(f.log.back(), "record e0 on c2");
  EXPECT_EQ(f.comm->numPending(), 1u);
}

TEST(NcclCommunicatorLogic, ABatchIsOneGroupOpenedLazilyAndSharesAnEvent) {
  Fixture f(0, 4);
  EXPECT_FALSE(f.comm->batchOpen());
  auto s = f.comm->send(data, 4, DType::BF16, 1, 7);
  auto r = f.comm->recv(data + 4, 4, DType::BF16, 1, 8);
  ASSERT_TRUE(s.isOk() && r.isOk());
  EXPECT_NE(s->id, r->id);
  EXPECT_TRUE(f.comm->batchOpen());
  // Not done, and still not enqueued: test must not end the group.
  auto t = f.comm->test(*s);
  ASSERT_TRUE(t.isOk());
  EXPECT_FALSE(*t);
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "groupStart", "c0 waits for compute",
                       "send c0 n4 bf16 to 1", "c0 waits for compute",
                       "recv c0 n4 bf16 from 1"}));
  f.log.clear();
  ASSERT_TRUE(f.comm->endBatch().isOk());
  EXPECT_FALSE(f.comm->batchOpen());
  EXPECT_EQ(f.log, (std::vector<std::string>{"groupEnd", "record e0 on c0"}));
  // An empty batch end does nothing; the next transfer opens a new group.
  f.log.clear();
  ASSERT_TRUE(f.comm->endBatch().isOk());
  EXPECT_TRUE(f.log.empty());
  auto s2 = f.comm->send(data, 2, DType::F32, 3, 9);
  ASSERT_TRUE(s2.isOk());
  EXPECT_EQ(f.log.front(), "groupStart");

  // The shared event: released only when both requests are done with it.
  f.calls->doneEvents.insert(0);
  ASSERT_TRUE(f.comm->wait(*s).isOk());
  EXPECT_TRUE(f.calls->liveEvents.count(0));
  ASSERT_TRUE(f.comm->waitOnDevice(*r).isOk());
  EXPECT_EQ(f.log.back(), "compute waits for e0");
  // A consumed handle is reported, not matched to a newer request.
  Status again = f.comm->wait(*s);
  EXPECT_EQ(again.code(), ErrorCode::InvalidArgument);
  ASSERT_TRUE(f.comm->drainDeviceWaits().isOk()); // closes s2's batch too
  EXPECT_FALSE(f.calls->liveEvents.count(0));
  EXPECT_EQ(f.comm->numDeviceWaits(), 0u);
  f.calls->doneEvents.insert(1);
  ASSERT_TRUE(f.comm->wait(*s2).isOk());
  EXPECT_EQ(f.comm->numPending(), 0u);
  EXPECT_TRUE(f.calls->liveEvents.empty());
}

TEST(NcclCommunicatorLogic, AWaitInsideItsBatchEndsTheBatchFirst) {
  Fixture f(0, 2);
  auto r = f.comm->recv(data, 4, DType::F32, 1, 1);
  ASSERT_TRUE(r.isOk());
  f.calls->doneEvents.insert(0);
  ASSERT_TRUE(f.comm->wait(*r).isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "groupStart", "c0 waits for compute",
                       "recv c0 n4 f32 from 1", "groupEnd",
                       "record e0 on c0"}));
}

TEST(NcclCommunicatorLogic, AnAllReduceEndsTheOpenBatchAndRunsOnItsGroup) {
  Fixture f(0, 4, TransferStreams::Channel, kNeighbours);
  GroupId g = f.group({2, 0});
  GroupId h = f.group({0, 1, 2, 3});
  ASSERT_TRUE(f.comm->send(data, 4, DType::F32, 1, 1).isOk());
  auto a = f.comm->allReduceStart(data, 16, DType::F32, g);
  ASSERT_TRUE(a.isOk());
  auto b = f.comm->allReduceStart(data, 8, DType::F32, h);
  ASSERT_TRUE(b.isOk());
  // Rank 0's channels are c1 (to 1) and c2 (from 1); the groups' c3, c4:
  // each all-reduce waits for compute and is followed by its event on its
  // own group's stream.
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "groupStart", "c1 waits for compute",
                       "send c1 n4 f32 to 1", "groupEnd", "record e0 on c1",
                       "c3 waits for compute", "allReduce c3 n16 f32",
                       "record e1 on c3", "c4 waits for compute",
                       "allReduce c4 n8 f32", "record e2 on c4"}));
  f.log.clear();
  ASSERT_TRUE(f.comm->waitOnDevice(*a).isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{"compute waits for e1"}));
}

TEST(NcclCommunicatorLogic, APartitionIsOneSplitColouredByItsParts) {
  Fixture f(2, 4);
  f.calls->everyEventDone = true;
  auto g = f.comm->createPartition({{0, 1}, {2, 3}});
  ASSERT_TRUE(g.isOk()) << g.status().message();
  EXPECT_EQ(*g, 1); // the bootstrap's id
  // Colour = the part's index, key = the place in it; the part warmed up
  // among its own members.
  EXPECT_EQ(f.log, (std::vector<std::string>{"split color 1 key 0",
                                             "allReduce c1 n1 i32",
                                             "record e0 on c1"}));
  EXPECT_TRUE(f.comm->isMember(*g));
  EXPECT_EQ(f.comm->groupRanks(*g), (std::vector<int>{2, 3}));
  f.settle();

  // A rank in no part joins the split with no colour, and is no member.
  auto none = f.comm->createPartition({{1, 0}});
  ASSERT_TRUE(none.isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{"split color -1 key 0"}));
  EXPECT_FALSE(f.comm->isMember(*none));
  EXPECT_TRUE(f.comm->groupRanks(*none).empty());
  float x[4] = {};
  TwoLevelGroup foreign{*g, *none, *g};
  auto refused = f.comm->hierarchicalAllReduceStart(x, 4, DType::F32, foreign);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find(
                "rank 2: hierarchical allreduce on group 2, which does not "
                "contain this rank"),
            std::string::npos)
      << refused.status().message();
}

TEST(NcclCommunicatorLogic, ATwoLevelSumOrdersItsStepsAcrossThreeStreams) {
  Fixture f(1, 4);
  TwoLevelGroup g = twoLevelGroupOf(f);
  // An open batch is closed first: a collective must not join its group.
  auto s = f.comm->send(data, 4, DType::F32, 0, 1);
  ASSERT_TRUE(s.isOk());
  auto h = f.comm->hierarchicalAllReduceStart(data, 9, DType::F32, g);
  ASSERT_TRUE(h.isOk()) << h.status().message();
  // Rank 1 sums 9 f32 as two shards of 4 (its own at byte 16) and a tail
  // of 1 (at byte 32): the reduce-scatter, the shard's all-reduce across
  // copies after it, the all-gather after that; the tail on the whole
  // group's stream beside them, joined back; the request's event last on
  // the copy's stream.
  EXPECT_EQ(
      f.log,
      (std::vector<std::string>{
          "groupStart", "c0 waits for compute", "send c0 n4 f32 to 0",
          "groupEnd", "record e0 on c0", "c2 waits for compute",
          "reduceScatter c2 at 0 n4 f32", "record e1 on c2", "c3 waits for e1",
          "allReduce c3 at 16 n4 f32", "record e2 on c3", "c2 waits for e2",
          "allGather c2 at 0 n4 f32", "c1 waits for compute",
          "allReduce c1 at 32 n1 f32", "record e3 on c1", "c2 waits for e3",
          "record e4 on c2"}));
  f.log.clear();
  ASSERT_TRUE(f.comm->waitOnDevice(*h).isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{"compute waits for e4"}));
  // The steps' events stay with the request until it is done, then go
  // back with it.
  EXPECT_EQ(f.calls->liveEvents, (std::set<int>{0, 1, 2, 3, 4}));
  f.calls->doneEvents = {0, 1, 2, 3, 4};
  ASSERT_TRUE(f.comm->drainDeviceWaits().isOk());
  ASSERT_TRUE(f.comm->wait(*s).isOk());
  EXPECT_TRUE(f.calls->liveEvents.empty());
  EXPECT_EQ(f.comm->numPending(), 0u);
}

TEST(NcclCommunicatorLogic, AnAllGatherRunsInPlaceOnItsGroupsStream) {
  Fixture f(1, 4);
  TwoLevelGroup g = twoLevelGroupOf(f);
  // A sharded optimizer's weights: 2 parts of 4 over the copy's members.
  auto h = f.comm->allGatherStart(data, 4, DType::F32, g.withinCopy);
  ASSERT_TRUE(h.isOk()) << h.status().message();
  EXPECT_EQ(f.log, (std::vector<std::string>{"c2 waits for compute",
                                             "allGather c2 at 0 n4 f32",
                                             "record e0 on c2"}));
  f.log.clear();
  ASSERT_TRUE(f.comm->waitOnDevice(*h).isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{"compute waits for e0"}));
  f.calls->doneEvents = {0};
  ASSERT_TRUE(f.comm->drainDeviceWaits().isOk());
  EXPECT_EQ(f.comm->numPending(), 0u);
}

TEST(NcclCommunicatorLogic, AReduceScatterRunsInPlaceOnItsGroupsStream) {
  Fixture f(1, 4);
  TwoLevelGroup g = twoLevelGroupOf(f);
  // A sharded optimizer's gradients: 2 parts of 4 over the copy's members.
  auto h = f.comm->reduceScatterStart(data, 4, DType::F32, g.withinCopy);
  ASSERT_TRUE(h.isOk()) << h.status().message();
  EXPECT_EQ(f.log, (std::vector<std::string>{"c2 waits for compute",
                                             "reduceScatter c2 at 0 n4 f32",
                                             "record e0 on c2"}));
  f.log.clear();
  ASSERT_TRUE(f.comm->waitOnDevice(*h).isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{"compute waits for e0"}));
  f.calls->doneEvents = {0};
  ASSERT_TRUE(f.comm->drainDeviceWaits().isOk());
  EXPECT_EQ(f.comm->numPending(), 0u);
}

TEST(NcclCommunicatorLogic, ABucketSmallerThanTheCopyIsATailAlone) {
  Fixture f(1, 4);
  TwoLevelGroup g = twoLevelGroupOf(f);
  auto h = f.comm->hierarchicalAllReduceStart(data, 1, DType::F32, g);
  ASSERT_TRUE(h.isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "c2 waits for compute", "c1 waits for compute",
                       "allReduce c1 n1 f32", "record e0 on c1",
                       "c2 waits for e0", "record e1 on c2"}));
  f.calls->everyEventDone = true;
  ASSERT_TRUE(f.comm->wait(*h).isOk());
  f.settle();

  // Shards and no tail: the whole group's stream is not used.
  h = f.comm->hierarchicalAllReduceStart(data, 8, DType::F32, g);
  ASSERT_TRUE(h.isOk());
  EXPECT_TRUE(f.linesOf("c1").empty());
  EXPECT_EQ(f.log.back(), "record e2 on c2");
  f.calls->everyEventDone = true;
  ASSERT_TRUE(f.comm->wait(*h).isOk());
  EXPECT_TRUE(f.calls->liveEvents.empty());
}

TEST(NcclCommunicatorLogic, ATwoLevelSumsTimeoutNamesTheStepThatDidNotEnd) {
  // Which of rank 1's events are done (e0 after its reduce-scatter, e1
  // after the shard's all-reduce, e2 after the tail, e3 the request's),
  // and the step a timeout then blames.
  const std::vector<std::pair<std::set<int>, std::string>> cases = {
      {{},
       "step 1 of 3: reduce-scatter within the copy over group 2 "
       "(ranks 0,1, 8 x f32)"},
      {{0},
       "step 2 of 3: allreduce across copies over group 3 (ranks 1,3, "
       "4 x f32)"},
      {{0, 1}, "the tail: allreduce over group 1 (ranks 0,1,2,3, 1 x f32)"},
      {{0, 1, 2},
       "step 3 of 3: allgather within the copy over group 2 "
       "(ranks 0,1, 8 x f32)"},
  };
  for (const auto &[done, step] : cases) {
    Fixture f(1, 4);
    TwoLevelGroup g = twoLevelGroupOf(f);
    f.comm->setTimeout(0.02);
    auto h = f.comm->hierarchicalAllReduceStart(data, 9, DType::F32, g);
    ASSERT_TRUE(h.isOk());
    f.calls->doneEvents = done;
    f.calls->asyncAsked.clear();
    Status w = f.comm->wait(*h);
    ASSERT_EQ(w.code(), ErrorCode::Timeout);
    EXPECT_NE(w.message().find("rank 1: timeout after 0.0 s waiting for "
                               "hierarchical allreduce over group 1 (ranks "
                               "0,1,2,3, 9 x f32), " +
                               step + "; the peer"),
              std::string::npos)
        << w.message();
    // Every communicator of the sum is asked for its asynchronous error.
    EXPECT_EQ(f.calls->asyncAsked, (std::set<int>{1, 2, 3}));
    EXPECT_EQ(f.calls->aborts, 1);
  }

  // An asynchronous error names the step too.
  Fixture f(1, 4);
  TwoLevelGroup g = twoLevelGroupOf(f);
  auto h = f.comm->hierarchicalAllReduceStart(data, 9, DType::F32, g);
  ASSERT_TRUE(h.isOk());
  f.calls->doneEvents = {0};
  f.calls->nextAsyncError =
      Status::error(ErrorCode::CommFailure, "remote process exited");
  Status w = f.comm->wait(*h);
  ASSERT_EQ(w.code(), ErrorCode::CommFailure);
  EXPECT_NE(w.message().find("NCCL error during hierarchical allreduce over "
                             "group 1 (ranks 0,1,2,3, 9 x f32), step 2 of 3: "
                             "allreduce across copies"),
            std::string::npos)
      << w.message();
}

TEST(NcclCommunicatorLogic, ATwoLevelSumIsTimedOnTheCopysStream) {
  Fixture f(1, 4);
  TwoLevelGroup g = twoLevelGroupOf(f);
  f.comm->setDeviceTiming(true);
  ASSERT_TRUE(
      f.comm->hierarchicalAllReduceStart(data, 9, DType::F32, g).isOk());
  // From after the wait for compute to after the tail's join.
  EXPECT_EQ(f.log[0], "c2 waits for compute");
  EXPECT_EQ(f.log[1], "time t0 on c2");
  ASSERT_GE(f.log.size(), 3u);
  EXPECT_EQ(f.log[f.log.size() - 3], "c2 waits for e2");
  EXPECT_EQ(f.log[f.log.size() - 2], "time t1 on c2");
  EXPECT_EQ(f.log.back(), "record e3 on c2");
  f.calls->timingMs = {{0, 1.0f}, {1, 4.0f}};
  std::vector<DeviceSpan> spans = f.comm->takeDeviceSpans(&f.calls->stepStart);
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].name, "allreduce");
  EXPECT_EQ(spans[0].category, TraceCategory::AllReduce);
  EXPECT_EQ(spans[0].row, kAllReduceStreamRow);
  EXPECT_FLOAT_EQ(spans[0].durationMs, 3.0f);
}

TEST(NcclCommunicatorLogic, ACaptureJoinsEveryStreamATwoLevelSumForked) {
  Fixture f(1, 4);
  TwoLevelGroup g = twoLevelGroupOf(f);
  f.comm->setDeviceTiming(true);
  f.calls->queries = 0;
  ASSERT_TRUE(f.comm->beginCapture().isOk());
  auto h = f.comm->hierarchicalAllReduceStart(data, 9, DType::F32, g);
  ASSERT_TRUE(h.isOk());
  ASSERT_TRUE(f.comm->waitOnDevice(*h).isOk());
  EXPECT_EQ(f.calls->queries, 0);
  EXPECT_TRUE(f.linesOf("time").empty());
  f.log.clear();
  ASSERT_TRUE(f.comm->endCapture().isOk());
  // The copy's stream, the one across copies and the whole group's, in the
  // order they were forked.
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "record e4 on c2", "compute waits for e4",
                       "record e5 on c3", "compute waits for e5",
                       "record e6 on c1", "compute waits for e6"}));
  ASSERT_TRUE(f.comm->graphLaunched("the CUDA graph of step 2").isOk());
  // The steps' events were the capture's: back to the pool, the graph's
  // event standing for all of them.
  EXPECT_EQ(f.calls->liveEvents, (std::set<int>{7}));
  f.calls->doneEvents = {7};
  ASSERT_TRUE(f.comm->drainDeviceWaits().isOk());
  EXPECT_TRUE(f.calls->liveEvents.empty());
  EXPECT_EQ(f.comm->numDeviceWaits(), 0u);
}

TEST(NcclCommunicatorLogic, WithoutDeviceTimingNoTimingEventIsRecorded) {
  Fixture f(0, 4);
  GroupId g = f.group({0, 1});
  ASSERT_TRUE(f.comm->send(data, 4, DType::F32, 1, 1).isOk());
  ASSERT_TRUE(f.comm->allReduceStart(data, 16, DType::F32, g).isOk());
  EXPECT_EQ(f.calls->timingSlots, 0);
  EXPECT_TRUE(f.comm->takeDeviceSpans(&f.calls->stepStart).empty());
}

TEST(NcclCommunicatorLogic, TimedOperationsBecomeDeviceSpansOfTheirStreams) {
  Fixture f(0, 4);
  GroupId g = f.group({2, 0});
  f.comm->setDeviceTiming(true);
  // A batch of two transfers: one pair of timing events around the
  // group's launch (inside the group, before ncclGroupEnd; after it).
  ASSERT_TRUE(f.comm->send(data, 4, DType::F32, 1, 7).isOk());
  ASSERT_TRUE(f.comm->recv(data + 4, 4, DType::F32, 3, 8).isOk());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  // An all-reduce: its pair on its group's stream, after the wait for
  // compute, around the call.
  auto a = f.comm->allReduceStart(data, 16, DType::F32, g);
  ASSERT_TRUE(a.isOk());
  // A transfer whose batch is still open at the step's end keeps its
  // place for the next step.
  ASSERT_TRUE(f.comm->send(data, 2, DType::F32, 2, 9).isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "groupStart", "c0 waits for compute",
                       "send c0 n4 f32 to 1", "c0 waits for compute",
                       "recv c0 n4 f32 from 3", "time t0 on c0", "groupEnd",
                       "time t1 on c0", "record e0 on c0",
                       "c1 waits for compute", "time t2 on c1",
                       "allReduce c1 n16 f32", "time t3 on c1",
                       "record e1 on c1", "groupStart",
                       "c0 waits for compute", "send c0 n2 f32 to 2"}));

  f.calls->timingMs = {{0, 1.0f}, {1, 1.5f}, {2, 2.0f}, {3, 4.0f}};
  std::vector<DeviceSpan> spans =
      f.comm->takeDeviceSpans(&f.calls->stepStart);
  ASSERT_EQ(spans.size(), 3u);
  EXPECT_EQ(spans[0].name, "send r1 t7");
  EXPECT_EQ(spans[0].category, TraceCategory::Send);
  EXPECT_EQ(spans[0].row, kPointToPointStreamRow);
  EXPECT_FLOAT_EQ(spans[0].startMs, 1.0f);
  EXPECT_FLOAT_EQ(spans[0].durationMs, 0.5f);
  EXPECT_EQ(spans[1].name, "recv r3 t8"); // the batch's span, shared
  EXPECT_EQ(spans[1].category, TraceCategory::Recv);
  EXPECT_EQ(spans[1].row, kPointToPointStreamRow);
  EXPECT_FLOAT_EQ(spans[1].startMs, 1.0f);
  EXPECT_FLOAT_EQ(spans[1].durationMs, 0.5f);
  EXPECT_EQ(spans[2].name, "allreduce");
  EXPECT_EQ(spans[2].category, TraceCategory::AllReduce);
  EXPECT_EQ(spans[2].row, kAllReduceStreamRow);
  EXPECT_FLOAT_EQ(spans[2].startMs, 2.0f);
  EXPECT_FLOAT_EQ(spans[2].durationMs, 2.0f);
  // Every pair went back to the pool once, and is reused.
  EXPECT_TRUE(f.calls->liveTiming.empty());

  // The open batch's transfer is timed when it closes, and taken then;
  // a pair not complete is left out (and still released).
  f.log.clear();
  ASSERT_TRUE(f.comm->endBatch().isOk());
  ASSERT_EQ(f.log.size(), 4u);
  int begin = -1, end = -1;
  EXPECT_EQ(std::sscanf(f.log[0].c_str(), "time t%d on c0", &begin), 1);
  EXPECT_EQ(f.log[1], "groupEnd");
  EXPECT_EQ(std::sscanf(f.log[2].c_str(), "time t%d on c0", &end), 1);
  EXPECT_EQ(f.log[3], "record e2 on c0");
  EXPECT_EQ(f.calls->timingSlots, 4); // from the pool, none new
  f.calls->timingMs = {{begin, 5.0f}};
  EXPECT_TRUE(f.comm->takeDeviceSpans(&f.calls->stepStart).empty());
  EXPECT_TRUE(f.calls->liveTiming.empty());
  EXPECT_TRUE(f.comm->takeDeviceSpans(&f.calls->stepStart).empty());
}

TEST(NcclCommunicatorLogic, EveryChannelsSpansShareThePointToPointRow) {
  // Two channels' batches, timed on their own streams; both on the one
  // point-to-point row of the trace, where they may overlap.
  Fixture f(1, 4, TransferStreams::Channel, kNeighbours);
  f.comm->setDeviceTiming(true);
  ASSERT_TRUE(f.comm->send(data, 4, DType::F32, 0, 1).isOk());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  ASSERT_TRUE(f.comm->send(data, 4, DType::F32, 2, 2).isOk());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  EXPECT_EQ(f.linesOf("time"),
            (std::vector<std::string>{"time t0 on c2", "time t1 on c2",
                                      "time t2 on c3", "time t3 on c3"}));
  f.calls->timingMs = {{0, 1.0f}, {1, 3.0f}, {2, 2.0f}, {3, 4.0f}};
  std::vector<DeviceSpan> spans =
      f.comm->takeDeviceSpans(&f.calls->stepStart);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].row, kPointToPointStreamRow);
  EXPECT_EQ(spans[1].row, kPointToPointStreamRow);
  EXPECT_LT(spans[1].startMs, spans[0].startMs + spans[0].durationMs);
}

TEST(NcclCommunicatorLogic, DeviceSpansReachTheTraceWithTheHostsNames) {
  TraceRecorder trace;
  // The host's spans of the step begun at 100 us: two all-reduces started
  // in the order b1, b0, and their waits; one of an earlier step.
  trace.record("allreduce b0", TraceCategory::AllReduce, 50, 1);
  trace.record("allreduce b1", TraceCategory::AllReduce, 120, 1);
  trace.record("allreduce b0", TraceCategory::AllReduce, 130, 1);
  trace.record("allreduce.wait b1", TraceCategory::AllReduce, 140, 1);
  trace.record("F0.s0", TraceCategory::Device, 110, 5);
  const size_t hostEvents = trace.events().size();
  std::vector<DeviceSpan> spans = {
      {"send r1 t7", TraceCategory::Send, kPointToPointStreamRow, 0.5f, 0.25f},
      {"allreduce", TraceCategory::AllReduce, kAllReduceStreamRow, 1.0f, 2.0f},
      {"allreduce", TraceCategory::AllReduce, kAllReduceStreamRow, 3.0f, 1.0f},
  };
  recordDeviceSpans(trace, 100.0, spans);
  const std::vector<TraceEvent> &events = trace.events();
  ASSERT_EQ(events.size(), hostEvents + 3);
  EXPECT_EQ(events[4].row, kComputeStreamRow); // a Device event's row
  const TraceEvent &send = events[hostEvents];
  EXPECT_EQ(send.name, "send r1 t7");
  EXPECT_EQ(send.category, TraceCategory::Send);
  EXPECT_EQ(send.row, kPointToPointStreamRow);
  EXPECT_DOUBLE_EQ(send.startUs, 600.0);
  EXPECT_DOUBLE_EQ(send.durationUs, 250.0);
  EXPECT_EQ(events[hostEvents + 1].name, "allreduce b1");
  EXPECT_DOUBLE_EQ(events[hostEvents + 1].startUs, 1100.0);
  EXPECT_EQ(events[hostEvents + 2].name, "allreduce b0");
  EXPECT_EQ(events[hostEvents + 2].row, kAllReduceStreamRow);

  // In the Chrome trace: one row per stream, named, and the spans there
  // with the category trace_overlap.py reads.
  std::string json = chromeTraceJson({events});
  EXPECT_NE(json.find("\"tid\":2,\"args\":{\"name\":\"device: "
                      "point-to-point stream\"}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\":\"allreduce b1\",\"cat\":\"allreduce\","
                      "\"ph\":\"X\",\"ts\":1100.000,\"dur\":2000.000,"
                      "\"pid\":0,\"tid\":3}"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"name\":\"send r1 t7\",\"cat\":\"send\","
                      "\"ph\":\"X\",\"ts\":600.000,\"dur\":250.000,"
                      "\"pid\":0,\"tid\":2}"),
            std::string::npos)
      << json;
  // Rows survive the gather's text form.
  auto back = deserializeTraceEvents(serializeTraceEvents(events));
  ASSERT_TRUE(back.isOk()) << back.status().message();
  EXPECT_EQ((*back)[hostEvents + 2].row, kAllReduceStreamRow);
}

TEST(NcclCommunicatorLogic, ADeviceWaitThatNeverEndsTimesOutAndAbortsOnce) {
  Fixture f(0, 2);
  f.comm->setTimeout(0.05);
  auto r = f.comm->recv(data, 4, DType::F32, 1, 21);
  ASSERT_TRUE(r.isOk());
  ASSERT_TRUE(
      f.comm->waitOnDeviceFor(*r, "step 2: forward F3.s1 (stage1)").isOk());
  Status s = f.comm->drainDeviceWaits();
  ASSERT_EQ(s.code(), ErrorCode::Timeout);
  EXPECT_NE(s.message().find("read by step 2: forward F3.s1"),
            std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("rank 0: timeout after"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("recv with rank 1 (tag 21"), std::string::npos)
      << s.message();
  EXPECT_EQ(f.calls->aborts, 1);
  // Nothing more goes to NCCL after the abort.
  auto late = f.comm->send(data, 4, DType::F32, 1, 22);
  EXPECT_FALSE(late.isOk());
  EXPECT_EQ(f.calls->aborts, 1);
}

// A device whose compute runs on the host (the MPI stand-in): the compute
// stream's wait would be a host wait without a deadline, so the event is
// first polled with the communicator's.
TEST(NcclCommunicatorLogic, AHostComputeWaitIsBoundedByTheDeadlineFirst) {
  Fixture f(0, 2);
  f.calls->onHost = true;
  f.comm->setTimeout(0.05);
  auto r = f.comm->recv(data, 4, DType::F32, 1, 21);
  ASSERT_TRUE(r.isOk());
  Status s = f.comm->waitOnDeviceFor(*r, "step 1: forward F0.s1 (stage1)");
  ASSERT_EQ(s.code(), ErrorCode::Timeout);
  EXPECT_NE(s.message().find("rank 0: timeout after 0.1 s waiting for recv "
                             "with rank 1 (tag 21, 4 x f32), read by step 1: "
                             "forward F0.s1"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(f.linesOf("compute waits").empty());
  EXPECT_EQ(f.calls->aborts, 1);

  Fixture g(0, 2);
  g.calls->onHost = true;
  auto done = g.comm->recv(data, 4, DType::F32, 1, 22);
  ASSERT_TRUE(done.isOk());
  g.calls->doneEvents.insert(0);
  ASSERT_TRUE(g.comm->waitOnDevice(*done).isOk());
  EXPECT_EQ(g.log.back(), "compute waits for e0");
}

TEST(NcclCommunicatorLogic, AHostWaitTimesOutNamingThePeer) {
  Fixture f(0, 2);
  auto s = f.comm->send(data, 4, DType::F32, 1, 5);
  ASSERT_TRUE(s.isOk());
  Status w = f.comm->waitFor(*s, 0.02);
  ASSERT_EQ(w.code(), ErrorCode::Timeout);
  EXPECT_NE(w.message().find("waiting for send with rank 1"),
            std::string::npos)
      << w.message();
  EXPECT_EQ(f.calls->aborts, 1);
}

TEST(NcclCommunicatorLogic, AnAsyncErrorFailsTheWaitAndAborts) {
  Fixture f(0, 2);
  auto s = f.comm->send(data, 4, DType::F32, 1, 5);
  ASSERT_TRUE(s.isOk());
  f.calls->nextAsyncError =
      Status::error(ErrorCode::CommFailure, "remote process exited");
  Status w = f.comm->wait(*s);
  ASSERT_EQ(w.code(), ErrorCode::CommFailure);
  EXPECT_NE(w.message().find("NCCL error during send with rank 1"),
            std::string::npos)
      << w.message();
  EXPECT_NE(w.message().find("remote process exited"), std::string::npos);
  EXPECT_EQ(f.calls->aborts, 1);
}

// A captured step on rank 0 of BitPipe's neighbours: its send to 1 goes
// on c1, its receive from 1 on c2, its all-reduce on its group's c3.
TEST(NcclCommunicatorLogic, ACaptureForksJoinsAndHandsItsOpsToTheGraph) {
  Fixture f(0, 4, TransferStreams::Channel, kNeighbours);
  GroupId g = f.group({0, 3});
  f.comm->setDeviceTiming(true);
  f.calls->queries = 0;
  ASSERT_TRUE(f.comm->beginCapture().isOk());
  EXPECT_TRUE(f.comm->capturing());
  auto s = f.comm->send(data, 4, DType::F32, 1, 1);
  ASSERT_TRUE(s.isOk());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  auto r = f.comm->recv(data + 4, 4, DType::F32, 1, 2);
  ASSERT_TRUE(r.isOk());
  ASSERT_TRUE(f.comm->endBatch().isOk());
  // Inside the capture: no event is asked about, the send is "not done".
  f.calls->everyEventDone = true;
  Expected<bool> done = f.comm->test(*s);
  ASSERT_TRUE(done.isOk());
  EXPECT_FALSE(*done);
  ASSERT_TRUE(f.comm->waitOnDeviceFor(*r, "step 3: forward F0.s1").isOk());
  auto a = f.comm->allReduceStart(data, 16, DType::F32, g);
  ASSERT_TRUE(a.isOk());
  ASSERT_TRUE(f.comm->waitOnDevice(*a).isOk());
  EXPECT_EQ(f.calls->queries, 0);
  // Nothing timed: a graph records no timing events.
  EXPECT_TRUE(f.linesOf("time").empty());
  f.log.clear();
  ASSERT_TRUE(f.comm->endCapture().isOk());
  EXPECT_FALSE(f.comm->capturing());
  // Every stream forked into the capture is joined back, in fork order.
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "record e3 on c1", "compute waits for e3",
                       "record e4 on c2", "compute waits for e4",
                       "record e5 on c3", "compute waits for e5"}));
  f.log.clear();
  ASSERT_TRUE(f.comm->graphLaunched("the CUDA graph of step 3").isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{"record e6 on compute"}));
  // The captured events went back; the send, and the two device waits,
  // now complete with the graph's event.
  EXPECT_EQ(f.calls->liveEvents, (std::set<int>{6}));
  f.calls->everyEventDone = false;
  done = f.comm->test(*s);
  ASSERT_TRUE(done.isOk());
  EXPECT_FALSE(*done);
  f.calls->doneEvents = {6};
  ASSERT_TRUE(f.comm->wait(*s).isOk());
  ASSERT_TRUE(f.comm->drainDeviceWaits().isOk());
  EXPECT_TRUE(f.calls->liveEvents.empty());
  EXPECT_EQ(f.comm->numPending(), 0u);
  EXPECT_EQ(f.comm->numDeviceWaits(), 0u);
  EXPECT_TRUE(f.comm->takeDeviceSpans(&f.calls->stepStart).empty());
}

TEST(NcclCommunicatorLogic, AReplaysWaitIsBoundedAndNamesTheGraph) {
  Fixture f(0, 4, TransferStreams::Channel, kNeighbours);
  ASSERT_TRUE(f.comm->beginCapture().isOk());
  ASSERT_TRUE(f.comm->send(data, 4, DType::F32, 1, 1).isOk());
  // The batch is still open: ending the capture closes it first.
  ASSERT_TRUE(f.comm->endCapture().isOk());
  EXPECT_EQ(f.linesOf("groupEnd").size(), 1u);
  ASSERT_TRUE(f.comm->graphLaunched("the CUDA graph of step 3").isOk());
  f.calls->everyEventDone = true;
  ASSERT_TRUE(f.comm->drainDeviceWaits().isOk());
  f.calls->everyEventDone = false;

  // A replay: the graph's own wait, which asks the async error of every
  // communicator the capture used, and times out naming the graph.
  f.log.clear();
  f.calls->asyncAsked.clear();
  f.comm->setTimeout(0.05);
  ASSERT_TRUE(f.comm->graphLaunched("the CUDA graph of step 4").isOk());
  EXPECT_EQ(f.log, (std::vector<std::string>{"record e3 on compute"}));
  Status w = f.comm->drainDeviceWaits();
  ASSERT_EQ(w.code(), ErrorCode::Timeout);
  EXPECT_NE(w.message().find("rank 0: timeout after 0.1 s waiting for the "
                             "CUDA graph of step 4"),
            std::string::npos)
      << w.message();
  EXPECT_EQ(f.calls->asyncAsked, (std::set<int>{1}));
  EXPECT_EQ(f.calls->aborts, 1);
}

TEST(NcclCommunicatorLogic, AnAsyncErrorDuringAReplayAborts) {
  Fixture f(0, 4, TransferStreams::Channel, kNeighbours);
  ASSERT_TRUE(f.comm->beginCapture().isOk());
  ASSERT_TRUE(f.comm->recv(data, 4, DType::F32, 1, 1).isOk());
  ASSERT_TRUE(f.comm->endCapture().isOk());
  ASSERT_TRUE(f.comm->graphLaunched("the CUDA graph of step 3").isOk());
  f.calls->nextAsyncError =
      Status::error(ErrorCode::CommFailure, "remote process exited");
  Status w = f.comm->drainDeviceWaits();
  ASSERT_EQ(w.code(), ErrorCode::CommFailure);
  EXPECT_NE(w.message().find("NCCL error during the CUDA graph of step 3"),
            std::string::npos)
      << w.message();
  EXPECT_EQ(f.calls->aborts, 1);
}

TEST(NcclCommunicatorLogic, ACaptureStartsCleanAndHoldsNoHostWait) {
  Fixture f(0, 4);
  auto early = f.comm->send(data, 4, DType::F32, 1, 1);
  ASSERT_TRUE(early.isOk());
  Status refused = f.comm->beginCapture();
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("a capture begins with 1 operations "
                                   "pending"),
            std::string::npos)
      << refused.message();
  EXPECT_FALSE(f.comm->capturing());
  f.calls->everyEventDone = true;
  ASSERT_TRUE(f.comm->wait(*early).isOk());
  f.calls->everyEventDone = false;

  ASSERT_TRUE(f.comm->beginCapture().isOk());
  auto s = f.comm->send(data, 4, DType::F32, 1, 2);
  ASSERT_TRUE(s.isOk());
  Status w = f.comm->waitFor(*s, 1.0);
  ASSERT_FALSE(w.isOk());
  EXPECT_NE(w.message().find("a host wait for send with rank 1 (tag 2, 4 x "
                             "f32) inside a captured step"),
            std::string::npos)
      << w.message();
  EXPECT_EQ(f.calls->aborts, 0);
  EXPECT_FALSE(f.comm->graphLaunched("the CUDA graph of step 1").isOk());
}

TEST(NcclCommunicatorLogic, RequestsAreCheckedBeforeNcclSeesThem) {
  Fixture f(0, 2);
  EXPECT_FALSE(f.comm->send(data, 4, DType::F32, 0, 1).isOk()); // itself
  EXPECT_FALSE(f.comm->send(data, 4, DType::F32, 2, 1).isOk()); // no rank 2
  EXPECT_FALSE(f.comm->recv(nullptr, 4, DType::F32, 1, 1).isOk());
  auto f16 = f.comm->send(data, 4, DType::F16, 1, 1);
  ASSERT_FALSE(f16.isOk());
  EXPECT_NE(f16.status().message().find("expected f32, bf16, f64 or i32"),
            std::string::npos);
  EXPECT_TRUE(f.log.empty());
  EXPECT_FALSE(f.comm->batchOpen());
}

TEST(NcclCommunicatorLogic, DTypesMapToNcclsTypes) {
  EXPECT_EQ(*ncclElementOf(DType::F32), NcclElement::Float32);
  EXPECT_EQ(*ncclElementOf(DType::BF16), NcclElement::BFloat16);
  EXPECT_EQ(*ncclElementOf(DType::F64), NcclElement::Float64);
  EXPECT_EQ(*ncclElementOf(DType::I32), NcclElement::Int32);
  for (DType t : {DType::F16, DType::I64, DType::U8}) {
    auto e = ncclElementOf(t);
    ASSERT_FALSE(e.isOk());
    EXPECT_NE(e.status().message().find(dtypeName(t)), std::string::npos);
  }
}

TEST(NcclCommunicatorLogic, HostMemoryGoesToTheBootstrap) {
  Fixture f(0, 2);
  EXPECT_EQ(&f.comm->hostCommunicator(), &f.bootstrap);
  double x = 1.5;
  ASSERT_TRUE(f.comm->broadcast(&x, 1, DType::F64, kWorldGroup).isOk());
  EXPECT_EQ(f.bootstrap.broadcasts.back().size(), sizeof x);
  EXPECT_TRUE(f.log.empty());
}

TEST(GpuSharing, LocalRankModuloDevices) {
  auto a = planDevice(3, 4, 8);
  ASSERT_TRUE(a.isOk());
  EXPECT_EQ(a->device, 3);
  EXPECT_FALSE(a->sharing);
  auto b = planDevice(3, 4, 2);
  ASSERT_TRUE(b.isOk());
  EXPECT_EQ(b->device, 1);
  EXPECT_TRUE(b->sharing);
  auto c = planDevice(2, 4, 1);
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->device, 0);
  EXPECT_TRUE(c->sharing);
  auto none = planDevice(0, 1, 0);
  ASSERT_FALSE(none.isOk());
  EXPECT_NE(none.status().message().find("no CUDA device"), std::string::npos);
}

TEST(GpuSharing, SetsTheHostIdOnlyWhereTheEnvironmentDoesNot) {
  ::unsetenv("NCCL_HOSTID");
  ::unsetenv("NCCL_IB_DISABLE");
  ::setenv("NCCL_SOCKET_IFNAME", "eth7", 1);
  std::vector<std::string> set = arrangeGpuSharing(3);
  EXPECT_EQ(set, (std::vector<std::string>{"NCCL_HOSTID=bitpipe-host3",
                                           "NCCL_IB_DISABLE=1"}));
  EXPECT_STREQ(std::getenv("NCCL_HOSTID"), "bitpipe-host3");
  EXPECT_STREQ(std::getenv("NCCL_SOCKET_IFNAME"), "eth7");
  // A second call (or the user's own) changes nothing.
  EXPECT_TRUE(arrangeGpuSharing(5).empty());
  EXPECT_STREQ(std::getenv("NCCL_HOSTID"), "bitpipe-host3");
  ::unsetenv("NCCL_HOSTID");
  ::unsetenv("NCCL_IB_DISABLE");
  ::unsetenv("NCCL_SOCKET_IFNAME");
}
