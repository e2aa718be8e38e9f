//===- GradKernelsTest.cpp - The float64 forms of the gradient kernels ----===//
//
// Each kernel of Kernels.h's BP_GRAD_KERNELS has an fp32 form and a form
// that accumulates into float64 (bp_<kernel>_g64, which the CPU target's
// stage functions call with the rank's accumulators). The second must add,
// in float64, exactly the value the first accumulates into a zeroed
// buffer: that is what the executor summed when stage functions returned
// their gradients, and what keeps the sums of every schedule the same bits.
// Checked on accumulators that already hold values, at 1 and 3 threads, on
// shapes that split the weight gradient into several tiles per thread and
// give tokens and positions repeats.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"
#include "bitpipe/runtime.h"
#include "cpu/Parallel.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::cpu;
using namespace bitpipe::runtime::test;

namespace {

/// Accumulators holding earlier micro-batches' sums.
std::vector<double> earlierSums(size_t n, uint32_t seed) {
  std::vector<float> f = randomFloats(static_cast<int64_t>(n), seed);
  std::vector<double> d(n);
  for (size_t i = 0; i < n; ++i)
    d[i] = static_cast<double>(f[i]) * 3.0 + 1e-9 * static_cast<double>(i);
  return d;
}

/// \p after must be \p before plus \p fp32, element by element, exactly.
void expectAddedExactly(const std::vector<double> &before,
                        const std::vector<float> &fp32,
                        const std::vector<double> &after, const char *what) {
  ASSERT_EQ(before.size(), fp32.size());
  ASSERT_EQ(before.size(), after.size());
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < after.size(); ++i) {
    double expected = before[i] + static_cast<double>(fp32[i]);
    if (std::memcmp(&expected, &after[i], sizeof(double)) != 0 && differ++ == 0)
      first = i;
  }
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " elements differ, first "
                        << first << " (" << after[first] << " vs "
                        << before[first] + static_cast<double>(fp32[first])
                        << ")";
}

class GradKernels : public ::testing::TestWithParam<int> {
protected:
  void SetUp() override { setKernelThreads(GetParam()); }
  void TearDown() override { setKernelThreads(1); }
};

TEST_P(GradKernels, LinearWeightGradAddsTheFp32Sums) {
  // In = 8192 gives tiles of 128 rows: several per thread's block of 300.
  // N = 1500 rows of dy and x: OpenBLAS sums the product in blocks of the
  // reduced dimension, into the float64 form's scratch written with
  // beta = 0 (not zeroed first: the calls before left it dirty) and into
  // the fp32 form's zeroed buffer with beta = 1.
  for (auto [N, In, Out] : {std::tuple<int64_t, int64_t, int64_t>{6, 8192, 300},
                            {7, 5, 3},
                            {1500, 96, 40}}) {
    auto dy = randomFloats(N * Out, 1), x = randomFloats(N * In, 2);
    std::vector<float> dw(In * Out, 0.0f), db(Out, 0.0f);
    ASSERT_EQ(bp_linear_bwd_weight(dy.data(), x.data(), dw.data(), db.data(), N,
                                   In, Out),
              BP_OK);
    auto dw0 = earlierSums(dw.size(), 3), db0 = earlierSums(db.size(), 4);
    auto dw64 = dw0, db64 = db0;
    ASSERT_EQ(bp_linear_bwd_weight_g64(dy.data(), x.data(), dw64.data(),
                                       db64.data(), N, In, Out),
              BP_OK);
    expectAddedExactly(dw0, dw, dw64, "dw");
    expectAddedExactly(db0, db, db64, "db");
    // Without a bias.
    auto dwOnly = dw0;
    ASSERT_EQ(bp_linear_bwd_weight_g64(dy.data(), x.data(), dwOnly.data(),
                                       nullptr, N, In, Out),
              BP_OK);
    expectAddedExactly(dw0, dw, dwOnly, "dw without db");
  }
}

