//===- NcclCommunicator.cpp - Communicator over NCCL on CUDA streams ------===//

#include "NcclCommunicator.h"

#include "bitpipe/base/GradientSyncGroups.h"
#include "bitpipe/base/TraceFormat.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <unordered_set>

namespace bitpipe::runtime {

Expected<NcclElement> ncclElementOf(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return NcclElement::Float32;
  case DType::BF16:
    return NcclElement::BFloat16;
  case DType::F64:
    return NcclElement::Float64;
  case DType::I32:
    return NcclElement::Int32;
  default:
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("NCCL transfers of %s are not "
                                      "supported (expected f32, bf16, f64 or "
                                      "i32)",
                                      dtypeName(dtype)));
  }
}

NcclDeviceCalls::~NcclDeviceCalls() = default;

static NcclCommunicator::Clock::time_point deadlineAfter(double seconds) {
  using Clock = NcclCommunicator::Clock;
  return Clock::now() + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(seconds));
}

NcclCommunicator::NcclCommunicator(Communicator &bootstrap,
                                   std::unique_ptr<NcclDeviceCalls> calls)
    : bootstrap_(bootstrap), calls_(std::move(calls)) {
  setTimeout(bootstrap.timeout());
}

NcclCommunicator::~NcclCommunicator() = default;

Expected<std::unique_ptr<NcclCommunicator>>
NcclCommunicator::create(Communicator &bootstrap,
                         std::unique_ptr<NcclDeviceCalls> calls) {
  // Rank 0's id for everyone. An id that rank 0 failed to make is sent as
  // an empty marker so that the others fail too instead of waiting in
  // ncclCommInitRank for a rank that never comes.
  std::string id;
  Status made = Status::ok();
  if (bootstrap.rank() == 0) {
    Expected<std::string> got = calls->uniqueId();
    if (got.isOk())
      id = got.take();
    else
      made = got.status();
  }
  int64_t length = static_cast<int64_t>(id.size());
  BP_TRY(bootstrap.broadcast(&length, 1, DType::I64, kWorldGroup));
  if (length == 0)
    return made.isOk() ? Status::error(ErrorCode::CommFailure,
                                       formatString("rank %d: rank 0 could "
                                                    "not create the NCCL "
                                                    "unique id",
                                                    bootstrap.rank()))
                       : made;
  id.resize(static_cast<size_t>(length));
  BP_TRY(bootstrap.broadcast(id.data(), length, DType::U8, kWorldGroup));
  BP_TRY(calls->initWorld(id, bootstrap.size(), bootstrap.rank()));
  std::unique_ptr<NcclCommunicator> c(
      new NcclCommunicator(bootstrap, std::move(calls)));
  c->groupComms_.push_back(0); // the world
  BP_ASSIGN(scratch, c->calls_->scratch(2 * static_cast<int64_t>(c->size())));
  c->scratch_ = static_cast<int32_t *>(scratch);
  return std::move(c);
}

Status NcclCommunicator::warmUp(Pending what,
                                const std::function<Status()> &post) {
  BP_TRY(post());
  BP_ASSIGN(event, calls_->recordEvent(what.comm));
  what.event = event;
  Status done = pollUntilDone(what, deadlineAfter(timeout()), timeout());
  calls_->releaseEvent(event);
  return done;
}

Expected<GroupId> NcclCommunicator::createGroup(const std::vector<int> &ranks) {
  // The bootstrap checks the lists (every rank passed the same) and hands
  // out the id; the split follows in the same order on every rank, as
  // ncclCommSplit is collective over the world.
  BP_ASSIGN(id, bootstrap_.createGroup(ranks));
  int key = -1;
  for (size_t i = 0; i < ranks.size(); ++i)
    if (ranks[i] == rank())
      key = static_cast<int>(i);
  // Group rank i is ranks[i] (the key), as on the bootstrap.
  return splitGroup(id, key >= 0 ? 0 : -1, key >= 0 ? key : 0);
}

Expected<GroupId>
NcclCommunicator::createPartition(const std::vector<std::vector<int>> &parts) {
  BP_ASSIGN(id, bootstrap_.createPartition(parts));
  // One split for every part: the colour is the part's index, the key the
  // rank's place in it.
  int colour = -1, key = 0;
  for (size_t i = 0; i < parts.size(); ++i)
    for (size_t k = 0; k < parts[i].size(); ++k)
      if (parts[i][k] == rank()) {
        colour = static_cast<int>(i);
        key = static_cast<int>(k);
      }
  return splitGroup(id, colour, key);
}

