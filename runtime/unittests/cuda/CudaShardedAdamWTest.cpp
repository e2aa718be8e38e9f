//===- CudaShardedAdamWTest.cpp - AdamW on a rank's shard -----------------===//
//
// bp_cuda_adamw_step and bp_cuda_find_invalid under a sharded optimizer
// (docs/data-parallel.md, "Sharded optimizer"): the segments are the parts
// a rank owns, cut where shards cut tensors (at offsets that are and are
// not multiples of 4), with their moments (and, as under bf16, their
// master weights) kept compactly elsewhere. A step over those parts must
// give, bit for bit, what a step over the whole tensors gives on the same
// elements, and touch nothing else; the state check must find a bad
// moment at its compact place.
//
// Skipped without a device; bench/gpu/check.sh runs it on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaTestUtil.h"

#include <cmath>
#include <cstring>
#include <string>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// Whole tensors in flat arrays, and one rank's part of each: a third of
/// each tensor starting a little past its first third (so that part
/// offsets and their compact places are both aligned and not).
struct ShardedLayout {
  std::vector<bp_cuda_segment> whole, owned;
  int64_t total = 0, compact = 0;
};

ShardedLayout makeShardedLayout(bool compactMaster) {
  const int64_t counts[] = {4096 * 3 + 5, 7, 1, 5000, 4096, 100003, 33, 64};
  ShardedLayout l;
  for (size_t k = 0; k < std::size(counts); ++k) {
    const int64_t offset = (l.total + 127) / 128 * 128, n = counts[k];
    const int32_t decay = k % 2 == 0 ? 1 : 0;
    l.whole.push_back({offset, n, offset, offset, decay, 0});
    const int64_t begin = offset + n / 3 + static_cast<int64_t>(k % 3);
    const int64_t count = std::min(n / 3 + 1, offset + n - begin);
    if (count > 0) {
      l.owned.push_back({begin, count, compactMaster ? l.compact : begin,
                         l.compact, decay, 0});
      l.compact += count;
    }
    l.total = offset + n;
  }
  return l;
}

bp_cuda_adamw_constants constants(int64_t t) {
  bp_cuda_adamw_constants k;
  const double lr = 3e-3, b1 = 0.9, b2 = 0.999, td = static_cast<double>(t);
  k.grad_scale = 0.7 / 3;
  k.beta1 = static_cast<float>(b1);
  k.beta2 = static_cast<float>(b2);
  k.one_minus_beta1 = static_cast<float>(1.0 - b1);
  k.one_minus_beta2 = static_cast<float>(1.0 - b2);
  k.eps = 1e-8f;
  k.step_size = static_cast<float>(lr / (1.0 - std::pow(b1, td)));
  k.root_bc2 = static_cast<float>(std::sqrt(1.0 - std::pow(b2, td)));
  k.decay_factor = static_cast<float>(1.0 - lr * 0.1);
  return k;
}

class CudaShardedAdamW : public CudaTest,
                         public ::testing::WithParamInterface<bool> {};

