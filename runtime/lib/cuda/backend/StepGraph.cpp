//===- StepGraph.cpp - A rank's training step as one CUDA graph -----------===//

#include "StepGraph.h"

#include "DeviceErrors.h"
#include "StartupAgreement.h"

#include "comm/nccl/NcclCommunicator.h"

#include "bitpipe/cuda.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace bitpipe::runtime {

namespace {

/// The device pool as GraphFootprint sees it.
class DevicePoolView final : public PoolView {
public:
  PoolRangeState state(uintptr_t address, int64_t bytes,
                       uint64_t *serial) const override {
    switch (bp_cuda_pool_range_state(reinterpret_cast<const void *>(address),
                                     bytes, serial)) {
    case BP_CUDA_RANGE_FREE:
      return PoolRangeState::Free;
    case BP_CUDA_RANGE_HELD:
      return PoolRangeState::Held;
    default:
      return PoolRangeState::Absent;
    }
  }
};

/// One of the pool's lists (bp_cuda_pool_held, bp_cuda_pool_recorded).
std::vector<PoolBlock> poolBlocks(int64_t (*list)(bp_cuda_pool_block *,
                                                  int64_t)) {
  std::vector<bp_cuda_pool_block> raw(static_cast<size_t>(list(nullptr, 0)));
  // The list cannot grow in between: this thread is the pool's only user
  // while a step runs.
  raw.resize(static_cast<size_t>(
      std::min<int64_t>(list(raw.data(), static_cast<int64_t>(raw.size())),
                        static_cast<int64_t>(raw.size()))));
  std::vector<PoolBlock> blocks;
  blocks.reserve(raw.size());
  for (const bp_cuda_pool_block &b : raw)
    blocks.push_back({reinterpret_cast<uintptr_t>(b.ptr), b.bytes, b.serial});
  return blocks;
}

int64_t poolReserved() {
  int64_t reserved = 0;
  bp_cuda_memory_stats(nullptr, nullptr, &reserved);
  return reserved;
}

int32_t plansMade() {
  bp_cuda_plan_stats st{};
  bp_cuda_get_plan_stats(&st);
  return st.built + st.loaded;
}

} // namespace

StepGraph::~StepGraph() {
  // The process is ending (the backend's teardown waited for the stream).
  if (exec_)
    (void)cudaGraphExecDestroy(exec_);
}

void StepGraph::configure(bool enabled, const StepGraphRunFacts &facts,
                          cudaStream_t stream, int rank) {
  enabled_ = enabled;
  stream_ = stream;
  rank_ = rank;
  unusable_ = stepGraphsUnusableReason(facts);
}

Expected<StepMode> StepGraph::beginTrainingStep(int64_t step) {
  step_ = step;
  mode_ = StepMode::Eager;
  reservedAtStart_ = poolReserved();
  plansAtStart_ = plansMade();
  if (!policy_.active())
    return mode_;
  StepGraphFacts facts;
  facts.unusable = unusable_;
  facts.lastStepSteady = lastStepSteady_;
  if (policy_.holdsGraph())
    facts.mismatch = footprint_.check(DevicePoolView());
  const GraphVerdict mine = policy_.verdict(facts);
  // Every rank's verdict (one int32 each, over MPI); one rank has only its
  // own.
  std::vector<int32_t> verdicts{static_cast<int32_t>(mine)};
  if (nccl_)
    verdicts =
        gatherFromEveryRank(*nccl_, static_cast<int32_t>(mine),
                            formatString("step %lld's CUDA graph verdicts",
                                         static_cast<long long>(step)));
  GraphVerdict agreed = GraphVerdict::Ready;
  for (int32_t v : verdicts)
    agreed = std::max(agreed, static_cast<GraphVerdict>(v));
  StepGraphPolicy::Decision d = policy_.decide(agreed, step);
  if (d.dropGraph)
    dropGraph();
  if (!d.change.empty())
    report(agreed, mine, verdicts, facts, d.change);
  mode_ = d.mode;
  if (mode_ == StepMode::Capture)
    BP_TRY(beginCapture());
  return mode_;
}

void StepGraph::report(GraphVerdict agreed, GraphVerdict mine,
                       const std::vector<int32_t> &verdicts,
                       const StepGraphFacts &facts,
                       const std::string &change) const {
  if (mine != agreed)
    return;
  const int self = nccl_ ? rank_ : 0;
  for (int r = 0; r < self; ++r)
    if (verdicts[static_cast<size_t>(r)] == static_cast<int32_t>(agreed))
      return; // a lower rank says it
  const std::string why = agreed == GraphVerdict::Unusable ? facts.unusable
                          : agreed == GraphVerdict::Stale  ? facts.mismatch
                                                           : unsteady_;
  std::fflush(stdout);
  std::fprintf(stderr, "bitpipe: CUDA graphs: step %lld: rank %d: %s; %s\n",
               static_cast<long long>(step_), rank_, why.c_str(),
               change.c_str());
  std::fflush(stderr);
}