Expected<GroupId> NcclCommunicator::splitGroup(GroupId id, int colour,
                                               int key) {
  if (static_cast<size_t>(id) != groupComms_.size())
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: group %d was created on the "
                                      "bootstrap communicator alone; NCCL has "
                                      "%zu groups",
                                      rank(), id, groupComms_.size()));
  BP_ASSIGN(comm, calls_->split(colour, key));
  groupComms_.push_back(comm);
  if (comm < 0)
    return id;
  // Connected now, while every member is here (file comment). The parts
  // of a partition warm up side by side, each among its own members.
  Pending warm;
  warm.op = "warm-up allreduce";
  warm.group = id;
  warm.comm = comm;
  warm.count = 1;
  warm.dtype = DType::I32;
  BP_TRY(warmUp(warm, [&] {
    return calls_->allReduce(comm, scratch_, 1, NcclElement::Int32);
  }));
  return id;
}

Status NcclCommunicator::openChannels(TransferStreams streams,
                                      const std::vector<Channel> &channels) {
  if (channelsOpen_)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: the channels are opened "
                                      "twice; openChannels is called once, "
                                      "at start-up",
                                      rank()));
  BP_TRY(checkChannels(rank(), size(), channels));
  channelsOpen_ = true;
  return streams == TransferStreams::Shared
             ? openSharedChannels(channels)
             : openChannelCommunicators(channels);
}

Status NcclCommunicator::openSharedChannels(
    const std::vector<Channel> &channels) {
  // World ranks are the world communicator's ranks (ncclCommInitRank with
  // the MPI rank).
  struct End {
    int peer;
    bool sending;
  };
  std::vector<End> ends;
  for (const auto &[from, to] : channels) {
    if (from == rank()) {
      sendRoutes_[to] = {0, to};
      ends.push_back({to, true});
    } else if (to == rank()) {
      recvRoutes_[from] = {0, from};
      ends.push_back({from, false});
    }
  }
  if (ends.empty())
    return Status::ok();
  // Exactly the listed pairs, in one group: its crossed sends and receives
  // cannot deadlock, and pairs that never talk are never connected.
  std::string peers;
  for (const End &e : ends)
    peers += formatString("%s%s rank %d", peers.empty() ? "" : ", ",
                          e.sending ? "to" : "from", e.peer);
  Pending warm;
  warm.op = "warm-up of the channels (" + peers + ")";
  warm.count = 1;
  warm.dtype = DType::I32;
  return warmUp(warm, [&]() -> Status {
    BP_TRY(calls_->groupStart());
    for (size_t i = 0; i < ends.size(); ++i) {
      int32_t *slot = scratch_ + i;
      Status posted =
          ends[i].sending
              ? calls_->send(0, slot, 1, NcclElement::Int32, ends[i].peer)
              : calls_->recv(0, slot, 1, NcclElement::Int32, ends[i].peer);
      if (!posted.isOk()) {
        (void)calls_->groupEnd();
        return posted;
      }
    }
    return calls_->groupEnd();
  });
}

/// The round of each channel: the first in which neither of its ranks has
/// a channel yet, in list order. Each rank is then in at most one channel
/// of a round.
static std::vector<int> channelRounds(const std::vector<Channel> &channels,
                                      int *numRounds) {
  std::vector<std::unordered_set<int>> busy;
  std::vector<int> rounds;
  for (const auto &[from, to] : channels) {
    size_t r = 0;
    while (r < busy.size() && (busy[r].count(from) || busy[r].count(to)))
      ++r;
    if (r == busy.size())
      busy.emplace_back();
    busy[r].insert(from);
    busy[r].insert(to);
    rounds.push_back(static_cast<int>(r));
  }
  *numRounds = static_cast<int>(busy.size());
  return rounds;
}

Status NcclCommunicator::openChannelCommunicators(
    const std::vector<Channel> &channels) {
  int numRounds = 0;
  const std::vector<int> rounds = channelRounds(channels, &numRounds);
  for (int round = 0; round < numRounds; ++round) {
    // This rank's channel of the round, if any: colour = its index in the
    // list, key 0 for the sender and 1 for the receiver (a rank in none
    // passes no colour).
    int mine = -1;
    for (size_t i = 0; i < channels.size(); ++i)
      if (rounds[i] == round &&
          (channels[i].first == rank() || channels[i].second == rank()))
        mine = static_cast<int>(i);
    if (mine < 0) {
      BP_TRY(calls_->split(-1, 0).status());
      continue;
    }
    const bool sending = channels[mine].first == rank();
    BP_ASSIGN(comm, calls_->split(mine, sending ? 0 : 1));
    // Both ends connect it now, and each waits for that one peer only.
    const int peer = sending ? channels[mine].second : channels[mine].first;
    (sending ? sendRoutes_ : recvRoutes_)[peer] = {comm, sending ? 1 : 0};
    Pending warm;
    warm.op = sending ? "warm-up send" : "warm-up recv";
    warm.peer = peer;
    warm.comm = comm;
    warm.count = 1;
    warm.dtype = DType::I32;
    BP_TRY(warmUp(warm, [&] {
      return sending ? calls_->send(comm, scratch_, 1, NcclElement::Int32, 1)
                     : calls_->recv(comm, scratch_ + 1, 1,
                                    NcclElement::Int32, 0);
    }));
  }
  return Status::ok();
}

