//===- MpiAllReduceTest.cpp - Non-blocking all-reduce over subgroups ------===//
//
// Four ranks; groups {0, 3} and {1, 2} are BitPipe's replica partners for
// D = 4 (rank r and D-1-r hold the same stages). Each rank starts two
// all-reduces (two gradient buckets) on its partner group, computes while
// they are in flight, and then waits in the opposite order. Sums are
// checked exactly (small integers in f32).
//
// Overlap is shown by the order of events, not by timing (4 ranks on 2
// cores make times meaningless). In each pair the lower rank, the leader,
// starts its all-reduces and only then tells its partner to start: so
// allReduceStart returned before the partner had contributed anything, and
// test() right after it must say "not done". Both ranks then compute in
// chunks and call test() between chunks, as the runtime does between
// micro-batches, until test() reports the large all-reduce complete: it
// finished while the ranks were computing, without a blocking wait.
//
//===----------------------------------------------------------------------===//

#include "MpiTestUtil.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <vector>

using namespace bitpipe::runtime;

int main(int argc, char **argv) {
  auto comm = startMpi(&argc, &argv);
  Communicator &c = *comm;
  int r = c.rank();
  MPI_TEST_CHECK(c, c.size() == 4, "needs 4 ranks, got %d", c.size());

  // Collective creation: every rank, same lists, same order.
  auto g03 = c.createGroup({0, 3});
  auto g12 = c.createGroup({1, 2});
  MPI_TEST_CHECK(c, g03.isOk() && g12.isOk(), "createGroup failed");
  GroupId mine = (r == 0 || r == 3) ? *g03 : *g12;
  GroupId other = mine == *g03 ? *g12 : *g03;
  MPI_TEST_CHECK(c, c.isMember(mine) && !c.isMember(other),
                 "membership wrong");
  int partner = 3 - r;

  const int64_t n1 = 1 << 18, n2 = 1000;
  std::vector<float> bucket1(n1), bucket2(n2);
  for (int64_t i = 0; i < n1; ++i)
    bucket1[i] = float(r + 1) * float(i % 100);
  for (int64_t i = 0; i < n2; ++i)
    bucket2[i] = float(r * 10 + i % 3);
  // The leader starts first; its partner starts only when told to.
  const bool leader = r < partner;
  const int kGoTag = 77;
  int32_t go = 1;
  if (!leader) {
    auto got = c.recv(&go, 1, DType::I32, partner, kGoTag);
    MPI_TEST_CHECK(c, got.isOk(), "recv of go failed");
    MPI_TEST_OK(c, c.wait(*got));
  }
  auto h1 = c.allReduceStart(bucket1.data(), n1, DType::F32, mine);
  auto h2 = c.allReduceStart(bucket2.data(), n2, DType::F32, mine);
  MPI_TEST_CHECK(c, h1.isOk() && h2.isOk(), "allReduceStart failed");
  if (leader) {
    // The partner has not started: the sum cannot be there yet, and the
    // start did not wait for it.
    auto early = c.test(*h1);
    MPI_TEST_CHECK(c, early.isOk() && !*early,
                   "all-reduce complete before the partner joined");
    auto sent = c.send(&go, 1, DType::I32, partner, kGoTag);
    MPI_TEST_CHECK(c, sent.isOk(), "send of go failed");
    MPI_TEST_OK(c, c.wait(*sent));
  }

  // Local work while the reductions run (the backward of the next
  // micro-batch, in the real program), polling to drive MPI's progress,
  // until the large one is reported done. The deadline only turns a hang
  // into a failure.
  double acc = 0;
  int chunks = 0;
  bool done = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done && std::chrono::steady_clock::now() < deadline) {
    for (int j = 0; j < 2000; ++j)
      acc += std::sin(0.001 * (chunks * 2000 + j));
    ++chunks;
    auto polled = c.test(*h1);
    MPI_TEST_CHECK(c, polled.isOk(), "test failed");
    done = *polled;
  }
  MPI_TEST_CHECK(c, done, "all-reduce not complete after %d chunks of compute",
                 chunks);
  double expectAcc = 0;
  for (int i = 0; i < chunks * 2000; ++i)
    expectAcc += std::sin(0.001 * i);
  MPI_TEST_CHECK(c, acc == expectAcc, "local computation disturbed");

  MPI_TEST_OK(c, c.allReduceWait(*h2));
  MPI_TEST_OK(c, c.allReduceWait(*h1));
  for (int64_t i = 0; i < n1; ++i)
    MPI_TEST_CHECK(c, bucket1[i] == float(r + partner + 2) * float(i % 100),
                   "bucket1[%lld] = %g", (long long)i, bucket1[i]);
  for (int64_t i = 0; i < n2; ++i)
    MPI_TEST_CHECK(c, bucket2[i] == float((r + partner) * 10 + 2 * (i % 3)),
                   "bucket2[%lld] = %g", (long long)i, bucket2[i]);

  // A rank outside a group cannot reduce on it; bf16 sums are refused.
  auto bad = c.allReduceStart(bucket2.data(), n2, DType::F32, other);
  MPI_TEST_CHECK(c, !bad.isOk() && bad.status().code() ==
                                       ErrorCode::InvalidArgument,
                 "reduce on a foreign group accepted");
  auto bf = c.allReduceStart(bucket2.data(), 2, DType::BF16, mine);
  MPI_TEST_CHECK(c, !bf.isOk(), "bf16 all-reduce accepted");

  // The whole world too (data-parallel sum of a scalar loss).
  float loss = float(r);
  auto hw = c.allReduceStart(&loss, 1, DType::F32, kWorldGroup);
  MPI_TEST_CHECK(c, hw.isOk(), "world allreduce");
  MPI_TEST_OK(c, c.wait(*hw));
  MPI_TEST_CHECK(c, loss == 6.0f, "world sum %g", loss);
  MPI_TEST_CHECK(c, comm->numPending() == 0, "requests leaked");
  if (r == 0)
    std::printf("all-reduce over partner groups, done after %d chunks of "
                "compute: OK\n",
                chunks);
  return 0;
}
