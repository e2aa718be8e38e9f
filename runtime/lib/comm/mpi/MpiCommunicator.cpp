//===- MpiCommunicator.cpp - Communicator over MPI --------------*- C++ -*-===//

#include "MpiCommunicator.h"

#include "bitpipe/base/GradientSyncGroups.h"
#include "core/Random.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace bitpipe::runtime {

/// The MPI type that carries \p t. Half-precision types travel as 16-bit
/// integers: fine for p2p, not for reductions (see allReduceStart).
static MPI_Datatype mpiType(DType t) {
  switch (t) {
  case DType::F32:
    return MPI_FLOAT;
  case DType::BF16:
  case DType::F16:
    return MPI_UINT16_T;
  case DType::I32:
    return MPI_INT32_T;
  case DType::I64:
    return MPI_INT64_T;
  case DType::U8:
    return MPI_UINT8_T;
  case DType::F64:
    return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

struct MpiCommunicator::TwoLevelSum {
  static constexpr int kSteps = 3;
  TwoLevelGroup groups;
  char *buf = nullptr;
  base::ShardLayout layout;
  int member = 0; // this rank's shard: its place in the copy
  /// The chain's steps posted so far (0 to kSteps).
  int posted = 0;
  /// Each step's place in its communicator's order (order_).
  int64_t tickets[kSteps] = {0, 0, 0};
  /// This member's summed shard between the steps: MPI's in-place
  /// reduce-scatter would leave it at the buffer's start, where member 0's
  /// shard lives, not at the member's own offset.
  std::vector<char> shard;
  MPI_Request tail = MPI_REQUEST_NULL;
  /// A failure found while another request's poll moved it on: reported by
  /// this request's own wait.
  Status failed = Status::ok();

  /// The group of each step of the chain: within, across, within.
  GroupId stepGroup(int step) const {
    return step == 1 ? groups.acrossCopies : groups.withinCopy;
  }
};

Expected<std::unique_ptr<MpiCommunicator>>
MpiCommunicator::create(int *argc, char ***argv) {
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    // FUNNELED: only the thread that initialised MPI calls it; the kernels'
    // OpenBLAS threads never do.
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) !=
        MPI_SUCCESS)
      return Status::error(ErrorCode::CommFailure, "MPI_Init_thread failed");
    c->ownsInit_ = true;
  }
  // A private duplicate of the world, so our tags can never match a message
  // of another library sharing MPI_COMM_WORLD.
  MPI_Comm_dup(MPI_COMM_WORLD, &c->world_);
  MPI_Comm_set_errhandler(c->world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->world_, &c->rank_);
  MPI_Comm_size(c->world_, &c->size_);
  Group world;
  world.comm = c->world_;
  for (int r = 0; r < c->size_; ++r)
    world.ranks.push_back(r);
  c->groups_.push_back(world);
  return std::move(c);
}

MpiCommunicator::~MpiCommunicator() {
  // Requests still pending (a timed-out wait the caller did not abort on)
  // would make MPI_Finalize hang on the very peer that is gone: skip
  // finalisation then; the process is on its way out anyway.
  bool clean = pending_.empty();
  for (size_t g = 1; g < groups_.size(); ++g)
    if (groups_[g].comm != MPI_COMM_NULL)
      MPI_Comm_free(&groups_[g].comm);
  if (world_ != MPI_COMM_NULL)
    MPI_Comm_free(&world_);
  if (ownsInit_ && clean)
    MPI_Finalize();
}

Status MpiCommunicator::mpiError(int err, const std::string &what) const {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(err, text, &len);
  return Status::error(ErrorCode::CommFailure,
                       formatString("rank %d: %s failed: %.*s", rank_,
                                    what.c_str(), len, text));
}

Status MpiCommunicator::checkBuffer(const char *op, const void *buf,
                                    int64_t count, DType dtype) const {
  if (count < 0 || count > INT_MAX)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("rank %d: %s of %lld elements: the count must be in "
                     "[0, %d] (split larger buffers)",
                     rank_, op, static_cast<long long>(count), INT_MAX));
  if (!buf && count > 0)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s of a null buffer", rank_,
                                      op));
  if (mpiType(dtype) == MPI_DATATYPE_NULL)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s: unknown dtype", rank_, op));
  return Status::ok();
}

