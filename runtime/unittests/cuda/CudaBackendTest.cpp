//===- CudaBackendTest.cpp - The executor's CUDA backend on a device ------===//
//
// The CUDA backend (runtime/lib/cuda/backend) against the CPU's arithmetic:
// the device-resident parameter store (upload, gradient accumulation, the
// norm, the fused AdamW step, the bf16 compute copy, download), and the
// backend's traffic (inputs through pinned staging, losses read back in
// order, device spans, the one-rank limit); and --cuda-graphs: a tiny
// model's steps captured and replayed give the eager run's losses and
// parameters bit for bit, with every stage call's span, and a graph block
// held elsewhere makes the step eager and the graph captured again.
// Skipped without a device.
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

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

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

/// initLayout() under a sharded optimizer, as one rank sees it: it owns
/// the middle of "a", all of "b" and most of "c" (from an element that is
/// no multiple of 4), their moments compactly.
ParamLayout shardedLayout() {
  ParamLayout l = initLayout();
  l.shardedOptimizer = true;
  l.owned = {{0, l.all[0].offset + 300, 400, 0},
             {1, l.all[1].offset, 77, 400},
             {2, l.all[2].offset + 5, 2001, 477}};
  l.numMoments = 400 + 77 + 2001;
  return l;
}

/// The owned parts of a sharded store against a whole store on the same
/// device: the same draws, and after an AdamW step the same bits on the
/// owned elements; elsewhere the sharded store keeps what it had until the
/// ranks' all-gather (ParamStore::gatherWeights) brings the owners' values.
void runShardedStoreAgainstWhole(Precision precision, void *stream) {
  const ParamLayout whole = initLayout(), sharded = shardedLayout();
  const int64_t n = whole.numFloats;
  auto made = [&](const ParamLayout &l) {
    Expected<std::unique_ptr<ParamArrays>> a = CudaParamArrays::create(
        l, precision, static_cast<cudaStream_t>(stream));
    EXPECT_TRUE(a.isOk()) << a.status().message();
    return a.isOk() ? a.take() : nullptr;
  };
  std::unique_ptr<ParamArrays> w = made(whole), s = made(sharded);
  ASSERT_TRUE(w && s);
  const bool bf16 = precision == Precision::Bf16;
  EXPECT_EQ(s->shardsMasterWeights(), bf16);
  const ParamArrays::GatheredWeights gathered = s->shardedWeights();
  EXPECT_EQ(gathered.data, s->computeParams(0));
  EXPECT_EQ(gathered.dtype, bf16 ? DType::BF16 : DType::F32);
  EXPECT_EQ(w->shardedWeights().data, nullptr);
  EXPECT_LT(s->targetBytes(), w->targetBytes());
  ASSERT_TRUE(w->initialize(7).isOk());
  ASSERT_TRUE(s->initialize(7).isOk());
  std::vector<float> drawn(n);
  initializeHostWeights(whole, 7, drawn.data());
  std::vector<bool> owned(n, false);
  for (const OptimizerPart &p : sharded.owned)
    std::fill_n(owned.begin() + p.offset, p.count, true);

  auto computeCopy = [&](ParamArrays &a) {
    std::vector<uint16_t> out(n * (bf16 ? 1 : 2));
    EXPECT_EQ(cudaMemcpy(out.data(), a.computeParams(0),
                         out.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
    return out;
  };
  // Drawn: the owned master weights are the host's draws (under bf16 the
  // rest is the owners', zero until gathered), the copy the stage
  // functions read is whole.
  ASSERT_TRUE(s->toHost().isOk());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(s->hostParams()[i], owned[i] || !bf16 ? drawn[i] : 0.0f) << i;
  s->releaseHost();
  EXPECT_EQ(computeCopy(*s), computeCopy(*w));

  const int micro = 2;
  for (int mb = 0; mb < micro; ++mb) {
    DeviceBuffer<float> g(gradient(n, mb));
    for (ParamArrays *a : {w.get(), s.get()})
      ASSERT_EQ(bp_cuda_accumulate_f32(static_cast<float *>(a->gradData()),
                                       g.get(), n, stream),
                BP_OK);
  }
  Expected<double> norm = w->sumSquaredGradients(micro);
  ASSERT_TRUE(norm.isOk()) << norm.status().message();
  AdamWConfig config;
  config.lr = 1e-2;
  config.weightDecay = 0.1;
  AdamW forWhole(config), forShard(config);
  ASSERT_TRUE(w->adamwStep(forWhole, micro, *norm).isOk());
  ASSERT_TRUE(s->adamwStep(forShard, micro, *norm).isOk());

  BP_CUDA_OK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  const std::vector<uint16_t> wCopy = computeCopy(*w), sCopy = computeCopy(*s);
  ASSERT_TRUE(w->toHost().isOk());
  ASSERT_TRUE(s->toHost().isOk());
  const int width = bf16 ? 1 : 2; // 16-bit words per element of the copy
  int64_t wrong = 0, moved = 0;
  for (const OptimizerPart &p : sharded.owned)
    for (int64_t k = 0; k < p.count; ++k) {
      const int64_t i = p.offset + k;
      wrong += std::memcmp(&s->hostParams()[i], &w->hostParams()[i], 4) != 0;
      wrong += std::memcmp(&s->hostM()[p.moment + k], &w->hostM()[i], 4) != 0;
      wrong += std::memcmp(&s->hostV()[p.moment + k], &w->hostV()[i], 4) != 0;
      wrong +=
          std::memcmp(&sCopy[i * width], &wCopy[i * width], 2 * width) != 0;
    }
  EXPECT_EQ(wrong, 0) << "the owned parts differ from the whole step's";
  // Not owned: not updated here (the copy as drawn: a fresh store's of
  // the same seed).
  const std::vector<uint16_t> refCopy = [&] {
    std::unique_ptr<ParamArrays> r = made(whole);
    EXPECT_TRUE(r->initialize(7).isOk());
    return computeCopy(*r);
  }();
  for (int64_t i = 0; i < n; ++i)
    if (!owned[i])
      moved +=
          std::memcmp(&sCopy[i * width], &refCopy[i * width], 2 * width) != 0;
  EXPECT_EQ(moved, 0) << "elements outside the owned parts were updated";

  // A checkpoint's load: the whole image in, each part kept, the copy the
  // stage functions read made from all of it; a bad second moment is
  // found at its index in the parameter.
  for (int64_t i = 0; i < n; ++i)
    s->hostParams()[i] = w->hostParams()[i];
  s->hostV()[sharded.owned[2].moment + 10] = -1.0f;
  ASSERT_TRUE(s->toTarget().isOk());
  w->releaseHost();
  EXPECT_EQ(computeCopy(*s), wCopy);
  Expected<std::vector<std::optional<InvalidState>>> found = s->findInvalid();
  ASSERT_TRUE(found.isOk()) << found.status().message();
  EXPECT_FALSE((*found)[0]);
  EXPECT_FALSE((*found)[1]);
  ASSERT_TRUE((*found)[2]);
  EXPECT_EQ((*found)[2]->array, StateArray::SecondMoments);
  EXPECT_EQ((*found)[2]->index, 5 + 10);
  EXPECT_EQ((*found)[2]->value, -1.0f);
}

TEST_F(CudaBackendTest, AShardedStoreUpdatesItsPartsAsAWholeOneInFp32) {
  runShardedStoreAgainstWhole(Precision::Fp32, stream());
}

TEST_F(CudaBackendTest, AShardedBf16StoreKeepsOnlyItsPartsInFp32) {
  runShardedStoreAgainstWhole(Precision::Bf16, stream());
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

// --cuda-graphs on one rank: steps that the executor would issue for a
// tiny model, through the backend's calls as the executor makes them.
// logits = (wte[tokens] + wpe) W^T + b, cross-entropy against labels;
// each micro-batch's tokens are distinct (a permutation of the
// vocabulary), so that embedding_bwd's atomic adds sum one value per row
// and the run is deterministic bit for bit.
constexpr int64_t kB = 2, kT = 8, kH = 16, kV = 16, kN = kB * kT;
constexpr int kMicro = 2;

ParamLayout tinyLayout() {
  ParamLayout l;
  int64_t next = 0;
  for (auto [name, count, init] : {std::tuple<const char *, int64_t, InitKind>{
                                       "wte", kV * kH, InitKind::Normal},
                                   {"wpe", kT * kH, InitKind::Normal},
                                   {"w", kV * kH, InitKind::Normal},
                                   {"b", kV, InitKind::Zeros}}) {
    ParamSegment seg{name, next, count, init != InitKind::Zeros};
    seg.init = init;
    seg.stddev = 0.5;
    l.all.push_back(seg);
    next += count;
  }
  l.numFloats = next;
  l.norm = l.all;
  return l;
}

/// The ids of micro-batch \p mb in (0-based) step \p step.
std::function<Status(int32_t *)> idsOf(int64_t step, int mb, bool labels) {
  return [=](int32_t *host) {
    for (int64_t i = 0; i < kN; ++i)
      host[i] = static_cast<int32_t>(labels ? (i * 3 + step + mb) % kV
                                            : (i * 5 + step * 3 + mb * 7) %
                                                  kV); // 5 is prime to 16
    return Status::ok();
  };
}

struct TinyRun {
  std::vector<StepMode> modes;
  std::vector<float> losses;
  std::vector<float> params; // the master weights after the last step
  size_t deviceSpans = 0;
};

/// \p steps training steps, with or without graphs; \p between runs after
/// each step (its 0-based index).
TinyRun runTiny(bool graphs, int steps,
                const std::function<void(int)> &between = nullptr) {
  TinyRun run;
  std::unique_ptr<Backend> b = createTargetBackend();
  Manifest m = oneRankManifest(1);
  m.model.microbatchSize = kB;
  m.model.seqLen = kT;
  m.schedule.microbatches = kMicro;
  Status s = b->configure(m);
  EXPECT_TRUE(s.isOk()) << s.message();
  StepGraphRequest request;
  request.enabled = graphs;
  EXPECT_EQ(b->useStepGraphs(request), "");
  const ParamLayout layout = tinyLayout();
  Expected<std::unique_ptr<ParamArrays>> made = b->createParamArrays(layout);
  EXPECT_TRUE(made.isOk()) << made.status().message();
  if (!made.isOk())
    return run;
  std::unique_ptr<ParamArrays> arrays = made.take();
  EXPECT_TRUE(arrays->initialize(11).isOk());
  auto param = [&](int k) {
    return static_cast<const float *>(
        arrays->computeParams(layout.all[k].offset));
  };
  auto grad = [&](int k) {
    return static_cast<float *>(arrays->gradData()) + layout.all[k].offset;
  };
  AdamWConfig config;
  config.lr = 1e-2;
  AdamW adam(config);
  TraceRecorder trace;
  // The executor's unit loss gradient: made before the steps, kept.
  BufferRef unit = Buffer::allocate(sizeof(float));
  EXPECT_TRUE(b->fillF32(unit->data(), 1.0f, 1).isOk());
  void *stream = bp_cuda_stream();
  auto f = [](const BufferRef &r) { return static_cast<float *>(r->data()); };
  auto ids = [](const BufferRef &r) {
    return static_cast<const int32_t *>(r->data());
  };
  for (int step = 0; step < steps; ++step) {
    b->beginStep(trace.nowUs());
    Expected<StepMode> mode = b->stepMode(step + 1, /*evaluation=*/false);
    EXPECT_TRUE(mode.isOk()) << mode.status().message();
    if (!mode.isOk())
      return run;
    run.modes.push_back(*mode);
    if (*mode == StepMode::Replay) {
      for (int mb = 0; mb < kMicro; ++mb) {
        EXPECT_TRUE(b->restageInput(kN, idsOf(step, mb, false)).isOk());
        EXPECT_TRUE(b->restageInput(kN, idsOf(step, mb, true)).isOk());
      }
      s = b->replay();
      EXPECT_TRUE(s.isOk()) << s.message();
    } else {
      for (int mb = 0; mb < kMicro; ++mb) {
        Expected<BufferRef> tokens = b->loadInput(kN, idsOf(step, mb, false));
        Expected<BufferRef> labels = b->loadInput(kN, idsOf(step, mb, true));
        EXPECT_TRUE(tokens.isOk() && labels.isOk());
        BufferRef emb = Buffer::allocate(kN * kH * sizeof(float));
        BufferRef logits = Buffer::allocate(kN * kV * sizeof(float));
        BufferRef loss = Buffer::allocate(sizeof(float));
        BufferRef rowMax = Buffer::allocate(kN * sizeof(float));
        BufferRef logSum = Buffer::allocate(kN * sizeof(float));
        EXPECT_TRUE(b->stageCallBegin().isOk());
        EXPECT_EQ(bp_cuda_embedding_fwd_f32(ids(*tokens), param(0), param(1),
                                            f(emb), kB, kT, kH, kV, stream),
                  BP_OK);
        EXPECT_EQ(bp_cuda_linear_fwd_f32(f(emb), param(2), param(3), f(logits),
                                         kN, kH, kV, stream),
                  BP_OK);
        EXPECT_EQ(bp_cuda_cross_entropy_fwd_f32(
                      f(logits), ids(*labels), f(loss), f(rowMax), f(logSum),
                      kN, kV, BP_IGNORE_INDEX, stream),
                  BP_OK);
        EXPECT_TRUE(b->stageCallEnd(formatString("F%d.s0", mb)).isOk());
        EXPECT_TRUE(b->queueLoss(loss->data()).isOk());
        BufferRef dlogits = Buffer::allocate(kN * kV * sizeof(float));
        BufferRef dx = Buffer::allocate(kN * kH * sizeof(float));
        EXPECT_TRUE(b->stageCallBegin().isOk());
        EXPECT_EQ(bp_cuda_cross_entropy_bwd_f32(
                      f(logits), ids(*labels), f(unit), f(rowMax), f(logSum),
                      f(dlogits), kN, kV, BP_IGNORE_INDEX, stream),
                  BP_OK);
        EXPECT_EQ(bp_cuda_linear_bwd_weight_f32(f(dlogits), f(emb), grad(2),
                                                grad(3), kN, kH, kV, stream),
                  BP_OK);
        EXPECT_EQ(bp_cuda_linear_bwd_input_f32(f(dlogits), param(2), f(dx), kN,
                                               kH, kV, stream),
                  BP_OK);
        EXPECT_EQ(bp_cuda_embedding_bwd_f32(ids(*tokens), f(dx), grad(0),
                                            grad(1), kB, kT, kH, kV, stream),
                  BP_OK);
        EXPECT_TRUE(b->stageCallEnd(formatString("B%d.s0", mb)).isOk());
        // The temporaries go back to the pool here, in stream order.
      }
      if (*mode == StepMode::Capture) {
        s = b->endCapture();
        EXPECT_TRUE(s.isOk()) << s.message();
      }
    }
    // The optimizer step, eager on every step.
    s = b->synchronize();
    EXPECT_TRUE(s.isOk()) << s.message();
    Expected<double> sum = arrays->sumSquaredGradients(kMicro);
    EXPECT_TRUE(sum.isOk());
    EXPECT_TRUE(arrays->adamwStep(adam, kMicro, sum.isOk() ? *sum : 0).isOk());
    EXPECT_TRUE(arrays->zeroGradients().isOk());
    EXPECT_TRUE(b->synchronize().isOk());
    for (float loss : b->takeLosses())
      run.losses.push_back(loss);
    b->endStep(trace);
    if (between)
      between(step);
  }
  for (const TraceEvent &e : trace.events())
    run.deviceSpans += e.category == TraceCategory::Device;
  EXPECT_TRUE(arrays->toHost().isOk());
  run.params.assign(arrays->hostParams(),
                    arrays->hostParams() + layout.numFloats);
  return run;
}

void expectSameBits(const std::vector<float> &got,
                    const std::vector<float> &want, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0)
      << what << " differ";
}

TEST_F(CudaBackendTest, ReplayedStepsMatchEagerStepsBitForBit) {
  const int steps = 6;
  TinyRun eager = runTiny(false, steps);
  TinyRun graphs = runTiny(true, steps);
  EXPECT_EQ(eager.modes, std::vector<StepMode>(steps, StepMode::Eager));
  // Two eager steps, the third captured (the second took nothing new from
  // CUDA), the rest replayed.
  EXPECT_EQ(graphs.modes,
            (std::vector<StepMode>{StepMode::Eager, StepMode::Eager,
                                   StepMode::Capture, StepMode::Replay,
                                   StepMode::Replay, StepMode::Replay}));
  ASSERT_EQ(eager.losses.size(), static_cast<size_t>(steps * kMicro));
  expectSameBits(graphs.losses, eager.losses, "the losses");
  expectSameBits(graphs.params, eager.params, "the parameters");
  // Every stage call's span, replays included (external event nodes).
  EXPECT_EQ(eager.deviceSpans, static_cast<size_t>(steps * kMicro * 2));
  EXPECT_EQ(graphs.deviceSpans, eager.deviceSpans);
}

TEST_F(CudaBackendTest, AGraphBlockHeldElsewhereMakesTheStepEager) {
  const int steps = 10;
  std::vector<void *> held;
  // After the first replay (step 4), blocks of the graph's smallest size
  // class are taken from the pool (the most recently cached first, which
  // the graph used) and kept through step 5.
  TinyRun graphs = runTiny(true, steps, [&](int step) {
    if (step == 3)
      for (int i = 0; i < 16; ++i)
        held.push_back(bp_cuda_alloc(sizeof(float), bp_cuda_stream()));
    if (step == 4) {
      for (void *p : held)
        bp_cuda_free(p, bp_cuda_stream());
      held.clear();
    }
  });
  TinyRun eager = runTiny(false, steps);
  ASSERT_EQ(graphs.modes.size(), static_cast<size_t>(steps));
  EXPECT_EQ(graphs.modes[3], StepMode::Replay);
  EXPECT_EQ(graphs.modes[4], StepMode::Eager) << "a stale graph replayed";
  // Captured again once steady, and replayed.
  auto from = graphs.modes.begin() + 5;
  EXPECT_NE(std::find(from, graphs.modes.end(), StepMode::Capture),
            graphs.modes.end());
  EXPECT_EQ(graphs.modes.back(), StepMode::Replay);
  expectSameBits(graphs.losses, eager.losses, "the losses");
  expectSameBits(graphs.params, eager.params, "the parameters");
}

} // namespace