bool NcclCommunicator::isMember(GroupId group) const {
  return group >= 0 && static_cast<size_t>(group) < groupComms_.size() &&
         groupComms_[group] >= 0;
}

const std::vector<int> &NcclCommunicator::groupRanks(GroupId group) const {
  return bootstrap_.groupRanks(group);
}

Status NcclCommunicator::checkBuffer(const char *op, const void *buf,
                                     int64_t count, DType dtype) const {
  if (aborted_)
    return Status::error(ErrorCode::CommFailure,
                         formatString("rank %d: %s after the NCCL "
                                      "communicators were aborted",
                                      rank(), op));
  if (count < 0)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s of %lld elements", rank(),
                                      op, static_cast<long long>(count)));
  if (!buf && count > 0)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s of a null buffer", rank(),
                                      op));
  Expected<NcclElement> type = ncclElementOf(dtype);
  if (!type.isOk())
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s: %s", rank(), op,
                                      type.status().message().c_str()));
  return Status::ok();
}

Expected<NcclCommunicator::Route>
NcclCommunicator::routeOf(const std::string &op, int peer) const {
  const bool sending = op == "send";
  const auto &routes = sending ? sendRoutes_ : recvRoutes_;
  auto it = routes.find(peer);
  if (it != routes.end())
    return it->second;
  const int from = sending ? rank() : peer, to = sending ? peer : rank();
  return Status::error(ErrorCode::InvalidArgument,
                       formatString("rank %d: %s with rank %d: the program "
                                    "lists no channel rank %d -> rank %d "
                                    "(schedule.channels%s)",
                                    rank(), op.c_str(), peer, from, to,
                                    channelsOpen_ ? ""
                                                  : "; the channels were "
                                                    "never opened"));
}

Expected<RequestHandle> NcclCommunicator::postTransfer(Pending p, void *buf) {
  BP_TRY(checkBuffer(p.op.c_str(), buf, p.count, p.dtype));
  if (p.peer < 0 || p.peer >= size() || p.peer == rank())
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s with invalid peer %d",
                                      rank(), p.op.c_str(), p.peer));
  BP_ASSIGN(type, ncclElementOf(p.dtype));
  BP_ASSIGN(route, routeOf(p.op, p.peer));
  const std::string what = describe(p);
  // One group runs on one communicator: under "channel" streams a batch is
  // one channel's hand-off (the compiler makes it so).
  if (batchOpen_ && route.comm != batchComm_)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: a batch mixes channels: it "
                                      "holds a %s, and now a %s is posted "
                                      "on another channel; under \"%s\" "
                                      "transfer streams each batch holds "
                                      "the transfers of one channel (a "
                                      "bp_rt_end_batch between them)",
                                      rank(), batchFirst_.c_str(),
                                      what.c_str(),
                                      transferStreamsName(
                                          TransferStreams::Channel)));
  if (!batchOpen_) {
    BP_TRY(calls_->groupStart());
    batchOpen_ = true;
    batchComm_ = route.comm;
    batchFirst_ = what;
  }
  p.comm = route.comm;
  // Before the transfer, on its stream: the data's producer (send), or the
  // last readers of the pool block the receive overwrites (recv).
  BP_TRY(calls_->streamWaitsForCompute(route.comm));
  forked(route.comm);
  if (p.op == "send")
    BP_TRY(calls_->send(route.comm, buf, p.count, type, route.peer));
  else
    BP_TRY(calls_->recv(route.comm, buf, p.count, type, route.peer));
  RequestHandle h = pending_.add(p);
  batchRequests_.push_back(h.id);
  if (timing_ && !capturing_) {
    // Timed when the batch closes: NCCL launches the group there.
    TimedOp op;
    const bool sending = p.op == "send";
    op.name = formatString(sending ? trace::kSendFormat : trace::kRecvFormat,
                           p.peer, *p.tag);
    op.category = sending ? TraceCategory::Send : TraceCategory::Recv;
    op.row = kPointToPointStreamRow;
    batchTimedOps_.push_back(timedOps_.size());
    timedOps_.push_back(std::move(op));
  }
  return h;
}

