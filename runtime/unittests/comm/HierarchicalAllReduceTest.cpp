//===- HierarchicalAllReduceTest.cpp - Two-level sums under mpirun --------===//
//
// HierarchicalAllReduceTest TRANSPORT D [stall COUNT]
//
// The world is K = size / D data-parallel copies of D pipeline ranks
// (world rank = copy * D + pipeline rank), and the group under test is
// every pipeline rank, so that it sums in two levels (docs/data-parallel.md,
// "Two levels"): the whole group, a partition by copy and a partition by
// pipeline rank, made as the trainer makes them. TRANSPORT is the
// communicator: `mpi` (MpiCommunicator), or `nccl-strict` / `nccl-loose`
// (NcclCommunicator over the MPI stand-in for NCCL, HostNcclCalls.h, under
// NCCL's rules or loose ones).
//
// Checked, on f32 and f64 buckets of every shape the layout has (no
// elements, fewer than the copy's members: the tail alone, shards and no
// tail, shards and a tail, a large one):
//  - the partitions: each rank's part, members and non-members, lists that
//    differ between ranks or overlap refused;
//  - sums of small integers (exact in floating point) equal the flat
//    all-reduce's, element for element;
//  - on random values, every rank ends with the same bits, within
//    rounding of the flat sum;
//  - several sums in flight at once on the group, with a flat all-reduce
//    between them, waited for in reverse order;
//  - a sum moves on while a rank waits for something else: rank 0 waits
//    for a receive that rank 1 sends only after its own sum is done, which
//    needs rank 0's steps;
//  - a sharded optimizer's reduce-scatters of the gradients leave every
//    rank its shard's sum, and its all-gathers of the weights hand every
//    rank every shard, flat and in two levels;
//  - a rank outside the group, and bf16, are refused.
//
// stall-reduce-scatter COUNT, stall-all-gather COUNT: the same for a
// sharded optimizer's reduce-scatter and all-gather over the whole group,
// COUNT f32 a member.
// stall COUNT: the last world rank never starts its sum of COUNT f32;
// world rank 1 waits with a 2 s deadline (the others' is long), times out
// and aborts the job. The ctest wrapper (expect-abort.sh) checks that its
// message names the step that did not end and its group.
//
//===----------------------------------------------------------------------===//

#include "HostNcclCalls.h"
#include "MpiTestUtil.h"

#include "bitpipe/base/GradientSyncGroups.h"
#include "comm/nccl/NcclCommunicator.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace bitpipe::runtime;

