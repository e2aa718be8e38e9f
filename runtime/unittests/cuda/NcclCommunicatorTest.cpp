//===- NcclCommunicatorTest.cpp - The NCCL communicator on GPUs -----------===//
//
// Runs under mpirun (-np 2 and -np 4; ranks may share one GPU: the
// placement gives them NCCL_HOSTIDs, docs/runtime-abi.md). Every rank runs
// the same tests in the same order, since each is collective. Without a
// device every rank skips every test (all ranks agree first, so none waits
// for another). The bookkeeping is tested without a GPU in
// runtime/unittests/exec/NcclCommunicatorLogicTest.cpp; here the real
// calls, on two communicators of the world: one with a communicator and
// stream per channel ("channel" transfer streams: a ring, and each even
// rank's pair with the next odd one, both ways), one on the world's
// ("shared", the same channels). Checked: point-to-point transfers ordered
// after the compute stream's producer on both, crossed transfers in one
// batch ("shared"), crossed batches of large transfers on the channels'
// own streams ("channel"; on one stream they would deadlock), all-reduces
// over split groups, transfers and an all-reduce captured into a CUDA
// graph (--cuda-graphs' protocol: the streams forked into the capture and
// joined back) and launched again on new data, two-level sums over
// partitions (eagerly and in a graph), and the timeout on a peer that
// never sends.
//
// bench/gpu/check.sh runs it on a GPU, under mpirun -np 2 and -np 4.
//
//===----------------------------------------------------------------------===//

#include "comm/mpi/MpiCommunicator.h"
#include "comm/nccl/CudaNcclCalls.h"
#include "comm/nccl/DevicePlacement.h"
#include "comm/nccl/NcclCommunicator.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <memory>
#include <set>
#include <vector>

using namespace bitpipe::runtime;