Expected<RequestHandle> NcclCommunicator::send(const void *buf, int64_t count,
                                               DType dtype, int peer,
                                               int tag) {
  Pending p;
  p.op = "send";
  p.peer = peer;
  p.tag = tag;
  p.count = count;
  p.dtype = dtype;
  return postTransfer(p, const_cast<void *>(buf));
}

Expected<RequestHandle> NcclCommunicator::recv(void *buf, int64_t count,
                                               DType dtype, int peer,
                                               int tag) {
  Pending p;
  p.op = "recv";
  p.peer = peer;
  p.tag = tag;
  p.count = count;
  p.dtype = dtype;
  return postTransfer(p, buf);
}

Status NcclCommunicator::closeBatch() {
  if (!batchOpen_)
    return Status::ok();
  batchOpen_ = false;
  // Still inside the group, so before its launch on the stream.
  const int begin = batchTimedOps_.empty() ? -1 : timingEvent(batchComm_);
  Status ended = calls_->groupEnd();
  if (!batchTimedOps_.empty()) {
    const int end = ended.isOk() ? timingEvent(batchComm_) : -1;
    for (size_t i : batchTimedOps_) {
      timedOps_[i].begin = begin;
      timedOps_[i].end = end;
    }
    batchTimedOps_.clear();
  }
  if (!ended.isOk())
    // The batch's requests stay without an event: every later wait on
    // them fails, and NCCL's state is unknown, so nothing more goes to it.
    return fail(ended.code(),
                formatString("rank %d: ending a batch of transfers: %s",
                             rank(), ended.message().c_str()));
  // Only now are the group's operations on the stream: the event after
  // them is every request's of the batch.
  BP_ASSIGN(event, recordOpEvent(batchComm_));
  int users = 0;
  for (int64_t id : batchRequests_) {
    Pending *p = pending_.find(RequestHandle{id});
    if (!p)
      continue;
    p->event = event;
    ++users;
  }
  batchRequests_.clear();
  if (users == 0)
    calls_->releaseEvent(event);
  else
    eventUsers_[event] = users;
  return Status::ok();
}

Status NcclCommunicator::endBatch() { return closeBatch(); }

Status NcclCommunicator::checkMember(const char *op, GroupId group) const {
  if (group < 0 || static_cast<size_t>(group) >= groupComms_.size())
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("rank %d: %s on unknown group %d", rank(), op, group));
  if (groupComms_[group] < 0)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s on group %d, which "
                                      "does not contain this rank",
                                      rank(), op, group));
  return Status::ok();
}

Expected<RequestHandle>
NcclCommunicator::startCollective(const char *op, void *buf, int64_t count,
                                  DType dtype, GroupId group, bool timed,
                                  const CollectiveCall &call) {
  BP_TRY(checkBuffer(op, buf, count, dtype));
  BP_TRY(checkMember(op, group));
  BP_ASSIGN(type, ncclElementOf(dtype));
  // A collective inside the transfers' group would join it; end it first.
  BP_TRY(closeBatch());
  const int comm = groupComms_[group];
  // Its buffer's last writer ran on the compute stream.
  BP_TRY(calls_->streamWaitsForCompute(comm));
  forked(comm);
  // A graph records no timing (the file comment).
  const bool timeIt = timed && timing_ && !capturing_;
  TimedOp span;
  if (timeIt)
    span.begin = timingEvent(comm);
  BP_TRY(call(comm, type));
  if (timeIt) {
    span.end = timingEvent(comm);
    // The bucket is the executor's: it names the spans (Trace.h,
    // recordDeviceSpans).
    span.name = op;
    span.category = TraceCategory::AllReduce;
    span.row = kAllReduceStreamRow;
    timedOps_.push_back(std::move(span));
  }
  BP_ASSIGN(event, recordOpEvent(comm));
  eventUsers_[event] = 1;
  Pending p;
  p.op = op;
  p.group = group;
  p.comm = comm;
  p.count = count;
  p.dtype = dtype;
  p.event = event;
  return pending_.add(p);
}

Expected<RequestHandle> NcclCommunicator::allReduceStart(void *buf,
                                                         int64_t count,
                                                         DType dtype,
                                                         GroupId group) {
  return startCollective("allreduce", buf, count, dtype, group, /*timed=*/true,
                         [&](int comm, NcclElement type) {
                           return calls_->allReduce(comm, buf, count, type);
                         });
}

