//===- Backend.h - What the executor asks of its target ---------*- C++ -*-===//
//
// The one boundary between the device-agnostic executor (Executor,
// ParamStore, Training) and the target its stage functions were compiled
// for. Everything that touches the memory of values goes through it:
//
//   - values: Buffer allocates from runtime.h's bp_alloc / bp_free, which
//     the linked target library defines (host pool on the CPU, device pool
//     on CUDA), as the stage functions' results do;
//   - inputs: host-side token ids moved into a value (CUDA: pinned staging
//     and an asynchronous copy on the compute stream);
//   - fills (the unit loss gradient) and the loss read-back (CUDA:
//     asynchronous copies into pinned slots, read at the step's end);
//   - the parameter store's arrays (ParamArrays): gradient accumulation,
//     the global norm's sum of squares, the AdamW update, the compute copy
//     of the weights, the host image that initialisation and checkpoints
//     use;
//   - stage-call spans for the trace, synchronisation and device faults.
//
// Communication stays with the Communicator (comm/Communicator.h): sends,
// receives and the in-place all-reduce of gradient buckets (ParamArrays::
// gradData, gradDType) hand it target memory. The target chooses it, as it
// chooses the backend: MPI itself on the CPU (host memory), an NCCL
// communicator on the CUDA stream for more than one rank
// (createCommunicator); the MPI communicator stays the bootstrap either
// way.
//
// Which backend a program gets is chosen at link time: each target defines
// createTargetBackend() (the CPU one in runtime/lib/cpu/CpuTarget.cpp, a
// library of its own, BitPipeRuntimeCPUTarget; the CUDA one in
// runtime/lib/cuda/backend), and bitpipe-compile links one of them through
// its runtime-<target>.rsp. docs/runtime-abi.md, "Targets", says what each
// keeps where.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_BACKEND_H
#define BITPIPE_RUNTIME_EXEC_BACKEND_H

#include "Manifest.h"
#include "ValueTable.h"
#include "comm/Communicator.h"
#include "core/DType.h"
#include "core/Status.h"
#include "train/Checkpoint.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace bitpipe::runtime {

class AdamW;
class MpiCommunicator;
class TraceRecorder;

/// How a training step runs on a target that can record its device work as
/// one graph and launch that instead of each call's work (CUDA graphs:
/// --cuda-graphs, docs/launching.md, "CUDA graphs").
enum class StepMode {
  /// The rank program runs; every call issues its own work.
  Eager,
  /// The rank program runs; its device work up to the optimizer step is
  /// recorded, not run, and Backend::endCapture launches the recording.
  Capture,
  /// The rank program does not run: the executor stages the step's inputs
  /// where the recording reads them and launches it (Backend::replay),
  /// then runs the optimizer step.
  Replay,
};

/// What --cuda-graphs asks of the target, and what of the run bears on it.
struct StepGraphRequest {
  bool enabled = false;
  /// --trace: the trace wants every transfer's device span.
  bool trace = false;
};

/// One parameter tensor in the parameter store's flat arrays.
struct ParamSegment {
  std::string name;
  int64_t offset = 0;
  int64_t count = 0;
  bool decay = true; // AdamW's weight decay applies
  /// How the weights start: InitKind::Normal draws N(0, stddev^2) from the
  /// stream of the name's hash (core/Random.h, train/Init.h).
  InitKind init = InitKind::Zeros;
  double stddev = 0.0;
};

/// A part of a parameter whose AdamW state a rank holds under a sharded
/// optimizer (docs/data-parallel.md, "Sharded optimizer"): elements
/// [offset, offset + count) of the weights and gradients, kept at
/// [moment, moment + count) of the rank's compact moment arrays.
struct OptimizerPart {
  /// The parameter's index in ParamLayout::all.
  int segment = 0;
  int64_t offset = 0;
  int64_t count = 0;
  int64_t moment = 0;
};

/// Where a rank's parameters lie in its flat arrays (ParamStore.h says
/// why in this order). Fixed for the run: targets build their tables from
/// it once.
struct ParamLayout {
  int64_t numFloats = 0;
  /// Every parameter held, in layout order (the optimizer's order).
  std::vector<ParamSegment> all;
  /// The elements this rank counts in the global gradient norm, in layout
  /// order: each parameter's by the lowest rank holding it, except that
  /// under a sharded optimizer a bucket's elements are counted by the rank
  /// whose shard holds them.
  std::vector<ParamSegment> norm;
  /// Whether the optimizer is sharded: then `owned` lists, in layout order,
  /// the parts whose AdamW state this rank holds and updates, and the
  /// moments hold numMoments elements. Otherwise every held parameter is
  /// updated whole, its moments at its weights' offsets.
  bool shardedOptimizer = false;
  std::vector<OptimizerPart> owned;
  int64_t numMoments = 0;
};

/// A parameter store's arrays on its target: fp32 master weights, gradient
/// accumulators, AdamW's two fp32 moments and, where the stage functions
/// compute in another precision, the copy of the weights they read.
class ParamArrays {
public:
  virtual ~ParamArrays() = default;

