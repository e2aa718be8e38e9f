//===- FakeDeviceBackend.cpp - A device's bookkeeping, in host memory -----===//
//
// The executor's backend (exec/Backend.h) as the CUDA target keeps its
// books, run on the host so that a machine without a GPU tests them:
//  - the parameter store is "device" arrays (fp32 master weights, fp32
//    gradient accumulators, fp32 moments) next to a host image that exists
//    only between toHost() and toTarget(), as CudaParamArrays does; the
//    AdamW step applies bitpipe/cuda.h's documented per-element arithmetic
//    with the segment tables and constants of cuda/backend/SegmentTable.h;
//  - inputs pass through a staging copy; a loss lands on the host only when
//    the executor waits (synchronize), as an asynchronous copy would.
// It stops the program (exit 3, a message) when the executor breaks a rule
// that a device needs: reading the losses before waiting, running a stage
// function on weights never uploaded, touching a host image that is not
// there, unbalanced stage calls.
//
// With BITPIPE_FAKE_DEVICE_LOG=PATH, each step appends one line of what
// crossed the bus: "step S inputs N input_bytes B losses L norms K
// syncs Y stage_calls C zeroings Z" (Z: times the gradient accumulators,
// which the stage functions add into, were zeroed); before the first, what
// the warm-up did, "warm-up stage_calls C zeroings Z" (Executor::warmUp);
// and at the
// end of the run one line of the whole parameter store's copies: "store
// downloads D uploads U" (a run that neither loads nor saves makes none: the
// initial weights are drawn on the device and checked there). Inputs are staged
// as the CUDA backend stages them (exec/InputStaging.h: sized at start-up,
// never grown).
//
// With BITPIPE_FAKE_DEVICE_NCCL set and more than one rank, the steps'
// transport is the NCCL communicator (comm/nccl) over HostNcclCalls.h's
// MPI stand-in for NCCL, as the CUDA backend's would be over NCCL: `1` or
// `strict` plays NCCL's rules exactly (rendezvous sends, groups as units,
// each communicator's units in order), `loose` buffers sends as MPI does.
// Unset, MPI carries the steps.
//
// Under --shard-optimizer the arrays keep the CUDA target's books
// (cuda/backend/SegmentTable.h's tables and sizes): compact moments of the
// owned parts and, with BITPIPE_FAKE_DEVICE_COMPACT_MASTER=1, compact
// master weights beside a whole copy for the stage functions, which the
// ranks all-gather (the bf16 copy's role on CUDA, in fp32 here).
//
// Linked instead of the CPU backend into FakeDeviceSingle, FakeDevicePipe2
// and FakeDevicePipe2Dp2 (CMakeLists.txt); exec-test.sh's fake-device and
// fake-nccl cases run them against the CPU's FakeSingle.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "HostNcclCalls.h"
#include "HostParamState.h"
#include "InputStaging.h"
#include "OwnedParts.h"
#include "SegmentTable.h"

#include "comm/mpi/MpiCommunicator.h"
#include "comm/nccl/NcclCommunicator.h"

#include "train/AdamW.h"
#include "train/Trace.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace bitpipe::runtime {

namespace {

[[noreturn]] void broken(const char *rule) {
  std::fprintf(stderr, "bitpipe: fake device: the executor broke a rule: %s\n",
               rule);
  std::fflush(stderr);
  std::exit(3);
}

/// What crossed the bus in the current step.
struct BusCounts {
  int64_t inputs = 0, inputBytes = 0, losses = 0, norms = 0, syncs = 0,
          stageCalls = 0, zeroings = 0;
};

/// Copies of the whole parameter store between host and device, in the run.
struct StoreCopies {
  int64_t downloads = 0, uploads = 0;
};

class FakeDeviceArrays final : public ParamArrays {
public:
  /// \p compactMaster: keep the master weights of the owned parts only, as
  /// the CUDA target does under bf16, with a copy of the whole weights for
  /// the stage functions (fp32 here: the fake stage functions are the
  /// CPU's).
  FakeDeviceArrays(const ParamLayout &layout, bool compactMaster,
                   BusCounts &bus, StoreCopies &copies)
      : bus_(bus), copies_(copies), layout_(layout),
        n_(static_cast<size_t>(layout.numFloats)),
        compactMaster_(compactMaster && layout.shardedOptimizer),
        sizes_(cudaStoreSizes(layout, compactMaster_)),
        optimizer_(cudaOptimizerTable(layout, compactMaster_)),
        norm_(cudaSegments(layout.norm)),
        master_(static_cast<size_t>(sizes_.master), 0.0f),
        m_(static_cast<size_t>(sizes_.moments), 0.0f),
        v_(static_cast<size_t>(sizes_.moments), 0.0f), grads_(n_, 0.0),
        compute_(compactMaster_ ? n_ : 0, 0.0f) {}