Expected<RequestHandle> NcclCommunicator::reduceScatterStart(void *buf,
                                                             int64_t count,
                                                             DType dtype,
                                                             GroupId group) {
  // NCCL's in-place form is the member's own part (NcclDeviceCalls.h).
  return startCollective("reducescatter", buf, count, dtype, group,
                         /*timed=*/false, [&](int comm, NcclElement type) {
                           return calls_->reduceScatter(comm, buf, count, type);
                         });
}

Expected<RequestHandle> NcclCommunicator::allGatherStart(void *buf,
                                                         int64_t count,
                                                         DType dtype,
                                                         GroupId group) {
  return startCollective("allgather", buf, count, dtype, group,
                         /*timed=*/false, [&](int comm, NcclElement type) {
                           return calls_->allGather(comm, buf, count, type);
                         });
}

Expected<RequestHandle> NcclCommunicator::hierarchicalAllReduceStart(
    void *buf, int64_t count, DType dtype, const TwoLevelGroup &group) {
  const char *op = "hierarchical allreduce";
  BP_TRY(checkBuffer(op, buf, count, dtype));
  for (GroupId g : {group.whole, group.withinCopy, group.acrossCopies})
    BP_TRY(checkMember(op, g));
  BP_ASSIGN(type, ncclElementOf(dtype));
  // Collectives inside the transfers' group would join it; end it first.
  BP_TRY(closeBatch());
  Pending p;
  p.op = op;
  p.group = group.whole;
  p.comm = groupComms_[group.withinCopy];
  p.count = count;
  p.dtype = dtype;
  Status issued = issueTwoLevel(p, static_cast<char *>(buf), type, group);
  if (!issued.isOk()) {
    releaseEventOf(p); // the steps' events recorded so far
    return issued;
  }
  BP_ASSIGN(event, recordOpEvent(p.comm));
  eventUsers_[event] = 1;
  p.event = event;
  return pending_.add(p);
}

Status NcclCommunicator::issueTwoLevel(Pending &p, char *buf, NcclElement type,
                                       const TwoLevelGroup &group) {
  const std::vector<int> &copy = groupRanks(group.withinCopy);
  const int member = static_cast<int>(
      std::find(copy.begin(), copy.end(), rank()) - copy.begin());
  const base::ShardLayout layout =
      base::shardLayout(p.count, static_cast<int>(copy.size()));
  const size_t size = ncclElementSize(type);
  const int within = p.comm;
  const int across = groupComms_[group.acrossCopies];
  const int whole = groupComms_[group.whole];
  // Each step's event, kept with the request (file comment).
  auto stepDone = [&](TwoLevelStep what, GroupId g, int comm,
                      int64_t count) -> Status {
    BP_ASSIGN(event, recordOpEvent(comm));
    eventUsers_[event] = 1;
    p.steps.push_back({what, g, comm, event, count});
    return Status::ok();
  };

  // The bucket's last gradient was accumulated on the compute stream.
  BP_TRY(calls_->streamWaitsForCompute(within));
  forked(within);
  // A graph records no timing (the file comment).
  const bool timeIt = timing_ && !capturing_;
  TimedOp timed;
  if (timeIt)
    timed.begin = timingEvent(within);
  if (layout.shard > 0) {
    BP_TRY(calls_->reduceScatter(within, buf, layout.shard, type));
    BP_TRY(stepDone(TwoLevelStep::ReduceScatter, group.withinCopy, within,
                    layout.sharded()));
    BP_TRY(calls_->streamWaitsForEvent(across, p.steps.back().event));
    forked(across);
    BP_TRY(calls_->allReduce(across, buf + layout.offset(member) * size,
                             layout.shard, type));
    BP_TRY(stepDone(TwoLevelStep::AllReduceAcross, group.acrossCopies, across,
                    layout.shard));
    BP_TRY(calls_->streamWaitsForEvent(within, p.steps.back().event));
    BP_TRY(calls_->allGather(within, buf, layout.shard, type));
    // The request's event, recorded last on this stream, is its own.
    p.steps.push_back({TwoLevelStep::AllGather, group.withinCopy, within, -1,
                       layout.sharded()});
  }
  if (layout.tail > 0) {
    // Beside the shards, on the whole group's stream; joined back to the
    // copy's stream, so that the request's event covers it too.
    BP_TRY(calls_->streamWaitsForCompute(whole));
    forked(whole);
    BP_TRY(calls_->allReduce(whole, buf + layout.sharded() * size, layout.tail,
                             type));
    BP_TRY(stepDone(TwoLevelStep::Tail, group.whole, whole, layout.tail));
    BP_TRY(calls_->streamWaitsForEvent(within, p.steps.back().event));
  }
  if (timeIt) {
    timed.end = timingEvent(within);
    timed.name = "allreduce"; // the executor names the bucket (Trace.h)
    timed.category = TraceCategory::AllReduce;
    timed.row = kAllReduceStreamRow;
    timedOps_.push_back(std::move(timed));
  }
  return Status::ok();
}

