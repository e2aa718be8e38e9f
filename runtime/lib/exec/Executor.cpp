//===- Executor.cpp - The state behind the bp_rt_* calls --------*- C++ -*-===//

#include "Executor.h"

#include "bitpipe/base/TraceFormat.h"
#include "bitpipe/runtime.h"
#include "core/Tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace bitpipe::runtime {

static Status invalid(std::string message) {
  return Status::error(ErrorCode::InvalidArgument, std::move(message));
}

Executor::Executor(ExecutorParts parts)
    : manifest_(*parts.manifest), entries_(parts.entries), comm_(*parts.comm),
      backend_(*parts.backend), params_(*parts.params), inputs_(parts.inputs),
      optimizer_(*parts.optimizer), trace_(*parts.trace),
      groupIds_(std::move(parts.groupIds)),
      twoLevelGroups_(std::move(parts.twoLevelGroups)),
      rank_(parts.comm->rank()), spec_(manifest_.rankSpec(rank_)),
      copy_(manifest_.copyOf(rank_)) {
  values_.reset(spec_.numValues);
}

void Executor::fatal(const std::string &message) {
  comm_.abort(3, message);
  std::abort(); // abort() does not return; this keeps [[noreturn]] honest
}

std::string Executor::opName(char kind, int fn, int64_t mb) const {
  return formatString(trace::kStageCallFormat, kind, static_cast<long long>(mb),
                      manifest_.functions[fn].stage);
}

std::string Executor::describeStageCall(const char *op, int32_t fn,
                                        int64_t mb) const {
  std::string where = formatString("step %lld: %s", static_cast<long long>(
                                                        step_ + 1),
                                   op);
  if (fn < 0 || static_cast<size_t>(fn) >= manifest_.functions.size())
    return where + formatString(" of function %d on micro-batch %lld", fn,
                                static_cast<long long>(mb));
  char kind = op[0] == 'f' ? 'F' : op[0] == 'w' ? 'W' : 'B';
  return where + " " + opName(kind, fn, mb) + " (" +
         manifest_.functions[fn].name + ")";
}

std::string Executor::describeCall(const std::string &op) const {
  return formatString("step %lld: ", static_cast<long long>(step_ + 1)) + op;
}

void Executor::beginStep(int64_t step) {
  step_ = step;
  stepped_ = false;
  nonFiniteGradNorm_ = false;
  skippedUpdate_ = false;
  lossSum_ = 0;
  lossCount_ = 0;
  lastStageCall_ = StageCall();
  backend_.beginStep(trace_.nowUs());
  Expected<StepMode> mode =
      backend_.stepMode(step + 1, /*evaluation=*/evalInputs_ != nullptr);
  if (!mode.isOk())
    fatal(describeCall(mode.status().message()));
  mode_ = *mode;
  if (mode_ == StepMode::Capture)
    recording_ = StepRecord();
}

void Executor::run(bp_rank_program_t program) {
  if (mode_ != StepMode::Replay) {
    // Every executor is program.h's context (bp_rt_context adds nothing).
    program(static_cast<bp_rt_context *>(this));
    return;
  }
  Status s = replay();
  if (!s.isOk())
    fatal(describeCall("replaying the step's CUDA graph: " + s.message()));
}

Status Executor::replay() {
  // Replays are training steps (an evaluation always runs its program).
  if (!inputs_ && !recorded_.loads.empty())
    return invalid("this rank has no training data open");
  for (const StepRecord::Load &load : recorded_.loads)
    BP_TRY(backend_.restageInput(load.count, [&](int32_t *host) {
      return inputs_->load(step_, copy_, load.mb, load.kind, host, load.count);
    }));
  BP_TRY(backend_.replay());
  lossCount_ = recorded_.losses;
  return optimizerStep(recorded_.microbatches);
}

void Executor::noteDeviceWork(const char *what) {
  if (mode_ == StepMode::Capture && stepped_)
    backend_.discardCapture(formatString(
        "its rank program calls %s after its optimizer step, which the "
        "graph does not hold",
        what));
}

bool Executor::holdsParamsOf(const StageFunction &f) const {
  bool any = false;
  for (const Role &role : f.args) {
    if (role.kind != RoleKind::Param)
      continue;
    if (!params_.holds(role.param))
      return false;
    any = true;
  }
  return any;
}

Expected<BufferRef> Executor::zeros(size_t bytes) {
  // Filled as floats: zero bits are zero in every dtype a role has.
  const size_t words = (bytes + 3) / 4;
  void *p = bp_alloc(static_cast<int64_t>(words * 4));
  if (!p)
    return backend_.outOfMemory(words * 4);
  auto b = std::make_shared<Buffer>(p, bytes);
  BP_TRY(backend_.fillF32(p, 0.0f, static_cast<int64_t>(words)));
  return b;
}