TEST_P(CudaShardedAdamW, AShardsStepIsTheWholeStepOnItsElements) {
  const bool compactMaster = GetParam(); // as under bf16
  const ShardedLayout l = makeShardedLayout(compactMaster);
  const int64_t n = l.total, c = l.compact;
  const std::vector<float> p0 = randomFloats(n, 21, -0.5f, 0.5f);

  // The whole step: every tensor, state at the tensors' offsets.
  DeviceBuffer<float> wP(p0), wM(std::vector<float>(n, 0.0f)),
      wV(std::vector<float>(n, 0.0f)), grads(n);
  DeviceBuffer<bp_bf16_t> wB(std::vector<bp_bf16_t>(n, 0));
  DeviceBuffer<bp_cuda_segment> wSeg(l.whole);
  // The shard's step: sentinels wherever the parts are not.
  std::vector<float> sP0 = compactMaster ? std::vector<float>(c) : p0;
  for (const bp_cuda_segment &s : l.owned)
    for (int64_t k = 0; k < s.count; ++k)
      sP0[s.master + k] = p0[s.offset + k];
  DeviceBuffer<float> sP(sP0), sM(std::vector<float>(c, 0.0f)),
      sV(std::vector<float>(c, 0.0f));
  DeviceBuffer<bp_bf16_t> sB(std::vector<bp_bf16_t>(n, 0x4321));
  DeviceBuffer<bp_cuda_segment> sSeg(l.owned);

  for (int64_t step = 1; step <= 3; ++step) {
    std::vector<float> g =
        randomFloats(n, static_cast<uint32_t>(40 + step), -1.0f, 1.0f);
    grads.upload(g);
    const bp_cuda_adamw_constants k = constants(step);
    ASSERT_EQ(bp_cuda_adamw_step(wP.get(), grads.get(), wM.get(), wV.get(),
                                 wB.get(), wSeg.get(),
                                 static_cast<int32_t>(l.whole.size()), &k,
                                 stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_adamw_step(sP.get(), grads.get(), sM.get(), sV.get(),
                                 sB.get(), sSeg.get(),
                                 static_cast<int32_t>(l.owned.size()), &k,
                                 stream()),
              BP_OK);
    ASSERT_EQ(bp_cuda_synchronize(stream()), BP_OK);
  }
  const std::vector<float> gotWP = wP.download(), gotWM = wM.download(),
                           gotWV = wV.download(), gotSP = sP.download(),
                           gotSM = sM.download(), gotSV = sV.download();
  const std::vector<bp_bf16_t> gotWB = wB.download(), gotSB = sB.download();
  std::vector<bool> owned(n, false);
  int64_t wrong = 0;
  for (const bp_cuda_segment &s : l.owned)
    for (int64_t k = 0; k < s.count; ++k) {
      const int64_t i = s.offset + k;
      owned[i] = true;
      wrong += bitsOf(gotSP[s.master + k]) != bitsOf(gotWP[i]);
      wrong += bitsOf(gotSM[s.moment + k]) != bitsOf(gotWM[i]);
      wrong += bitsOf(gotSV[s.moment + k]) != bitsOf(gotWV[i]);
      wrong += gotSB[i] != gotWB[i];
    }
  EXPECT_EQ(wrong, 0) << "values of the owned parts differ from the whole "
                         "step's";
  // Nothing outside the parts: the bf16 copy keeps its sentinel and, with
  // the master weights whole, the weights keep their start.
  int64_t touched = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (owned[i])
      continue;
    touched += gotSB[i] != bp_bf16_t(0x4321);
    if (!compactMaster)
      touched += bitsOf(gotSP[i]) != bitsOf(p0[i]);
  }
  EXPECT_EQ(touched, 0) << "elements outside the owned parts were written";
  std::printf("BPCHECK adamw_step shard%s parts=%zu %.3e %.1e %s\n",
              compactMaster ? ",compact-master" : "", l.owned.size(),
              static_cast<double>(wrong + touched), 0.0,
              wrong + touched == 0 ? "PASS" : "FAIL");
  std::fflush(stdout);
}

TEST_P(CudaShardedAdamW, TheStateCheckReadsTheCompactMoments) {
  const bool compactMaster = GetParam();
  const ShardedLayout l = makeShardedLayout(compactMaster);
  const int64_t n = l.total, c = l.compact;
  std::vector<float> p(compactMaster ? c : n, 0.5f), m(c, 0.0f), v(c, 1.0f);
  // Part 3's element 7 has a NaN first moment, part 5's element 2 a
  // negative second moment; the weights outside the parts are not checked
  // (their owners check them).
  m[l.owned[3].moment + 7] = std::nanf("");
  v[l.owned[5].moment + 2] = -1.0f;
  if (!compactMaster)
    p[0] = std::nanf(""); // element 0 is in no part
  DeviceBuffer<float> dP(p), dM(m), dV(v);
  DeviceBuffer<bp_cuda_segment> dSeg(l.owned);
  const int32_t parts = static_cast<int32_t>(l.owned.size());
  DeviceBuffer<int64_t> first(3 * static_cast<size_t>(parts));
  ASSERT_EQ(bp_cuda_find_invalid(dP.get(), dM.get(), dV.get(), dSeg.get(),
                                 parts, first.get(), stream()),
            BP_OK);
  const std::vector<int64_t> got = first.download();
  for (int32_t s = 0; s < parts; ++s) {
    EXPECT_EQ(got[3 * s + 0], INT64_MAX) << "part " << s;
    EXPECT_EQ(got[3 * s + 1], s == 3 ? 7 : INT64_MAX) << "part " << s;
    EXPECT_EQ(got[3 * s + 2], s == 5 ? 2 : INT64_MAX) << "part " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Masters, CudaShardedAdamW, ::testing::Bool(),
                         [](const auto &info) {
                           return std::string(info.param ? "CompactMaster"
                                                         : "WholeMaster");
                         });

} // namespace