  // Drawn "on the device", with the generator the CUDA kernel runs
  // (core/Random.h: the same bits on host and device).
  Status initialize(uint64_t seed) override {
    std::vector<float> whole(n_);
    initializeHostWeights(layout_, seed, whole.data());
    keepWholeWeights(whole);
    std::fill(m_.begin(), m_.end(), 0.0f);
    std::fill(v_.begin(), v_.end(), 0.0f);
    std::fill(grads_.begin(), grads_.end(), 0.0);
    uploaded_ = true;
    return Status::ok();
  }
  // bp_cuda_find_invalid over the update's table, then what
  // CudaParamArrays makes of its answer.
  Expected<std::vector<std::optional<InvalidState>>> findInvalid() override {
    std::vector<int64_t> first;
    for (const bp_cuda_segment &s : optimizer_.segments) {
      const std::optional<InvalidState> bad =
          firstInvalidState(master_.data() + s.master, m_.data() + s.moment,
                            v_.data() + s.moment, s.count);
      for (StateArray a : {StateArray::Weights, StateArray::FirstMoments,
                           StateArray::SecondMoments})
        first.push_back(bad && bad->array == a ? bad->index : INT64_MAX);
    }
    std::vector<std::optional<InvalidState>> found(layout_.all.size());
    const std::vector<std::optional<StateFinding>> findings =
        stateFindings(optimizer_, found.size(), first);
    for (size_t p = 0; p < found.size(); ++p) {
      if (!findings[p])
        continue;
      const StateFinding &f = *findings[p];
      const float *at = findingValue<const float>(optimizer_, f, master_.data(),
                                                  m_.data(), v_.data());
      found[p] = InvalidState{f.array, f.index, *at};
    }
    return found;
  }

  int64_t targetBytes() const override {
    return static_cast<int64_t>(
        (master_.size() + n_ + m_.size() + v_.size() + compute_.size()) *
        sizeof(float));
  }
  float *hostParams() override { return image(hostParams_); }
  float *hostM() override { return image(hostM_); }
  float *hostV() override { return image(hostV_); }
  Status toHost() override {
    ++copies_.downloads;
    allocateImage();
    if (compactMaster_)
      expandOwnedParts(layout_, master_.data(), hostParams_.data());
    else
      hostParams_ = master_;
    hostM_ = m_;
    hostV_ = v_;
    return Status::ok();
  }
  Status toTarget() override {
    if (!hasImage_)
      broken("toTarget without a host image");
    ++copies_.uploads;
    keepWholeWeights(hostParams_);
    m_ = hostM_;
    v_ = hostV_;
    std::fill(grads_.begin(), grads_.end(), 0.0);
    uploaded_ = true;
    releaseHost();
    return Status::ok();
  }
  void releaseHost() override {
    hasImage_ = false;
    std::vector<float>().swap(hostParams_);
    std::vector<float>().swap(hostM_);
    std::vector<float>().swap(hostV_);
  }

  void *computeParams(int64_t offset) override {
    if (!uploaded_)
      broken("a stage function reads weights that were never uploaded");
    return (compactMaster_ ? compute_.data() : master_.data()) + offset;
  }
  // The target the fake device claims is the CPU (target()), whose stage
  // functions add into float64 accumulators.
  void *gradData() override { return grads_.data(); }
  DType gradDType() const override { return DType::F64; }
  GatheredWeights shardedWeights() override {
    if (!layout_.shardedOptimizer)
      return {};
    return {compactMaster_ ? compute_.data() : master_.data(), DType::F32};
  }
  bool shardsMasterWeights() const override { return compactMaster_; }
  Status zeroGradients() override {
    ++bus_.zeroings;
    std::fill(grads_.begin(), grads_.end(), 0.0);
    return Status::ok();
  }

