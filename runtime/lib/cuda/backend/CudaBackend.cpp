//===- CudaBackend.cpp - The executor's backend on the CUDA target --------===//
//
// One rank drives one device from one thread, on one non-blocking compute
// stream that runtime.h's functions (bitpipe/cuda.h's context), the pool
// behind bp_alloc and every copy here share, so stream order is the only
// order needed. In a step, only these cross the bus:
//  - inputs: token ids written into pinned host staging, then copied
//    asynchronously (a staging block is reused only in a later step, after
//    the step's end has waited for the stream);
//  - each micro-batch's loss: an asynchronous copy into a pinned slot, read
//    at the step's end;
//  - the gradient norm (CudaParamArrays), which the optimizer must wait for.
// Device faults surface where the host first waits: before the optimizer
// step, reported after the step's last stage call. BITPIPE_CUDA_SYNC=1
// waits after every stage call instead, so that a fault names its own op,
// stage and micro-batch (slow: for finding faults only).
//
// Stage calls are timed with CUDA events; at the step's end they become
// "device" spans of the trace, placed on the host's clock from an event
// recorded when the step began (the stream is idle then: the previous step
// ended by waiting for it). The NCCL communicator times its sends,
// receives and all-reduces on its own streams the same way; their spans
// are measured from that same event and go to rows of their own
// (train/Trace.h, TraceRow).
//
// More than one rank: each rank drives its node-local rank's GPU
// (placeRank, before the stream exists), and its transfers and all-reduces
// go through an NCCL communicator ordered against the compute stream by
// events (comm/nccl/NcclCommunicator.h); one rank transfers nothing and
// keeps the MPI communicator.
//
// With --cuda-graphs (StepGraph.h), a steady training step is captured from
// the compute stream up to its optimizer step, and later steps replay the
// graph instead of running the rank program. The traffic above stays the
// same, at fixed addresses: the graph copies the inputs from the same
// staging slices (restageInput fills them before each replay, and checks
// that they are the captured step's), writes the losses into the same
// pinned slots, and records the stage calls' events as external event
// nodes, so that a replay's spans are measured as an eager step's.
//
// On a GPU, bench/gpu/check.sh runs its tests (CudaBackendTests).
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "CudaParamArrays.h"
#include "DeviceErrors.h"
#include "HuggingFaceCheckpoint.h"
#include "InputStaging.h"
#include "StepGraph.h"

#include "comm/mpi/MpiCommunicator.h"
#include "comm/nccl/CudaNcclCalls.h"
#include "comm/nccl/DevicePlacement.h"
#include "comm/nccl/NcclCommunicator.h"
#include "train/Trace.h"

#include "bitpipe/cuda.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <optional>

namespace bitpipe::runtime {

namespace {

/// Pinned host memory that grows; the caller makes sure no copy into or
/// out of it is in flight when it grows.
struct PinnedBlock {
  void *data = nullptr;
  size_t bytes = 0;
};

class CudaBackend final : public Backend {
public:
  CudaBackend() {
    const char *sync = std::getenv("BITPIPE_CUDA_SYNC");
    syncEachCall_ = sync && std::strcmp(sync, "1") == 0;
  }
  ~CudaBackend() override;

  TargetKind target() const override { return TargetKind::Cuda; }
  Status placeRank(MpiCommunicator &bootstrap) override;
  void usePlanCache(const std::string &dir) override { planCache_ = dir; }
  Status configure(const Manifest &manifest) override;
  std::string planReport() const override;
  std::string useStepGraphs(const StepGraphRequest &request) override;
  bool warmsUp() const override { return true; }
  Expected<std::unique_ptr<Communicator>>
  createCommunicator(MpiCommunicator &bootstrap) override;
  Expected<std::unique_ptr<ParamArrays>>
  createParamArrays(const ParamLayout &layout) override {
    return CudaParamArrays::create(layout, precision_, stream_);
  }
  Expected<BufferRef>
  loadInput(int64_t count,
            const std::function<Status(int32_t *)> &fill) override;
  Status fillF32(void *dst, float value, int64_t n) override {
    return kernelStatus(bp_cuda_fill_f32(static_cast<float *>(dst), value, n,
                                         stream_),
                        "filling the loss gradient");
  }
  Status queueLoss(const void *loss) override;
  std::vector<float> takeLosses() override;
  Status stageCallBegin() override;
  Status stageCallEnd(const std::string &span) override;
  Status synchronize() override;
  void beginStep(double nowUs) override;
  Expected<StepMode> stepMode(int64_t step, bool evaluation) override;
  Status endCapture() override;
  void discardCapture(const std::string &why) override {
    stepGraph_.discard(why);
  }
  Status restageInput(int64_t count,
                      const std::function<Status(int32_t *)> &fill) override;
  Status replay() override;
  void endStep(TraceRecorder &trace) override;
  Status outOfMemory(size_t bytes) const override {
    return outOfDeviceMemory(bytes, "a value of the step");
  }

private:
  /// Event 2i and 2i + 1 time the step's stage call i.
  Status event(size_t index, cudaEvent_t *out);
  /// Records a stage call's event: as an external event node while
  /// capturing, so that every replay records it again.
  Status recordStageEvent(cudaEvent_t e);

