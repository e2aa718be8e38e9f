//===- CpuBackend.cpp - The executor's backend on the CPU target ----------===//
//
// Everything in host memory (Backend.h): values from runtime.h's host pool,
// inputs written in place, the loss read as it is produced, and a parameter
// store of fp32 master weights (which the stage functions read directly),
// float64 gradient accumulators (train/AdamW.h says why) and fp32 moments,
// updated by the host AdamW. This is the executor's behaviour from before
// the backend boundary existed, bit for bit. The steps' transport is MPI,
// unless the maker of the backend chose another (CpuBackend.h).
//
//===----------------------------------------------------------------------===//

#include "cpu/CpuBackend.h"
#include "HostParamState.h"
#include "cpu/Parallel.h"

#include "train/AdamW.h"
#include "train/Trace.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <new>

namespace bitpipe::runtime {

namespace {

/// A zeroed host array of \p count elements, freed with free(): calloc
/// checks count * sizeof(T) for overflow and returns null, where
/// std::vector would throw std::bad_alloc past -fno-exceptions (a crash).
template <typename T> struct HostArray {
  struct Free {
    void operator()(T *p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data;
  int64_t count = 0;
  bool allocate(int64_t n) {
    count = n;
    data.reset(static_cast<T *>(
        std::calloc(static_cast<size_t>(n ? n : 1), sizeof(T))));
    return data != nullptr;
  }
  T *get() { return data.get(); }
  T *begin() { return data.get(); }
  T *end() { return data.get() + count; }
};

class CpuParamArrays final : public ParamArrays {
public:
  /// Fails (instead of throwing) when the host has no room, naming the
  /// array and its size.
  static Expected<std::unique_ptr<ParamArrays>>
  create(const ParamLayout &layout) {
    std::unique_ptr<CpuParamArrays> a(new (std::nothrow) CpuParamArrays);
    if (!a)
      return Status::error(ErrorCode::OutOfMemory, "out of memory");
    const int64_t n = layout.numFloats;
    auto fail = [&](const char *what, size_t width) {
      double bytes = static_cast<double>(n) * static_cast<double>(width);
      return Status::error(
          ErrorCode::OutOfMemory,
          formatString("the parameter store cannot allocate its %s: %lld "
                       "elements of %zu bytes (%.0f bytes, %.2f GiB) of host "
                       "memory for %zu parameter tensors",
                       what, static_cast<long long>(n), width, bytes,
                       bytes / (1024.0 * 1024.0 * 1024.0), layout.all.size()));
    };
    if (n < 0)
      return fail("arrays (a negative size)", sizeof(float));
    if (!a->params_.allocate(n))
      return fail("fp32 master weights", sizeof(float));
    if (!a->grads_.allocate(n))
      return fail("fp64 gradient accumulators", sizeof(double));
    // Sharded, a rank keeps the moments of what it owns only, compactly.
    const int64_t moments = layout.shardedOptimizer ? layout.numMoments : n;
    if (!a->m_.allocate(moments))
      return fail("AdamW first moments", sizeof(float));
    if (!a->v_.allocate(moments))
      return fail("AdamW second moments", sizeof(float));
    a->layout_ = layout;
    a->all_ = layout.shardedOptimizer ? a->ownedView() : a->view(layout.all);
    a->norm_ = a->view(layout.norm);
    return std::unique_ptr<ParamArrays>(std::move(a));
  }

  int64_t targetBytes() const override {
    return layout_.numFloats *
               static_cast<int64_t>(sizeof(float) + sizeof(double)) +
           m_.count * static_cast<int64_t>(2 * sizeof(float));
  }
  float *hostParams() override { return params_.get(); }
  float *hostM() override { return m_.get(); }
  float *hostV() override { return v_.get(); }
  Status initialize(uint64_t seed) override {
    initializeHostWeights(layout_, seed, params_.get());
    std::fill(m_.begin(), m_.end(), 0.0f);
    std::fill(v_.begin(), v_.end(), 0.0f);
    return zeroGradients();
  }
  Expected<std::vector<std::optional<InvalidState>>> findInvalid() override {
    return findInvalidOnHost(layout_, params_.get(), m_.get(), v_.get());
  }

  // The host image is the arrays themselves.
  Status toHost() override { return Status::ok(); }
  Status toTarget() override { return Status::ok(); }
  void releaseHost() override {}

  void *computeParams(int64_t offset) override {
    return params_.get() + offset;
  }

  GatheredWeights shardedWeights() override {
    if (!layout_.shardedOptimizer)
      return {};
    return {params_.get(), DType::F32};
  }

  void *gradData() override { return grads_.get(); }
  DType gradDType() const override { return DType::F64; }

  Status zeroGradients() override {
    std::fill(grads_.begin(), grads_.end(), 0.0);
    return Status::ok();
  }

  Expected<double> sumSquaredGradients(int numMicroBatches) override {
    if (norm_.empty())
      return 0.0;
    return AdamW::sumSquaredGradients(norm_, numMicroBatches);
  }

  Status adamwStep(AdamW &optimizer, int numMicroBatches,
                   double globalSumSquares) override {
    return optimizer.stepWithGlobalNorm(all_, numMicroBatches,
                                        globalSumSquares);
  }

private:
  CpuParamArrays() = default;

  std::vector<AdamWParam> view(const std::vector<ParamSegment> &segments) {
    std::vector<AdamWParam> out;
    for (const ParamSegment &s : segments)
      out.push_back({s.name, params_.get() + s.offset, grads_.get() + s.offset,
                     m_.get() + s.offset, v_.get() + s.offset, s.count,
                     s.decay});
    return out;
  }

  /// The owned parts of a sharded optimizer, their moments compact.
  std::vector<AdamWParam> ownedView() {
    std::vector<AdamWParam> out;
    for (const OptimizerPart &p : layout_.owned) {
      const ParamSegment &s = layout_.all[p.segment];
      out.push_back({s.name, params_.get() + p.offset, grads_.get() + p.offset,
                     m_.get() + p.moment, v_.get() + p.moment, p.count,
                     s.decay});
    }
    return out;
  }

  ParamLayout layout_;
  HostArray<float> params_, m_, v_;
  HostArray<double> grads_;
  std::vector<AdamWParam> all_, norm_;
};

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(TransportFactory transport)
      : transport_(std::move(transport)) {}

  TargetKind target() const override { return TargetKind::Cpu; }

  void useThreads(int threads) override { cpu::setKernelThreads(threads); }

  Expected<std::unique_ptr<Communicator>>
  createCommunicator(MpiCommunicator &bootstrap) override {
    if (!transport_)
      return std::unique_ptr<Communicator>(); // MPI, in host memory
    return transport_(bootstrap);
  }

  Status configure(const Manifest &manifest) override {
    // The manifest reader already refuses bf16 off the cuda target; this
    // keeps the backend's own promise whatever parsed the manifest.
    if (manifest.target.precision != Precision::Fp32)
      return Status::error(ErrorCode::InvalidArgument,
                           std::string("the CPU runtime computes in fp32, "
                                       "not ") +
                               precisionName(manifest.target.precision));
    return Status::ok();
  }

  Expected<std::unique_ptr<ParamArrays>>
  createParamArrays(const ParamLayout &layout) override {
    return CpuParamArrays::create(layout);
  }

  Expected<BufferRef>
  loadInput(int64_t count,
            const std::function<Status(int32_t *)> &fill) override {
    size_t bytes = static_cast<size_t>(count) * sizeof(int32_t);
    BufferRef b = Buffer::allocate(bytes);
    if (!b)
      return outOfMemory(bytes);
    BP_TRY(fill(static_cast<int32_t *>(b->data())));
    return b;
  }

  Status fillF32(void *dst, float value, int64_t n) override {
    std::fill_n(static_cast<float *>(dst), n, value);
    return Status::ok();
  }

  Status queueLoss(const void *loss) override {
    losses_.push_back(*static_cast<const float *>(loss));
    return Status::ok();
  }
  std::vector<float> takeLosses() override {
    std::vector<float> out;
    out.swap(losses_);
    return out;
  }

  // Host code is synchronous: a stage function has finished when it
  // returns, and the host spans the executor records are the work itself.
  Status stageCallBegin() override { return Status::ok(); }
  Status stageCallEnd(const std::string &) override { return Status::ok(); }
  Status synchronize() override { return Status::ok(); }
  void beginStep(double) override {}
  void endStep(TraceRecorder &) override {}

  Status outOfMemory(size_t) const override {
    return Status::error(ErrorCode::OutOfMemory, "out of memory");
  }

private:
  TransportFactory transport_;
  std::vector<float> losses_;
};

} // namespace

std::unique_ptr<Backend> createCpuBackend(TransportFactory transport) {
  return std::make_unique<CpuBackend>(std::move(transport));
}

} // namespace bitpipe::runtime