TEST_P(GradKernels, LayerNormGradAddsTheFp32Sums) {
  const int64_t N = 37, H = 300;
  auto dy = randomFloats(N * H, 5), x = randomFloats(N * H, 6),
       gamma = randomFloats(H, 7), mean = randomFloats(N, 8),
       rstd = randomFloats(N, 9);
  std::vector<float> dx(N * H), dg(H, 0.0f), db(H, 0.0f);
  ASSERT_EQ(bp_layer_norm_bwd(dy.data(), x.data(), gamma.data(), mean.data(),
                              rstd.data(), dx.data(), dg.data(), db.data(), N,
                              H),
            BP_OK);
  auto dg0 = earlierSums(H, 10), db0 = earlierSums(H, 11);
  auto dg64 = dg0, db64 = db0;
  std::vector<float> dx64(N * H);
  ASSERT_EQ(bp_layer_norm_bwd_g64(dy.data(), x.data(), gamma.data(),
                                  mean.data(), rstd.data(), dx64.data(),
                                  dg64.data(), db64.data(), N, H),
            BP_OK);
  expectAddedExactly(dg0, dg, dg64, "dgamma");
  expectAddedExactly(db0, db, db64, "dbeta");
  EXPECT_EQ(std::memcmp(dx.data(), dx64.data(), dx.size() * sizeof(float)), 0);
}

TEST_P(GradKernels, RmsNormGradAddsTheFp32Sums) {
  const int64_t N = 29, H = 260;
  auto dy = randomFloats(N * H, 12), x = randomFloats(N * H, 13),
       gamma = randomFloats(H, 14), rstd = randomFloats(N, 15);
  std::vector<float> dx(N * H), dg(H, 0.0f), dx64(N * H);
  ASSERT_EQ(bp_rms_norm_bwd(dy.data(), x.data(), gamma.data(), rstd.data(),
                            dx.data(), dg.data(), N, H),
            BP_OK);
  auto dg0 = earlierSums(H, 16), dg64 = dg0;
  ASSERT_EQ(bp_rms_norm_bwd_g64(dy.data(), x.data(), gamma.data(), rstd.data(),
                                dx64.data(), dg64.data(), N, H),
            BP_OK);
  expectAddedExactly(dg0, dg, dg64, "dgamma");
  EXPECT_EQ(std::memcmp(dx.data(), dx64.data(), dx.size() * sizeof(float)), 0);
}

TEST_P(GradKernels, EmbeddingGradAddsTheFp32Sums) {
  // 8 tokens over 3 x 40 positions: every token repeats.
  const int64_t B = 3, T = 40, H = 24, V = 8, P = 50;
  auto tokens = randomInts(B * T, 17, 0, static_cast<int32_t>(V - 1));
  auto dout = randomFloats(B * T * H, 18);
  std::vector<float> dwte(V * H, 0.0f), dwpe(P * H, 0.0f);
  ASSERT_EQ(bp_embedding_bwd(tokens.data(), dout.data(), dwte.data(),
                             dwpe.data(), B, T, H, V),
            BP_OK);
  auto te0 = earlierSums(dwte.size(), 19), pe0 = earlierSums(dwpe.size(), 20);
  auto te64 = te0, pe64 = pe0;
  ASSERT_EQ(bp_embedding_bwd_g64(tokens.data(), dout.data(), te64.data(),
                                 pe64.data(), B, T, H, V),
            BP_OK);
  expectAddedExactly(te0, dwte, te64, "dwte");
  expectAddedExactly(pe0, dwpe, pe64, "dwpe (rows T.. untouched)");
  // The scatter-add sums each token's positions in order.
  std::vector<float> sequential(V * H, 0.0f);
  for (int64_t i = 0; i < B * T; ++i)
    for (int64_t c = 0; c < H; ++c)
      sequential[tokens[i] * H + c] += dout[i * H + c];
  EXPECT_EQ(
      std::memcmp(sequential.data(), dwte.data(), dwte.size() * sizeof(float)),
      0);
}

TEST(GradKernelsArguments, RejectNullAccumulatorsAndBadTokens) {
  float dy[4] = {1, 2, 3, 4}, x[4] = {1, 1, 1, 1};
  double dw[4] = {};
  EXPECT_EQ(bp_linear_bwd_weight_g64(dy, x, nullptr, nullptr, 2, 2, 2),
            BP_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(bp_linear_bwd_weight_g64(dy, x, dw, nullptr, 0, 2, 2),
            BP_ERR_INVALID_ARGUMENT);
  int32_t tokens[2] = {0, 5};
  double dwte[8] = {};
  EXPECT_EQ(bp_embedding_bwd_g64(tokens, dy, dwte, nullptr, 1, 2, 2, 4),
            BP_ERR_INVALID_ARGUMENT);
  for (double v : dwte)
    EXPECT_EQ(v, 0.0); // nothing written before the check failed
}

INSTANTIATE_TEST_SUITE_P(Threads, GradKernels, ::testing::Values(1, 3),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return std::to_string(info.param) + "Threads";
                         });

} // namespace