int NcclCommunicator::timingEvent(int comm) {
  Expected<int> slot = calls_->recordTimingEvent(comm);
  return slot.isOk() ? *slot : -1;
}

std::vector<DeviceSpan> NcclCommunicator::takeDeviceSpans(void *stepStart) {
  std::vector<bool> inOpenBatch(timedOps_.size(), false);
  for (size_t i : batchTimedOps_)
    inOpenBatch[i] = true;
  std::vector<DeviceSpan> spans;
  std::vector<TimedOp> open; // the open batch's, timed when it closes
  std::unordered_set<int> taken;
  for (size_t i = 0; i < timedOps_.size(); ++i) {
    TimedOp &op = timedOps_[i];
    if (inOpenBatch[i]) {
      open.push_back(std::move(op));
      continue;
    }
    if (op.begin >= 0 && op.end >= 0) {
      Expected<float> start = calls_->timingEventMs(stepStart, op.begin);
      Expected<float> end = calls_->timingEventMs(stepStart, op.end);
      if (start.isOk() && end.isOk())
        spans.push_back({op.name, op.category, op.row, *start, *end - *start});
    }
    for (int slot : {op.begin, op.end})
      if (slot >= 0)
        taken.insert(slot);
  }
  // Back to the pool after every read: a batch's transfers share a pair.
  for (int slot : taken)
    calls_->releaseTimingEvent(slot);
  timedOps_ = std::move(open);
  batchTimedOps_.clear();
  for (size_t i = 0; i < timedOps_.size(); ++i)
    batchTimedOps_.push_back(i);
  return spans;
}

void NcclCommunicator::releaseEventOf(const Pending &p) {
  auto release = [&](int event) {
    auto it = eventUsers_.find(event);
    if (it == eventUsers_.end())
      return;
    if (--it->second == 0) {
      calls_->releaseEvent(event);
      eventUsers_.erase(it);
    }
  };
  release(p.event);
  for (const Step &step : p.steps)
    release(step.event);
}

std::string NcclCommunicator::describe(const Pending &p) const {
  if (p.comm == kGraphComms)
    return p.reader.empty() ? p.op : p.op + ", read by " + p.reader;
  return describePendingOp(p, groupRanks(p.group.value_or(kWorldGroup)));
}

std::string NcclCommunicator::describeWaiting(const Pending &p) {
  // The first step whose own event is not done; past those, the step the
  // request's event ends. A request whose steps have no events of their
  // own (a graph's event stands for all of them) names none, nor does one
  // in a capture, whose events are not the host's to ask.
  if (capturing_)
    return describe(p);
  const Step *blamed = nullptr;
  bool ownEvents = false;
  for (const Step &step : p.steps) {
    if (step.event < 0)
      continue;
    ownEvents = true;
    Expected<bool> done = calls_->eventDone(step.event);
    if (done.isOk() && !*done) {
      blamed = &step;
      break;
    }
  }
  for (size_t i = 0; !blamed && ownEvents && i < p.steps.size(); ++i)
    if (p.steps[i].event < 0)
      blamed = &p.steps[i];
  if (!blamed)
    return describe(p);
  Pending named = p;
  named.step =
      describeTwoLevelStep(blamed->what, blamed->group,
                           groupRanks(blamed->group), blamed->count, p.dtype);
  return describe(named);
}

Status NcclCommunicator::asyncErrorOf(const Pending &p) {
  if (p.comm != kGraphComms) {
    BP_TRY(calls_->asyncError(p.comm));
    for (const Step &step : p.steps)
      BP_TRY(calls_->asyncError(step.comm));
    return Status::ok();
  }
  for (int comm : graphComms_)
    BP_TRY(calls_->asyncError(comm));
  return Status::ok();
}

Expected<int> NcclCommunicator::recordOpEvent(int comm) {
  BP_ASSIGN(event, calls_->recordEvent(comm));
  if (capturing_)
    capturedEvents_.push_back(event);
  return event;
}

void NcclCommunicator::forked(int comm) {
  if (capturing_ && std::find(capturedComms_.begin(), capturedComms_.end(),
                              comm) == capturedComms_.end())
    capturedComms_.push_back(comm);
}