Expected<int64_t> Executor::warmUp() {
  int64_t calls = 0;
  const auto &functions = manifest_.functions;
  for (size_t fwd = 0; fwd < functions.size(); ++fwd) {
    const StageFunction &f = functions[fwd];
    // A stage whose parameters another rank holds is that rank's to run.
    if (f.kind != FunctionKind::Forward || !holdsParamsOf(f))
      continue;
    const int fn = static_cast<int>(fwd);
    SavedHandle h;
    h.forwardFn = fn;
    h.args.resize(f.args.size());
    std::vector<void *> args(f.args.size(), nullptr);
    for (size_t i = 0; i < f.args.size(); ++i) {
      const Role &role = f.args[i];
      if (role.kind == RoleKind::Param) {
        args[i] = params_.computeParam(role.param);
        continue;
      }
      if (role.kind == RoleKind::Input) {
        // Id 0 is a token of every vocabulary and a label of every one;
        // zero words are a dropout key (seed 0, sample group 0).
        BP_ASSIGN(b, backend_.loadInput(role.numel, [&](int32_t *host) {
          std::memset(host, 0,
                      static_cast<size_t>(role.numel) * sizeof(int32_t));
          return Status::ok();
        }));
        h.args[i] = std::move(b);
      } else {
        BP_ASSIGN(b, zeros(role.bytes()));
        h.args[i] = std::move(b);
      }
      args[i] = h.args[i]->data();
    }
    std::vector<BufferRef> results;
    BP_TRY(invoke(fn, opName('F', fn, 0), args, &results));
    ++calls;
    for (size_t r = 0; r < f.results.size(); ++r) {
      const Role &role = f.results[r];
      if (role.kind != RoleKind::Saved)
        continue;
      if (h.saved.size() <= static_cast<size_t>(role.index))
        h.saved.resize(role.index + 1);
      h.saved[role.index] = std::move(results[r]);
    }
    // Its backward, whole or in halves: the input half first.
    for (FunctionKind kind :
         {FunctionKind::Backward, FunctionKind::BackwardInput,
          FunctionKind::BackwardWeight}) {
      for (size_t bwd = 0; bwd < functions.size(); ++bwd) {
        const StageFunction &b = functions[bwd];
        if (b.kind != kind || b.stage != f.stage)
          continue;
        const int bfn = static_cast<int>(bwd);
        if (kind != FunctionKind::BackwardWeight) {
          // The output's gradient: zeros, or the loss's own (unit) seed,
          // which bindBackwardArgs supplies for a null gradient.
          for (const Role &role : b.args)
            if (role.kind == RoleKind::GradOfResult && !role.isScalarF32()) {
              BP_ASSIGN(g, zeros(role.bytes()));
              h.gradOfResult = std::move(g);
            }
        }
        std::vector<void *> bargs;
        BP_TRY(bindBackwardArgs(bfn, h, h.gradOfResult, &bargs));
        BP_TRY(invoke(bfn,
                      opName(kind == FunctionKind::BackwardWeight ? 'W' : 'B',
                             bfn, 0),
                      bargs, &results));
        ++calls;
        BP_TRY(takeBackwardResults(bfn, h, results, -1));
      }
    }
  }
  // The backward calls added their gradients into the accumulators, which
  // no step has used yet.
  BP_TRY(params_.arrays().zeroGradients());
  // A fault of a warm-up call is found here, before any step.
  BP_TRY(backend_.synchronize());
  lastStageCall_ = StageCall();
  return calls;
}

Status Executor::endStep() {
  if (!stepped_)
    return invalid("the rank program returned without calling "
                   "bp_rt_optimizer_step");
  if (mode_ == StepMode::Capture)
    recorded_ = std::move(recording_);
  for (int32_t id = 0; id < values_.size(); ++id) {
    ValueTable::Taken t = values_.take(id);
    if (t.kind == ValueTable::Kind::Handle)
      return invalid(formatString(
          "saved handle %d of %s was never consumed by a backward", id,
          opName('F', t.handle->forwardFn, t.handle->mb).c_str()));
    if (t.kind == ValueTable::Kind::Token)
      return invalid(formatString("the all-reduce of bucket %d (token %d) "
                                  "was never waited for",
                                  t.token.bucket, id));
    // Tensors the program did not release are dropped here; one still
    // being received must land first (MPI owns its memory until then).
    if (t.tensor)
      BP_TRY(complete(*t.tensor,
                      [&] { return describeCall("the end of the step"); }));
  }
  BP_TRY(drainSends());
  BP_TRY(synchronizeStep());
  // The step's losses, summed in double in the order the forwards produced
  // them (on a device they were copied back asynchronously).
  for (float loss : backend_.takeLosses())
    lossSum_ += loss;
  backend_.endStep(trace_);
  return Status::ok();
}

Status Executor::synchronizeStep() {
  // What the compute stream was told to wait for is bounded on the host
  // first: a dead peer is a timeout naming it, not a device wait that
  // never ends.
  Status drained = comm_.drainDeviceWaits();
  if (!drained.isOk())
    return Status::error(drained.code(),
                         "transfers the step's device work waits for: " +
                             drained.message());
  Status s = backend_.synchronize();
  if (s.isOk() || !lastStageCall_.op)
    return s;
  return Status::error(
      s.code(), "after " +
                    describeStageCall(lastStageCall_.op, lastStageCall_.fn,
                                      lastStageCall_.mb) +
                    ", the step's last stage call: " + s.message());
}

