//===- ThreadsTest.cpp - The kernels' threads -------------------*- C++ -*-===//
//
// parallelFor covers its range once, in pieces that depend only on the
// range, the grain and the thread count; and every kernel that splits its
// loops over the threads (cpu/Parallel.h) computes the same bits on 1 and
// on 3 threads, on shapes that give each thread a piece. The products
// are OpenBLAS's, each on a piece's block of rows: attention's blocks are
// whole heads, the same at any count, so attention is compared bit for
// bit; linear_*'s blocks change with the count, and OpenBLAS sums a block
// in another order than the whole, so they agree to rounding at another
// count and bit for bit at the same one (docs/launching.md, "Threads").
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "bitpipe/runtime.h"
#include "cpu/Parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <vector>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::cpu;
using namespace bitpipe::runtime::test;

namespace {

class ThreadsTest : public ::testing::Test {
protected:
  void TearDown() override { setKernelThreads(1); }

  /// Runs \p kernel on 1 thread, then on 3, from the same inputs (it
  /// refills its outputs itself); each output must be the same bits.
  void expectSameBits(const std::function<void()> &kernel,
                      std::vector<std::vector<float> *> outputs) {
    setKernelThreads(1);
    kernel();
    std::vector<std::vector<float>> one;
    for (auto *o : outputs)
      one.push_back(*o);
    setKernelThreads(3);
    kernel();
    for (size_t i = 0; i < outputs.size(); ++i) {
      ASSERT_EQ(one[i].size(), outputs[i]->size());
      EXPECT_EQ(std::memcmp(one[i].data(), outputs[i]->data(),
                            one[i].size() * sizeof(float)),
                0)
          << "output " << i << " differs between 1 and 3 threads";
    }
  }
};

TEST_F(ThreadsTest, PiecesCoverTheRangeOnceAtLeastAGrainEach) {
  setKernelThreads(3);
  for (int64_t n : {1, 5, 100, 100000}) {
    std::mutex m;
    std::vector<std::pair<int64_t, int64_t>> pieces;
    std::vector<int> hits(n, 0);
    parallelFor(n, 10, [&](int64_t first, int64_t last) {
      std::lock_guard<std::mutex> lock(m);
      pieces.push_back({first, last});
      for (int64_t i = first; i < last; ++i)
        ++hits[i];
    });
    for (int h : hits)
      ASSERT_EQ(h, 1) << "n=" << n;
    EXPECT_LE(pieces.size(), 3u);
    if (n >= 30) {
      EXPECT_EQ(pieces.size(), 3u) << "n=" << n;
    }
    for (auto [first, last] : pieces)
      EXPECT_TRUE(last - first >= 10 || n < 10) << first << ".." << last;
  }
}

TEST_F(ThreadsTest, APieceRunsANestedLoopItself) {
  setKernelThreads(2);
  std::atomic<int> nested{0};
  parallelFor(2, 1, [&](int64_t, int64_t) {
    parallelFor(100, 1, [&](int64_t first, int64_t last) {
      if (first == 0 && last == 100)
        ++nested;
    });
  });
  EXPECT_EQ(nested.load(), 2);
}

TEST_F(ThreadsTest, ElementWiseKernels) {
  const int64_t n = 300000; // pieces of 100000 on 3 threads
  auto x = randomFloats(n, 1, -4.0f, 4.0f), dy = randomFloats(n, 2);
  std::vector<float> a(n), b(n), c(n), d(n), e(n), f(n), g(n), h(n);
  expectSameBits(
      [&] {
        ASSERT_EQ(bp_gelu_fwd(x.data(), a.data(), n), BP_OK);
        ASSERT_EQ(bp_gelu_bwd(dy.data(), x.data(), b.data(), n), BP_OK);
        ASSERT_EQ(bp_gelu_erf_fwd(x.data(), c.data(), n), BP_OK);
        ASSERT_EQ(bp_gelu_erf_bwd(dy.data(), x.data(), d.data(), n), BP_OK);
        ASSERT_EQ(bp_swiglu_fwd(x.data(), dy.data(), e.data(), n), BP_OK);
        ASSERT_EQ(
            bp_swiglu_bwd(dy.data(), x.data(), c.data(), f.data(), g.data(), n),
            BP_OK);
        ASSERT_EQ(bp_add_fwd(x.data(), dy.data(), h.data(), n), BP_OK);
      },
      {&a, &b, &c, &d, &e, &f, &g, &h});
}

TEST_F(ThreadsTest, NormsSplitRowsAndTheirParameterSumsColumns) {
  const int64_t N = 600, H = 384;
  auto x = randomFloats(N * H, 3, -2.0f, 3.0f), dy = randomFloats(N * H, 4);
  auto gamma = randomFloats(H, 5), beta = randomFloats(H, 6);
  std::vector<float> y(N * H), mean(N), rstd(N), dx(N * H), dgamma(H), dbeta(H),
      ry(N * H), rrstd(N), rdx(N * H), rdgamma(H);
  expectSameBits(
      [&] {
        ASSERT_EQ(bp_layer_norm_fwd(x.data(), gamma.data(), beta.data(),
                                    y.data(), mean.data(), rstd.data(), N, H,
                                    1e-5f),
                  BP_OK);
        // Accumulated: from the same start on each run.
        dgamma.assign(H, 0.25f);
        dbeta.assign(H, -0.5f);
        ASSERT_EQ(bp_layer_norm_bwd(dy.data(), x.data(), gamma.data(),
                                    mean.data(), rstd.data(), dx.data(),
                                    dgamma.data(), dbeta.data(), N, H),
                  BP_OK);
        ASSERT_EQ(bp_rms_norm_fwd(x.data(), gamma.data(), ry.data(),
                                  rrstd.data(), N, H, 1e-6f),
                  BP_OK);
        rdgamma.assign(H, 0.125f);
        ASSERT_EQ(bp_rms_norm_bwd(dy.data(), x.data(), gamma.data(),
                                  rrstd.data(), rdx.data(), rdgamma.data(), N,
                                  H),
                  BP_OK);
      },
      {&y, &mean, &rstd, &dx, &dgamma, &dbeta, &ry, &rrstd, &rdx, &rdgamma});
}

TEST_F(ThreadsTest, CrossEntropySumsItsRowsInOrder) {
  const int64_t N = 700, V = 500;
  auto logits = randomFloats(N * V, 7, -5.0f, 5.0f);
  std::vector<int32_t> labels(N);
  for (int64_t i = 0; i < N; ++i)
    labels[i] = i % 11 == 0 ? -100 : static_cast<int32_t>((i * 37) % V);
  std::vector<float> loss(1), rowMax(N), logSum(N), dlogits(N * V);
  const float dloss = 1.0f;
  expectSameBits(
      [&] {
        ASSERT_EQ(bp_cross_entropy_fwd(logits.data(), labels.data(),
                                       loss.data(), rowMax.data(),
                                       logSum.data(), N, V, -100),
                  BP_OK);
        ASSERT_EQ(bp_cross_entropy_bwd(logits.data(), labels.data(), &dloss,
                                       rowMax.data(), logSum.data(),
                                       dlogits.data(), N, V, -100),
                  BP_OK);
      },
      {&loss, &rowMax, &logSum, &dlogits});
}

TEST_F(ThreadsTest, AttentionByHeadsAndGroupedQueryHeads) {
  const int64_t B = 2, T = 40, d = 8;
  for (auto [nh, nkv] : {std::pair<int64_t, int64_t>{4, 4}, {6, 2}}) {
    const int64_t H = nh * d, ld = (nh + 2 * nkv) * d;
    auto qkv = randomFloats(B * T * ld, 8), dout = randomFloats(B * T * H, 9);
    std::vector<float> out(B * T * H), lse(B * nh * T), dqkv(B * T * ld);
    expectSameBits(
        [&] {
          ASSERT_EQ(bp_attention_gqa_fwd(qkv.data(), out.data(), lse.data(), B,
                                         T, H, nh, nkv, 1),
                    BP_OK);
          ASSERT_EQ(bp_attention_gqa_bwd(qkv.data(), out.data(), dout.data(),
                                         lse.data(), dqkv.data(), B, T, H, nh,
                                         nkv, 1),
                    BP_OK);
        },
        {&out, &lse, &dqkv});
  }
}

TEST_F(ThreadsTest, LinearSplitsRowsTheSameWayAtOneCount) {
  const int64_t N = 300, In = 96, Out = 160;
  auto x = randomFloats(N * In, 10), w = randomFloats(Out * In, 11),
       b = randomFloats(Out, 12), dy = randomFloats(N * Out, 13);
  auto run = [&](int threads) {
    setKernelThreads(threads);
    std::vector<float> y(N * Out), dx(N * In), dw(Out * In, 0.5f),
        db(Out, -0.25f);
    EXPECT_EQ(bp_linear_fwd(x.data(), w.data(), b.data(), y.data(), N, In, Out),
              BP_OK);
    EXPECT_EQ(bp_linear_bwd_input(dy.data(), w.data(), dx.data(), N, In, Out),
              BP_OK);
    EXPECT_EQ(bp_linear_bwd_weight(dy.data(), x.data(), dw.data(), db.data(), N,
                                   In, Out),
              BP_OK);
    return std::vector<std::vector<float>>{y, dx, dw, db};
  };
  auto one = run(1), three = run(3), again = run(3);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(std::memcmp(three[i].data(), again[i].data(),
                          three[i].size() * sizeof(float)),
              0)
        << "output " << i << " differs between two runs on 3 threads";
    EXPECT_TRUE(allClose(three[i], toDouble(one[i]), 1e-5))
        << "output " << i << ": 3 threads against 1";
  }
  // The bias gradient is the kernel's own sum: the same bits at any count.
  EXPECT_EQ(std::memcmp(one[3].data(), three[3].data(),
                        one[3].size() * sizeof(float)),
            0);
}

