//===- Executor.h - The state behind the bp_rt_* calls ----------*- C++ -*-===//
//
// One rank's executor: what a compiled rank program acts on through the
// calls of bitpipe/program.h. It owns the values in flight (ValueTable),
// pending sends, the step's loss, and drives the rank's parameters
// (ParamStore), communication (Communicator, whose deadlines bound every
// wait), data (InputLoader) and optimizer (AdamW). It is the same code on
// every target: whatever touches the memory of values goes through the
// target's Backend (Backend.h).
//
// Each call is a method returning a Status; ProgramApi.cpp turns an error
// into fatal(), which prints "bitpipe: rank R: fatal: <op> <stage/mb>: ..."
// and stops the whole job (program.h, "Errors").
//
// A step: beginStep(), the rank program (ending with optimizer_step), then
// endStep(), which checks that the program left nothing behind that would
// corrupt the next step.
//
// Where the target records steps as graphs (Backend::stepMode, CUDA's
// --cuda-graphs), a captured step keeps what its replays must repeat on
// the host: the inputs it loaded (kind, micro-batch, count), in order, its
// loss count and its optimizer step's micro-batches. A replayed step runs
// no rank program (run()): the executor stages that step's inputs in the
// same order, the target launches the graph, and the optimizer step runs
// as the program's would.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_EXECUTOR_H
#define BITPIPE_RUNTIME_EXEC_EXECUTOR_H

#include "Backend.h"
#include "InputLoader.h"
#include "Manifest.h"
#include "ParamStore.h"
#include "ValueTable.h"
#include "bitpipe/program.h"
#include "comm/Communicator.h"
#include "train/AdamW.h"
#include "train/Trace.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bitpipe::runtime {

struct ExecutorParts {
  const Manifest *manifest = nullptr;
  const bp_stage_entry_t *entries = nullptr; // manifest.functions.size()
  Communicator *comm = nullptr;
  Backend *backend = nullptr;
  ParamStore *params = nullptr; // attached to backend
  const InputLoader *inputs = nullptr; // may be null if no rank loads input
  AdamW *optimizer = nullptr;
  TraceRecorder *trace = nullptr;
  /// Communicator group id of each manifest group.
  std::vector<GroupId> groupIds;
  /// By manifest group: its two levels where it sums in two
  /// (Manifest::syncsInTwoLevels), else none. Empty: every group sums flat.
  std::vector<std::optional<TwoLevelGroup>> twoLevelGroups;
};

class Executor {
public:
  explicit Executor(ExecutorParts parts);
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  int rank() const { return rank_; }

  /// Before the rank program: \p step is the 0-based index of the step
  /// (the optimizer's step count), which selects the step's samples. The
  /// target chooses how the step runs here (Backend::stepMode; collective
  /// with --cuda-graphs).
  void beginStep(int64_t step);
  /// The step's rank program: \p program runs, or, where the target
  /// replays the step's graph, the executor replays it instead. An error
  /// stops the job, as the program's calls do.
  void run(bp_rank_program_t program);
  /// After it: fails if the program skipped the optimizer step, or left a
  /// saved handle (a forward without its backward) or an all-reduce token
  /// behind; frees the tensors it did not release.
  Status endStep();

  /// The most forward handles alive at once on this rank over the run, and
  /// the most bytes of their saved results: what the compiler predicted
  /// from the schedule as the manifest's peak_handles / peak_saved_bytes.
  int64_t peakHandles() const { return peakHandles_; }
  int64_t peakSavedBytes() const { return peakSavedBytes_; }

  /// The step's micro-batch losses on this rank: their sum (in double, in
  /// the order the forwards produced them; complete after endStep) and
  /// count.
  double lossSum() const { return lossSum_; }
  int64_t lossCount() const { return lossCount_; }
  /// The global norm of the step's mean gradient (before clipping), the
  /// same on every rank; set by the optimizer step.
  double gradNorm() const { return gradNorm_; }
  /// Whether that norm was NaN or infinite (the same on every rank): the
  /// step's update ran unclipped on non-finite gradients, and training must
  /// stop (Training.cpp).
  bool nonFiniteGradNorm() const { return nonFiniteGradNorm_; }
  /// Whether the next steps skip their update when that norm is not finite
  /// (--skip-nonfinite-steps): the step then counts, but changes no
  /// parameter or moment.
  void setSkipNonFiniteUpdate(bool skip) { skipNonFiniteUpdate_ = skip; }
  /// Whether this step's update was skipped so (the same on every rank).
  bool skippedUpdate() const { return skippedUpdate_; }
  /// Evaluation: while \p inputs is set, a step reads its micro-batches
  /// from it (a held-out set, the step number choosing its batch) and its
  /// optimizer step discards the gradients instead of updating, so that
  /// the parameters, the moments and AdamW's step count stay as they are
  /// (docs/training-semantics.md, "Evaluation"). nullptr: training steps.
  void setEvaluationInputs(const InputLoader *inputs) { evalInputs_ = inputs; }