namespace {

struct World {
  std::unique_ptr<MpiCommunicator> mpi;
  bool hasDevice = false;
  std::string skipReason = "no CUDA device";
  cudaStream_t compute = nullptr;
  /// "channel" and "shared" transfer streams over the same channels.
  std::unique_ptr<NcclCommunicator> channel, shared;
};
World *world = nullptr;

/// The channels of the tests, as openChannels takes them: the ring r ->
/// r + 1, and every pair {2k, 2k + 1} both ways.
std::vector<Channel> testChannels(int n) {
  std::set<Channel> all;
  for (int r = 0; r < n; ++r) {
    all.insert({r, (r + 1) % n});
    if ((r ^ 1) < n)
      all.insert({r, r ^ 1});
  }
  return std::vector<Channel>(all.begin(), all.end());
}

/// A communicator of the world with the tests' channels opened as
/// \p streams say; null (after a message) on failure.
std::unique_ptr<NcclCommunicator> openWorld(TransferStreams streams) {
  auto calls = createCudaNcclCalls(world->compute);
  if (!calls.isOk()) {
    std::fprintf(stderr, "%s\n", calls.status().message().c_str());
    return nullptr;
  }
  auto made = NcclCommunicator::create(*world->mpi, calls.take());
  if (!made.isOk()) {
    std::fprintf(stderr, "%s\n", made.status().message().c_str());
    return nullptr;
  }
  std::unique_ptr<NcclCommunicator> c = made.take();
  c->setTimeout(60);
  Status opened = c->openChannels(streams, testChannels(c->size()));
  if (!opened.isOk()) {
    std::fprintf(stderr, "%s\n", opened.message().c_str());
    return nullptr;
  }
  return c;
}

/// A device buffer of \p n elements of T, freed at scope end.
template <typename T> struct DeviceArray {
  T *data = nullptr;
  size_t n;
  explicit DeviceArray(size_t n) : n(n) {
    EXPECT_EQ(cudaMalloc(&data, n * sizeof(T)), cudaSuccess);
  }
  ~DeviceArray() { (void)cudaFree(data); }
  /// Writes \p host on the compute stream: the "producer" a send must wait
  /// for.
  void upload(const std::vector<T> &host) {
    ASSERT_EQ(cudaMemcpyAsync(data, host.data(), n * sizeof(T),
                              cudaMemcpyHostToDevice, world->compute),
              cudaSuccess);
  }
  /// Reads back on the compute stream, after what \p c told it to wait
  /// for.
  std::vector<T> download(NcclCommunicator &c) {
    std::vector<T> host(n);
    EXPECT_EQ(cudaMemcpyAsync(host.data(), data, n * sizeof(T),
                              cudaMemcpyDeviceToHost, world->compute),
              cudaSuccess);
    EXPECT_TRUE(c.drainDeviceWaits().isOk());
    EXPECT_EQ(cudaStreamSynchronize(world->compute), cudaSuccess);
    return host;
  }
};

#define REQUIRE_WORLD()                                                        \
  do {                                                                         \
    if (!world->hasDevice)                                                     \
      GTEST_SKIP() << world->skipReason;                                       \
    ASSERT_GE(world->mpi->size(), 2) << "run under mpirun -np 2 or more";      \
  } while (0)

/// Each rank sends to the next and receives from the previous one: in one
/// batch on the world's communicator ("shared"), in a batch per channel
/// otherwise.
void ringTransfersFollowTheirProducer(NcclCommunicator &c, bool oneBatch) {
  const int r = c.rank(), n = c.size();
  const size_t count = 1 << 20; // large enough to outrun a racing read
  DeviceArray<float> out(count), in(count);
  std::vector<float> mine(count);
  for (size_t i = 0; i < count; ++i)
    mine[i] = static_cast<float>(r * 1000003 + i);
  out.upload(mine);
  auto s = c.send(out.data, count, DType::F32, (r + 1) % n, 1);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  if (!oneBatch) {
    ASSERT_TRUE(c.endBatch().isOk());
  }
  auto v = c.recv(in.data, count, DType::F32, (r + n - 1) % n, 1);
  ASSERT_TRUE(v.isOk()) << v.status().message();
  ASSERT_TRUE(c.endBatch().isOk());
  ASSERT_TRUE(c.waitOnDevice(*v).isOk());
  std::vector<float> got = in.download(c);
  const int from = (r + n - 1) % n;
  for (size_t i = 0; i < count; i += 4099)
    ASSERT_EQ(got[i], static_cast<float>(from * 1000003 + i)) << "at " << i;
  ASSERT_TRUE(c.wait(*s).isOk());
  EXPECT_EQ(c.numPending(), 0u);
}

TEST(NcclCommunicator, RingTransfersFollowTheirProducer) {
  REQUIRE_WORLD();
  ringTransfersFollowTheirProducer(*world->channel, false);
  ringTransfersFollowTheirProducer(*world->shared, true);
}

TEST(NcclCommunicator, CrossedTransfersOfOneBatchDoNotDeadlock) {
  REQUIRE_WORLD();
  NcclCommunicator &c = *world->shared;
  const int r = c.rank();
  const int partner = r ^ 1;
  if (partner >= c.size()) {
    ASSERT_TRUE(c.barrier(kWorldGroup).isOk()); // an odd rank out
    return;
  }
  // Both ends send first, then receive, two messages each way, bf16 and
  // i32: only one group around all four lets them through.
  const size_t count = 4096;
  DeviceArray<__nv_bfloat16> aOut(count), aIn(count);
  DeviceArray<int32_t> bOut(count), bIn(count);
  std::vector<__nv_bfloat16> a(count);
  std::vector<int32_t> b(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = __float2bfloat16(static_cast<float>(r + 1) * (i % 64));
    b[i] = r * 100000 + static_cast<int32_t>(i);
  }
  aOut.upload(a);
  bOut.upload(b);
  auto s1 = c.send(aOut.data, count, DType::BF16, partner, 1);
  auto s2 = c.send(bOut.data, count, DType::I32, partner, 2);
  auto r1 = c.recv(aIn.data, count, DType::BF16, partner, 1);
  auto r2 = c.recv(bIn.data, count, DType::I32, partner, 2);
  ASSERT_TRUE(s1.isOk() && s2.isOk() && r1.isOk() && r2.isOk());
  ASSERT_TRUE(c.endBatch().isOk());
  ASSERT_TRUE(c.waitOnDevice(*r1).isOk());
  ASSERT_TRUE(c.waitOnDevice(*r2).isOk());
  std::vector<__nv_bfloat16> gotA = aIn.download(c);
  std::vector<int32_t> gotB = bIn.download(c);
  for (size_t i = 0; i < count; ++i) {
    ASSERT_EQ(__bfloat162float(gotA[i]),
              static_cast<float>(partner + 1) * (i % 64));
    ASSERT_EQ(gotB[i], partner * 100000 + static_cast<int32_t>(i));
  }
  ASSERT_TRUE(c.wait(*s1).isOk());
  ASSERT_TRUE(c.wait(*s2).isOk());
  ASSERT_TRUE(c.barrier(kWorldGroup).isOk());
}

TEST(NcclCommunicator, CrossedBatchesOnTheirChannelsDoNotDeadlock) {
  REQUIRE_WORLD();
  NcclCommunicator &c = *world->channel;
  const int r = c.rank();
  const int partner = r ^ 1;
  if (partner >= c.size()) {
    ASSERT_TRUE(c.barrier(kWorldGroup).isOk()); // an odd rank out
    return;
  }
  // Both ends send in one batch, then receive in the next: far beyond
  // NCCL's buffers, each send completes only once its receive is posted.
  // On one stream per rank that is a deadlock; each channel's own stream
  // lets both through.
  const size_t count = 4 << 20; // 16 MiB each
  DeviceArray<float> out1(count), out2(count), in1(count), in2(count);
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i)
    v[i] = static_cast<float>(r * 7 + static_cast<int>(i % 1021));
  out1.upload(v);
  out2.upload(v);
  auto s1 = c.send(out1.data, count, DType::F32, partner, 1);
  auto s2 = c.send(out2.data, count, DType::F32, partner, 2);
  ASSERT_TRUE(s1.isOk() && s2.isOk());
  ASSERT_TRUE(c.endBatch().isOk());
  auto r1 = c.recv(in1.data, count, DType::F32, partner, 1);
  auto r2 = c.recv(in2.data, count, DType::F32, partner, 2);
  ASSERT_TRUE(r1.isOk() && r2.isOk());
  ASSERT_TRUE(c.endBatch().isOk());
  ASSERT_TRUE(c.waitOnDevice(*r1).isOk());
  ASSERT_TRUE(c.waitOnDevice(*r2).isOk());
  std::vector<float> got1 = in1.download(c), got2 = in2.download(c);
  for (size_t i = 0; i < count; i += 4093) {
    const float want = static_cast<float>(partner * 7 +
                                          static_cast<int>(i % 1021));
    ASSERT_EQ(got1[i], want) << "at " << i;
    ASSERT_EQ(got2[i], want) << "at " << i;
  }
  ASSERT_TRUE(c.wait(*s1).isOk());
  ASSERT_TRUE(c.wait(*s2).isOk());
  ASSERT_TRUE(c.barrier(kWorldGroup).isOk());
}