  bool syncEachCall_ = false;
  /// The device of this rank (placeRank; the first one without it), its
  /// world rank and the world's size.
  int device_ = 0;
  int rank_ = 0;
  int64_t worldSize_ = 1;
  std::string planCache_; // usePlanCache
  Precision precision_ = Precision::Fp32;
  cudaStream_t stream_ = nullptr;

  // The step's inputs, staged in one pinned block sized at configure()
  // (exec/InputStaging.h says why).
  PinnedBlock stagingBlock_;
  InputStaging staging_;

  float *lossSlots_ = nullptr; // pinned
  size_t lossCapacity_ = 0, lossCount_ = 0;

  cudaEvent_t stepStart_ = nullptr;
  double stepStartUs_ = 0;
  std::vector<cudaEvent_t> events_;
  std::vector<std::string> spans_;
  /// The communicator made by createCommunicator (more than one rank).
  NcclCommunicator *nccl_ = nullptr;

  // --cuda-graphs.
  StepGraph stepGraph_;
  /// This step's mode (stepMode), and whether it is a training step.
  StepMode mode_ = StepMode::Eager;
  bool trainingStep_ = false;
  /// What the captured step put where a replay finds it: the staging
  /// slices of its inputs (offset, bytes) in load order, its stage calls'
  /// spans and its losses.
  struct CapturedStep {
    std::vector<std::pair<size_t, size_t>> inputs;
    std::vector<std::string> spans;
    size_t losses = 0;
  };
  CapturedStep captured_;
  /// Inputs restaged so far in this replay.
  size_t restaged_ = 0;
};

CudaBackend::~CudaBackend() {
  if (!stream_)
    return;
  (void)cudaStreamSynchronize(stream_);
  if (stagingBlock_.data)
    (void)cudaFreeHost(stagingBlock_.data); // Host-waiting call: teardown.
  if (lossSlots_)
    (void)cudaFreeHost(lossSlots_); // Host-waiting call: teardown.
  for (cudaEvent_t e : events_)
    (void)cudaEventDestroy(e);
  if (stepStart_)
    (void)cudaEventDestroy(stepStart_);
  // The stream stays: the device pool keeps blocks cached under its handle
  // until the process ends (bitpipe/cuda.h, "Device memory").
}

Status CudaBackend::placeRank(MpiCommunicator &bootstrap) {
  rank_ = bootstrap.rank();
  if (bootstrap.size() == 1)
    return Status::ok(); // the first visible device, as configure() says
  BP_ASSIGN(placement, placeRankOnDevice(bootstrap.rank()));
  device_ = placement.plan.device;
  return Status::ok();
}

Expected<std::unique_ptr<Communicator>>
CudaBackend::createCommunicator(MpiCommunicator &bootstrap) {
  if (bootstrap.size() == 1)
    return std::unique_ptr<Communicator>(); // nothing to transfer
  BP_ASSIGN(calls, createCudaNcclCalls(stream_));
  BP_ASSIGN(comm, NcclCommunicator::create(bootstrap, std::move(calls)));
  // endStep takes the spans; the communicator is destroyed before the
  // backend (exec/Training.cpp), and no step runs after.
  comm->setDeviceTiming(true);
  nccl_ = comm.get();
  stepGraph_.useCommunicator(nccl_);
  return std::unique_ptr<Communicator>(std::move(comm));
}

Status CudaBackend::configure(const Manifest &manifest) {
  int devices = 0;
  cudaError_t err = cudaGetDeviceCount(&devices);
  if (err != cudaSuccess)
    return Status::error(ErrorCode::DeviceFailure,
                         formatString("no CUDA device: cudaGetDeviceCount: "
                                      "%s (%s)",
                                      cudaGetErrorString(err),
                                      cudaGetErrorName(err)));
  if (devices == 0)
    return Status::error(ErrorCode::DeviceFailure,
                         "no CUDA device: the driver sees none (check "
                         "CUDA_VISIBLE_DEVICES)");
  // One rank, one device: placeRank's (its node-local rank's), else the
  // first visible one. The stream, the pool and everything else are made
  // on it.
  if (device_ >= devices)
    return Status::error(ErrorCode::DeviceFailure,
                         formatString("CUDA device %d was chosen for this "
                                      "rank, but the driver sees %d",
                                      device_, devices));
  BP_TRY(cudaStatus(cudaSetDevice(device_),
                    formatString("selecting CUDA device %d", device_)
                        .c_str()));
  BP_TRY(cudaStatus(cudaStreamCreateWithFlags(&stream_,
                                              cudaStreamNonBlocking),
                    "creating the compute stream"));
  BP_TRY(cudaStatus(cudaEventCreate(&stepStart_), "creating an event"));
  precision_ = manifest.target.precision;
  worldSize_ = manifest.schedule.worldSize;
  bp_cuda_set_stream(stream_);
  // A slot for every micro-batch of a step up front: growing later means
  // waiting for the stream.
  size_t slots = static_cast<size_t>(manifest.schedule.microbatches *
                                     manifest.schedule.dataParallel);
  lossCapacity_ = slots > 0 ? slots : 1;
  // Host-waiting call: start-up.
  BP_TRY(cudaStatus(cudaMallocHost(reinterpret_cast<void **>(&lossSlots_),
                                   lossCapacity_ * sizeof(float)),
                    "allocating the pinned loss slots"));
  // The inputs' staging, for every input a step can load, likewise.
  staging_ = InputStaging(InputStaging::capacityFor(manifest));
  // Host-waiting call: start-up.
  BP_TRY(cudaStatus(cudaMallocHost(&stagingBlock_.data, staging_.capacity()),
                    "allocating pinned input staging"));
  stagingBlock_.bytes = staging_.capacity();
  // What would otherwise happen at the first use, in step 1, with a wait
  // for the whole device while a peer's NCCL kernel may spin.
  BP_TRY(kernelStatus(bp_cuda_prepare(), "preparing the device"));
  bp_cuda_set_plan_cache(planCache_.c_str());
  // The attention of the model's shape (cuDNN's plans, which only bf16
  // calls use), where the manifest says the model's sizes (a model of
  // hand-written IR may not: then at the first call, as before).
  Expected<HfModelSizes> sizes = manifestHfSizes(manifest);
  if (precision_ == Precision::Bf16 && sizes.isOk() && sizes->heads > 0)
    bp_cuda_prepare_attention(manifest.model.microbatchSize,
                              manifest.model.seqLen, sizes->hidden,
                              sizes->heads,
                              sizes->type == HfModelType::Bert ? 0 : 1);
  return Status::ok();
}

std::string CudaBackend::planReport() const {
  bp_cuda_plan_stats st{};
  bp_cuda_get_plan_stats(&st);
  if (st.built == 0 && st.loaded == 0)
    return "";
  std::string where = planCache_.empty() ? "no plan cache (--plan-cache none)"
                                         : "plan cache " + planCache_;
  return formatString("cuDNN attention plans: %d built in %.2f s, %d "
                      "restored in %.2f s (%s)",
                      st.built, st.build_seconds, st.loaded, st.load_seconds,
                      where.c_str());
}

std::string CudaBackend::useStepGraphs(const StepGraphRequest &request) {
  StepGraphRunFacts facts;
  facts.trace = request.trace;
  facts.syncEachCall = syncEachCall_;
  facts.usesNccl = worldSize_ > 1;
  // What the build compiled against, and what the process loaded.
  facts.ncclHeaderVersion = NCCL_VERSION_CODE;
  if (ncclGetVersion(&facts.ncclLibraryVersion) != ncclSuccess)
    facts.ncclLibraryVersion = 0;
  if (cudaDriverGetVersion(&facts.cudaDriverVersion) != cudaSuccess) {
    (void)cudaGetLastError();
    facts.cudaDriverVersion = 0;
  }
  // Whether the run can use them is said at the first training step, by
  // the lowest rank that cannot: the ranks agree there (StepGraph.h).
  stepGraph_.configure(request.enabled, facts, stream_, rank_);
  return "";
}

Expected<BufferRef>
CudaBackend::loadInput(int64_t count,
                       const std::function<Status(int32_t *)> &fill) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(int32_t);
  // Sized at start-up for every input a step can load: more is the
  // program's error, not a reason to free pinned memory in a step.
  BP_ASSIGN(at, staging_.take(bytes));
  int32_t *host = reinterpret_cast<int32_t *>(
      static_cast<char *>(stagingBlock_.data) + at);
  BP_TRY(fill(host));
  if (stepGraph_.capturing())
    captured_.inputs.emplace_back(at, bytes);
  BufferRef b = Buffer::allocate(bytes);
  if (!b)
    return outOfDeviceMemory(bytes, "an input");
  BP_TRY(cudaStatus(cudaMemcpyAsync(b->data(), host, bytes,
                                    cudaMemcpyHostToDevice, stream_),
                    "copying an input to the device"));
  return b;
}

Status CudaBackend::queueLoss(const void *loss) {
  // A slot for every micro-batch of a step, made at start-up: more losses
  // are the program's error, not a reason to free pinned memory in a step.
  if (lossCount_ == lossCapacity_)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("a step's loss %zu does not fit the %zu pinned loss "
                     "slots sized at start-up (one per micro-batch of the "
                     "manifest): the program computes more losses in a "
                     "step than its manifest has micro-batches",
                     lossCount_ + 1, lossCapacity_));
  return cudaStatus(cudaMemcpyAsync(lossSlots_ + lossCount_++, loss,
                                    sizeof(float), cudaMemcpyDeviceToHost,
                                    stream_),
                    "reading a loss back");
}

