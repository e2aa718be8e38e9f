//===- CudaMemoryTest.cpp - The device memory pool -----------------------===//
//
// bp_cuda_alloc / bp_cuda_free: freed memory serves later requests on the
// same stream (and only on that stream) without growing what the pool holds
// from CUDA; the kernels' scratch buffers go back to the pool; what
// --cuda-graphs asks of it: a serial number per hand-out, the record of
// hand-outs, the held blocks, who has a range of memory, and a segment
// missing inside a capture coming from outside the graph, the capture
// still valid. The pool is process-wide, so every check is on differences
// of bp_cuda_memory_stats. How blocks are split and merged is
// BlockPoolTest's (on the CPU).
//
// Skipped without a device, except what never reaches CUDA;
// bench/gpu/check.sh runs these tests on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include <cuda_runtime.h>

#include <vector>

using namespace bitpipe::runtime::test;

namespace {

struct Stats {
  int64_t inUse, peak, reserved;
};

Stats stats() {
  Stats s;
  bp_cuda_memory_stats(&s.inUse, &s.peak, &s.reserved);
  return s;
}

using CudaMemory = CudaTest;

TEST_F(CudaMemory, ReusesFreedMemory) {
  void *p = bp_cuda_alloc(1000, stream());
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  bp_cuda_free(p, stream());
  const Stats before = stats();
  // 1001 bytes round to 1024, which the freed memory holds.
  void *q = bp_cuda_alloc(1001, stream());
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(q) % 256, 0u);
  const Stats during = stats();
  EXPECT_EQ(during.reserved, before.reserved) << "no new cudaMalloc";
  EXPECT_EQ(during.inUse, before.inUse + 1024);
  EXPECT_GE(during.peak, during.inUse);
  bp_cuda_free(q, stream());
  EXPECT_EQ(stats().inUse, before.inUse);
}

TEST_F(CudaMemory, RequestsRoundTo512Bytes) {
  const Stats before = stats();
  void *p = bp_cuda_alloc((1 << 20) + 1, stream());
  ASSERT_NE(p, nullptr);
  // 1 MiB + 512 B, plus the rest of the free block it came from when that
  // rest is too small to split off (1 MiB or less for a large block; the
  // process-wide pool may hold such a block from an earlier test).
  const int64_t handedOut = stats().inUse - before.inUse;
  EXPECT_GE(handedOut, (1 << 20) + 512);
  EXPECT_LE(handedOut, (2 << 20) + 512);
  EXPECT_EQ(handedOut % 512, 0);
  bp_cuda_free(p, stream());
}

TEST_F(CudaMemory, BlocksAreReusedOnlyOnTheStreamThatFreedThem) {
  cudaStream_t other = nullptr;
  BP_CUDA_OK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  const int64_t bytes = 3 * 4096 + 512;
  auto *p = static_cast<char *>(bp_cuda_alloc(bytes, stream()));
  ASSERT_NE(p, nullptr);
  bp_cuda_free(p, stream());
  // Work queued on `stream` may still use p: another stream must not get
  // any of its bytes.
  auto *q = static_cast<char *>(bp_cuda_alloc(bytes, other));
  ASSERT_NE(q, nullptr);
  EXPECT_TRUE(q + bytes <= p || p + bytes <= q);
  bp_cuda_free(q, other);
  // Free blocks stay tagged with `other`: keep it alive (see testStream).
}

TEST_F(CudaMemory, DoubleFreeIsIgnored) {
  const int64_t bytes = 5 * 4096 + 512;
  void *p = bp_cuda_alloc(bytes, stream());
  ASSERT_NE(p, nullptr);
  bp_cuda_free(p, stream());
  bp_cuda_free(p, stream()); // Prints a message; must not cache p twice.
  void *a = bp_cuda_alloc(bytes, stream());
  void *b = bp_cuda_alloc(bytes, stream());
  EXPECT_NE(a, b);
  bp_cuda_free(a, stream());
  bp_cuda_free(b, stream());
}