TEST(NcclCommunicator, AllReducesSumOverTheirGroups) {
  REQUIRE_WORLD();
  NcclCommunicator &c = *world->channel;
  const int r = c.rank(), n = c.size();
  // Evens in descending order (group rank 0 is the highest even), odds.
  std::vector<int> evens, odds;
  for (int k = n - 1; k >= 0; --k)
    if (k % 2 == 0)
      evens.push_back(k);
  for (int k = 1; k < n; k += 2)
    odds.push_back(k);
  auto ge = c.createGroup(evens);
  auto go = c.createGroup(odds);
  ASSERT_TRUE(ge.isOk() && go.isOk());
  GroupId mine = r % 2 == 0 ? *ge : *go;
  EXPECT_TRUE(c.isMember(mine));
  EXPECT_FALSE(c.isMember(r % 2 == 0 ? *go : *ge));

  const size_t count = 3 << 18;
  DeviceArray<float> grads(count);
  std::vector<float> g(count);
  for (size_t i = 0; i < count; ++i)
    g[i] = static_cast<float>(r + 1) + static_cast<float>(i % 7);
  grads.upload(g);
  auto h = c.allReduceStart(grads.data, count, DType::F32, mine);
  ASSERT_TRUE(h.isOk());
  // The world too, in f64, on the same stream after it.
  DeviceArray<double> one(1);
  one.upload({static_cast<double>(r + 1)});
  auto w = c.allReduceStart(one.data, 1, DType::F64, kWorldGroup);
  ASSERT_TRUE(w.isOk());
  ASSERT_TRUE(c.waitOnDevice(*h).isOk());
  ASSERT_TRUE(c.waitOnDevice(*w).isOk());
  std::vector<float> sum = grads.download(c);
  std::vector<double> total = one.download(c);
  float rankSum = 0;
  for (int k : (r % 2 == 0 ? evens : odds))
    rankSum += static_cast<float>(k + 1);
  const float members = static_cast<float>((r % 2 == 0 ? evens : odds).size());
  for (size_t i = 0; i < count; i += 997)
    ASSERT_EQ(sum[i], rankSum + members * static_cast<float>(i % 7));
  EXPECT_EQ(total[0], n * (n + 1) / 2.0);
}