std::vector<float> CudaBackend::takeLosses() {
  std::vector<float> out(lossSlots_, lossSlots_ + lossCount_);
  lossCount_ = 0;
  return out;
}

Status CudaBackend::event(size_t index, cudaEvent_t *out) {
  while (events_.size() <= index) {
    cudaEvent_t e = nullptr;
    BP_TRY(cudaStatus(cudaEventCreate(&e), "creating an event"));
    events_.push_back(e);
  }
  *out = events_[index];
  return Status::ok();
}

Status CudaBackend::recordStageEvent(cudaEvent_t e) {
  if (stepGraph_.capturing())
    return cudaStatus(
        cudaEventRecordWithFlags(e, stream_, cudaEventRecordExternal),
        "recording an event into the step's CUDA graph");
  return cudaStatus(cudaEventRecord(e, stream_), "recording an event");
}

Status CudaBackend::stageCallBegin() {
  cudaEvent_t e;
  BP_TRY(event(2 * spans_.size(), &e));
  return recordStageEvent(e);
}

Status CudaBackend::stageCallEnd(const std::string &span) {
  cudaEvent_t e;
  BP_TRY(event(2 * spans_.size() + 1, &e));
  spans_.push_back(span);
  BP_TRY(recordStageEvent(e));
  // Where a capture broke is worth naming: the stage call that did it.
  if (stepGraph_.capturing())
    BP_TRY(stepGraph_.checkCapture());
  if (!syncEachCall_)
    return Status::ok();
  cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess)
    return cudaStatus(err, "a device fault in this stage call "
                           "(BITPIPE_CUDA_SYNC=1)");
  return kernelStatus(bp_cuda_synchronize(stream_), "this stage call");
}