  /// The host image of the master weights and moments (fp32, layout
  /// order): what initialisation writes and checkpoints read and write. On
  /// the CPU these are the arrays themselves; on a device a staging copy
  /// that exists between toHost() and toTarget(). Under a sharded
  /// optimizer the moments are the compact ones (ParamLayout::owned's
  /// `moment` offsets): ParamStore makes the whole image. The master
  /// weights' image is whole (but see shardsMasterWeights).
  virtual float *hostParams() = 0;
  virtual float *hostM() = 0;
  virtual float *hostV() = 0;
  /// The initial state, made on the target: the weights as each segment's
  /// `init` says (drawn where they live, the same bits on every target:
  /// core/PortableMath.h), moments and gradient accumulators zero, the
  /// compute copy refreshed. No host image is made.
  virtual Status initialize(uint64_t seed) = 0;
  /// Per segment of the layout's `all`, in that order: its first element
  /// that a checkpoint may not hold (firstInvalidState's). Scanned on the
  /// target: on a device only the answer crosses the bus.
  virtual Expected<std::vector<std::optional<InvalidState>>> findInvalid() = 0;

  /// Makes the host image hold what the target holds.
  virtual Status toHost() = 0;
  /// Makes the target hold what the host image holds (and refreshes the
  /// compute copy); the host image goes where it is a copy.
  virtual Status toTarget() = 0;
  /// Drops the host image where it is a copy (after a checkpoint's save).
  virtual void releaseHost() = 0;

  /// Bytes the arrays hold in target memory for the whole run: master
  /// weights, gradient accumulators, moments, the compute copy and the
  /// target's own tables; not the host image where it is a copy. The run's
  /// memory report adds it to the tensors' peak.
  virtual int64_t targetBytes() const = 0;

  /// What a stage function reads for the weights starting at element
  /// \p offset: target memory, in the compute precision.
  virtual void *computeParams(int64_t offset) = 0;

  /// The gradient accumulators (target memory), which the stage
  /// functions add into in place and the communicator all-reduces in
  /// place: the manifest target's gradientDType(), f64 on the CPU, f32 on
  /// CUDA.
  virtual void *gradData() = 0;
  virtual DType gradDType() const = 0;
  virtual Status zeroGradients() = 0;

  /// Under a sharded optimizer: the weights the stage functions read, in
  /// target memory (the layout's offsets, \p dtype elements), which the
  /// ranks all-gather after each update (ParamStore::gatherWeights): each
  /// replica's owned parts to every replica. The fp32 master weights on
  /// the CPU and under CUDA's fp32; the bf16 copy under CUDA's bf16, whose
  /// master weights are sharded (shardsMasterWeights). A target that does
  /// not shard the optimizer refuses such a layout in createParamArrays
  /// and returns a null \p data here.
  struct GatheredWeights {
    void *data = nullptr;
    DType dtype = DType::F32;
  };
  virtual GatheredWeights shardedWeights() { return {}; }
  /// Whether the target keeps only the owned parts of the fp32 master
  /// weights (a sharded optimizer's whose stage functions read another
  /// copy). Then toHost() fills the host image's master weights at the
  /// owned parts only (the rest zero) until ParamStore gathers them from
  /// the replicas (gatherHostImage), and toTarget() reads them whole.
  virtual bool shardsMasterWeights() const { return false; }

  /// Sum over the layout's `norm` segments of (grad / numMicroBatches)^2, in
  /// double (the one number besides the losses that crosses the bus).
  virtual Expected<double> sumSquaredGradients(int numMicroBatches) = 0;
  /// The AdamW update of every held parameter (of the owned parts under a
  /// sharded optimizer) with the global norm's
  /// square \p globalSumSquares (AdamW::beginStep forms the constants).
  virtual Status adamwStep(AdamW &optimizer, int numMicroBatches,
                           double globalSumSquares) = 0;
};

class Backend {
public:
  virtual ~Backend() = default;

  /// The target this backend runs: a manifest for another is refused.
  virtual TargetKind target() const = 0;

  /// First, collectively over the world of \p bootstrap: binds this rank
  /// to its device (CUDA: the node-local rank's GPU, docs/runtime-abi.md),
  /// before any device resource is made. Nothing to do on the CPU.
  virtual Status placeRank(MpiCommunicator & /*bootstrap*/) {
    return Status::ok();
  }

  /// After configure(), collectively: the transport of the steps' transfers
  /// and all-reduces, made from \p bootstrap (which must outlive it). Null
  /// where \p bootstrap itself carries them (host memory: the CPU; one
  /// rank, which transfers nothing).
  virtual Expected<std::unique_ptr<Communicator>>
  createCommunicator(MpiCommunicator & /*bootstrap*/) {
    return std::unique_ptr<Communicator>();
  }

  /// Before configure(): the host threads this rank's kernels may use
  /// (--threads, exec/KernelThreads.h). The CPU runs its kernels and
  /// matrix products on them (cpu/Parallel.h); a device target's host
  /// work is launches, which one thread keeps up with.
  virtual void useThreads(int /*threads*/) {}