// What --cuda-graphs does with a step's NCCL operations
// (cuda/backend/StepGraph.h): captured from the compute stream, their
// streams forked into the capture by the events they wait for and joined
// back by endCapture, then the graph launched three times on data written
// before each launch, every launch a device wait of the communicator.
TEST(NcclCommunicator, TransfersCapturedIntoAGraphRunAgainOnNewData) {
  REQUIRE_WORLD();
  NcclCommunicator &c = *world->channel;
  const int r = c.rank(), n = c.size();
  const int next = (r + 1) % n, from = (r + n - 1) % n;
  const size_t count = 1 << 16;
  DeviceArray<float> out(count), in(count), sum(count);
  ASSERT_TRUE(c.beginCapture().isOk());
  ASSERT_EQ(
      cudaStreamBeginCapture(world->compute, cudaStreamCaptureModeThreadLocal),
      cudaSuccess);
  auto s = c.send(out.data, count, DType::F32, next, 1);
  ASSERT_TRUE(s.isOk()) << s.status().message();
  ASSERT_TRUE(c.endBatch().isOk());
  auto v = c.recv(in.data, count, DType::F32, from, 1);
  ASSERT_TRUE(v.isOk()) << v.status().message();
  ASSERT_TRUE(c.endBatch().isOk());
  ASSERT_TRUE(c.waitOnDevice(*v).isOk());
  auto a = c.allReduceStart(sum.data, count, DType::F32, kWorldGroup);
  ASSERT_TRUE(a.isOk()) << a.status().message();
  ASSERT_TRUE(c.waitOnDevice(*a).isOk());
  Status joined = c.endCapture();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(world->compute, &graph), cudaSuccess);
  ASSERT_TRUE(joined.isOk()) << joined.message();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  for (int launch = 0; launch < 3; ++launch) {
    std::vector<float> mine(count), part(count);
    for (size_t i = 0; i < count; ++i) {
      mine[i] = static_cast<float>(r * 1000 + launch * 7 + i % 101);
      part[i] = static_cast<float>(r + launch);
    }
    out.upload(mine);
    sum.upload(part);
    ASSERT_EQ(cudaGraphLaunch(exec, world->compute), cudaSuccess);
    ASSERT_TRUE(c.graphLaunched("the test's graph").isOk());
    if (launch == 0) {
      // Recorded in the capture: done when its launch is.
      ASSERT_TRUE(c.wait(*s).isOk());
    }
    std::vector<float> got = in.download(c), total = sum.download(c);
    const float want = static_cast<float>(n * (n - 1) / 2 + n * launch);
    for (size_t i = 0; i < count; i += 997) {
      ASSERT_EQ(got[i], static_cast<float>(from * 1000 + launch * 7 + i % 101))
          << "launch " << launch << " at " << i;
      ASSERT_EQ(total[i], want) << "launch " << launch << " at " << i;
    }
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(c.numPending(), 0u);
  EXPECT_EQ(c.numDeviceWaits(), 0u);
}