namespace {

struct Setup {
  std::unique_ptr<MpiCommunicator> mpi;
  std::unique_ptr<NcclCommunicator> nccl; // set for the nccl-* transports
  Communicator *comm = nullptr;
  int devices = 0, copies = 0;
  TwoLevelGroup group;
};

/// The group of every pipeline rank, created as Trainer::run creates a
/// manifest group that sums in two levels.
void makeGroups(Setup &t) {
  Communicator &c = *t.comm;
  std::vector<int> pipeline, world;
  for (int p = 0; p < t.devices; ++p)
    pipeline.push_back(p);
  for (int r = 0; r < c.size(); ++r)
    world.push_back(r);
  bitpipe::base::TwoLevelGroups levels =
      bitpipe::base::twoLevelGroups(pipeline, t.devices, t.copies);
  auto whole = c.createGroup(world);
  auto within = c.createPartition(levels.withinCopy);
  auto across = c.createPartition(levels.acrossCopies);
  MPI_TEST_CHECK(*t.mpi, whole.isOk() && within.isOk() && across.isOk(),
                 "creating the groups");
  t.group = {*whole, *within, *across};
  const int copy = c.rank() / t.devices, member = c.rank() % t.devices;
  MPI_TEST_CHECK(*t.mpi,
                 c.isMember(*within) && c.isMember(*across) &&
                     c.groupRanks(*within) == levels.withinCopy[copy] &&
                     c.groupRanks(*across) == levels.acrossCopies[member],
                 "rank %d is not in its copy's and its pipeline rank's parts",
                 c.rank());
}

/// Partitions that leave ranks out, differ between ranks, or overlap.
void checkPartitions(Setup &t) {
  Communicator &c = *t.comm;
  const int r = c.rank();
  // Only the first two ranks: the others hold the id as non-members.
  auto some = c.createPartition({{1, 0}});
  MPI_TEST_CHECK(*t.mpi, some.isOk(), "a partition of ranks 1 and 0");
  MPI_TEST_CHECK(*t.mpi, c.isMember(*some) == (r < 2), "membership of %d", r);
  MPI_TEST_CHECK(*t.mpi,
                 c.groupRanks(*some) ==
                     (r < 2 ? std::vector<int>{1, 0} : std::vector<int>{}),
                 "the part of rank %d", r);
  std::vector<std::vector<int>> mine = {{0, 1}, {2, 3}};
  if (r == 0)
    mine = {{0, 2}, {1, 3}};
  auto differ = c.createPartition(mine);
  MPI_TEST_CHECK(
      *t.mpi,
      !differ.isOk() && differ.status().message().find(
                            "createPartition was called with different rank "
                            "lists on different ranks") != std::string::npos,
      "lists that differ between ranks: %s", differ.status().message().c_str());
  auto overlap = c.createPartition({{0, 1}, {1, 2}});
  MPI_TEST_CHECK(*t.mpi,
                 !overlap.isOk() && overlap.status().message().find(
                                        "listed twice") != std::string::npos,
                 "overlapping parts: %s", overlap.status().message().c_str());
}

template <typename T>
std::vector<T> integers(int rank, int64_t count, int salt) {
  std::vector<T> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    v[i] = static_cast<T>((rank + 1) * ((i + salt) % 7) + rank - 3);
  return v;
}

template <typename T> DType dtypeOf();
template <> DType dtypeOf<float>() { return DType::F32; }
template <> DType dtypeOf<double>() { return DType::F64; }

/// The two-level sum of integer values equals the flat one, exactly.
template <typename T> void checkExactSums(Setup &t, int64_t count) {
  Communicator &c = *t.comm;
  std::vector<T> twoLevel = integers<T>(c.rank(), count, 0);
  std::vector<T> flat = twoLevel;
  auto h = c.hierarchicalAllReduceStart(twoLevel.data(), count, dtypeOf<T>(),
                                        t.group);
  MPI_TEST_CHECK(*t.mpi, h.isOk(), "start: %s", h.status().message().c_str());
  MPI_TEST_OK(*t.mpi, c.wait(*h));
  auto f = c.allReduceStart(flat.data(), count, dtypeOf<T>(), t.group.whole);
  MPI_TEST_CHECK(*t.mpi, f.isOk(), "flat start");
  MPI_TEST_OK(*t.mpi, c.wait(*f));
  for (int64_t i = 0; i < count; ++i)
    MPI_TEST_CHECK(*t.mpi, twoLevel[i] == flat[i],
                   "%s count %lld: element %lld is %g, the flat sum %g",
                   dtypeName(dtypeOf<T>()), static_cast<long long>(count),
                   static_cast<long long>(i), double(twoLevel[i]),
                   double(flat[i]));
}

/// A sharded optimizer's weights gathered back (docs/data-parallel.md,
/// "Sharded optimizer"): every rank writes its shard of the bucket
/// (bitpipe::base::optimizerShard), the rest garbage; after an all-gather
/// over the whole group (flat), or one across the copies and one within the
/// copy (two levels), every rank holds every rank's values, exactly.
void checkShardGather(Setup &t, int64_t perShard, bool twoLevels) {
  Communicator &c = *t.comm;
  const int member = c.rank() % t.devices;
  const int64_t count =
      bitpipe::base::optimizerShards(t.devices, t.copies) * perShard;
  auto valueOf = [&](int rank, int64_t i) {
    return static_cast<float>(rank * 1000 + i % 997);
  };
  std::vector<float> buf(static_cast<size_t>(count), -1.0f);
  auto shardOf = [&](int rank) {
    return bitpipe::base::optimizerShard(count, t.devices, t.copies,
                                         rank % t.devices, rank / t.devices,
                                         twoLevels);
  };
  const bitpipe::base::OptimizerShard mine = shardOf(c.rank());
  for (int64_t i = mine.offset; i < mine.offset + mine.count; ++i)
    buf[i] = valueOf(c.rank(), i);
  auto gather = [&](float *at, int64_t n, GroupId g) {
    auto h = c.allGatherStart(at, n, DType::F32, g);
    MPI_TEST_CHECK(*t.mpi, h.isOk(), "allgather: %s",
                   h.status().message().c_str());
    MPI_TEST_OK(*t.mpi, c.wait(*h));
  };
  if (twoLevels) {
    // Member i's part of the copy, [i * s, (i + 1) * s), from its copies;
    // then the copy's members' parts.
    const int64_t s = count / t.devices;
    gather(buf.data() + member * s, mine.count, t.group.acrossCopies);
    gather(buf.data(), s, t.group.withinCopy);
  } else {
    gather(buf.data(), mine.count, t.group.whole);
  }
  for (int r = 0; r < c.size(); ++r) {
    const bitpipe::base::OptimizerShard theirs = shardOf(r);
    for (int64_t i = theirs.offset; i < theirs.offset + theirs.count; ++i)
      MPI_TEST_CHECK(*t.mpi, buf[i] == valueOf(r, i),
                     "%s gather: element %lld is %g, rank %d wrote %g",
                     twoLevels ? "two-level" : "flat",
                     static_cast<long long>(i), double(buf[i]), r,
                     double(valueOf(r, i)));
  }
}

/// A sharded optimizer's gradient sums: a reduce-scatter over the whole
/// group (flat), or one within the copy and one across the copies of the
/// member's part (two levels), leaves every rank the group's sum of its
/// own shard (bitpipe::base::optimizerShard), exactly (small integers).
void checkShardReduceScatter(Setup &t, int64_t perShard, bool twoLevels) {
  Communicator &c = *t.comm;
  const int member = c.rank() % t.devices, copy = c.rank() / t.devices;
  const int64_t count =
      bitpipe::base::optimizerShards(t.devices, t.copies) * perShard;
  std::vector<double> buf = integers<double>(c.rank(), count, 5);
  auto scatter = [&](double *at, int64_t n, GroupId g) {
    auto h = c.reduceScatterStart(at, n, DType::F64, g);
    MPI_TEST_CHECK(*t.mpi, h.isOk(), "reducescatter: %s",
                   h.status().message().c_str());
    MPI_TEST_OK(*t.mpi, c.wait(*h));
  };
  if (twoLevels) {
    const int64_t s = count / t.devices;
    scatter(buf.data(), s, t.group.withinCopy);
    scatter(buf.data() + member * s, s / t.copies, t.group.acrossCopies);
  } else {
    scatter(buf.data(), count / c.size(), t.group.whole);
  }
  const bitpipe::base::OptimizerShard mine = bitpipe::base::optimizerShard(
      count, t.devices, t.copies, member, copy, twoLevels);
  for (int64_t i = mine.offset; i < mine.offset + mine.count; ++i) {
    double sum = 0;
    for (int r = 0; r < c.size(); ++r)
      sum += integers<double>(r, count, 5)[i];
    MPI_TEST_CHECK(*t.mpi, buf[i] == sum,
                   "%s reduce-scatter: element %lld is %g, the sum %g",
                   twoLevels ? "two-level" : "flat", static_cast<long long>(i),
                   buf[i], sum);
  }
}

/// Random values: every rank the same bits, within rounding of the flat
/// sum.
void checkReplicasAgree(Setup &t, int64_t count) {
  Communicator &c = *t.comm;
  std::mt19937 gen(1234 + c.rank());
  std::uniform_real_distribution<float> draw(-1.0f, 1.0f);
  std::vector<float> twoLevel(static_cast<size_t>(count));
  for (float &x : twoLevel)
    x = draw(gen);
  std::vector<float> flat = twoLevel;
  auto h =
      c.hierarchicalAllReduceStart(twoLevel.data(), count, DType::F32, t.group);
  MPI_TEST_CHECK(*t.mpi, h.isOk(), "start");
  MPI_TEST_OK(*t.mpi, c.wait(*h));
  auto f = c.allReduceStart(flat.data(), count, DType::F32, t.group.whole);
  MPI_TEST_CHECK(*t.mpi, f.isOk(), "flat start");
  MPI_TEST_OK(*t.mpi, c.wait(*f));
  for (int64_t i = 0; i < count; ++i)
    MPI_TEST_CHECK(*t.mpi, std::fabs(twoLevel[i] - flat[i]) <= 1e-5f * c.size(),
                   "element %lld: %g, the flat sum %g",
                   static_cast<long long>(i), twoLevel[i], flat[i]);
  std::vector<std::string> all;
  MPI_TEST_OK(*t.mpi, c.gatherBytes(
                          std::string(reinterpret_cast<char *>(twoLevel.data()),
                                      twoLevel.size() * sizeof(float)),
                          0, &all));
  for (size_t r = 1; r < all.size(); ++r)
    MPI_TEST_CHECK(*t.mpi, all[r] == all[0],
                   "rank %zu's sum of %lld differs from rank 0's in its bits",
                   r, static_cast<long long>(count));
}

/// Three sums in flight with a flat one between them, waited for in
/// reverse order.
void checkSeveralInFlight(Setup &t) {
  Communicator &c = *t.comm;
  const int64_t counts[3] = {1000, 37, 4096 + 3};
  std::vector<std::vector<float>> bufs, want;
  for (int b = 0; b < 3; ++b) {
    bufs.push_back(integers<float>(c.rank(), counts[b], b));
    want.push_back(std::vector<float>(static_cast<size_t>(counts[b]), 0));
    for (int r = 0; r < c.size(); ++r) {
      std::vector<float> v = integers<float>(r, counts[b], b);
      for (int64_t i = 0; i < counts[b]; ++i)
        want[b][i] += v[i];
    }
  }
  std::vector<float> flat = integers<float>(c.rank(), 10, 5);
  std::vector<RequestHandle> handles;
  for (int b = 0; b < 3; ++b) {
    auto h = c.hierarchicalAllReduceStart(bufs[b].data(), counts[b], DType::F32,
                                          t.group);
    MPI_TEST_CHECK(*t.mpi, h.isOk(), "start of bucket %d", b);
    handles.push_back(*h);
    if (b == 0) {
      auto f = c.allReduceStart(flat.data(), 10, DType::F32, t.group.whole);
      MPI_TEST_CHECK(*t.mpi, f.isOk(), "flat start");
      handles.push_back(*f);
    }
  }
  for (size_t i = handles.size(); i-- > 0;)
    MPI_TEST_OK(*t.mpi, c.wait(handles[i]));
  for (int b = 0; b < 3; ++b)
    for (int64_t i = 0; i < counts[b]; ++i)
      MPI_TEST_CHECK(*t.mpi, bufs[b][i] == want[b][i],
                     "bucket %d element %lld: %g, expected %g", b,
                     static_cast<long long>(i), bufs[b][i], want[b][i]);
}

/// Rank 0 waits for a receive that rank 1 sends only after its sum ended:
/// rank 0's steps must move on while it waits for the receive.
void checkProgressWhileWaitingForAnother(Setup &t) {
  Communicator &c = *t.comm;
  const int r = c.rank();
  const int64_t count = 5000;
  std::vector<float> buf = integers<float>(r, count, 1);
  auto h = c.hierarchicalAllReduceStart(buf.data(), count, DType::F32, t.group);
  MPI_TEST_CHECK(*t.mpi, h.isOk(), "start");
  int32_t go = 7;
  if (r == 0) {
    auto got = c.recv(&go, 1, DType::I32, 1, 5);
    MPI_TEST_CHECK(*t.mpi, got.isOk(), "recv");
    MPI_TEST_OK(*t.mpi, c.wait(*got));
  }
  MPI_TEST_OK(*t.mpi, c.wait(*h));
  if (r == 1) {
    auto sent = c.send(&go, 1, DType::I32, 0, 5);
    MPI_TEST_CHECK(*t.mpi, sent.isOk(), "send");
    MPI_TEST_OK(*t.mpi, c.wait(*sent));
  }
}

void checkRefusals(Setup &t) {
  Communicator &c = *t.comm;
  float x[4] = {};
  // Ranks 2 and up are in no part of this partition: they must not sum
  // through it (ranks 0 and 1 do not try).
  auto pair = c.createPartition({{0, 1}});
  MPI_TEST_CHECK(*t.mpi, pair.isOk(), "a partition of 0 and 1");
  if (c.rank() >= 2) {
    TwoLevelGroup foreign = t.group;
    foreign.withinCopy = *pair;
    auto bad = c.hierarchicalAllReduceStart(x, 4, DType::F32, foreign);
    MPI_TEST_CHECK(*t.mpi,
                   !bad.isOk() && bad.status().message().find(
                                      "which does not contain this rank") !=
                                      std::string::npos,
                   "a sum on a group without rank %d: %s", c.rank(),
                   bad.status().message().c_str());
  }
  // MPI moves bf16 as raw bits, which it cannot sum.
  if (!t.nccl) {
    auto bf = c.hierarchicalAllReduceStart(x, 4, DType::BF16, t.group);
    MPI_TEST_CHECK(*t.mpi, !bf.isOk(), "an MPI sum of bf16 was started");
  }
}

/// stall COUNT (the file comment).
void stall(Setup &t, int64_t count, const std::string &op) {
  Communicator &c = *t.comm;
  const int r = c.rank();
  std::vector<float> buf(static_cast<size_t>(count), 1.0f);
  if (r == c.size() - 1) {
    std::this_thread::sleep_for(std::chrono::seconds(40));
    return;
  }
  // A sharded optimizer's reduce-scatter and all-gather over the whole
  // group, COUNT elements a member.
  const int64_t whole = count * c.size();
  if (op != "stall")
    buf.resize(static_cast<size_t>(whole), 1.0f);
  auto h =
      op == "stall-reduce-scatter"
          ? c.reduceScatterStart(buf.data(), count, DType::F32, t.group.whole)
      : op == "stall-all-gather"
          ? c.allGatherStart(buf.data(), count, DType::F32, t.group.whole)
          : c.hierarchicalAllReduceStart(buf.data(), count, DType::F32,
                                         t.group);
  MPI_TEST_CHECK(*t.mpi, h.isOk(), "start");
  Status s = c.waitFor(*h, r == 1 ? 2.0 : 30.0);
  t.mpi->abort(s.code() == ErrorCode::Timeout ? 3 : 6,
               "the stalled sum ended: " + s.message());
}

} // namespace