  Expected<double> sumSquaredGradients(int numMicroBatches) override {
    ++bus_.norms; // the one number read back besides the losses
    double scale = 1.0 / numMicroBatches, sum = 0;
    for (const bp_cuda_segment &s : norm_)
      for (int64_t i = s.offset; i < s.offset + s.count; ++i) {
        double g = scale * grads_[i];
        sum += g * g;
      }
    return sum;
  }

  Status adamwStep(AdamW &optimizer, int numMicroBatches,
                   double globalSumSquares) override {
    BP_ASSIGN(constants, optimizer.beginStep(numMicroBatches,
                                             globalSumSquares));
    const bp_cuda_adamw_constants c = cudaConstants(constants);
    // bitpipe/cuda.h's bp_cuda_adamw_step, element by element: gradients
    // (and the stage functions' copy) at the segment's offset, master
    // weights at its master, moments at its moment.
    for (const bp_cuda_segment &s : optimizer_.segments)
      for (int64_t k = 0; k < s.count; ++k) {
        float &p = master_[s.master + k], &m = m_[s.moment + k],
              &v = v_[s.moment + k];
        float g = static_cast<float>(grads_[s.offset + k] * c.grad_scale);
        m = c.beta1 * m + c.one_minus_beta1 * g;
        v = c.beta2 * v + c.one_minus_beta2 * g * g;
        p = p * (s.decay ? c.decay_factor : 1.0f) -
            c.step_size * m / (std::sqrt(v) / c.root_bc2 + c.eps);
        if (compactMaster_)
          compute_[s.offset + k] = p;
      }
    return Status::ok();
  }

private:
  float *image(std::vector<float> &v) {
    if (!hasImage_)
      broken("the parameter store's host image is used while only the "
             "device holds the parameters (toHost first)");
    return v.data();
  }
  void allocateImage() {
    hostParams_.assign(n_, 0.0f);
    hostM_.assign(m_.size(), 0.0f);
    hostV_.assign(v_.size(), 0.0f);
    hasImage_ = true;
  }
  /// As CudaParamArrays::keepWholeWeights: the stage functions' copy of
  /// all of \p whole, the master weights of the owned parts.
  void keepWholeWeights(const std::vector<float> &whole) {
    if (!compactMaster_) {
      master_ = whole;
      return;
    }
    compute_ = whole;
    compactOwnedParts(layout_, whole.data(), master_.data());
  }

  BusCounts &bus_;
  StoreCopies &copies_;
  ParamLayout layout_;
  size_t n_;
  bool compactMaster_;
  StoreSizes sizes_;
  OptimizerTable optimizer_;
  std::vector<bp_cuda_segment> norm_;
  std::vector<float> master_, m_, v_;
  std::vector<double> grads_;
  std::vector<float> compute_;
  std::vector<float> hostParams_, hostM_, hostV_;
  bool hasImage_ = false, uploaded_ = false;
};

class FakeDeviceBackend final : public Backend {
public:
  // The fake stage functions are host code compiled for the CPU target.
  TargetKind target() const override { return TargetKind::Cpu; }
  Status configure(const Manifest &manifest) override {
    if (const char *path = std::getenv("BITPIPE_FAKE_DEVICE_LOG"))
      log_ = std::fopen(path, "a");
    // "Pinned" staging, sized as the CUDA backend sizes it.
    staging_ = InputStaging(InputStaging::capacityFor(manifest));
    stagingBlock_.assign(staging_.capacity(), 0);
    return Status::ok();
  }
  Expected<std::unique_ptr<ParamArrays>>
  createParamArrays(const ParamLayout &layout) override {
    const char *compact = std::getenv("BITPIPE_FAKE_DEVICE_COMPACT_MASTER");
    return std::unique_ptr<ParamArrays>(new FakeDeviceArrays(
        layout, compact && std::strcmp(compact, "1") == 0, bus_, copies_));
  }
  Expected<std::unique_ptr<Communicator>>
  createCommunicator(MpiCommunicator &bootstrap) override {
    BP_ASSIGN(rules, hostNcclRulesFromEnv("BITPIPE_FAKE_DEVICE_NCCL"));
    if (bootstrap.size() == 1 || !rules)
      return std::unique_ptr<Communicator>();
    BP_ASSIGN(comm, NcclCommunicator::create(bootstrap,
                                             createHostNcclCalls(*rules)));
    return std::unique_ptr<Communicator>(std::move(comm));
  }