Status CudaBackend::synchronize() {
  cudaError_t err = cudaStreamSynchronize(stream_);
  if (err != cudaSuccess && mode_ == StepMode::Replay)
    return cudaStatus(err, "a device fault in the replayed CUDA graph of the "
                           "step (rerun with --no-cuda-graphs, and "
                           "BITPIPE_CUDA_SYNC=1 to stop at the stage call "
                           "that faults)");
  if (err != cudaSuccess)
    return cudaStatus(err, "a device fault, found when waiting for the "
                           "device (rerun with BITPIPE_CUDA_SYNC=1 to stop "
                           "at the stage call that faults)");
  // Token or label ids out of range, which kernels record on the device.
  return kernelStatus(bp_cuda_synchronize(stream_),
                      "the device's checks of the step");
}

void CudaBackend::beginStep(double nowUs) {
  staging_.reset();
  spans_.clear();
  mode_ = StepMode::Eager;
  trainingStep_ = false;
  restaged_ = 0;
  stepStartUs_ = nowUs;
  // Before any capture: a replay's spans are measured from it too.
  if (cudaEventRecord(stepStart_, stream_) != cudaSuccess)
    (void)cudaGetLastError(); // a later call on the stream reports it
}

Expected<StepMode> CudaBackend::stepMode(int64_t step, bool evaluation) {
  trainingStep_ = !evaluation;
  if (evaluation || !stepGraph_.enabled())
    return StepMode::Eager;
  BP_ASSIGN(mode, stepGraph_.beginTrainingStep(step));
  mode_ = mode;
  if (mode_ == StepMode::Capture)
    captured_ = CapturedStep();
  return mode_;
}

