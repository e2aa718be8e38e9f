//===- CudaBookkeepingTest.cpp - The CUDA backend's host-side tables ------===//
//
// What the CUDA backend computes on the host and hands to bitpipe/cuda.h's
// multi-tensor kernels, checked without a device: the segment tables built
// from the parameter store's layout, and AdamW's per-step constants, which
// must make the kernel's documented per-element arithmetic reproduce the
// CPU loop bit for bit.
//
//===----------------------------------------------------------------------===//

#include "ParamStore.h"
#include "SegmentTable.h"
#include "TestManifests.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::testing;

namespace {

TEST(ExecCudaBookkeeping, SegmentTablesTileTheStoreInLayoutOrder) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  ParamStore store(*m, 0);
  std::vector<bp_cuda_segment> all = cudaSegments(store.layout().all);
  ASSERT_EQ(all.size(), store.layoutOrder().size());
  int64_t next = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    int p = store.layoutOrder()[i];
    const ParamSpec &spec = m->params[p];
    EXPECT_EQ(all[i].offset, store.offset(p)) << spec.name;
    // In order, no overlap, each on an alignment boundary with no more
    // than the alignment's gap before it.
    EXPECT_GE(all[i].offset, next) << spec.name;
    EXPECT_LT(all[i].offset, next + kParamAlignment) << spec.name;
    EXPECT_EQ(all[i].offset % kParamAlignment, 0) << spec.name;
    EXPECT_EQ(all[i].count, spec.numel) << spec.name;
    EXPECT_EQ(all[i].decay, spec.decay ? 1 : 0) << spec.name;
    EXPECT_EQ(all[i].master, all[i].offset);
    EXPECT_EQ(all[i].moment, all[i].offset);
    EXPECT_EQ(all[i].reserved, 0);
    next = all[i].offset + all[i].count;
  }
  EXPECT_EQ(next, store.numFloats());
  // A bucket's parameters are one run of segments: its all-reduce range.
  EXPECT_EQ(all[0].offset, store.bucketRange(0).offset);
  EXPECT_EQ(all[3].offset, store.bucketRange(1).offset);
  EXPECT_EQ(cudaSegments(store.layout().norm).size(), 4u);

  // Rank 1 holds embed.tokens after rank 0: it counts nothing in the norm.
  ParamStore last(*m, 1);
  EXPECT_EQ(cudaSegments(last.layout().all).size(), 1u);
  EXPECT_TRUE(cudaSegments(last.layout().norm).empty());
}

/// bp_cuda_adamw_step's per-element arithmetic as bitpipe/cuda.h documents
/// it, in float on the host.
void documentedKernelStep(const bp_cuda_adamw_constants &c, bool decay,
                          float *p, const float *g32, float *m, float *v,
                          int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    float g = static_cast<float>(g32[i] * c.grad_scale);
    m[i] = c.beta1 * m[i] + c.one_minus_beta1 * g;
    v[i] = c.beta2 * v[i] + c.one_minus_beta2 * g * g;
    p[i] = p[i] * (decay ? c.decay_factor : 1.0f) -
           c.step_size * m[i] / (std::sqrt(v[i]) / c.root_bc2 + c.eps);
  }
}

TEST(ExecCudaBookkeeping, AdamWConstantsReproduceTheCpuStep) {
  AdamWConfig config;
  config.lr = 3e-3;
  config.weightDecay = 0.1;
  config.maxGradNorm = 0.5; // so that clipping enters gradScale
  const int n = 37, micro = 4;
  for (bool decay : {true, false}) {
    std::vector<float> p(n), m(n), v(n);
    std::vector<double> g64(n);
    std::vector<float> g32(n);
    for (int i = 0; i < n; ++i) {
      p[i] = 0.05f * std::cos(0.3f * i);
      // Gradients an fp32 accumulator holds exactly: both targets then see
      // the same sums.
      g32[i] = std::ldexp(static_cast<float>((i * 7) % 23 - 11), -4);
      g64[i] = g32[i];
    }
    std::vector<float> kp = p, km = m, kv = v;
    AdamW cpu(config), device(config);
    for (int step = 1; step <= 3; ++step) {
      std::vector<AdamWParam> params = {
          {"w", p.data(), g64.data(), m.data(), v.data(), n, decay}};
      Expected<double> sum = AdamW::sumSquaredGradients(params, micro);
      ASSERT_TRUE(sum.isOk());
      ASSERT_TRUE(cpu.stepWithGlobalNorm(params, micro, *sum).isOk());

      AdamWStepInfo info;
      Expected<AdamWConstants> c = device.beginStep(micro, *sum, &info);
      ASSERT_TRUE(c.isOk()) << c.status().message();
      EXPECT_LT(info.clipScale, 1.0); // clipping is exercised
      bp_cuda_adamw_constants k = cudaConstants(*c);
      EXPECT_EQ(k.grad_scale, c->gradScale);
      EXPECT_EQ(k.decay_factor, c->decayFactor);
      EXPECT_EQ(k.root_bc2, c->rootBc2);
      documentedKernelStep(k, decay, kp.data(), g32.data(), km.data(),
                           kv.data(), n);
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(kp[i], p[i]) << "step " << step << " element " << i;
        ASSERT_EQ(km[i], m[i]) << "step " << step << " element " << i;
        ASSERT_EQ(kv[i], v[i]) << "step " << step << " element " << i;
      }
    }
    EXPECT_EQ(device.stepCount(), cpu.stepCount());
  }
}