  /// Before the first step, where the target asks for it
  /// (Backend::warmsUp): runs every stage function of this rank (those
  /// whose parameters it holds: the manifest ties stages to ranks through
  /// their parameters) once, on zero activations and gradients, id-0
  /// inputs and this rank's weights, and throws away what they produce
  /// (the accumulators, the losses and the counters stay as they were). What a target does at a kernel's or a shape's first use
  /// (loading modules, choosing matrix-product algorithms, building
  /// attention plans, the memory pool's first blocks of each size) then
  /// happens here, where no peer waits on this rank, rather than in step 1
  /// (docs/runtime-abi.md, "Start-up on CUDA"). Returns the stage calls
  /// made.
  Expected<int64_t> warmUp();

  // The calls of program.h.
  Status loadInput(int32_t value, int32_t kind, int64_t mb, int64_t count);
  Status forward(int32_t fn, int64_t mb, int32_t in0, int32_t in1,
                 int32_t out0, int32_t saved);
  Status backward(int32_t fn, int64_t mb, int32_t saved, int32_t grad0,
                  int32_t out0);
  Status weightGrad(int32_t fn, int64_t mb, int32_t saved);
  /// \p peer: a pipeline rank of this rank's data-parallel copy
  /// (program.h); the transfer goes to or from its world rank.
  Status send(int32_t value, int64_t count, int32_t peer, int32_t tag);
  Status recv(int32_t value, int64_t count, int32_t peer, int32_t tag);
  Status endBatch(int32_t batch);
  Status localCopy(int32_t src, int32_t dst);
  Status allreduceStart(int32_t bucket, int32_t token);
  Status allreduceWait(int32_t token);
  Status optimizerStep(int64_t microbatches);
  Status release(int32_t value);

  /// Prints "bitpipe: rank R: fatal: MESSAGE" and stops every rank.
  [[noreturn]] void fatal(const std::string &message);
  /// "step 4: forward F3.s2 (gpt_stage2)": where an error happened.
  std::string describeStageCall(const char *op, int32_t fn, int64_t mb) const;
  /// "step 4: OP".
  std::string describeCall(const std::string &op) const;
  /// "rank 3 (pipeline rank 1)": pipeline rank \p peer of this rank's
  /// copy, as messages name a send's or receive's peer; "pipeline rank 5"
  /// when \p peer is none.
  std::string describePeer(int32_t peer) const;

private:
  /// Orders the target's later work on \p b after the receive that fills
  /// it, if any (traced as a recv): Communicator::waitOnDeviceFor, with
  /// \p reader's description of what reads it (made only when needed).
  Status complete(Buffer &b, const std::function<std::string()> &reader);
  /// The element type of sends and receives (the compute precision).
  DType transferDType() const;
  /// Completes the sends that have finished, without blocking.
  Status pollSends();
  /// Waits for every pending send.
  Status drainSends();
  /// Runs stage function \p fn on \p args as \p op ("forward",
  /// "backward", "weight_grad") of micro-batch \p mb, traced; \p results
  /// receives its results as owned buffers.
  Status call(int fn, const char *op, int64_t mb, std::vector<void *> &args,
              std::vector<BufferRef> *results);
  /// The stage call of call(), \p span naming it to the target, without
  /// the trace: for warmUp too.
  Status invoke(int fn, const std::string &span,
                const std::vector<void *> &args,
                std::vector<BufferRef> *results);
  /// A buffer of \p bytes of zeros in target memory.
  Expected<BufferRef> zeros(size_t bytes);
  /// Micro-batch \p mb's input of \p kind for this rank's copy and step,
  /// \p count int32, in target memory.
  Expected<BufferRef> loadInputValue(InputKind kind, int64_t mb, int64_t count);
  /// Whether this rank holds every parameter \p f takes.
  bool holdsParamsOf(const StageFunction &f) const;
  /// Waits for the target; a fault is reported after the last stage call.
  Status synchronizeStep();
  /// A replayed step: its inputs into the graph's staging, the launch, the
  /// optimizer step.
  Status replay();
  /// The program's device work \p what ("forward", "send", ...): after the
  /// optimizer step of a captured step it is not in the graph, and the
  /// target discards the capture.
  void noteDeviceWork(const char *what);
  Status checkFunction(int32_t fn, FunctionKind a, FunctionKind b,
                       const char *op) const;
  /// The saved handle \p saved, checked to be the forward's of \p f's stage
  /// and micro-batch \p mb.
  Expected<SavedHandle *> savedHandleOf(int32_t saved, const StageFunction &f,
                                        int64_t mb) const;
  /// Binds the backward-side arguments of \p fn from \p handle.
  Status bindBackwardArgs(int fn, SavedHandle &handle, const BufferRef &grad,
                          std::vector<void *> *args);
  /// Takes the backward-side results of \p fn: gradients, the input
  /// gradient (bound to \p out0) and the stash.
  Status takeBackwardResults(int fn, SavedHandle &handle,
                             std::vector<BufferRef> &results, int32_t out0);
  std::string opName(char kind, int fn, int64_t mb) const;
  bool isPipelineRank(int32_t peer) const;
  /// The world rank of pipeline rank \p peer in this rank's copy, or an
  /// error when \p peer is no pipeline rank.
  Expected<int> worldPeer(int32_t peer) const;
  /// describePeer of world rank \p world (of this rank's copy).
  std::string describeWorldPeer(int world) const;
  /// The two levels of manifest group \p group, where it sums in them.
  std::optional<TwoLevelGroup> twoLevelGroup(int group) const;
  /// A sharded optimizer's sum of bucket \p bucket's gradients into the
  /// rank's shard (docs/data-parallel.md, "Sharded optimizer"): the
  /// request started by bp_rt_allreduce_start, and what remains after it
  /// (in two levels, the copies' reduce-scatter), at its wait.
  Expected<RequestHandle> shardedSumStart(int32_t bucket);
  Status shardedSumEnd(int32_t bucket);