Status CudaBackend::endCapture() {
  if (mode_ != StepMode::Capture)
    return Status::error(ErrorCode::InvalidArgument,
                         "the capture ends in a step that captures nothing");
  captured_.spans = spans_;
  captured_.losses = lossCount_;
  return stepGraph_.endCapture();
}

Status CudaBackend::restageInput(int64_t count,
                                 const std::function<Status(int32_t *)> &fill) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(int32_t);
  BP_ASSIGN(at, staging_.take(bytes));
  // The graph copies from where the captured step staged: the same slices
  // in the same order, or the graph would read another input.
  const size_t i = restaged_++;
  if (i >= captured_.inputs.size() || captured_.inputs[i].first != at ||
      captured_.inputs[i].second != bytes)
    return Status::error(
        ErrorCode::InvalidArgument,
        formatString("input %zu of the replay (%zu bytes at staging offset "
                     "%zu) is not the captured step's (%zu inputs)",
                     i, bytes, at, captured_.inputs.size()));
  return fill(reinterpret_cast<int32_t *>(
      static_cast<char *>(stagingBlock_.data) + at));
}

Status CudaBackend::replay() {
  if (mode_ != StepMode::Replay)
    return Status::error(ErrorCode::InvalidArgument,
                         "a replay in a step that does not replay");
  if (restaged_ != captured_.inputs.size())
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("the replay restaged %zu inputs, the "
                                      "captured step loaded %zu",
                                      restaged_, captured_.inputs.size()));
  BP_TRY(stepGraph_.replay());
  // What the graph does, as the captured step's calls did.
  spans_ = captured_.spans;
  lossCount_ = captured_.losses;
  return Status::ok();
}

void CudaBackend::endStep(TraceRecorder &trace) {
  // The stream is idle (synchronize() came first): every event is complete.
  for (size_t i = 0; i < spans_.size(); ++i) {
    float startMs = 0, durationMs = 0;
    if (cudaEventElapsedTime(&startMs, stepStart_, events_[2 * i]) !=
            cudaSuccess ||
        cudaEventElapsedTime(&durationMs, events_[2 * i],
                             events_[2 * i + 1]) != cudaSuccess) {
      // A span lost is not worth failing the step; the error must not
      // linger for the next launch check (cudaGetLastError) to misreport.
      (void)cudaGetLastError();
      continue;
    }
    trace.record(spans_[i], TraceCategory::Device,
                 stepStartUs_ + 1000.0 * startMs, 1000.0 * durationMs);
  }
  spans_.clear();
  // The transfers' and all-reduces' streams are done too: the step waited
  // for every request before it waited for the compute stream.
  if (nccl_)
    recordDeviceSpans(trace, stepStartUs_, nccl_->takeDeviceSpans(stepStart_));
  if (trainingStep_)
    stepGraph_.endTrainingStep();
}

} // namespace

std::unique_ptr<Backend> createTargetBackend() {
  return std::make_unique<CudaBackend>();
}

} // namespace bitpipe::runtime