Status MpiCommunicator::checkGroup(const char *op, GroupId group) const {
  if (group < 0 || static_cast<size_t>(group) >= groups_.size())
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s on unknown group %d", rank_,
                                      op, group));
  if (groups_[group].comm == MPI_COMM_NULL)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s on group %d, which does "
                                      "not contain this rank",
                                      rank_, op, group));
  return Status::ok();
}

Status MpiCommunicator::checkRankList(const char *op,
                                      const std::vector<int> &ranks,
                                      std::vector<bool> *seen, uint64_t *hash,
                                      int *position) const {
  if (ranks.empty())
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s of no ranks", rank_, op));
  *hash = mix64(*hash ^ ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) {
    int r = ranks[i];
    if (r < 0 || r >= size_ || (*seen)[r])
      return Status::error(
          ErrorCode::InvalidArgument,
          formatString("rank %d: %s: rank %d is out of range [0, %d) or "
                       "listed twice",
                       rank_, op, r, size_));
    (*seen)[r] = true;
    if (r == rank_)
      *position = static_cast<int>(i);
    *hash = mix64(*hash ^ static_cast<uint64_t>(r));
  }
  return Status::ok();
}

Status MpiCommunicator::checkSameOnEveryRank(const char *op, uint64_t hash) {
  // min == max of the hash over the world.
  int64_t h = static_cast<int64_t>(hash >> 1);
  int64_t minMax[2] = {h, -h};
  MPI_Request req;
  int err = MPI_Iallreduce(MPI_IN_PLACE, minMax, 2, MPI_INT64_T, MPI_MIN,
                           world_, &req);
  if (err != MPI_SUCCESS)
    return mpiError(err, formatString("%s consistency check", op));
  Pending check;
  check.request = req;
  check.op = op;
  check.group = kWorldGroup;
  BP_TRY(waitFor(pending_.add(check), timeout()));
  if (minMax[0] != -minMax[1])
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: %s was called with different "
                                      "rank lists on different ranks",
                                      rank_, op));
  return Status::ok();
}

Expected<GroupId> MpiCommunicator::splitWorld(const char *op, int colour,
                                              int key, std::vector<int> ranks) {
  Group g;
  g.ranks = std::move(ranks);
  int err = MPI_Comm_split(world_, colour, key, &g.comm);
  if (err != MPI_SUCCESS)
    return mpiError(err, formatString("%s (MPI_Comm_split)", op));
  if (g.comm != MPI_COMM_NULL)
    MPI_Comm_set_errhandler(g.comm, MPI_ERRORS_RETURN);
  groups_.push_back(std::move(g));
  return static_cast<GroupId>(groups_.size() - 1);
}

Status MpiCommunicator::checkSummable(const char *op, DType dtype) const {
  if (dtype == DType::BF16 || dtype == DType::F16 || dtype == DType::U8)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("rank %d: MPI %s of %s is not supported (sum "
                     "gradients in f32 on the CPU)",
                     rank_, op, dtypeName(dtype)));
  return Status::ok();
}

Expected<GroupId> MpiCommunicator::createGroup(const std::vector<int> &ranks) {
  std::vector<bool> seen(size_, false);
  uint64_t hash = mix64(0);
  int position = -1;
  BP_TRY(checkRankList("createGroup", ranks, &seen, &hash, &position));
  BP_TRY(checkSameOnEveryRank("createGroup", hash));
  // Keyed by position so that group rank i is ranks[i].
  return splitWorld("createGroup", position >= 0 ? 0 : MPI_UNDEFINED,
                    position >= 0 ? position : 0, ranks);
}

Expected<GroupId>
MpiCommunicator::createPartition(const std::vector<std::vector<int>> &parts) {
  if (parts.empty())
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("rank %d: createPartition of no parts", rank_));
  // Disjoint: one list of seen ranks over every part.
  std::vector<bool> seen(size_, false);
  // Unlike createGroup's, so that a rank calling one while another calls
  // the other is caught too.
  uint64_t hash = mix64(parts.size() + 1);
  int colour = MPI_UNDEFINED, key = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    int position = -1;
    BP_TRY(checkRankList("createPartition", parts[i], &seen, &hash, &position));
    if (position >= 0) {
      colour = static_cast<int>(i);
      key = position;
    }
  }
  BP_TRY(checkSameOnEveryRank("createPartition", hash));
  return splitWorld("createPartition", colour, key,
                    colour == MPI_UNDEFINED ? std::vector<int>()
                                            : parts[colour]);
}

bool MpiCommunicator::isMember(GroupId group) const {
  return group >= 0 && static_cast<size_t>(group) < groups_.size() &&
         groups_[group].comm != MPI_COMM_NULL;
}