  const Manifest &manifest_;
  const bp_stage_entry_t *entries_;
  Communicator &comm_;
  Backend &backend_;
  ParamStore &params_;
  const InputLoader *inputs_;
  const InputLoader *evalInputs_ = nullptr;
  AdamW &optimizer_;
  TraceRecorder &trace_;
  std::vector<GroupId> groupIds_;
  std::vector<std::optional<TwoLevelGroup>> twoLevelGroups_;
  // Saved activations in flight (see peakHandles).
  int64_t liveHandles_ = 0, liveSavedBytes_ = 0;
  int64_t peakHandles_ = 0, peakSavedBytes_ = 0;
  void handleCreated(const SavedHandle &h);
  void handleReleased(const SavedHandle &h);
  int rank_; // the world rank
  /// What the manifest says about this rank's pipeline rank, and its
  /// data-parallel copy (Manifest.h, "Ranks").
  const RankSpec &spec_;
  int copy_;
  /// The step's last stage call (a device fault found when the host waits
  /// is reported after it); op is null before the first.
  struct StageCall {
    const char *op = nullptr;
    int32_t fn = -1;
    int64_t mb = 0;
  };
  StageCall lastStageCall_;

  ValueTable values_;
  struct PendingSend {
    BufferRef buffer;
    RequestHandle request;
    int peer = -1; // a world rank
    int tag = 0;
  };
  std::vector<PendingSend> sends_;
  /// The dloss seed of a loss-stage backward that has a grad_of_result
  /// argument but no bound grad0 (program.h: grad0 is -1 there).
  BufferRef unitLossGrad_;

  /// How this step runs, and what a captured step does that its replays
  /// repeat (the file comment).
  StepMode mode_ = StepMode::Eager;
  struct StepRecord {
    struct Load {
      InputKind kind;
      int64_t mb;
      int64_t count;
    };
    std::vector<Load> loads;
    int64_t losses = 0;
    int64_t microbatches = 0;
  };
  /// The record being made (a Capture step), and the one of the graph.
  StepRecord recording_, recorded_;

  int64_t step_ = 0;
  bool stepped_ = false;
  double lossSum_ = 0;
  int64_t lossCount_ = 0;
  double gradNorm_ = 0;
  bool nonFiniteGradNorm_ = false;
  bool skipNonFiniteUpdate_ = false;
  bool skippedUpdate_ = false;
};

} // namespace bitpipe::runtime

/// The opaque context of program.h is the executor itself.
struct bp_rt_context final : bitpipe::runtime::Executor {
  using Executor::Executor;
};

#endif // BITPIPE_RUNTIME_EXEC_EXECUTOR_H