int main(int argc, char **argv) {
  Setup t;
  t.mpi = startMpi(&argc, &argv);
  MpiCommunicator &mpi = *t.mpi;
  MPI_TEST_CHECK(mpi, argc >= 3,
                 "usage: %s mpi|nccl-strict|nccl-loose D "
                 "[stall COUNT]",
                 argv[0]);
  const std::string transport = argv[1];
  t.devices = std::atoi(argv[2]);
  MPI_TEST_CHECK(mpi,
                 t.devices >= 2 && mpi.size() % t.devices == 0 &&
                     mpi.size() / t.devices >= 2,
                 "%d ranks are not 2 or more copies of %d pipeline ranks",
                 mpi.size(), t.devices);
  t.copies = mpi.size() / t.devices;
  t.comm = &mpi;
  if (transport != "mpi") {
    MPI_TEST_CHECK(mpi, transport == "nccl-strict" || transport == "nccl-loose",
                   "unknown transport %s", transport.c_str());
    auto nccl = NcclCommunicator::create(
        mpi,
        createHostNcclCalls(transport == "nccl-strict" ? HostNcclRules::Strict
                                                       : HostNcclRules::Loose));
    MPI_TEST_CHECK(mpi, nccl.isOk(), "%s", nccl.status().message().c_str());
    t.nccl = nccl.take();
    t.comm = t.nccl.get();
  }
  makeGroups(t);
  if (argc >= 5 && std::strncmp(argv[3], "stall", 5) == 0) {
    stall(t, std::atoll(argv[4]), argv[3]);
    return 0;
  }
  // Rank 0's receive from rank 1 (checkProgressWhileWaitingForAnother).
  MPI_TEST_OK(mpi, t.comm->openChannels(TransferStreams::Shared, {{1, 0}}));
  checkPartitions(t);
  const int parts = t.devices;
  for (int64_t count : {int64_t(0), int64_t(1), int64_t(parts - 1),
                        int64_t(parts) * 5, int64_t(parts) * 5 + 1,
                        int64_t(parts) * 5 + parts - 1, int64_t(1) << 16}) {
    checkExactSums<float>(t, count);
    checkExactSums<double>(t, count);
  }
  for (bool twoLevels : {false, true})
    for (int64_t perShard : {int64_t(1), int64_t(37)}) {
      checkShardReduceScatter(t, perShard, twoLevels);
      checkShardGather(t, perShard, twoLevels);
    }
  checkReplicasAgree(t, 1 << 12);
  checkReplicasAgree(t, parts * 100 + 1);
  checkSeveralInFlight(t);
  checkProgressWhileWaitingForAnother(t);
  checkRefusals(t);
  MPI_TEST_OK(mpi, t.comm->barrier(kWorldGroup));
  const size_t pending = t.nccl ? t.nccl->numPending() : t.mpi->numPending();
  MPI_TEST_CHECK(mpi, pending == 0, "%zu requests leaked", pending);
  if (mpi.rank() == 0)
    std::printf("two-level sums over %s, %d copies of %d pipeline ranks: OK\n",
                transport.c_str(), t.copies, t.devices);
  return 0;
}