// The GELU-fused products run the unfused kernels' row blocks and element
// loops in one task: at any thread count they give the two kernels'
// results in sequence, bit for bit.
TEST_F(ThreadsTest, FusedLinearGeluIsTheTwoKernelsInSequence) {
  const int64_t N = 300, In = 96, Out = 160;
  auto x = randomFloats(N * In, 20), w = randomFloats(Out * In, 21),
       b = randomFloats(Out, 22), dy = randomFloats(N * Out, 23);
  for (int threads : {1, 3}) {
    setKernelThreads(threads);
    std::vector<float> pre(N * Out), y(N * Out), pre2(N * Out), y2(N * Out);
    ASSERT_EQ(bp_linear_gelu_fwd(x.data(), w.data(), b.data(), y.data(),
                                 pre.data(), N, In, Out),
              BP_OK);
    ASSERT_EQ(
        bp_linear_fwd(x.data(), w.data(), b.data(), pre2.data(), N, In, Out),
        BP_OK);
    ASSERT_EQ(bp_gelu_fwd(pre2.data(), y2.data(), N * Out), BP_OK);
    EXPECT_EQ(std::memcmp(pre.data(), pre2.data(), pre.size() * 4), 0)
        << threads << " threads: the pre-activation";
    EXPECT_EQ(std::memcmp(y.data(), y2.data(), y.size() * 4), 0)
        << threads << " threads: the GELU";

    // The backward: dx[N, In] = gelu'(pre_in) * (dy W), pre_in [N, In].
    auto preIn = randomFloats(N * In, 24);
    std::vector<float> dx(N * In), dx2(N * In);
    ASSERT_EQ(bp_linear_bwd_input_gelu(dy.data(), w.data(), preIn.data(),
                                       dx.data(), N, In, Out),
              BP_OK);
    ASSERT_EQ(bp_linear_bwd_input(dy.data(), w.data(), dx2.data(), N, In, Out),
              BP_OK);
    ASSERT_EQ(bp_gelu_bwd(dx2.data(), preIn.data(), dx2.data(), N * In), BP_OK);
    EXPECT_EQ(std::memcmp(dx.data(), dx2.data(), dx.size() * 4), 0)
        << threads << " threads: the input gradient";
  }
}

} // namespace