Status NcclCommunicator::beginCapture() {
  if (capturing_)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: a capture begins while "
                                      "another is under way",
                                      rank()));
  if (aborted_)
    return Status::error(ErrorCode::CommFailure,
                         formatString("rank %d: a capture begins after the "
                                      "NCCL communicators were aborted",
                                      rank()));
  // What was issued before the capture is not in it: waiting for it from
  // inside would tie the graph to work outside it.
  if (batchOpen_ || !pending_.empty() || !deviceWaits_.empty())
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("rank %d: a capture begins with %zu operations "
                     "pending, %zu device waits not drained%s; a step starts "
                     "with none",
                     rank(), pending_.size(), deviceWaits_.size(),
                     batchOpen_ ? " and a batch open" : ""));
  capturing_ = true;
  capturedComms_.clear();
  capturedEvents_.clear();
  return Status::ok();
}

Status NcclCommunicator::endCapture() {
  if (!capturing_)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: a capture ends that never "
                                      "began",
                                      rank()));
  // The open batch's group must be on its stream before the join.
  Status s = aborted_ ? Status::ok() : closeBatch();
  for (size_t i = 0; s.isOk() && i < capturedComms_.size(); ++i) {
    Expected<int> joined = calls_->recordEvent(capturedComms_[i]);
    if (!joined.isOk()) {
      s = joined.status();
      break;
    }
    s = calls_->computeWaitsFor(*joined);
    // The wait holds the event's node: the slot can be reused.
    calls_->releaseEvent(*joined);
  }
  capturing_ = false;
  graphComms_ = capturedComms_;
  if (!s.isOk())
    return Status::error(s.code(),
                         formatString("rank %d: joining the communicators' "
                                      "streams to the capture: %s",
                                      rank(), s.message().c_str()));
  return Status::ok();
}

Status NcclCommunicator::graphLaunched(const std::string &what) {
  if (capturing_)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s was launched before its "
                                      "capture ended",
                                      rank(), what.c_str()));
  BP_ASSIGN(done, calls_->recordComputeEvent());
  // The graph's wait, and every operation recorded in the capture.
  int users = 1;
  auto captured = [&](int event) {
    return std::find(capturedEvents_.begin(), capturedEvents_.end(), event) !=
           capturedEvents_.end();
  };
  auto adopt = [&](Pending &p) {
    if (captured(p.event)) {
      p.event = done;
      ++users;
    }
    // Its steps end with the graph too: none has an event of its own.
    for (Step &step : p.steps)
      if (captured(step.event))
        step.event = -1;
  };
  pending_.forEach(adopt);
  for (Pending &p : deviceWaits_)
    adopt(p);
  // A slot released inside the capture (a batch without requests) may have
  // been recorded again there: each goes back once.
  for (int event : capturedEvents_)
    if (eventUsers_.erase(event))
      calls_->releaseEvent(event);
  capturedEvents_.clear();
  eventUsers_[done] = users;
  Pending graph;
  graph.op = what;
  graph.comm = kGraphComms;
  graph.event = done;
  deviceWaits_.push_back(std::move(graph));
  return Status::ok();
}

Status NcclCommunicator::fail(ErrorCode code, const std::string &message) {
  std::fprintf(stderr, "bitpipe: %s; aborting the NCCL communicators\n",
               message.c_str());
  std::fflush(stderr);
  if (!aborted_) {
    aborted_ = true;
    calls_->abortAll();
  }
  return Status::error(code, message);
}

Status NcclCommunicator::usable(const Pending &p) const {
  if (aborted_)
    return Status::error(ErrorCode::CommFailure,
                         formatString("rank %d: %s after the NCCL "
                                      "communicators were aborted",
                                      rank(), describe(p).c_str()));
  if (p.event < 0)
    return Status::error(ErrorCode::CommFailure,
                         formatString("rank %d: %s was never enqueued (its "
                                      "batch did not start)",
                                      rank(), describe(p).c_str()));
  return Status::ok();
}

Status NcclCommunicator::pollUntilDone(const Pending &p,
                                       Clock::time_point deadline,
                                       double timeoutSeconds) {
  BP_TRY(usable(p));
  if (capturing_)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: a host wait for %s inside a "
                                      "captured step (its operations run "
                                      "only when the graph is launched)",
                                      rank(), describe(p).c_str()));
  // Spin briefly, then sleep between polls: ranks that share a GPU share
  // its node's cores too.
  for (int polls = 0;; ++polls) {
    Status async = asyncErrorOf(p);
    if (!async.isOk())
      return fail(ErrorCode::CommFailure,
                  formatString("rank %d: NCCL error during %s: %s", rank(),
                               describeWaiting(p).c_str(),
                               async.message().c_str()));
    Expected<bool> done = calls_->eventDone(p.event);
    if (!done.isOk())
      return fail(done.status().code(),
                  formatString("rank %d: waiting for %s: %s", rank(),
                               describe(p).c_str(),
                               done.status().message().c_str()));
    if (*done)
      return Status::ok();
    if (Clock::now() >= deadline)
      break;
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return fail(ErrorCode::Timeout,
              formatString("rank %d: timeout after %.1f s waiting for %s; the "
                           "peer may have died or be stuck",
                           rank(), timeoutSeconds, describeWaiting(p).c_str()));
}

