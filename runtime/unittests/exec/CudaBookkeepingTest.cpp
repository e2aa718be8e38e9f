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

TEST(ExecCudaBookkeeping, BeginStepRefusesABadNormWithoutCounting) {
  AdamW adam(AdamWConfig{});
  EXPECT_FALSE(adam.beginStep(4, std::nan("")).isOk());
  EXPECT_FALSE(adam.beginStep(0, 1.0).isOk());
  EXPECT_EQ(adam.stepCount(), 0);
}

} // namespace