// A two-level sum (docs/data-parallel.md, "Two levels") over the world as
// n / 2 copies of 2 pipeline ranks: the copies' partition {2c, 2c + 1},
// the pipeline ranks' {p, p + 2, ...}. Small integers, so that every sum
// is exact: equal to the flat all-reduce's on every rank. Eagerly, then
// captured into a graph (three streams forked into the capture by its
// events and joined back) and launched twice on new data.
TEST(NcclCommunicator, TwoLevelSumsEqualTheFlatSumEagerlyAndInAGraph) {
  REQUIRE_WORLD();
  NcclCommunicator &c = *world->channel;
  const int r = c.rank(), n = c.size();
  ASSERT_EQ(n % 2, 0) << "two pipeline ranks per copy";
  std::vector<int> all;
  std::vector<std::vector<int>> copies, pipeline(2);
  for (int k = 0; k < n; ++k) {
    all.push_back(k);
    if (k % 2 == 0)
      copies.push_back({k, k + 1});
    pipeline[k % 2].push_back(k);
  }
  auto whole = c.createGroup(all);
  auto within = c.createPartition(copies);
  auto across = c.createPartition(pipeline);
  ASSERT_TRUE(whole.isOk() && within.isOk() && across.isOk());
  const TwoLevelGroup group{*whole, *within, *across};
  EXPECT_EQ(c.groupRanks(*within), copies[r / 2]);
  EXPECT_EQ(c.groupRanks(*across), pipeline[r % 2]);

  // Two shards of 3 << 17 and a tail of 1.
  const size_t count = (3 << 18) + 1;
  DeviceArray<float> sum(count);
  auto values = [&](int rank, int round) {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i)
      v[i] = static_cast<float>((rank + 1) * (round + 1) + i % 7);
    return v;
  };
  auto check = [&](int round) {
    std::vector<float> got = sum.download(c);
    auto expectAt = [&](size_t i) {
      float want = 0;
      for (int k = 0; k < n; ++k)
        want += static_cast<float>((k + 1) * (round + 1) + i % 7);
      EXPECT_EQ(got[i], want) << "round " << round << " at " << i;
    };
    for (size_t i = 0; i < count; i += 997)
      expectAt(i);
    expectAt(count - 1); // the tail
  };
  sum.upload(values(r, 0));
  auto h = c.hierarchicalAllReduceStart(sum.data, count, DType::F32, group);
  ASSERT_TRUE(h.isOk()) << h.status().message();
  ASSERT_TRUE(c.waitOnDevice(*h).isOk());
  check(0);

  ASSERT_TRUE(c.beginCapture().isOk());
  ASSERT_EQ(
      cudaStreamBeginCapture(world->compute, cudaStreamCaptureModeThreadLocal),
      cudaSuccess);
  auto g = c.hierarchicalAllReduceStart(sum.data, count, DType::F32, group);
  ASSERT_TRUE(g.isOk()) << g.status().message();
  ASSERT_TRUE(c.waitOnDevice(*g).isOk());
  Status joined = c.endCapture();
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(world->compute, &graph), cudaSuccess);
  ASSERT_TRUE(joined.isOk()) << joined.message();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphDestroy(graph), cudaSuccess);
  for (int round = 1; round <= 2; ++round) {
    sum.upload(values(r, round));
    ASSERT_EQ(cudaGraphLaunch(exec, world->compute), cudaSuccess);
    ASSERT_TRUE(c.graphLaunched("the test's graph").isOk());
    check(round);
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(c.numPending(), 0u);
  EXPECT_EQ(c.numDeviceWaits(), 0u);
}