  /// Before configure(): the folder where the target keeps what is slow
  /// to make and the same from run to run (CUDA: cuDNN's attention plans,
  /// core/FileCache.h); "" for none. Nothing on the CPU.
  virtual void usePlanCache(const std::string & /*dir*/) {}

  /// Whether a stage function's first call does slow first-use work on
  /// this target that may wait for the whole device (loading kernels,
  /// choosing matrix-product algorithms, building attention plans, the
  /// memory pool's first blocks): then every stage function runs once
  /// before the first step (Executor::warmUp), where no peer waits.
  virtual bool warmsUp() const { return false; }

  /// After configure(): what making the target's plans cost at start-up,
  /// as rank 0 prints it ("cuDNN attention plans: ..."); "" when it made
  /// none.
  virtual std::string planReport() const { return ""; }

  /// After configure(): whether the steps may run as graphs (--cuda-graphs).
  /// Returns what rank 0 says at start-up when the request cannot be
  /// honoured on this target ("" when there is nothing to say). The CUDA
  /// target decides step by step (stepMode); the others run every step
  /// eagerly.
  virtual std::string useStepGraphs(const StepGraphRequest &request) {
    if (!request.enabled)
      return "";
    return std::string("--cuda-graphs: the ") + targetKindName(target()) +
           " target issues no device work to record; ignored";
  }

  /// After placeRank(): whether this target can run \p manifest (its
  /// precision, its world size), and the device's set-up (stream,
  /// precision of runtime.h's functions). A clear error when not: no
  /// device, too many ranks.
  virtual Status configure(const Manifest &manifest) = 0;

  /// The arrays of a parameter store of \p layout, zeroed. A target that
  /// cannot shard the optimizer refuses a layout with shardedOptimizer,
  /// saying so ("--shard-optimizer: not yet supported on the ... target").
  virtual Expected<std::unique_ptr<ParamArrays>>
  createParamArrays(const ParamLayout &layout) = 0;

  /// A value of \p count int32 that \p fill writes on the host (an input's
  /// token ids or labels, a micro-batch's dropout key).
  virtual Expected<BufferRef>
  loadInput(int64_t count, const std::function<Status(int32_t *)> &fill) = 0;

  /// Writes \p value into \p n floats at \p dst (target memory).
  virtual Status fillF32(void *dst, float value, int64_t n) = 0;

  /// Queues the read-back of a micro-batch's loss: one f32 at \p loss in
  /// target memory, which may be freed (in the pool's order) after the
  /// call.
  virtual Status queueLoss(const void *loss) = 0;
  /// The losses queued since the last call, in queue order. Call after
  /// synchronize().
  virtual std::vector<float> takeLosses() = 0;

  /// Around every stage-function call: \p span names it in the trace
  /// ("F3.s2"). The end may report a device fault of that call when the
  /// target synchronises after each (BITPIPE_CUDA_SYNC=1).
  virtual Status stageCallBegin() = 0;
  virtual Status stageCallEnd(const std::string &span) = 0;

  /// Waits for the step's work; a device fault found here is the step's
  /// (the message says how to find the call).
  virtual Status synchronize() = 0;

  /// At the step's start, with the trace's clock (\p nowUs).
  virtual void beginStep(double nowUs) = 0;

  /// After beginStep(): how step \p step (1-based, for messages) runs.
  /// Always Eager without --cuda-graphs and for an \p evaluation step.
  /// Collective over the world otherwise (every rank gets the same mode:
  /// a graph that holds NCCL operations is launched by every rank of the
  /// capture or by none). Capture begins the recording.
  virtual Expected<StepMode> stepMode(int64_t /*step*/, bool /*evaluation*/) {
    return StepMode::Eager;
  }
  /// Capture: the optimizer step begins, and with it what the recording
  /// leaves out (host reads, MPI). Ends the recording and launches it: the
  /// step's work runs from here, in stream order.
  virtual Status endCapture() {
    return Status::error(ErrorCode::InvalidArgument,
                         "this target records no steps");
  }
  /// Capture: the rank program did device work after its optimizer step,
  /// which the recording does not hold; its replays would leave that work
  /// out, so there are none (\p why says which call).
  virtual void discardCapture(const std::string & /*why*/) {}
  /// Replay, before replay(): the step's next input, in the order the
  /// captured step loaded them (\p count int32 that \p fill writes), into
  /// the host memory the recording copies it from.
  virtual Status restageInput(int64_t /*count*/,
                              const std::function<Status(int32_t *)> &) {
    return Status::error(ErrorCode::InvalidArgument,
                         "this target replays no steps");
  }
  /// Replay: launches the recording. Its losses are then queued (as the
  /// captured step's were) and its stage calls' spans come at endStep().
  virtual Status replay() {
    return Status::error(ErrorCode::InvalidArgument,
                         "this target replays no steps");
  }
  /// After synchronize() at the step's end: device spans into \p trace.
  virtual void endStep(TraceRecorder &trace) = 0;

  /// The error for a failed allocation of \p bytes of value memory.
  virtual Status outOfMemory(size_t bytes) const = 0;
};

/// The backend of the target library this program links (defined by
/// exactly one of them).
std::unique_ptr<Backend> createTargetBackend();

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_BACKEND_H
