//===- CudaBackendTest.cpp - The executor's CUDA backend on a device ------===//
//
// The CUDA backend (runtime/lib/cuda/backend) against the CPU's arithmetic:
// the device-resident parameter store (upload, gradient accumulation, the
// norm, the fused AdamW step, the bf16 compute copy, download), and the
// backend's traffic (inputs through pinned staging, losses read back in
// order, device spans, the one-rank limit). Skipped without a device.
//
// bench/gpu/check.sh runs these tests on a GPU.
//
//===----------------------------------------------------------------------===//

#include "CudaParamArrays.h"
#include "CudaTestUtil.h"

#include "Backend.h"
#include "HostParamState.h"
#include "train/AdamW.h"
#include "train/Trace.h"

#include <cmath>
#include <cstring>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::test;

namespace {

/// Three tensors, one of a size that is no multiple of 4 or 16; the norm
/// counts the first two (as a rank that is not the lowest holder of the
/// third would).
ParamLayout testLayout() {
  ParamLayout l;
  int64_t next = 0;
  for (auto [name, count, decay] :
       {std::tuple<const char *, int64_t, bool>{"a", 1000, true},
        {"b", 77, false},
        {"c", 4099, true}}) {
    l.all.push_back({name, next, count, decay});
    next += count;
  }
  l.numFloats = next;
  l.norm = {l.all[0], l.all[1]};
  return l;
}

/// A gradient of micro-batch \p mb: multiples of 1/64, so that fp32 and
/// fp64 accumulators hold the same sums and both targets see one gradient.
std::vector<float> gradient(int64_t n, int mb) {
  std::vector<float> g(n);
  for (int64_t i = 0; i < n; ++i)
    g[i] = static_cast<float>((i * 13 + mb * 5) % 41 - 20) / 64.0f;
  return g;
}

void expectClose(const std::vector<float> &got, const float *want, size_t n,
                 const char *what) {
  // The device may contract a * b + c into one FMA (nvcc's default), the
  // host does not: a few ulps apart.
  for (size_t i = 0; i < n; ++i)
    ASSERT_NEAR(got[i], want[i], 4e-7 * std::fabs(want[i]) + 1e-12)
        << what << "[" << i << "]";
}

class CudaBackendTest : public CudaTest {};

void runStoreAgainstCpu(Precision precision, void *stream) {
  const ParamLayout layout = testLayout();
  const int64_t n = layout.numFloats;
  Expected<std::unique_ptr<ParamArrays>> made = CudaParamArrays::create(
      layout, precision, static_cast<cudaStream_t>(stream));
  ASSERT_TRUE(made.isOk()) << made.status().message();
  std::unique_ptr<ParamArrays> dev = made.take();
  // A host image exists only between toHost() and toTarget().
  ASSERT_TRUE(dev->toHost().isOk());

  // The CPU's store, by hand: fp32 weights and moments, fp64 gradients.
  std::vector<float> p(n), m(n), v(n);
  std::vector<double> g(n, 0.0);
  for (int64_t i = 0; i < n; ++i) {
    p[i] = 0.1f * std::sin(0.01f * i);
    m[i] = 0.01f * std::cos(0.02f * i);
    v[i] = 1e-4f * (1.0f + std::sin(0.03f * i) * std::sin(0.03f * i));
  }
  std::copy(p.begin(), p.end(), dev->hostParams());
  std::copy(m.begin(), m.end(), dev->hostM());
  std::copy(v.begin(), v.end(), dev->hostV());
  ASSERT_TRUE(dev->toTarget().isOk());

  if (precision == Precision::Bf16) {
    std::vector<bp_bf16_t> copy(n);
    BP_CUDA_OK(cudaMemcpy(copy.data(), dev->computeParams(0),
                          n * sizeof(bp_bf16_t), cudaMemcpyDeviceToHost));
    EXPECT_EQ(copy, toBf16(p)) << "the bf16 copy after the upload";
  } else {
    // Under fp32 the stage functions read the master weights themselves.
    std::vector<float> master(n);
    BP_CUDA_OK(cudaMemcpy(master.data(), dev->computeParams(0),
                          n * sizeof(float), cudaMemcpyDeviceToHost));
    EXPECT_EQ(master, p) << "the master weights after the upload";
    EXPECT_EQ(dev->computeParams(5),
              static_cast<float *>(dev->computeParams(0)) + 5);
  }

  const int micro = 2;
  for (int mb = 0; mb < micro; ++mb) {
    std::vector<float> gm = gradient(n, mb);
    DeviceBuffer<float> d(gm);
    // As a stage function's gradient kernels do: into the accumulators.
    for (const ParamSegment &s : layout.all)
      ASSERT_EQ(bp_cuda_accumulate_f32(static_cast<float *>(dev->gradData()) +
                                           s.offset,
                                       d.get() + s.offset, s.count, stream),
                BP_OK);
    for (int64_t i = 0; i < n; ++i)
      g[i] += gm[i];
    BP_CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  }

  std::vector<AdamWParam> all, norm;
  for (const ParamSegment &s : layout.all)
    all.push_back({s.name, p.data() + s.offset, g.data() + s.offset,
                   m.data() + s.offset, v.data() + s.offset, s.count,
                   s.decay});
  norm = {all[0], all[1]};
  Expected<double> want = AdamW::sumSquaredGradients(norm, micro);
  ASSERT_TRUE(want.isOk());
  Expected<double> got = dev->sumSquaredGradients(micro);
  ASSERT_TRUE(got.isOk()) << got.status().message();
  // fp64 sums of the same terms in another order.
  EXPECT_NEAR(*got, *want, 1e-12 * *want);

  AdamWConfig config;
  config.lr = 1e-2;
  config.weightDecay = 0.1;
  config.maxGradNorm = 1.0;
  AdamW cpu(config), device(config);
  ASSERT_TRUE(cpu.stepWithGlobalNorm(all, micro, *want).isOk());
  ASSERT_TRUE(dev->adamwStep(device, micro, *want).isOk());
  EXPECT_EQ(device.stepCount(), 1);

  ASSERT_TRUE(dev->toHost().isOk());
  expectClose(std::vector<float>(dev->hostParams(), dev->hostParams() + n),
              p.data(), n, "weights");
  expectClose(std::vector<float>(dev->hostM(), dev->hostM() + n), m.data(), n,
              "m");
  expectClose(std::vector<float>(dev->hostV(), dev->hostV() + n), v.data(), n,
              "v");
  if (precision == Precision::Bf16) {
    // Written by the AdamW kernel in the same pass: the rounding of the
    // device's own updated master weights.
    std::vector<bp_bf16_t> copy(n);
    BP_CUDA_OK(cudaMemcpy(copy.data(), dev->computeParams(0),
                          n * sizeof(bp_bf16_t), cudaMemcpyDeviceToHost));
    EXPECT_EQ(copy, toBf16(std::vector<float>(dev->hostParams(),
                                              dev->hostParams() + n)));
  }
  dev->releaseHost();

  ASSERT_TRUE(dev->zeroGradients().isOk());
  Expected<double> zero = dev->sumSquaredGradients(micro);
  ASSERT_TRUE(zero.isOk());
  EXPECT_EQ(*zero, 0.0);
}

TEST_F(CudaBackendTest, ParamStoreMatchesTheCpuStepInFp32) {
  runStoreAgainstCpu(Precision::Fp32, stream());
}

TEST_F(CudaBackendTest, ParamStoreKeepsTheBf16CopyCurrent) {
  runStoreAgainstCpu(Precision::Bf16, stream());
}

/// testLayout() with an initialiser per tensor, as a manifest gives them.
ParamLayout initLayout() {
  ParamLayout l = testLayout();
  l.all[0].init = InitKind::Normal;
  l.all[0].stddev = 0.02;
  l.all[1].init = InitKind::Ones;
  l.all[2].init = InitKind::Normal;
  l.all[2].stddev = 1.5;
  return l;
}

TEST_F(CudaBackendTest, InitialWeightsAreTheHostDrawsBitForBit) {
  const ParamLayout layout = initLayout();
  for (Precision precision : {Precision::Fp32, Precision::Bf16}) {
    Expected<std::unique_ptr<ParamArrays>> made = CudaParamArrays::create(
        layout, precision, static_cast<cudaStream_t>(stream()));
    ASSERT_TRUE(made.isOk()) << made.status().message();
    std::unique_ptr<ParamArrays> dev = made.take();
    ASSERT_TRUE(dev->initialize(20261205).isOk());
    std::vector<float> want(layout.numFloats);
    initializeHostWeights(layout, 20261205, want.data());
    ASSERT_TRUE(dev->toHost().isOk());
    for (int64_t i = 0; i < layout.numFloats; ++i) {
      uint32_t got, expected;
      std::memcpy(&got, dev->hostParams() + i, sizeof got);
      std::memcpy(&expected, want.data() + i, sizeof expected);
      ASSERT_EQ(got, expected) << "element " << i;
      ASSERT_EQ(dev->hostM()[i], 0.0f);
      ASSERT_EQ(dev->hostV()[i], 0.0f);
    }
    if (precision == Precision::Bf16) {
      std::vector<bp_bf16_t> copy(layout.numFloats);
      BP_CUDA_OK(cudaMemcpy(copy.data(), dev->computeParams(0),
                            copy.size() * sizeof(bp_bf16_t),
                            cudaMemcpyDeviceToHost));
      EXPECT_EQ(copy, toBf16(want)) << "the bf16 copy of the drawn weights";
    }
  }
}

TEST_F(CudaBackendTest, FindsTheFirstInvalidValueOnTheDevice) {
  const ParamLayout layout = initLayout();
  Expected<std::unique_ptr<ParamArrays>> made = CudaParamArrays::create(
      layout, Precision::Fp32, static_cast<cudaStream_t>(stream()));
  ASSERT_TRUE(made.isOk()) << made.status().message();
  std::unique_ptr<ParamArrays> dev = made.take();
  ASSERT_TRUE(dev->initialize(1).isOk());
  Expected<std::vector<std::optional<InvalidState>>> none = dev->findInvalid();
  ASSERT_TRUE(none.isOk()) << none.status().message();
  for (const std::optional<InvalidState> &e : *none)
    EXPECT_FALSE(e);
  // A NaN weight late in "a", an infinite first moment in "a" before it
  // (weights are reported first), a negative second moment in "c".
  ASSERT_TRUE(dev->toHost().isOk());
  dev->hostParams()[layout.all[0].offset + 900] = std::nanf("");
  dev->hostM()[layout.all[0].offset + 3] = INFINITY;
  dev->hostV()[layout.all[2].offset + 4000] = -1.0f;
  ASSERT_TRUE(dev->toTarget().isOk());
  Expected<std::vector<std::optional<InvalidState>>> found = dev->findInvalid();
  ASSERT_TRUE(found.isOk()) << found.status().message();
  ASSERT_TRUE(dev->toHost().isOk());
  std::vector<std::optional<InvalidState>> onHost =
      findInvalidOnHost(layout, dev->hostParams(), dev->hostM(), dev->hostV());
  ASSERT_EQ(found->size(), onHost.size());
  for (size_t s = 0; s < onHost.size(); ++s) {
    ASSERT_EQ((*found)[s].has_value(), onHost[s].has_value()) << s;
    if (onHost[s]) {
      EXPECT_EQ((*found)[s]->array, onHost[s]->array) << s;
      EXPECT_EQ((*found)[s]->index, onHost[s]->index) << s;
    }
  }
  ASSERT_TRUE((*found)[0]);
  EXPECT_EQ((*found)[0]->array, StateArray::Weights);
  EXPECT_EQ((*found)[0]->index, 900);
  EXPECT_FALSE((*found)[1]);
  ASSERT_TRUE((*found)[2]);
  EXPECT_EQ((*found)[2]->array, StateArray::SecondMoments);
  EXPECT_EQ((*found)[2]->value, -1.0f);
}

Manifest oneRankManifest(int64_t worldSize) {
  Manifest m;
  m.target.kind = TargetKind::Cuda;
  m.target.precision = Precision::Fp32;
  m.schedule.microbatches = 2;
  m.schedule.dataParallel = 1;
  m.schedule.worldSize = worldSize;
  return m;
}

// Several ranks communicate through NCCL (comm/nccl); configured without
// placeRank, a rank takes the first device.
TEST_F(CudaBackendTest, AcceptsSeveralRanks) {
  std::unique_ptr<Backend> b = createTargetBackend();
  Status s = b->configure(oneRankManifest(2));
  EXPECT_TRUE(s.isOk()) << s.message();
}

TEST_F(CudaBackendTest, InputsGoInLossesComeBackInOrder) {
  std::unique_ptr<Backend> b = createTargetBackend();
  ASSERT_EQ(b->target(), TargetKind::Cuda);
  Manifest manifest = oneRankManifest(1);
  Status s = b->configure(manifest);
  ASSERT_TRUE(s.isOk()) << s.message();
  TraceRecorder trace;
  b->beginStep(trace.nowUs());

  Expected<BufferRef> in = b->loadInput(37, [](int32_t *host) {
    for (int i = 0; i < 37; ++i)
      host[i] = 3 * i;
    return Status::ok();
  });
  ASSERT_TRUE(in.isOk()) << in.status().message();

  // Three losses, one more than the step's micro-batches: the slots grow.
  ASSERT_TRUE(b->stageCallBegin().isOk());
  std::vector<BufferRef> losses;
  for (float value : {1.5f, 2.5f, 3.5f}) {
    BufferRef loss = Buffer::allocate(sizeof(float));
    ASSERT_TRUE(loss);
    ASSERT_TRUE(b->fillF32(loss->data(), value, 1).isOk());
    ASSERT_TRUE(b->queueLoss(loss->data()).isOk());
    losses.push_back(loss);
  }
  ASSERT_TRUE(b->stageCallEnd("F0.s0").isOk());
  ASSERT_TRUE(b->synchronize().isOk());
  EXPECT_EQ(b->takeLosses(), (std::vector<float>{1.5f, 2.5f, 3.5f}));
  EXPECT_TRUE(b->takeLosses().empty());

  std::vector<int32_t> back(37);
  BP_CUDA_OK(cudaMemcpy(back.data(), (*in)->data(), 37 * sizeof(int32_t),
                        cudaMemcpyDeviceToHost));
  for (int i = 0; i < 37; ++i)
    EXPECT_EQ(back[i], 3 * i);

  b->endStep(trace);
  ASSERT_EQ(trace.events().size(), 1u);
  EXPECT_EQ(trace.events()[0].name, "F0.s0");
  EXPECT_EQ(trace.events()[0].category, TraceCategory::Device);
  EXPECT_GE(trace.events()[0].durationUs, 0.0);
}

} // namespace
