//===- CudaMemoryTest.cpp - The device memory pool -----------------------===//
//
// bp_cuda_alloc / bp_cuda_free: freed memory serves later requests on the
// same stream (and only on that stream) without growing what the pool holds
// from CUDA; the kernels' scratch buffers go back to the pool. The pool is
// process-wide, so every check is on differences of bp_cuda_memory_stats.
// How blocks are split and merged is BlockPoolTest's (on the CPU).
//
// Skipped without a device, except what never reaches CUDA;
// bench/gpu/check.sh runs these tests on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include <cuda_runtime.h>

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
  EXPECT_EQ(stats().inUse - before.inUse, (1 << 20) + 512);
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

TEST(CudaMemoryArguments, NegativeSizesAndNullFreesNeedNoDevice) {
  EXPECT_EQ(bp_cuda_alloc(-1, nullptr), nullptr);
  bp_cuda_free(nullptr, nullptr);
  bp_cuda_memory_stats(nullptr, nullptr, nullptr);
}

} // namespace

extern "C" int bpCudaHeaderStatsCallable(void);

TEST(CudaCAbi, CallableFromC) { EXPECT_EQ(bpCudaHeaderStatsCallable(), 0); }