const std::vector<int> &MpiCommunicator::groupRanks(GroupId group) const {
  static const std::vector<int> none;
  if (group < 0 || static_cast<size_t>(group) >= groups_.size())
    return none;
  return groups_[group].ranks;
}

Status MpiCommunicator::openChannels(TransferStreams,
                                     const std::vector<Channel> &channels) {
  // MPI matches by tag and buffers a send as far as a deadlock is
  // concerned: every layout runs as posted, nothing to connect.
  return checkChannels(rank_, size_, channels);
}

Expected<RequestHandle> MpiCommunicator::send(const void *buf, int64_t count,
                                              DType dtype, int peer, int tag) {
  Status s = checkBuffer("send", buf, count, dtype);
  if (!s.isOk())
    return s;
  if (peer < 0 || peer >= size_ || peer == rank_)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: send to invalid peer %d", rank_,
                                      peer));
  Pending p;
  p.op = "send";
  p.peer = peer;
  p.tag = tag;
  p.count = count;
  p.dtype = dtype;
  int err = MPI_Isend(buf, static_cast<int>(count), mpiType(dtype), peer, tag,
                      world_, &p.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  return pending_.add(p);
}

Expected<RequestHandle> MpiCommunicator::recv(void *buf, int64_t count,
                                              DType dtype, int peer, int tag) {
  Status s = checkBuffer("recv", buf, count, dtype);
  if (!s.isOk())
    return s;
  if (peer < 0 || peer >= size_ || peer == rank_)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: recv from invalid peer %d",
                                      rank_, peer));
  Pending p;
  p.op = "recv";
  p.peer = peer;
  p.tag = tag;
  p.count = count;
  p.dtype = dtype;
  int err = MPI_Irecv(buf, static_cast<int>(count), mpiType(dtype), peer, tag,
                      world_, &p.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  return pending_.add(p);
}