Manifest threeCopies() {
  Expected<Manifest> m = parseManifest(threeCopiesManifest("flat"));
  EXPECT_TRUE(m.isOk()) << m.status().message();
  return std::move(*m);
}

TEST(ExecCudaBookkeeping, AWholeStoresUpdateTableIsItsSegments) {
  Manifest m = threeCopies();
  ParamStore store(m, 2);
  const ParamLayout &l = store.layout();
  EXPECT_FALSE(masterWeightsSharded(l, Precision::Bf16));
  const OptimizerTable t = cudaOptimizerTable(l, false);
  const std::vector<bp_cuda_segment> all = cudaSegments(l.all);
  ASSERT_EQ(t.segments.size(), all.size());
  for (size_t k = 0; k < all.size(); ++k) {
    EXPECT_EQ(t.segments[k].offset, all[k].offset);
    EXPECT_EQ(t.segments[k].master, all[k].offset);
    EXPECT_EQ(t.segments[k].moment, all[k].offset);
    EXPECT_EQ(t.segments[k].count, all[k].count);
    EXPECT_EQ(t.param[k], static_cast<int>(k));
    EXPECT_EQ(t.firstElement[k], 0);
  }
  const StoreSizes sizes = cudaStoreSizes(l, false);
  EXPECT_EQ(sizes.whole, l.numFloats);
  EXPECT_EQ(sizes.master, l.numFloats);
  EXPECT_EQ(sizes.moments, l.numFloats);
}

TEST(ExecCudaBookkeeping, AShardedStoreUpdatesItsOwnedPartsCompactly) {
  // World rank 2 owns [171, 256) of hidden.weight and hidden.bias whole
  // (ParamStoreTest): its moments compact, its master weights compact
  // too under bf16 (the stage functions read the bf16 copy) and whole
  // under fp32 (they read the master weights).
  Manifest m = threeCopies();
  ParamStore store(m, 2, /*shardOptimizer=*/true);
  const ParamLayout &l = store.layout();
  ASSERT_EQ(l.owned.size(), 3u);
  EXPECT_TRUE(masterWeightsSharded(l, Precision::Bf16));
  EXPECT_FALSE(masterWeightsSharded(l, Precision::Fp32));
  for (bool compactMaster : {false, true}) {
    const OptimizerTable t = cudaOptimizerTable(l, compactMaster);
    ASSERT_EQ(t.segments.size(), l.owned.size());
    for (size_t k = 0; k < l.owned.size(); ++k) {
      const OptimizerPart &part = l.owned[k];
      const bp_cuda_segment &s = t.segments[k];
      EXPECT_EQ(s.offset, part.offset);
      EXPECT_EQ(s.count, part.count);
      EXPECT_EQ(s.moment, part.moment);
      EXPECT_EQ(s.master, compactMaster ? part.moment : part.offset);
      EXPECT_EQ(s.decay, l.all[part.segment].decay ? 1 : 0);
      EXPECT_EQ(s.reserved, 0);
      EXPECT_EQ(t.param[k], part.segment);
      EXPECT_EQ(t.firstElement[k], part.offset - l.all[part.segment].offset);
    }
    EXPECT_EQ(t.firstElement[0], 171); // hidden.weight's part
    const StoreSizes sizes = cudaStoreSizes(l, compactMaster);
    EXPECT_EQ(sizes.whole, l.numFloats);
    EXPECT_EQ(sizes.moments, l.numMoments);
    EXPECT_EQ(sizes.master, compactMaster ? l.numMoments : l.numFloats);
    EXPECT_LT(sizes.moments, sizes.whole);
  }
}