TEST_F(CudaMemory, KernelScratchReturnsToThePool) {
  const int64_t N = 64, H = 256, V = 1000;
  DeviceBuffer<bp_bf16_t> x(toBf16(randomBf16Values(N * H, 100))),
      gamma(toBf16(std::vector<float>(H, 1.0f))), y(N * H),
      logits(toBf16(randomBf16Values(N * V, 101)));
  DeviceBuffer<float> mean(N), rstd(N), dgamma(std::vector<float>(H, 0.0f)),
      dbeta(std::vector<float>(H, 0.0f)), loss(1), rowMax(N), logSum(N),
      unit(std::vector<float>{1.0f});
  DeviceBuffer<int32_t> labels(randomInts(N, 102, 0, V - 1));
  auto step = [&] {
    ASSERT_EQ(bp_cuda_layer_norm_fwd(x.get(), gamma.get(), gamma.get(),
                                     y.get(), mean.get(), rstd.get(), N, H,
                                     1e-5f, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_layer_norm_bwd(x.get(), x.get(), gamma.get(),
                                     mean.get(), rstd.get(), y.get(),
                                     dgamma.get(), dbeta.get(), N, H,
                                     stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_cross_entropy_fwd(logits.get(), labels.get(), loss.get(),
                                        rowMax.get(), logSum.get(), N, V,
                                        BP_IGNORE_INDEX, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_cross_entropy_bwd(
                  logits.get(), labels.get(), unit.get(), rowMax.get(),
                  logSum.get(), logits.get(), N, V, BP_IGNORE_INDEX, stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  };
  const Stats before = stats();
  step();
  const Stats afterFirst = stats();
  EXPECT_EQ(afterFirst.inUse, before.inUse) << "scratch freed";
  step();
  const Stats afterSecond = stats();
  EXPECT_EQ(afterSecond.inUse, before.inUse);
  EXPECT_EQ(afterSecond.reserved, afterFirst.reserved)
      << "the second step's scratch came from the cache";
}

TEST_F(CudaMemory, HandOutsAreNumberedRecordedAndTheirStatesKnown) {
  bp_cuda_pool_record(1);
  void *a = bp_cuda_alloc(3000, stream());
  void *b = bp_cuda_alloc(3000, stream());
  ASSERT_TRUE(a && b);
  bp_cuda_free(a, stream());
  void *c = bp_cuda_alloc(3000, stream()); // another hand-out
  bp_cuda_pool_record(0);
  void *d = bp_cuda_alloc(3000, stream()); // not recorded
  std::vector<bp_cuda_pool_block> rec(
      static_cast<size_t>(bp_cuda_pool_recorded(nullptr, 0)));
  ASSERT_EQ(rec.size(), 3u);
  ASSERT_EQ(bp_cuda_pool_recorded(rec.data(), 3), 3);
  EXPECT_EQ(rec[0].ptr, a);
  EXPECT_EQ(rec[1].ptr, b);
  EXPECT_EQ(rec[2].ptr, c);
  EXPECT_EQ(rec[0].bytes, 3072);
  EXPECT_LT(rec[0].serial, rec[1].serial);
  EXPECT_LT(rec[1].serial, rec[2].serial);
  uint64_t serial = 0;
  EXPECT_EQ(bp_cuda_pool_range_state(c, 3072, &serial), BP_CUDA_RANGE_HELD);
  EXPECT_EQ(serial, rec[2].serial);
  std::vector<bp_cuda_pool_block> held(
      static_cast<size_t>(bp_cuda_pool_held(nullptr, 0)));
  held.resize(static_cast<size_t>(
      bp_cuda_pool_held(held.data(), static_cast<int64_t>(held.size()))));
  int found = 0;
  for (const bp_cuda_pool_block &h : held)
    found += h.ptr == b || h.ptr == c || h.ptr == d;
  EXPECT_EQ(found, 3);
  bp_cuda_free(b, stream());
  EXPECT_EQ(bp_cuda_pool_range_state(b, 3072, nullptr), BP_CUDA_RANGE_FREE);
  int local = 0;
  EXPECT_EQ(bp_cuda_pool_range_state(&local, 4, nullptr), BP_CUDA_RANGE_ABSENT);
  bp_cuda_free(c, stream());
  bp_cuda_free(d, stream());
}

TEST_F(CudaMemory, ABlockMissingInsideACaptureComesFromOutsideTheGraph) {
  cudaStream_t s = nullptr;
  BP_CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  BP_CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  // A size this stream's cache has never held.
  void *p = bp_cuda_alloc(3 << 20, s);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(bp_cuda_fill_f32(static_cast<float *>(p), 2.0f, 1, s), BP_OK);
  cudaGraph_t graph = nullptr;
  BP_CUDA_OK(cudaStreamEndCapture(s, &graph)); // not invalidated
  cudaGraphExec_t exec = nullptr;
  BP_CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  BP_CUDA_OK(cudaGraphLaunch(exec, s));
  float got = 0;
  BP_CUDA_OK(cudaMemcpyAsync(&got, p, sizeof got, cudaMemcpyDeviceToHost, s));
  BP_CUDA_OK(cudaStreamSynchronize(s));
  EXPECT_EQ(got, 2.0f) << "the block is real memory outside the graph";
  BP_CUDA_OK(cudaGraphExecDestroy(exec));
  BP_CUDA_OK(cudaGraphDestroy(graph));
  bp_cuda_free(p, s);
  // The stream stays: its cached block is keyed by its handle (cuda.h).
}

TEST(CudaMemoryArguments, NegativeSizesAndNullFreesNeedNoDevice) {
  EXPECT_EQ(bp_cuda_alloc(-1, nullptr), nullptr);
  bp_cuda_free(nullptr, nullptr);
  bp_cuda_memory_stats(nullptr, nullptr, nullptr);
}

} // namespace

extern "C" int bpCudaHeaderStatsCallable(void);

TEST(CudaCAbi, CallableFromC) { EXPECT_EQ(bpCudaHeaderStatsCallable(), 0); }