Status Executor::complete(Buffer &b,
                          const std::function<std::string()> &reader) {
  if (!b.pendingRecv.valid())
    return Status::ok();
  TraceRecorder::Scope scope(
      trace_, formatString(trace::kRecvFormat, b.recvPeer, b.recvTag),
      TraceCategory::Recv);
  // Every reader of a received buffer is target work: the stage function
  // it is an argument of, a send forwarding it (after the compute stream,
  // Communicator.h), the pool's free. So the target orders them after the
  // receive: on the device (an event) under NCCL, a host wait under MPI.
  Status s = comm_.waitOnDeviceFor(b.pendingRecv, reader());
  if (!s.isOk())
    return Status::error(s.code(),
                         formatString("receive from %s (tag %d): %s",
                                      describeWorldPeer(b.recvPeer).c_str(),
                                      b.recvTag, s.message().c_str()));
  b.pendingRecv = RequestHandle();
  return Status::ok();
}

Status Executor::pollSends() {
  for (size_t i = 0; i < sends_.size();) {
    Expected<bool> done = comm_.test(sends_[i].request);
    if (!done.isOk())
      return done.status();
    if (!*done) {
      ++i;
      continue;
    }
    BP_TRY(comm_.wait(sends_[i].request)); // returns at once; reports errors
    sends_.erase(sends_.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return Status::ok();
}

Status Executor::drainSends() {
  for (PendingSend &p : sends_) {
    Status s = comm_.wait(p.request);
    if (!s.isOk())
      return Status::error(s.code(),
                           formatString("send to %s (tag %d): %s",
                                        describeWorldPeer(p.peer).c_str(),
                                        p.tag, s.message().c_str()));
  }
  sends_.clear();
  return Status::ok();
}

Status Executor::checkFunction(int32_t fn, FunctionKind a, FunctionKind b,
                               const char *op) const {
  if (fn < 0 || static_cast<size_t>(fn) >= manifest_.functions.size())
    return invalid(formatString("function %d is not in the manifest (it has "
                                "%zu)",
                                fn, manifest_.functions.size()));
  FunctionKind k = manifest_.functions[fn].kind;
  if (k != a && k != b)
    return invalid(formatString("%s cannot run a %s function", op,
                                functionKindName(k)));
  return Status::ok();
}

Status Executor::call(int fn, const char *op, int64_t mb,
                      std::vector<void *> &args,
                      std::vector<BufferRef> *results) {
  // What a device fault found later (at the step's end) is reported after.
  lastStageCall_ = {op, fn, mb};
  noteDeviceWork(op);
  const char kind = op[0] == 'f' ? 'F' : op[0] == 'w' ? 'W' : 'B';
  const TraceCategory category =
      kind == 'F' ? TraceCategory::Forward : TraceCategory::Backward;
  const std::string span = opName(kind, fn, mb);
  TraceRecorder::Scope scope(trace_, span, category);
  return invoke(fn, span, args, results);
}

Status Executor::invoke(int fn, const std::string &span,
                        const std::vector<void *> &args,
                        std::vector<BufferRef> *results) {
  const StageFunction &f = manifest_.functions[fn];
  std::vector<void *> buffers(args);
  buffers.resize(f.args.size() + f.results.size(), nullptr);
  BP_TRY(backend_.stageCallBegin());
  entries_[fn](buffers.data());
  BP_TRY(backend_.stageCallEnd(span));
  results->clear();
  for (size_t r = 0; r < f.results.size(); ++r) {
    // A parameter's gradient went into the accumulator in its slot.
    if (f.results[r].kind == RoleKind::Param) {
      results->push_back(nullptr);
      continue;
    }
    void *p = buffers[f.args.size() + r];
    if (!p)
      return invalid(formatString("the stage function returned no buffer "
                                  "for result %zu (%s)",
                                  r, roleKindName(f.results[r].kind)));
    results->push_back(std::make_shared<Buffer>(p, f.results[r].bytes()));
  }
  return Status::ok();
}

static Status checkSize(const Buffer &b, const Role &role, int32_t id,
                        const char *what) {
  if (b.bytes() != role.bytes())
    return invalid(formatString("%s: value %d has %zu bytes, the function "
                                "takes %s %s (%zu bytes)",
                                what, id, b.bytes(),
                                shapeToString(role.shape).c_str(),
                                dtypeName(role.dtype), role.bytes()));
  return Status::ok();
}

Status Executor::loadInput(int32_t value, int32_t kind, int64_t mb,
                           int64_t count) {
  if (kind < 0 || kind >= BP_NUM_INPUT_KINDS) {
    std::string kinds;
    for (int k = 0; k < BP_NUM_INPUT_KINDS; ++k)
      kinds +=
          formatString("%s%d (%s)", k ? ", " : "", k, bp_input_kind_names[k]);
    return invalid(
        formatString("input kind %d is not one of %s", kind, kinds.c_str()));
  }
  if (kind == static_cast<int32_t>(InputKind::DropoutKey))
    return invalid("a dropout key is not loaded: bp_rt_forward passes each "
                   "forward its micro-batch's key");
  BP_ASSIGN(b, loadInputValue(static_cast<InputKind>(kind), mb, count));
  return values_.defineTensor(value, std::move(b));
}

Expected<BufferRef> Executor::loadInputValue(InputKind kind, int64_t mb,
                                             int64_t count) {
  const InputLoader *from = evalInputs_ ? evalInputs_ : inputs_;
  if (!from)
    return invalid("this rank has no training data open");
  if (count <= 0)
    return invalid("an input needs a positive count");
  noteDeviceWork("load_input");
  if (mode_ == StepMode::Capture)
    recording_.loads.push_back({kind, mb, count});
  return backend_.loadInput(count, [&](int32_t *host) {
    return from->load(step_, copy_, mb, kind, host, count);
  });
}

Status Executor::forward(int32_t fn, int64_t mb, int32_t in0, int32_t in1,
                         int32_t out0, int32_t saved) {
  BP_TRY(checkFunction(fn, FunctionKind::Forward, FunctionKind::Forward,
                       "bp_rt_forward"));
  const StageFunction &f = manifest_.functions[fn];
  auto handle = std::make_unique<SavedHandle>();
  handle->forwardFn = fn;
  handle->mb = mb;
  handle->args.resize(f.args.size());
  std::vector<void *> args(f.args.size(), nullptr);
  const int32_t bound[2] = {in0, in1};
  int next = 0;
  for (size_t i = 0; i < f.args.size(); ++i) {
    const Role &role = f.args[i];
    if (role.kind == RoleKind::Param) {
      if (!params_.holds(role.param))
        return invalid("rank " + std::to_string(rank_) +
                       " does not hold parameter '" +
                       manifest_.params[role.param].name + "'");
      args[i] = params_.computeParam(role.param);
      continue;
    }
    if (role.kind == RoleKind::Input && role.input == InputKind::DropoutKey) {
      // Bound here, not by the program: the key is a function of the
      // micro-batch alone. The handle keeps it for the backward, which
      // draws the same mask.
      BP_ASSIGN(key, loadInputValue(InputKind::DropoutKey, mb, role.numel));
      args[i] = key->data();
      handle->args[i] = std::move(key);
      continue;
    }
    int32_t id = bound[next++];
    std::string what = formatString("argument %zu (%s)", i,
                                    roleKindName(role.kind));
    if (id < 0)
      return invalid(what + formatString(" is not bound: in%d is -1",
                                         next - 1));
    BP_ASSIGN(b, values_.tensor(id, what.c_str()));
    BP_TRY(checkSize(*b, role, id, what.c_str()));
    BP_TRY(complete(*b, [&] { return describeStageCall("forward", fn, mb); }));
    args[i] = b->data();
    handle->args[i] = std::move(b);
  }
  for (int k = next; k < 2; ++k)
    if (bound[k] >= 0)
      return invalid(formatString("in%d is bound (value %d) but the function "
                                  "takes only %d inputs and activations",
                                  k, bound[k], next));

  std::vector<BufferRef> results;
  BP_TRY(call(fn, "forward", mb, args, &results));
  for (size_t r = 0; r < f.results.size(); ++r) {
    const Role &role = f.results[r];
    if (role.kind == RoleKind::Saved) {
      if (handle->saved.size() <= static_cast<size_t>(role.index))
        handle->saved.resize(role.index + 1);
      handle->saved[role.index] = std::move(results[r]);
      continue;
    }
    // The output: the loss on the last stage, else passed on.
    if (role.isScalarF32()) {
      BP_TRY(backend_.queueLoss(results[r]->data()));
      ++lossCount_;
    }
    if (out0 >= 0)
      BP_TRY(values_.defineTensor(out0, std::move(results[r])));
  }
  if (saved >= 0) {
    for (const BufferRef &b : handle->saved)
      if (b)
        handle->savedBytes += static_cast<int64_t>(b->bytes());
    handleCreated(*handle);
    BP_TRY(values_.defineHandle(saved, std::move(handle)));
  }
  return Status::ok();
}

void Executor::handleCreated(const SavedHandle &h) {
  ++liveHandles_;
  liveSavedBytes_ += h.savedBytes;
  peakHandles_ = std::max(peakHandles_, liveHandles_);
  peakSavedBytes_ = std::max(peakSavedBytes_, liveSavedBytes_);
}

void Executor::handleReleased(const SavedHandle &h) {
  --liveHandles_;
  liveSavedBytes_ -= h.savedBytes;
}

Status Executor::bindBackwardArgs(int fn, SavedHandle &h,
                                  const BufferRef &grad,
                                  std::vector<void *> *args) {
  const StageFunction &f = manifest_.functions[fn];
  const StageFunction &fwd = manifest_.functions[h.forwardFn];
  // Arguments, then the results' slots: a parameter's gradient slot holds
  // its accumulator, which the function adds into (program.h).
  args->assign(f.args.size() + f.results.size(), nullptr);
  for (size_t r = 0; r < f.results.size(); ++r) {
    const Role &role = f.results[r];
    if (role.kind != RoleKind::Param)
      continue;
    if (!params_.holds(role.param))
      return invalid("rank " + std::to_string(rank_) +
                     " would get a gradient of parameter '" +
                     manifest_.params[role.param].name +
                     "', which it does not hold");
    (*args)[f.args.size() + r] = params_.gradientAccumulator(role.param);
  }
  for (size_t i = 0; i < f.args.size(); ++i) {
    const Role &role = f.args[i];
    switch (role.kind) {
    case RoleKind::Param:
      if (!params_.holds(role.param))
        return invalid("rank " + std::to_string(rank_) +
                       " does not hold parameter '" +
                       manifest_.params[role.param].name + "'");
      (*args)[i] = params_.computeParam(role.param);
      break;
    case RoleKind::ForwardArg: {
      if (static_cast<size_t>(role.index) >= fwd.args.size())
        return invalid(formatString("argument %zu is forward argument %d, "
                                    "but %s has %zu arguments",
                                    i, role.index, fwd.name.c_str(),
                                    fwd.args.size()));
      const Role &fa = fwd.args[role.index];
      if (fa.kind == RoleKind::Param)
        (*args)[i] = params_.computeParam(fa.param);
      else
        (*args)[i] = h.args[role.index]->data();
      if (fa.bytes() != role.bytes())
        return invalid(formatString("argument %zu is forward argument %d of "
                                    "%zu bytes, but the function takes %zu",
                                    i, role.index, fa.bytes(), role.bytes()));
      break;
    }
    case RoleKind::Saved:
      if (static_cast<size_t>(role.index) >= h.saved.size() ||
          !h.saved[role.index])
        return invalid(formatString("argument %zu is saved result %d, which "
                                    "%s did not produce",
                                    i, role.index, fwd.name.c_str()));
      if (h.saved[role.index]->bytes() != role.bytes())
        return invalid(formatString("saved result %d has %zu bytes, the "
                                    "function takes %zu",
                                    role.index, h.saved[role.index]->bytes(),
                                    role.bytes()));
      (*args)[i] = h.saved[role.index]->data();
      break;
    case RoleKind::Stash:
      if (static_cast<size_t>(role.index) >= h.stash.size() ||
          !h.stash[role.index])
        return invalid(formatString("argument %zu is stash %d, which the "
                                    "input half did not produce",
                                    i, role.index));
      (*args)[i] = h.stash[role.index]->data();
      break;
    case RoleKind::GradOfResult:
      if (grad) {
        if (grad->bytes() != role.bytes())
          return invalid(formatString("the output gradient has %zu bytes, "
                                      "the function takes %zu",
                                      grad->bytes(), role.bytes()));
        (*args)[i] = grad->data();
      } else if (role.isScalarF32()) {
        // The loss's own gradient: d loss / d loss = 1 (the optimizer
        // divides the summed gradients by the micro-batch count).
        if (!unitLossGrad_) {
          unitLossGrad_ = Buffer::allocate(sizeof(float));
          if (!unitLossGrad_)
            return backend_.outOfMemory(sizeof(float));
          BP_TRY(backend_.fillF32(unitLossGrad_->data(), 1.0f, 1));
        }
        (*args)[i] = unitLossGrad_->data();
      } else {
        return invalid(formatString("argument %zu is the gradient of a %s "
                                    "result, but grad0 is -1",
                                    i, shapeToString(role.shape).c_str()));
      }
      break;
    default:
      return invalid(formatString("argument %zu has role %s", i,
                                  roleKindName(role.kind)));
    }
  }
  return Status::ok();
}

Status Executor::takeBackwardResults(int fn, SavedHandle &h,
                                     std::vector<BufferRef> &results,
                                     int32_t out0) {
  const StageFunction &f = manifest_.functions[fn];
  bool bound = false;
  for (size_t r = 0; r < f.results.size(); ++r) {
    const Role &role = f.results[r];
    switch (role.kind) {
    case RoleKind::Param:
      break; // accumulated in place (bindBackwardArgs)
    case RoleKind::GradOfArg:
      bound = true;
      if (out0 >= 0)
        BP_TRY(values_.defineTensor(out0, std::move(results[r])));
      break;
    case RoleKind::Stash:
      if (h.stash.size() <= static_cast<size_t>(role.index))
        h.stash.resize(role.index + 1);
      h.stash[role.index] = std::move(results[r]);
      break;
    default:
      return invalid(formatString("result %zu has role %s", r,
                                  roleKindName(role.kind)));
    }
  }
  if (out0 >= 0 && !bound)
    return invalid(formatString("out0 is bound (value %d) but the function "
                                "has no grad_of_arg result",
                                out0));
  return Status::ok();
}

Expected<SavedHandle *> Executor::savedHandleOf(int32_t saved,
                                               const StageFunction &f,
                                               int64_t mb) const {
  BP_ASSIGN(h, values_.handle(saved, "the saved handle"));
  const StageFunction &fwd = manifest_.functions[h->forwardFn];
  if (fwd.stage != f.stage || h->mb != mb)
    return invalid(formatString("handle %d was saved by %s, not by the "
                                "forward of stage %d, micro-batch %lld",
                                saved,
                                opName('F', h->forwardFn, h->mb).c_str(),
                                f.stage, static_cast<long long>(mb)));
  return h;
}

Status Executor::backward(int32_t fn, int64_t mb, int32_t saved, int32_t grad0,
                          int32_t out0) {
  BP_TRY(checkFunction(fn, FunctionKind::Backward, FunctionKind::BackwardInput,
                       "bp_rt_backward"));
  const StageFunction &f = manifest_.functions[fn];
  BP_ASSIGN(h, savedHandleOf(saved, f, mb));
  if (h->inputHalfDone)
    return invalid(formatString("handle %d already went through an input "
                                "half; it awaits bp_rt_weight_grad",
                                saved));
  BufferRef grad;
  if (grad0 >= 0) {
    BP_ASSIGN(g, values_.tensor(grad0, "grad0"));
    BP_TRY(complete(*g, [&] { return describeStageCall("backward", fn, mb); }));
    grad = std::move(g);
  }
  std::vector<void *> args;
  BP_TRY(bindBackwardArgs(fn, *h, grad, &args));
  std::vector<BufferRef> results;
  BP_TRY(call(fn, "backward", mb, args, &results));
  BP_TRY(takeBackwardResults(fn, *h, results, out0));
  if (f.kind == FunctionKind::Backward) {
    handleReleased(*h);
    values_.take(saved); // the handle and what it kept alive go
  } else {
    h->inputHalfDone = true;
    h->gradOfResult = std::move(grad); // the weight half may need it
  }
  return Status::ok();
}

Status Executor::weightGrad(int32_t fn, int64_t mb, int32_t saved) {
  BP_TRY(checkFunction(fn, FunctionKind::BackwardWeight,
                       FunctionKind::BackwardWeight, "bp_rt_weight_grad"));
  const StageFunction &f = manifest_.functions[fn];
  BP_ASSIGN(h, savedHandleOf(saved, f, mb));
  if (!h->inputHalfDone)
    return invalid(formatString("handle %d has not been through the input "
                                "half (bp_rt_backward) yet",
                                saved));
  std::vector<void *> args;
  BP_TRY(bindBackwardArgs(fn, *h, h->gradOfResult, &args));
  std::vector<BufferRef> results;
  BP_TRY(call(fn, "weight_grad", mb, args, &results));
  BP_TRY(takeBackwardResults(fn, *h, results, -1));
  handleReleased(*h);
  values_.take(saved);
  return Status::ok();
}

DType Executor::transferDType() const {
  // Activations and their gradients cross stage boundaries in the compute
  // precision (program.h's "precision"): bf16 under bf16, else f32. Taken
  // from the manifest, not from the value: a receive has no buffer yet,
  // and only its consumer's role, unknown when it is posted, would say.
  return manifest_.target.computeDType();
}

bool Executor::isPipelineRank(int32_t peer) const {
  return peer >= 0 && peer < manifest_.pipelineRanks();
}

Expected<int> Executor::worldPeer(int32_t peer) const {
  if (!isPipelineRank(peer))
    return invalid(formatString("peer %d is not a pipeline rank (below "
                                "schedule.devices %d)",
                                peer, manifest_.pipelineRanks()));
  return manifest_.worldRank(copy_, peer);
}

std::string Executor::describePeer(int32_t peer) const {
  if (!isPipelineRank(peer))
    return formatString("pipeline rank %d", peer);
  return formatString("rank %d (pipeline rank %d)",
                      manifest_.worldRank(copy_, peer), peer);
}

std::string Executor::describeWorldPeer(int world) const {
  return describePeer(manifest_.pipelineRank(world));
}

Status Executor::send(int32_t value, int64_t count, int32_t pipelinePeer,
                      int32_t tag) {
  noteDeviceWork("send");
  BP_ASSIGN(peer, worldPeer(pipelinePeer));
  BP_ASSIGN(b, values_.tensor(value, "the value to send"));
  const DType dtype = transferDType();
  if (count < 0 || static_cast<size_t>(count) * dtypeSize(dtype) != b->bytes())
    return invalid(formatString("send of %lld x %s (%lld bytes), but value "
                                "%d holds %zu bytes",
                                static_cast<long long>(count),
                                dtypeName(dtype),
                                static_cast<long long>(count) *
                                    static_cast<long long>(dtypeSize(dtype)),
                                value, b->bytes()));
  // Forwarding a value still being received.
  BP_TRY(complete(*b, [&] {
    return describeCall(formatString("send to %s (tag %d)",
                                     describeWorldPeer(peer).c_str(), tag));
  }));
  RequestHandle request;
  {
    TraceRecorder::Scope scope(trace_,
                               formatString(trace::kSendFormat, peer, tag),
                               TraceCategory::Send);
    BP_ASSIGN(r, comm_.send(b->data(), count, dtype, peer, tag));
    request = r;
  }
  sends_.push_back({std::move(b), request, peer, tag});
  return pollSends();
}

Status Executor::recv(int32_t value, int64_t count, int32_t pipelinePeer,
                      int32_t tag) {
  noteDeviceWork("recv");
  BP_ASSIGN(peer, worldPeer(pipelinePeer));
  if (count < 0)
    return invalid("a receive needs a non-negative count");
  if (!values_.valid(value) || values_.kind(value) != ValueTable::Kind::Empty)
    return values_.defineTensor(value, nullptr); // the precise message
  const DType dtype = transferDType();
  const size_t bytes = static_cast<size_t>(count) * dtypeSize(dtype);
  BufferRef b = Buffer::allocate(bytes);
  if (!b)
    return backend_.outOfMemory(bytes);
  BP_ASSIGN(r, comm_.recv(b->data(), count, dtype, peer, tag));
  b->pendingRecv = r;
  b->recvPeer = peer;
  b->recvTag = tag;
  return values_.defineTensor(value, std::move(b));
}

Status Executor::endBatch(int32_t) {
  // The batch's transfers are one group (NCCL: ncclGroupStart/End), so that
  // crossed ones cannot deadlock; MPI posted each when called. Then the
  // finished sends are collected.
  BP_TRY(comm_.endBatch());
  return pollSends();
}

Status Executor::localCopy(int32_t src, int32_t dst) {
  // Tensors are immutable: the copy shares the buffer.
  BP_ASSIGN(b, values_.tensor(src, "the source of the local copy"));
  return values_.defineTensor(dst, std::move(b));
}

Status Executor::allreduceStart(int32_t bucket, int32_t token) {
  const RankSpec &spec = spec_;
  if (bucket < 0 || static_cast<size_t>(bucket) >= spec.buckets.size())
    return invalid(formatString("bucket %d; rank %d (pipeline rank %d) has "
                                "%zu buckets",
                                bucket, rank_, manifest_.pipelineRank(rank_),
                                spec.buckets.size()));
  if (!values_.valid(token) || values_.kind(token) != ValueTable::Kind::Empty)
    return values_.defineToken(token, RequestHandle(), bucket);
  noteDeviceWork("allreduce_start");
  // The bucket's sum must hold every micro-batch's gradient.
  const ElementRange &range = params_.bucketRange(bucket);
  const int group = spec.buckets[bucket].group;
  TraceRecorder::Scope scope(trace_,
                             formatString(trace::kAllReducePostFormat, bucket),
                             TraceCategory::AllReduce);
  if (params_.shardsOptimizer()) {
    BP_ASSIGN(r, shardedSumStart(bucket));
    return values_.defineToken(token, r, bucket);
  }
  ParamArrays &arrays = params_.arrays();
  const DType dtype = arrays.gradDType();
  char *sum =
      static_cast<char *>(arrays.gradData()) + range.offset * dtypeSize(dtype);
  // A group of the manifest's "hierarchical" sync with two levels to use
  // sums through them (docs/data-parallel.md, "Two levels").
  const std::optional<TwoLevelGroup> twoLevel = twoLevelGroup(group);
  BP_ASSIGN(r, twoLevel ? comm_.hierarchicalAllReduceStart(sum, range.count,
                                                           dtype, *twoLevel)
                        : comm_.allReduceStart(sum, range.count, dtype,
                                               groupIds_[group]));
  return values_.defineToken(token, r, bucket);
}

std::optional<TwoLevelGroup> Executor::twoLevelGroup(int group) const {
  return static_cast<size_t>(group) < twoLevelGroups_.size()
             ? twoLevelGroups_[group]
             : std::nullopt;
}

// A sharded optimizer's rank needs the sum of its own shard only
// (docs/data-parallel.md, "Sharded optimizer"): a reduce-scatter, over the
// whole group or, in two levels, within the copy here and across the
// copies of the member's part in shardedSumEnd.
Expected<RequestHandle> Executor::shardedSumStart(int32_t bucket) {
  const ElementRange &range = params_.bucketRange(bucket);
  const int group = spec_.buckets[bucket].group;
  ParamArrays &arrays = params_.arrays();
  const DType dtype = arrays.gradDType();
  char *sum =
      static_cast<char *>(arrays.gradData()) + range.offset * dtypeSize(dtype);
  if (std::optional<TwoLevelGroup> twoLevel = twoLevelGroup(group)) {
    const int64_t members =
        static_cast<int64_t>(manifest_.groups[group].size());
    return comm_.reduceScatterStart(sum, range.count / members, dtype,
                                    twoLevel->withinCopy);
  }
  return comm_.reduceScatterStart(sum, params_.bucketShard(bucket).count, dtype,
                                  groupIds_[group]);
}

Status Executor::shardedSumEnd(int32_t bucket) {
  const int group = spec_.buckets[bucket].group;
  std::optional<TwoLevelGroup> twoLevel = twoLevelGroup(group);
  if (!twoLevel)
    return Status::ok();
  const ElementRange &range = params_.bucketRange(bucket);
  const ElementRange &shard = params_.bucketShard(bucket);
  const int64_t part =
      range.count / static_cast<int64_t>(manifest_.groups[group].size());
  // The member's part of the copy's sum, which holds the rank's shard.
  const int64_t member = (shard.offset - range.offset) / part;
  ParamArrays &arrays = params_.arrays();
  const DType dtype = arrays.gradDType();
  char *memberPart = static_cast<char *>(arrays.gradData()) +
                     (range.offset + member * part) * dtypeSize(dtype);
  BP_ASSIGN(r, comm_.reduceScatterStart(memberPart, shard.count, dtype,
                                        twoLevel->acrossCopies));
  return comm_.waitOnDevice(r);
}

Status Executor::allreduceWait(int32_t token) {
  BP_ASSIGN(t, values_.token(token, "the all-reduce token"));
  {
    TraceRecorder::Scope scope(
        trace_, formatString(trace::kAllReduceWaitFormat, t.bucket),
        TraceCategory::AllReduce);
    // The optimizer step, on the target, is what reads the sum: it waits
    // for it there (a host wait under MPI).
    Status s = comm_.waitOnDeviceFor(
        t.request, describeCall(formatString("the optimizer step, after "
                                             "bp_rt_allreduce_wait of bucket "
                                             "%d",
                                             t.bucket)));
    if (s.isOk() && params_.shardsOptimizer())
      s = shardedSumEnd(t.bucket);
    if (!s.isOk())
      return Status::error(s.code(),
                           formatString("all-reduce of bucket %d: %s",
                                        t.bucket, s.message().c_str()));
  }
  values_.take(token);
  return Status::ok();
}

Status Executor::optimizerStep(int64_t microbatches) {
  if (stepped_)
    return invalid("bp_rt_optimizer_step called twice in one step");
  const ScheduleSpec &sched = manifest_.schedule;
  int64_t expected = sched.microbatches * sched.dataParallel;
  // microbatches <= 0: the op had no count; take the gradients as they are.
  if (microbatches > 0 && microbatches != expected)
    return invalid(formatString(
        "it averages over %lld micro-batches, but the manifest's step has "
        "%lld (schedule.microbatches %lld per copy x data_parallel %lld)",
        static_cast<long long>(microbatches),
        static_cast<long long>(expected),
        static_cast<long long>(sched.microbatches),
        static_cast<long long>(sched.dataParallel)));
  int n = microbatches > 0 ? static_cast<int>(microbatches) : 1;
  // A captured step's graph ends here, where the host must look at the
  // gradients; launched now, it does the step's work so far.
  if (mode_ == StepMode::Capture) {
    recording_.losses = lossCount_;
    recording_.microbatches = microbatches;
    BP_TRY(backend_.endCapture());
  }
  // The sends' buffers must not outlive the step, and their peers must have
  // them before anyone moves on.
  BP_TRY(drainSends());
  for (int32_t id = 0; id < values_.size(); ++id)
    if (values_.kind(id) == ValueTable::Kind::Token)
      return invalid(formatString("the all-reduce of token %d was not "
                                  "waited for before the optimizer step",
                                  id));

  // A device fault of the step's stage calls surfaces here, before the
  // optimizer reads what they wrote, and is reported after the last one.
  BP_TRY(synchronizeStep());
  TraceRecorder::Scope scope(trace_, trace::kOptimizer,
                             TraceCategory::Optimizer);
  ParamArrays &arrays = params_.arrays();
  // The global gradient norm, every step (clipping needs it, and the step's
  // metrics report it: unlike the loss, it shows a mis-scaled gradient at
  // once, which AdamW's normalised update hides). It is over the whole
  // model: each element counted once, by the lowest rank holding it or,
  // under a sharded optimizer, by its shard's (replicas hold the same
  // summed gradient; ParamLayout::norm).
  BP_ASSIGN(sum, arrays.sumSquaredGradients(n));
  double total = sum;
  // One double in host memory: the host transport's.
  Communicator &host = comm_.hostCommunicator();
  BP_ASSIGN(r, host.allReduceStart(&total, 1, DType::F64, kWorldGroup));
  BP_TRY(host.allReduceWait(r));
  gradNorm_ = std::sqrt(total);
  // A NaN or Inf gradient anywhere makes the sum NaN or Inf on every rank
  // alike, so every rank takes the same branch. The trainer stops the job
  // after this step (docs/training-semantics.md, "Non-finite values"); the
  // update still runs, unclipped (the norm is unknown), so that the
  // non-finite gradients land in the first moments, where the trainer finds
  // the first parameter that went non-finite in the host image on every
  // target, without a target-specific read of the gradients.
  // With --skip-nonfinite-steps the update is skipped instead, as a
  // loss-scaling optimizer skips an overflowed step; the step still counts
  // (its count selects the data and is what a checkpoint resumes from).
  nonFiniteGradNorm_ = !std::isfinite(total);
  if (evalInputs_) {
    // An evaluation wants the losses only: its gradients are dropped.
  } else if (nonFiniteGradNorm_ && skipNonFiniteUpdate_) {
    skippedUpdate_ = true;
    optimizer_.setStepCount(optimizer_.stepCount() + 1);
  } else {
    BP_TRY(arrays.adamwStep(optimizer_, n, nonFiniteGradNorm_ ? 0.0 : total));
    // Sharded, each replica updated its shards only: the others' come
    // back before the step ends (docs/data-parallel.md, "Sharded
    // optimizer").
    if (params_.shardsOptimizer())
      BP_TRY(params_.gatherWeights(comm_));
  }
  BP_TRY(arrays.zeroGradients());
  stepped_ = true;
  return Status::ok();
}

Status Executor::release(int32_t value) {
  if (!values_.valid(value) || values_.kind(value) == ValueTable::Kind::Empty)
    return invalid(formatString("value %d holds nothing (released twice, or "
                                "never defined)",
                                value));
  if (values_.kind(value) == ValueTable::Kind::Token)
    return invalid(formatString("value %d is an all-reduce token; only "
                                "bp_rt_allreduce_wait ends it",
                                value));
  ValueTable::Taken t = values_.take(value);
  if (t.tensor)
    return complete(*t.tensor, [&] {
      return describeCall(formatString("release of value %d", value));
    });
  return Status::ok();
}

} // namespace bitpipe::runtime