TEST(ExecCudaBookkeeping, TheRanksUpdateTablesCoverEveryElementOnce) {
  // Over the six world ranks, each element of every parameter is in
  // exactly one rank's update table: each replica updates its shard and
  // the all-gather brings the rest.
  Manifest m = threeCopies();
  for (bool twoLevels : {false, true}) {
    Expected<Manifest> parsed =
        parseManifest(threeCopiesManifest(twoLevels ? "hierarchical" : "flat"));
    ASSERT_TRUE(parsed.isOk()) << parsed.status().message();
    std::vector<std::vector<int>> updates(m.params.size());
    for (size_t p = 0; p < m.params.size(); ++p)
      updates[p].assign(static_cast<size_t>(m.params[p].numel), 0);
    for (int rank = 0; rank < 6; ++rank) {
      ParamStore store(*parsed, rank, true);
      const OptimizerTable t = cudaOptimizerTable(store.layout(), true);
      for (size_t k = 0; k < t.segments.size(); ++k) {
        const int p = store.layoutOrder()[t.param[k]];
        for (int64_t e = 0; e < t.segments[k].count; ++e)
          ++updates[p][t.firstElement[k] + e];
      }
    }
    for (size_t p = 0; p < m.params.size(); ++p)
      for (size_t e = 0; e < updates[p].size(); ++e)
        ASSERT_EQ(updates[p][e], 1)
            << m.params[p].name << " element " << e
            << (twoLevels ? " (two levels)" : " (flat)");
  }
}

TEST(ExecCudaBookkeeping, StateFindingsNameTheParameterAndTheIndexInIt) {
  Manifest m = threeCopies();
  ParamStore store(m, 2, true);
  const ParamLayout &l = store.layout();
  const OptimizerTable t = cudaOptimizerTable(l, true);
  // bp_cuda_find_invalid's answer: part 0 (hidden.weight from element
  // 171) has a bad first moment at 9 and a bad second moment at 4; part 1
  // (hidden.bias) a bad weight at 3; part 2 nothing.
  std::vector<int64_t> first(3 * t.segments.size(), INT64_MAX);
  first[0 * 3 + 1] = 9;
  first[0 * 3 + 2] = 4;
  first[1 * 3 + 0] = 3;
  const std::vector<std::optional<StateFinding>> found =
      stateFindings(t, l.all.size(), first);
  ASSERT_EQ(found.size(), l.all.size());
  const std::optional<StateFinding> &w = found[t.param[0]];
  ASSERT_TRUE(w.has_value());
  // The first moment before the second (checkCheckpointValues' order),
  // at its index in the parameter.
  EXPECT_EQ(w->array, StateArray::FirstMoments);
  EXPECT_EQ(w->index, 171 + 9);
  EXPECT_EQ(w->segment, 0);
  EXPECT_EQ(w->element, 9);
  const std::optional<StateFinding> &b = found[t.param[1]];
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->array, StateArray::Weights);
  EXPECT_EQ(b->index, 3);
  EXPECT_FALSE(found[t.param[2]].has_value());
  // Where each value lies: the moment in m at part 0's moment offset, the
  // weight in the (compact) master weights at part 1's master offset.
  std::vector<float> master(l.numMoments), mm(l.numMoments), vv(l.numMoments);
  EXPECT_EQ(findingValue(t, *w, master.data(), mm.data(), vv.data()),
            mm.data() + t.segments[0].moment + 9);
  EXPECT_EQ(findingValue(t, *b, master.data(), mm.data(), vv.data()),
            master.data() + t.segments[1].master + 3);
  StateFinding second = *w;
  second.array = StateArray::SecondMoments;
  EXPECT_EQ(findingValue(t, second, master.data(), mm.data(), vv.data()),
            vv.data() + t.segments[0].moment + 9);
  // Nothing for the parameters without a finding, or without an owned
  // part (their owners check them).
  int none = 0;
  for (size_t p = 0; p < l.all.size(); ++p)
    none += !found[p].has_value();
  EXPECT_EQ(none, static_cast<int>(l.all.size()) - 2);
}

TEST(ExecCudaBookkeeping, BeginStepRefusesABadNormWithoutCounting) {
  AdamW adam(AdamWConfig{});
  EXPECT_FALSE(adam.beginStep(4, std::nan("")).isOk());
  EXPECT_FALSE(adam.beginStep(0, 1.0).isOk());
  EXPECT_EQ(adam.stepCount(), 0);
}

} // namespace