Expected<RequestHandle> MpiCommunicator::allReduceStart(void *buf,
                                                        int64_t count,
                                                        DType dtype,
                                                        GroupId group) {
  Status s = checkBuffer("allreduce", buf, count, dtype);
  if (!s.isOk())
    return s;
  s = checkGroup("allreduce", group);
  if (!s.isOk())
    return s;
  BP_TRY(checkSummable("all-reduce", dtype));
  Pending p;
  p.op = "allreduce";
  p.group = group;
  p.count = count;
  p.dtype = dtype;
  int err = MPI_Iallreduce(MPI_IN_PLACE, buf, static_cast<int>(count),
                           mpiType(dtype), MPI_SUM, groups_[group].comm,
                           &p.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  return pending_.add(p);
}

Expected<RequestHandle> MpiCommunicator::reduceScatterStart(void *buf,
                                                            int64_t count,
                                                            DType dtype,
                                                            GroupId group) {
  BP_TRY(checkBuffer("reducescatter", buf, count, dtype));
  BP_TRY(checkGroup("reducescatter", group));
  BP_TRY(checkSummable("reduce-scatter", dtype));
  const std::vector<int> &members = groupRanks(group);
  const int64_t member =
      std::find(members.begin(), members.end(), rank_) - members.begin();
  const size_t bytes = static_cast<size_t>(count) * dtypeSize(dtype);
  Pending p;
  p.op = "reducescatter";
  p.group = group;
  p.count = count;
  p.dtype = dtype;
  // MPI's in-place form leaves the sum at the buffer's start: the sum goes
  // to a scratch and, once done, to the member's own part (poll).
  p.scratch = std::make_shared<std::vector<char>>(bytes);
  p.landing = static_cast<char *>(buf) + member * bytes;
  int err = MPI_Ireduce_scatter_block(buf, p.scratch->data(),
                                      static_cast<int>(count), mpiType(dtype),
                                      MPI_SUM, groups_[group].comm, &p.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  return pending_.add(p);
}

Expected<RequestHandle> MpiCommunicator::allGatherStart(void *buf,
                                                        int64_t count,
                                                        DType dtype,
                                                        GroupId group) {
  BP_TRY(checkBuffer("allgather", buf, count, dtype));
  BP_TRY(checkGroup("allgather", group));
  Pending p;
  p.op = "allgather";
  p.group = group;
  p.count = count;
  p.dtype = dtype;
  // In place: each member's own part is already where MPI puts it.
  int err = MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf,
                           static_cast<int>(count), mpiType(dtype),
                           groups_[group].comm, &p.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  return pending_.add(p);
}

Expected<RequestHandle> MpiCommunicator::hierarchicalAllReduceStart(
    void *buf, int64_t count, DType dtype, const TwoLevelGroup &group) {
  const char *op = "hierarchical allreduce";
  BP_TRY(checkBuffer(op, buf, count, dtype));
  for (GroupId g : {group.whole, group.withinCopy, group.acrossCopies})
    BP_TRY(checkGroup(op, g));
  BP_TRY(checkSummable("all-reduce", dtype));
  const std::vector<int> &copy = groupRanks(group.withinCopy);
  auto self = std::find(copy.begin(), copy.end(), rank_);
  auto s = std::make_shared<TwoLevelSum>();
  s->groups = group;
  s->buf = static_cast<char *>(buf);
  s->layout = base::shardLayout(count, static_cast<int>(copy.size()));
  s->member = static_cast<int>(self - copy.begin());
  s->shard.resize(static_cast<size_t>(s->layout.shard) * dtypeSize(dtype));

  Pending p;
  p.op = op;
  p.group = group.whole;
  p.count = count;
  p.dtype = dtype;
  p.twoLevel = s;
  // The tail has nothing to wait for: at once, beside the chain.
  if (s->layout.tail > 0) {
    int err = MPI_Iallreduce(MPI_IN_PLACE,
                             s->buf + s->layout.sharded() * dtypeSize(dtype),
                             static_cast<int>(s->layout.tail), mpiType(dtype),
                             MPI_SUM, groups_[group.whole].comm, &s->tail);
    if (err != MPI_SUCCESS)
      return mpiError(err, describe(p) + ", its tail");
  }
  // A bucket smaller than the copy has no shards: its tail is all of it.
  // Every member skips alike (the same count), and so takes no tickets.
  if (s->layout.shard == 0)
    s->posted = TwoLevelSum::kSteps;
  for (int step = s->posted; step < TwoLevelSum::kSteps; ++step)
    s->tickets[step] = order_[s->stepGroup(step)].issued++;
  RequestHandle h = pending_.add(p);
  twoLevelOps_.push_back(h.id);
  // The first step now, where the communicator's earlier steps allow.
  Status started = poll(*pending_.find(h));
  if (!started.isOk()) {
    pending_.erase(h);
    return started;
  }
  return h;
}

Expected<bool> MpiCommunicator::postStep(Pending &p) {
  TwoLevelSum &s = *p.twoLevel;
  const int step = s.posted;
  const GroupId group = s.stepGroup(step);
  CollectiveOrder &order = order_[group];
  if (s.tickets[step] != order.posted)
    return false; // an earlier step on its communicator goes first
  const MPI_Comm comm = groups_[group].comm;
  const MPI_Datatype type = mpiType(p.dtype);
  const int shard = static_cast<int>(s.layout.shard);
  int err = MPI_SUCCESS;
  switch (step) {
  case 0:
    // Member i's part of the copy's sum: elements [i * shard, (i + 1) *
    // shard), into the scratch (see TwoLevelSum::shard).
    err = MPI_Ireduce_scatter_block(s.buf, s.shard.data(), shard, type, MPI_SUM,
                                    comm, &p.request);
    break;
  case 1:
    err = MPI_Iallreduce(MPI_IN_PLACE, s.shard.data(), shard, type, MPI_SUM,
                         comm, &p.request);
    break;
  default:
    // Every member's shard, each at its offset, over the whole buffer.
    err = MPI_Iallgather(s.shard.data(), shard, type, s.buf, shard, type, comm,
                         &p.request);
    break;
  }
  // Posted or failed, later steps on the communicator are free to go: a
  // failure ends the job.
  ++order.posted;
  ++s.posted;
  noteStep(p);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  return true;
}

void MpiCommunicator::noteStep(Pending &p) const {
  const TwoLevelSum &s = *p.twoLevel;
  const DType t = p.dtype;
  if (p.request != MPI_REQUEST_NULL || s.posted < TwoLevelSum::kSteps) {
    // The step in flight, or the next one, waiting for its turn.
    const int step = p.request != MPI_REQUEST_NULL ? s.posted - 1 : s.posted;
    const GroupId g = s.stepGroup(step);
    const int64_t count = step == 1 ? s.layout.shard : s.layout.sharded();
    p.step = describeTwoLevelStep(static_cast<TwoLevelStep>(step), g,
                                  groupRanks(g), count, t);
    return;
  }
  p.step =
      s.tail == MPI_REQUEST_NULL
          ? ""
          : describeTwoLevelStep(TwoLevelStep::Tail, s.groups.whole,
                                 groupRanks(s.groups.whole), s.layout.tail, t);
}

Status MpiCommunicator::advance(Pending &p) {
  TwoLevelSum &s = *p.twoLevel;
  int flag = 0;
  // The chain, as far as it goes: MPI_Test nulls a request it completes.
  for (;;) {
    if (p.request != MPI_REQUEST_NULL) {
      int err = MPI_Test(&p.request, &flag, MPI_STATUS_IGNORE);
      if (err != MPI_SUCCESS)
        return mpiError(err, describe(p));
      if (!flag)
        break;
    }
    if (s.posted == TwoLevelSum::kSteps)
      break;
    BP_ASSIGN(posted, postStep(p));
    if (!posted)
      break;
  }
  if (s.tail != MPI_REQUEST_NULL) {
    int err = MPI_Test(&s.tail, &flag, MPI_STATUS_IGNORE);
    if (err != MPI_SUCCESS)
      return mpiError(err, describe(p));
  }
  noteStep(p);
  p.done = s.posted == TwoLevelSum::kSteps && p.request == MPI_REQUEST_NULL &&
           s.tail == MPI_REQUEST_NULL;
  return Status::ok();
}

void MpiCommunicator::progressTwoLevel() {
  size_t kept = 0;
  for (int64_t id : twoLevelOps_) {
    Pending *p = pending_.find(RequestHandle{id});
    if (!p || p->done)
      continue;
    // Its error waits for its own wait (TwoLevelSum::failed).
    (void)poll(*p);
    if (!p->done)
      twoLevelOps_[kept++] = id;
  }
  twoLevelOps_.resize(kept);
}

std::string MpiCommunicator::describe(const Pending &p) const {
  return describePendingOp(p, groupRanks(p.group.value_or(kWorldGroup)));
}

Status MpiCommunicator::poll(Pending &p) {
  if (p.done)
    return p.twoLevel ? p.twoLevel->failed : Status::ok();
  if (p.twoLevel) {
    Status s = advance(p);
    if (!s.isOk()) {
      p.done = true;
      p.twoLevel->failed = s;
    }
    return s;
  }
  int flag = 0;
  int err = MPI_Test(&p.request, &flag, &p.status);
  if (err != MPI_SUCCESS) {
    p.done = true;
    return mpiError(err, describe(p));
  }
  p.done = flag != 0;
  if (p.done && p.scratch) {
    std::memcpy(p.landing, p.scratch->data(), p.scratch->size());
    p.scratch.reset();
  }
  return Status::ok();
}

Status MpiCommunicator::finish(const Pending &p) const {
  if (p.op != "recv")
    return Status::ok();
  int got = 0;
  MPI_Get_count(&p.status, mpiType(p.dtype), &got);
  if (got != p.count)
    return Status::error(
        ErrorCode::CommFailure,
        formatString("rank %d: %s: received %d elements, expected %lld", rank_,
                     describe(p).c_str(), got,
                     static_cast<long long>(p.count)));
  return Status::ok();
}

Status MpiCommunicator::waitFor(RequestHandle h, double timeoutSeconds) {
  Pending *found = pending_.find(h);
  if (!found)
    return unknownRequest(rank_, "wait on", h);
  Pending &p = *found;
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  Clock::time_point deadline =
      start + std::chrono::duration_cast<Clock::duration>(
                  std::chrono::duration<double>(timeoutSeconds));
  // Spin briefly (a message that is already in flight arrives within
  // microseconds), then back off to short sleeps so that a waiting rank does
  // not steal the core its peers need on an oversubscribed node.
  for (int polls = 0;; ++polls) {
    // Every two-level all-reduce moves on while this rank waits, for
    // whatever it waits (the file comment of MpiCommunicator.h).
    progressTwoLevel();
    Status s = poll(p);
    if (!s.isOk() || p.done) {
      if (s.isOk())
        s = finish(p);
      pending_.erase(h);
      return s;
    }
    if (Clock::now() >= deadline)
      break;
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::string what = describe(p);
  std::fprintf(stderr,
               "bitpipe: rank %d: timeout after %.1f s waiting for %s; the "
               "peer may have died or be stuck\n",
               rank_, timeoutSeconds, what.c_str());
  std::fflush(stderr);
  return Status::error(ErrorCode::Timeout,
                       formatString("rank %d: timeout after %.1f s waiting for "
                                    "%s",
                                    rank_, timeoutSeconds, what.c_str()));
}

Expected<bool> MpiCommunicator::test(RequestHandle h) {
  Pending *p = pending_.find(h);
  if (!p)
    return unknownRequest(rank_, "test of", h);
  progressTwoLevel();
  Status s = poll(*p);
  if (!s.isOk())
    return s;
  return p->done;
}

Status MpiCommunicator::broadcast(void *buf, int64_t count, DType dtype,
                                  GroupId group) {
  Status s = checkBuffer("broadcast", buf, count, dtype);
  if (!s.isOk())
    return s;
  s = checkGroup("broadcast", group);
  if (!s.isOk())
    return s;
  Pending p;
  p.op = "broadcast";
  p.group = group;
  p.count = count;
  p.dtype = dtype;
  // Root 0 of the group communicator is ranks[0] (createGroup's split key).
  int err = MPI_Ibcast(buf, static_cast<int>(count), mpiType(dtype), 0,
                       groups_[group].comm, &p.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  return wait(pending_.add(p));
}

Status MpiCommunicator::barrier(GroupId group) {
  Status s = checkGroup("barrier", group);
  if (!s.isOk())
    return s;
  Pending p;
  p.op = "barrier";
  p.group = group;
  int err = MPI_Ibarrier(groups_[group].comm, &p.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  return wait(pending_.add(p));
}

Status MpiCommunicator::gatherBytes(const std::string &local, int root,
                                    std::vector<std::string> *all) {
  if (root < 0 || root >= size_ || !all)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: gatherBytes with invalid root "
                                      "%d",
                                      rank_, root));
  if (local.size() > INT_MAX)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("rank %d: gatherBytes of %zu bytes is "
                                      "too large",
                                      rank_, local.size()));
  all->clear();
  int mine = static_cast<int>(local.size());
  std::vector<int> sizes(rank_ == root ? size_ : 0);
  Pending p;
  p.op = "gather (sizes)";
  p.group = kWorldGroup;
  int err = MPI_Igather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, root,
                        world_, &p.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(p));
  Status s = wait(pending_.add(p));
  if (!s.isOk())
    return s;

  std::vector<int> displs(sizes.size());
  std::string joined;
  if (rank_ == root) {
    long long total = 0;
    for (int r = 0; r < size_; ++r) {
      displs[r] = static_cast<int>(total);
      total += sizes[r];
    }
    if (total > INT_MAX)
      return Status::error(ErrorCode::InvalidArgument,
                           formatString("rank %d: gatherBytes of %lld bytes "
                                        "in total is too large",
                                        rank_, total));
    joined.resize(static_cast<size_t>(total));
  }
  Pending q;
  q.op = "gather (data)";
  q.group = kWorldGroup;
  err = MPI_Igatherv(local.data(), mine, MPI_CHAR, joined.data(), sizes.data(),
                     displs.data(), MPI_CHAR, root, world_, &q.request);
  if (err != MPI_SUCCESS)
    return mpiError(err, describe(q));
  s = wait(pending_.add(q));
  if (!s.isOk())
    return s;
  if (rank_ == root)
    for (int r = 0; r < size_; ++r)
      all->push_back(joined.substr(displs[r], sizes[r]));
  return Status::ok();
}

void MpiCommunicator::abort(int code, const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "bitpipe: rank %d: fatal: %s\n", rank_,
               message.c_str());
  std::fflush(stderr);
  // MPI_COMM_WORLD, not world_: abort the whole job, whatever state our
  // duplicate is in.
  MPI_Abort(MPI_COMM_WORLD, code == 0 ? 1 : code);
  std::_Exit(code == 0 ? 1 : code); // MPI_Abort should not return
}

Expected<NodeRanks> nodeRanks(int worldRank) {
  NodeRanks n;
  MPI_Comm node = MPI_COMM_NULL;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, worldRank,
                          MPI_INFO_NULL, &node) != MPI_SUCCESS)
    return Status::error(ErrorCode::CommFailure,
                         formatString("rank %d: MPI_Comm_split_type (the "
                                      "node-local rank) failed",
                                      worldRank));
  MPI_Comm_rank(node, &n.localRank);
  MPI_Comm_size(node, &n.localSize);
  MPI_Comm_free(&node);
  return n;
}

} // namespace bitpipe::runtime