  Expected<BufferRef>
  loadInput(int64_t count,
            const std::function<Status(int32_t *)> &fill) override {
    const size_t bytes = static_cast<size_t>(count) * sizeof(int32_t);
    BP_ASSIGN(at, staging_.take(bytes)); // as CudaBackend::loadInput
    int32_t *host = reinterpret_cast<int32_t *>(stagingBlock_.data() + at);
    BP_TRY(fill(host));
    BufferRef b = Buffer::allocate(bytes);
    if (!b)
      return outOfMemory(bytes);
    std::memcpy(b->data(), host, bytes);
    ++bus_.inputs;
    bus_.inputBytes += static_cast<int64_t>(bytes);
    return b;
  }
  Status fillF32(void *dst, float value, int64_t n) override {
    std::fill_n(static_cast<float *>(dst), n, value);
    return Status::ok();
  }

  Status queueLoss(const void *loss) override {
    if (inStageCall_)
      broken("a loss is read back while a stage function runs");
    inFlight_.push_back(*static_cast<const float *>(loss));
    ++bus_.losses;
    return Status::ok();
  }
  std::vector<float> takeLosses() override {
    if (!inFlight_.empty())
      broken("the losses are read before the device was waited for");
    std::vector<float> out;
    out.swap(landed_);
    return out;
  }

  Status stageCallBegin() override {
    if (inStageCall_)
      broken("stage calls nest");
    inStageCall_ = true;
    return Status::ok();
  }
  Status stageCallEnd(const std::string &span) override {
    if (!inStageCall_)
      broken("a stage call ends that did not begin");
    inStageCall_ = false;
    ++bus_.stageCalls;
    spans_.push_back(span);
    return Status::ok();
  }
  Status synchronize() override {
    ++bus_.syncs;
    landed_.insert(landed_.end(), inFlight_.begin(), inFlight_.end());
    inFlight_.clear();
    return Status::ok();
  }
  bool warmsUp() const override { return true; }
  void beginStep(double nowUs) override {
    // Stage calls before the first step are the warm-up's.
    if (log_ && step_ == 0 && !warmUpLogged_) {
      std::fprintf(log_, "warm-up stage_calls %lld zeroings %lld\n",
                   static_cast<long long>(bus_.stageCalls),
                   static_cast<long long>(bus_.zeroings));
      warmUpLogged_ = true;
    }
    bus_ = BusCounts();
    staging_.reset();
    stepStartUs_ = nowUs;
    spans_.clear();
  }
  void endStep(TraceRecorder &trace) override {
    if (inStageCall_)
      broken("the step ends inside a stage call");
    // One device span per stage call, as CUDA events would give.
    for (size_t i = 0; i < spans_.size(); ++i)
      trace.record(spans_[i], TraceCategory::Device,
                   stepStartUs_ + static_cast<double>(i), 1.0);
    if (log_) {
      std::fprintf(log_,
                   "step %lld inputs %lld input_bytes %lld losses %lld norms "
                   "%lld syncs %lld stage_calls %lld zeroings %lld\n",
                   static_cast<long long>(++step_),
                   static_cast<long long>(bus_.inputs),
                   static_cast<long long>(bus_.inputBytes),
                   static_cast<long long>(bus_.losses),
                   static_cast<long long>(bus_.norms),
                   static_cast<long long>(bus_.syncs),
                   static_cast<long long>(bus_.stageCalls),
                   static_cast<long long>(bus_.zeroings));
      std::fflush(log_);
    }
  }
  Status outOfMemory(size_t) const override {
    return Status::error(ErrorCode::OutOfMemory, "fake device: out of memory");
  }

  ~FakeDeviceBackend() override {
    if (!log_)
      return;
    std::fprintf(log_, "store downloads %lld uploads %lld\n",
                 static_cast<long long>(copies_.downloads),
                 static_cast<long long>(copies_.uploads));
    std::fclose(log_);
  }

private:
  BusCounts bus_;
  StoreCopies copies_;
  InputStaging staging_;
  std::vector<char> stagingBlock_;
  std::vector<float> inFlight_, landed_;
  std::vector<std::string> spans_;
  bool inStageCall_ = false;
  double stepStartUs_ = 0;
  int64_t step_ = 0;
  bool warmUpLogged_ = false;
  std::FILE *log_ = nullptr;
};

} // namespace

std::unique_ptr<Backend> createTargetBackend() {
  return std::make_unique<FakeDeviceBackend>();
}

} // namespace bitpipe::runtime