Status NcclCommunicator::waitFor(RequestHandle h, double timeoutSeconds) {
  Pending *p = pending_.find(h);
  if (!p)
    return unknownRequest(rank(), "wait on", h);
  if (p->event < 0 && !aborted_)
    BP_TRY(closeBatch()); // a wait inside its own batch would never end
  Status s = pollUntilDone(*p, deadlineAfter(timeoutSeconds), timeoutSeconds);
  if (s.code() == ErrorCode::Timeout)
    return s; // the handle stays pending (Communicator.h)
  releaseEventOf(*p);
  pending_.erase(h);
  return s;
}

Expected<bool> NcclCommunicator::test(RequestHandle h) {
  const Pending *found = pending_.find(h);
  if (!found)
    return unknownRequest(rank(), "test of", h);
  const Pending &p = *found;
  if (p.event < 0 && batchOpen_ && !aborted_)
    return false; // its batch is still open: not even enqueued
  BP_TRY(usable(p));
  // Its event is a node of the graph being captured: nothing has run yet.
  if (capturing_)
    return false;
  Status async = asyncErrorOf(p);
  if (!async.isOk())
    return fail(ErrorCode::CommFailure,
                formatString("rank %d: NCCL error during %s: %s", rank(),
                             describeWaiting(p).c_str(),
                             async.message().c_str()));
  return calls_->eventDone(p.event);
}

Status NcclCommunicator::waitOnDeviceFor(RequestHandle h,
                                         const std::string &reader) {
  const Pending *found = pending_.find(h);
  if (!found)
    return unknownRequest(rank(), "device wait on", h);
  if (found->event < 0 && !aborted_)
    BP_TRY(closeBatch());
  Pending p = *found;
  p.reader = reader;
  BP_TRY(usable(p));
  if (calls_->hostComputes()) {
    // The compute wait is a host wait with no deadline: bound it first, so
    // that a deadlock is the usual timeout naming the operation and reader.
    BP_TRY(pollUntilDone(p, deadlineAfter(timeout()), timeout()));
  }
  Status async = asyncErrorOf(p);
  if (!async.isOk())
    return fail(ErrorCode::CommFailure,
                formatString("rank %d: NCCL error during %s: %s", rank(),
                             describeWaiting(p).c_str(),
                             async.message().c_str()));
  BP_TRY(calls_->computeWaitsFor(p.event));
  pending_.erase(h);
  // Keep the list short on long steps: what is done already needs no drain
  // (nothing is, inside a capture: its events are not the host's to ask).
  for (size_t i = 0; !capturing_ && i < deviceWaits_.size();) {
    Expected<bool> done = calls_->eventDone(deviceWaits_[i].event);
    if (!done.isOk() || !*done) {
      ++i;
      continue;
    }
    releaseEventOf(deviceWaits_[i]);
    deviceWaits_.erase(deviceWaits_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  deviceWaits_.push_back(p);
  return Status::ok();
}

Status NcclCommunicator::drainDeviceWaits() {
  if (!aborted_)
    BP_TRY(closeBatch());
  // One deadline for the lot: they were all enqueued before this call.
  Clock::time_point deadline = deadlineAfter(timeout());
  for (const Pending &p : deviceWaits_)
    BP_TRY(pollUntilDone(p, deadline, timeout()));
  for (const Pending &p : deviceWaits_)
    releaseEventOf(p);
  deviceWaits_.clear();
  return Status::ok();
}

Status NcclCommunicator::broadcast(void *buf, int64_t count, DType dtype,
                                   GroupId group) {
  return bootstrap_.broadcast(buf, count, dtype, group);
}

Status NcclCommunicator::barrier(GroupId group) {
  return bootstrap_.barrier(group);
}

Status NcclCommunicator::gatherBytes(const std::string &local, int root,
                                     std::vector<std::string> *all) {
  return bootstrap_.gatherBytes(local, root, all);
}

void NcclCommunicator::abort(int code, const std::string &message) {
  if (!aborted_) {
    aborted_ = true;
    calls_->abortAll();
  }
  bootstrap_.abort(code, message);
  std::_Exit(code == 0 ? 1 : code); // the bootstrap's abort does not return
}

} // namespace bitpipe::runtime