Status StepGraph::beginCapture() {
  heldAtStart_ = poolBlocks(bp_cuda_pool_held);
  if (nccl_)
    BP_TRY(nccl_->beginCapture());
  bp_cuda_pool_record(1);
  // Thread-local: a call of this thread that a capture cannot hold (a host
  // wait, cudaMalloc) fails instead of running, and NCCL's own threads are
  // not bound by it (NCCL's guide asks for it where point-to-point
  // operations are captured).
  cudaError_t err =
      cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    bp_cuda_pool_record(0);
    return cudaStatus(err, "beginning the capture of the step's CUDA graph "
                           "(cudaStreamBeginCapture)");
  }
  capturing_ = true;
  return Status::ok();
}

Status StepGraph::checkCapture() const {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(stream_, &status);
  if (err == cudaSuccess && status == cudaStreamCaptureStatusActive)
    return Status::ok();
  (void)cudaGetLastError();
  return Status::error(ErrorCode::DeviceFailure,
                       "the capture of the step's CUDA graph is no longer "
                       "valid: a call that a capture cannot hold (a host "
                       "wait, a synchronous allocation) invalidated it "
                       "(--no-cuda-graphs runs the steps eagerly)");
}

Status StepGraph::endCapture() {
  if (!capturing_)
    return Status::error(ErrorCode::InvalidArgument,
                         "the step's capture ends, but none began");
  Status joined = nccl_ ? nccl_->endCapture() : Status::ok();
  cudaGraph_t graph = nullptr;
  // Always: the stream leaves capture mode only here.
  cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
  capturing_ = false;
  bp_cuda_pool_record(0);
  handedOut_ = poolBlocks(bp_cuda_pool_recorded);
  if (!joined.isOk() || ended != cudaSuccess) {
    if (graph)
      (void)cudaGraphDestroy(graph);
    // Nothing of the step has run: it cannot go on without its graph.
    if (!joined.isOk())
      return Status::error(joined.code(),
                           "ending the capture of the step's CUDA graph: " +
                               joined.message());
    return cudaStatus(ended, "ending the capture of the step's CUDA graph "
                             "(cudaStreamEndCapture; a call of the step that "
                             "a capture cannot hold, such as a host wait, "
                             "invalidates it: --no-cuda-graphs runs the "
                             "steps eagerly)");
  }
  size_t nodes = 0;
  if (cudaGraphGetNodes(graph, nullptr, &nodes) != cudaSuccess) {
    (void)cudaGetLastError(); // only the words need the count
    nodes = 0;
  }
  const auto t0 = std::chrono::steady_clock::now();
  cudaError_t made = cudaGraphInstantiate(&exec_, graph, 0);
  // The executable graph is independent of the one it was made from.
  (void)cudaGraphDestroy(graph);
  if (made != cudaSuccess) {
    exec_ = nullptr;
    return cudaStatus(made, "instantiating the step's CUDA graph "
                            "(cudaGraphInstantiate)");
  }
  instantiateMs_ = std::chrono::duration<double, std::milli>(
                       std::chrono::steady_clock::now() - t0)
                       .count();
  nodes_ = nodes;
  return launch();
}

Status StepGraph::replay() {
  if (!exec_)
    return Status::error(ErrorCode::InvalidArgument,
                         "a replay without a captured graph");
  return launch();
}

Status StepGraph::launch() {
  BP_TRY(cudaStatus(cudaGraphLaunch(exec_, stream_),
                    "launching the step's CUDA graph (cudaGraphLaunch)"));
  if (nccl_)
    BP_TRY(nccl_->graphLaunched(formatString(
        "the CUDA graph of step %lld (its transfers and all-reduces)",
        static_cast<long long>(step_))));
  return Status::ok();
}

void StepGraph::discard(const std::string &why) {
  if (unusable_.empty())
    unusable_ = formatString("step %lld was captured, but %s",
                             static_cast<long long>(step_), why.c_str());
}

void StepGraph::dropGraph() {
  // The stream is idle: the step before ended by waiting for it.
  if (exec_)
    (void)cudaGraphExecDestroy(exec_);
  exec_ = nullptr;
  footprint_ = GraphFootprint();
  heldAtStart_.clear();
  handedOut_.clear();
}

void StepGraph::endTrainingStep() {
  if (!enabled_)
    return;
  if (mode_ == StepMode::Capture && exec_) {
    // What the step kept of the pool is known once it gave back the rest.
    footprint_ =
        GraphFootprint(heldAtStart_, handedOut_, poolBlocks(bp_cuda_pool_held));
    if (rank_ == 0)
      std::printf("bitpipe: CUDA graphs: step %lld captured (%zu nodes, "
                  "instantiated in %.1f ms; %zu pool blocks checked before "
                  "each replay); the steps after it replay it\n",
                  static_cast<long long>(step_), nodes_, instantiateMs_,
                  footprint_.numKept() + footprint_.numScratch());
  }
  if (mode_ != StepMode::Eager)
    return;
  // Steady: nothing the capture must not do happened in this step.
  const int64_t grew = poolReserved() - reservedAtStart_;
  const int32_t plans = plansMade() - plansAtStart_;
  lastStepSteady_ = grew <= 0 && plans == 0;
  if (grew > 0)
    unsteady_ = formatString("step %lld took %.1f MiB more from CUDA for "
                             "the device pool",
                             static_cast<long long>(step_), grew / 1048576.0);
  else if (plans > 0)
    unsteady_ = formatString("step %lld made %d cuDNN plans",
                             static_cast<long long>(step_), plans);
}

} // namespace bitpipe::runtime