// Last: it aborts the communicator it times out on (a second one, so that
// the world's stays usable for nothing else to hang on).
TEST(NcclCommunicator, APeerThatNeverSendsIsATimeoutNamingIt) {
  REQUIRE_WORLD();
  auto calls = createCudaNcclCalls(world->compute);
  ASSERT_TRUE(calls.isOk()) << calls.status().message();
  auto made = NcclCommunicator::create(*world->mpi, calls.take());
  ASSERT_TRUE(made.isOk()) << made.status().message();
  std::unique_ptr<NcclCommunicator> c = made.take();
  ASSERT_TRUE(c->openChannels(TransferStreams::Channel, {{1, 0}}).isOk());
  if (c->rank() == 0) {
    // Never freed: cudaFree waits for the device, and the aborted receive
    // is the one thing that must not be waited for.
    float *in = nullptr;
    ASSERT_EQ(cudaMalloc(&in, 16 * sizeof(float)), cudaSuccess);
    auto v = c->recv(in, 16, DType::F32, 1, 77);
    ASSERT_TRUE(v.isOk());
    auto start = std::chrono::steady_clock::now();
    Status s = c->waitFor(*v, 2.0);
    double seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
    EXPECT_EQ(s.code(), ErrorCode::Timeout);
    EXPECT_NE(s.message().find("rank 0: timeout after 2.0 s waiting for recv "
                               "with rank 1 (tag 77"),
              std::string::npos)
        << s.message();
    EXPECT_LT(seconds, 10.0);
  }
  ASSERT_TRUE(world->mpi->barrier(kWorldGroup).isOk());
  // Rank 0's is aborted; the others' still expect its rank 0: finalising
  // them could wait for it, so they stay until the process ends.
  if (c->rank() != 0)
    (void)c.release();
}

} // namespace

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto mpi = MpiCommunicator::create(&argc, &argv);
  if (!mpi.isOk()) {
    std::fprintf(stderr, "%s\n", mpi.status().message().c_str());
    return 1;
  }
  World w;
  w.mpi = mpi.take();
  world = &w;
  // Every rank decides alike: a device on all of them, or skip everywhere.
  int devices = 0;
  int32_t mineOk = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  int32_t allOk = mineOk;
  auto agreed = w.mpi->allReduceStart(&allOk, 1, DType::I32, kWorldGroup);
  if (!agreed.isOk() || !w.mpi->wait(*agreed).isOk())
    return 1;
  w.hasDevice = allOk == w.mpi->size();
  if (w.hasDevice && w.mpi->size() > 1) {
    auto placed = placeRankOnDevice(w.mpi->rank());
    if (!placed.isOk()) {
      std::fprintf(stderr, "%s\n", placed.status().message().c_str());
      return 1;
    }
    if (cudaStreamCreateWithFlags(&w.compute, cudaStreamNonBlocking) !=
        cudaSuccess)
      return 1;
    w.channel = openWorld(TransferStreams::Channel);
    w.shared = openWorld(TransferStreams::Shared);
    if (!w.channel || !w.shared)
      return 1;
  } else if (w.hasDevice) {
    w.hasDevice = false; // one rank: nothing to transfer
    w.skipReason = "one rank: run under mpirun -np 2 or more";
  }
  int rc = RUN_ALL_TESTS();
  w.channel.reset(); // before MPI goes
  w.shared.reset();
  return rc;
}
