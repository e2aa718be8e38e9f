//===- BitPipeOps.td - bitpipe operations -------------------*- tablegen -*-===//
//
// The ops of a per-rank program. Every op that stands for a cell of the
// schedule grid carries `stage` and `microbatch`, so a printer can show the
// program as `F0.s0 F1.s1 B1.s1 ...` without looking at anything else.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_BITPIPEOPS_TD
#define BITPIPE_DIALECT_BITPIPE_BITPIPEOPS_TD

include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.td"
include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.td"
include "bitpipe/Dialect/BitPipe/IR/BitPipeTypes.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

// Stage, micro-batch, rank and bucket numbers: I64Attr read as int64_t (not
// uint64_t), so they compare with other ranks without casts.
def BitPipe_I64Attr : TypedSignlessIntegerAttrBase<I64, "int64_t",
                                                   "64-bit signless integer attribute"> {
  let convertFromStorage = "$_self.getValue().getSExtValue()";
}
def BitPipe_IndexAttr : ConfinedAttr<BitPipe_I64Attr, [IntNonNegative]>;

// An op that lives in a program, at its top level: all-reduces and the
// optimizer step happen once per training step, never in a repeat.
class BitPipe_ProgramOp<string mnemonic, list<Trait> traits = []>
    : BitPipe_Op<mnemonic, !listconcat(traits, [HasParent<"ProgramOp">])>;

// A step for one micro-batch: it lives in a program or in the body of a
// `bitpipe.repeat`, where its micro-batch (and transfer batch) may advance
// with the repetition (`microbatch 4 step 2`: 4 + 2k in repetition k). The
// numbers an op has in repetition k: `microbatchAt(k)`, `batchAt(k)`.
defvar BitPipe_MicrobatchAt = [{
  /// The micro-batch this op works on in repetition `k` of its repeat
  /// (k = 0 outside one): microbatch + k * microbatch_step.
  int64_t microbatchAt(int64_t k) {
    return getMicrobatch() + k * getMicrobatchStep().value_or(0);
  }
}];
defvar BitPipe_BatchAt = [{
  /// The transfer batch of this op in repetition `k`, if it has one.
  std::optional<int64_t> batchAt(int64_t k) {
    if (std::optional<int64_t> batch = getBatch())
      return *batch + k * getBatchStep().value_or(0);
    return std::nullopt;
  }
}];

class BitPipe_StepOp<string mnemonic, list<Trait> traits = []>
    : BitPipe_Op<mnemonic, !listconcat(traits, [
        ParentOneOf<["ProgramOp", "RepeatOp"]>])> {
  let extraClassDeclaration = BitPipe_MicrobatchAt;
}

// A step op with readable default SSA names.
class BitPipe_NamedResultsOp<string mnemonic, list<Trait> traits = []>
    : BitPipe_StepOp<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>])>;

// How much a number advances per repetition of the enclosing repeat.
def BitPipe_StepAttr : OptionalAttr<BitPipe_I64Attr>;

//===----------------------------------------------------------------------===//
// Programs
//===----------------------------------------------------------------------===//

def BitPipe_ProgramOp : BitPipe_Op<"program", [
    Symbol, IsolatedFromAbove, SingleBlock, NoTerminator,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getDefaultDialect"]>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "the ordered program of one rank for one training step";
  let description = [{
    The ops of the body run in order; their order is the schedule of this
    rank. Inside a program the `bitpipe.` prefix may be left out, and the
    printer leaves it out.

    ```mlir
    bitpipe.program @rank0 rank 0 {
      %ids = load_input tokens microbatch 0 : tensor<2x16xi32>
      %y, %saved = forward @stage_0(%ids) stage 0 microbatch 0
          : (tensor<2x16xi32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
      send activation %y to 1 stage 0 microbatch 0 : tensor<2x16x32xf32>
      ...
      optimizer_step
    }
    ```

    Programs of one module have distinct ranks, each below the module's
    `bitpipe.world_size` when it has one. The program checks the callees of
    its steps (forward, backward, weight_grad) against the module's
    functions, once per callee rather than once per step.
  }];

  let arguments = (ins SymbolNameAttr:$sym_name, BitPipe_IndexAttr:$rank);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `rank` $rank attr-dict-with-keyword custom<ProgramBody>($body)
  }];

  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "int64_t":$rank)>
  ];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def BitPipe_LoadInputOp : BitPipe_NamedResultsOp<"load_input"> {
  let summary = "a micro-batch of training data";
  let description = [{
    The tokens fed to the first stage, or the targets the loss stage compares
    against (with the ignore index at unmasked positions, for BERT).

    ```mlir
    %ids = bitpipe.load_input tokens microbatch 0 : tensor<2x16xi32>
    ```
  }];

  let arguments = (ins BitPipe_InputKindAttr:$kind,
                       BitPipe_IndexAttr:$microbatch,
                       BitPipe_StepAttr:$microbatch_step);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    custom<Kind>($kind) `microbatch` $microbatch
    (`step` $microbatch_step^)? attr-dict `:` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// Compute: forward, backward, weight gradient
//===----------------------------------------------------------------------===//

def BitPipe_ForwardOp : BitPipe_NamedResultsOp<"forward"> {
  let summary = "run a stage's forward on one micro-batch";
  let description = [{
    Calls the stage function `callee` (`bitpipe.stage = k`). The handle
    stands for everything the forward keeps for the backward of this stage
    and micro-batch (`F2.s3` in a text schedule).

    ```mlir
    %y, %saved = bitpipe.forward @stage_3(%x) stage 3 microbatch 2
        : (tensor<2x16x32xf32>) -> (tensor<2x16x32xf32>, !bitpipe.saved)
    ```

    *Binding rule.* The op passes and returns only the data that flows
    between stages and from the training data; the rest of the callee's
    signature is stage state that the runtime binds. So the op's type, less
    the trailing `!bitpipe.saved`, is the callee's type *filtered by role*:

    - arguments: drop those with `nn.param` (parameters live with the
      stage); keep the activations from the previous stage and the `nn.input`
      tokens/labels (from `bitpipe.load_input`), in order;
    - results: drop those with `bitpipe.saved` (they, the forward's
      arguments and the parameters are behind the handle); keep the outputs,
      in order.

    The callee must be the stage function of `stage` when it says which
    stage it is.

    *Unbound form.* `bitpipe-schedule` fixes the order of the compute steps
    before the tensors that cross stage boundaries exist (sends, receives
    and local copies come from `bitpipe-insert-transfers`, which also binds
    the stage function). Until then a forward has no `callee` and names its
    stage only by `stage` (the `func.func` with `bitpipe.stage = k`). It
    returns no tensors, only the `!bitpipe.saved` handle, so the backward
    still has to consume the handle of its own forward; its operands are
    the training inputs the stage reads, each from a `bitpipe.load_input`.

    ```mlir
    %tokens = bitpipe.load_input tokens microbatch 2 : tensor<2x16xi32>
    %saved = bitpipe.forward(%tokens) stage 0 microbatch 2
        : (tensor<2x16xi32>) -> !bitpipe.saved
    %saved1 = bitpipe.forward stage 1 microbatch 2 : () -> !bitpipe.saved
    ```
  }];

  let arguments = (ins OptionalAttr<FlatSymbolRefAttr>:$callee,
                       Variadic<AnyType>:$inputs,
                       BitPipe_IndexAttr:$stage,
                       BitPipe_IndexAttr:$microbatch,
                       BitPipe_StepAttr:$microbatch_step);
  let results = (outs Variadic<AnyType>:$outputs,
                      BitPipe_SavedType:$saved);
  let assemblyFormat = [{
    ($callee^)? (`(` $inputs^ `)`)? `stage` $stage `microbatch` $microbatch
    (`step` $microbatch_step^)? attr-dict `:` functional-type($inputs, results)
  }];
  let hasVerifier = 1;
}

def BitPipe_BackwardOp : BitPipe_NamedResultsOp<"backward"> {
  let summary = "run a stage's backward (or its input-gradient half)";
  let description = [{
    Consumes the `!bitpipe.saved` handle of the forward of the same stage and
    micro-batch, and the gradient of the stage's outputs; returns the
    gradient of its activation inputs and accumulates its parameter
    gradients into stage state (`B2.s3`). When the backward is split,
    `callee` is the input-gradient half (`bitpipe.backward_input`) and a
    `bitpipe.weight_grad` follows.

    ```mlir
    %gx = bitpipe.backward @stage_3_bwd(%saved, %gy) stage 3 microbatch 2
        : (!bitpipe.saved, tensor<2x16x32xf32>) -> tensor<2x16x32xf32>
    ```

    *Binding rule.* The op's type, less the leading `!bitpipe.saved`, is the
    callee's type filtered by role:

    - arguments: drop the forward arguments it reads (`bitpipe.forward_arg`,
      which also covers `nn.param` and `nn.input`), the saved values
      (`bitpipe.saved`) and any stash (`bitpipe.stash`): all are behind the
      handle. Keep the output gradients (`bitpipe.grad_of_result`), in
      order; the loss stage has none (its gradient is seeded inside).
    - results: drop parameter gradients (`nn.param`, accumulated into the
      stage) and the stash for the weight half (`bitpipe.stash`, kept
      behind the handle); keep the gradients of the activation inputs, in
      order. A first stage, whose inputs are tokens, returns nothing.

    The callee must be a backward of the stage function of `stage` when it
    names its forward (`bitpipe.backward_of`).

    *Unbound form* (see `bitpipe.forward`): without `callee` the backward
    takes only the saved handle and returns nothing; the gradients are
    added when the backward function is bound.

    ```mlir
    bitpipe.backward(%saved) stage 3 microbatch 2 : (!bitpipe.saved) -> ()
    ```
  }];

  let arguments = (ins OptionalAttr<FlatSymbolRefAttr>:$callee,
                       BitPipe_SavedType:$saved,
                       Variadic<AnyType>:$grads,
                       BitPipe_IndexAttr:$stage,
                       BitPipe_IndexAttr:$microbatch,
                       BitPipe_StepAttr:$microbatch_step);
  let results = (outs Variadic<AnyType>:$outputs);
  let assemblyFormat = [{
    ($callee^)? `(` $saved (`,` $grads^)? `)` `stage` $stage
    `microbatch` $microbatch (`step` $microbatch_step^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def BitPipe_WeightGradOp : BitPipe_StepOp<"weight_grad"> {
  let summary = "the weight-gradient half of a split backward";
  let description = [{
    Accumulates the weight gradients of a stage for one micro-batch, after
    the input-gradient half (`bitpipe.backward`) of the same handle has run
    (`W2.s3`). Zero-bubble schedules move it into bubbles.

    ```mlir
    bitpipe.weight_grad @stage_3_bwd_weight(%saved) stage 3 microbatch 2
    ```

    *Binding rule.* Everything the weight half reads is behind the handle:
    the forward arguments, saved values, the output gradients the input
    half received (`bitpipe.grad_of_result`) and its stash
    (`bitpipe.stash`); everything it returns is a parameter gradient
    (`nn.param`). Filtered by role, the callee's type must be `() -> ()`.
    The callee must belong to the stage function of `stage` when it names
    its forward (`bitpipe.backward_of`).

    *Unbound form* (see `bitpipe.forward`): `bitpipe.weight_grad(%saved)
    stage 3 microbatch 2`, before the weight-gradient function is bound.
  }];

  let arguments = (ins OptionalAttr<FlatSymbolRefAttr>:$callee,
                       BitPipe_SavedType:$saved,
                       BitPipe_IndexAttr:$stage,
                       BitPipe_IndexAttr:$microbatch,
                       BitPipe_StepAttr:$microbatch_step);
  let assemblyFormat = [{
    ($callee^)? `(` $saved `)` `stage` $stage `microbatch` $microbatch
    (`step` $microbatch_step^)? attr-dict
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Transfers
//===----------------------------------------------------------------------===//

// `stage` of a transfer is the stage that produced the value (the forward
// whose output it is, or the backward whose input gradient it is), so a send
// and its recv carry the same (kind, stage, microbatch).

def BitPipe_SendOp : BitPipe_StepOp<"send"> {
  let summary = "send a tensor to another rank";
  let description = [{
    Point-to-point send of an activation (forward) or gradient (backward) to
    rank `peer`, matched by a `bitpipe.recv` with the same kind, stage and
    micro-batch in the peer's program. On each (sender, receiver) channel
    the k-th send matches the k-th receive, as NCCL and MPI match them. A
    hand-off on the same rank is a `bitpipe.local_copy`.

    ```mlir
    bitpipe.send activation %y to 1 stage 0 microbatch 0 batch 3 : tensor<2x16x32xf32>
    ```

    *Batches.* The sends that follow one compute step and the receives that
    the next compute step of the rank needs carry the same `batch` number
    (Megatron's `send_forward_recv_backward`); the lowering issues a batch
    as one NCCL group or one set of MPI requests, so that two neighbours
    that send to each other at the same time cannot wait on each other.
    A number rather than a region: the receives define values that the next
    compute step uses, which a region would have to yield, and the ops stay
    in the plain order the schedule library lowers and simulates (see
    `lowerComms` in Comms.h). Ops of one batch are not separated by a
    compute step; numbers grow along the program.
  }];

  let arguments = (ins BitPipe_TransferKindAttr:$kind,
                       AnyRankedTensor:$value,
                       BitPipe_IndexAttr:$peer,
                       BitPipe_IndexAttr:$stage,
                       BitPipe_IndexAttr:$microbatch,
                       OptionalAttr<BitPipe_IndexAttr>:$batch,
                       BitPipe_StepAttr:$microbatch_step,
                       BitPipe_StepAttr:$batch_step);
  let assemblyFormat = [{
    custom<Kind>($kind) $value `to` $peer `stage` $stage `microbatch` $microbatch
    (`step` $microbatch_step^)? custom<Batch>($batch, $batch_step) attr-dict
    `:` type($value)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = !strconcat(BitPipe_MicrobatchAt, BitPipe_BatchAt);
}

def BitPipe_RecvOp : BitPipe_NamedResultsOp<"recv"> {
  let summary = "receive a tensor from another rank";
  let description = [{
    The other end of a `bitpipe.send` on rank `peer`; `batch` as there.

    ```mlir
    %x = bitpipe.recv activation from 0 stage 0 microbatch 0 batch 0 : tensor<2x16x32xf32>
    ```
  }];

  let arguments = (ins BitPipe_TransferKindAttr:$kind,
                       BitPipe_IndexAttr:$peer,
                       BitPipe_IndexAttr:$stage,
                       BitPipe_IndexAttr:$microbatch,
                       OptionalAttr<BitPipe_IndexAttr>:$batch,
                       BitPipe_StepAttr:$microbatch_step,
                       BitPipe_StepAttr:$batch_step);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    custom<Kind>($kind) `from` $peer `stage` $stage `microbatch` $microbatch
    (`step` $microbatch_step^)? custom<Batch>($batch, $batch_step) attr-dict
    `:` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = !strconcat(BitPipe_MicrobatchAt, BitPipe_BatchAt);
}

def BitPipe_LocalCopyOp : BitPipe_NamedResultsOp<"local_copy",
    [SameOperandsAndResultType]> {
  let summary = "hand a tensor to another stage on the same rank";
  let description = [{
    Where two consecutive stages sit on the same device (the bottom of
    BitPipe's V), the hand-off is a copy, not a transfer. Keeping it as an op
    lets the schedule show it and the lowering choose to alias.

    ```mlir
    %x = bitpipe.local_copy activation %y stage 3 microbatch 0 : tensor<2x16x32xf32>
    ```
  }];

  let arguments = (ins BitPipe_TransferKindAttr:$kind,
                       AnyRankedTensor:$value,
                       BitPipe_IndexAttr:$stage,
                       BitPipe_IndexAttr:$microbatch,
                       BitPipe_StepAttr:$microbatch_step);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    custom<Kind>($kind) $value `stage` $stage `microbatch` $microbatch
    (`step` $microbatch_step^)? attr-dict `:` type($value)
  }];
}

//===----------------------------------------------------------------------===//
// Gradient synchronisation and the optimizer
//===----------------------------------------------------------------------===//

def BitPipe_AllReduceStartOp : BitPipe_ProgramOp<"allreduce_start", [
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "start an asynchronous all-reduce of stage gradients";
  let description = [{
    Sums the accumulated gradients of `stages` (one bucket) over the ranks of
    `group`, which lists every rank holding a replica of them, this one
    included. The program goes on at once; the returned token is waited for,
    exactly once, before the optimizer step (`AR(4,7)` in a text schedule).
    Every rank of the group starts its all-reduces in the same order.

    *Marker form.* `bitpipe-schedule` writes the schedule's own all-reduce
    steps (BitPipe's and Chimera's eager markers) without saying which
    tensors they move: one op per marker, `bucket` numbering the markers of
    the rank.

    ```mlir
    %t = bitpipe.allreduce_start stages [4, 7] group [0, 3] bucket 0 : !bitpipe.token
    ```

    *Bucketed form.* `bitpipe-insert-allreduce` replaces the markers with
    the buckets DDP would build: `grads` names the gradients it carries, by
    parameter name (`nn.param`) in the order they are packed into the
    flat buffer, and `bytes` is their total size. Every member of `group`
    issues the same buckets (names and bytes) in the same order; `bucket`
    numbers the buckets of the rank in start order.

    ```mlir
    %t = bitpipe.allreduce_start stages [7] group [0, 3] bucket 0
        grads ["ln_f.gain", "ln_f.bias"] bytes 256 : !bitpipe.token
    ```
  }];

  let arguments = (ins DenseI64ArrayAttr:$stages,
                       DenseI64ArrayAttr:$group,
                       BitPipe_IndexAttr:$bucket,
                       OptionalAttr<StrArrayAttr>:$grads,
                       OptionalAttr<BitPipe_I64Attr>:$bytes);
  let results = (outs BitPipe_TokenType:$token);
  let assemblyFormat = [{
    `stages` $stages `group` $group `bucket` $bucket
    (`grads` $grads^ `bytes` $bytes)? attr-dict `:` type($token)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// True for the bucketed form (bitpipe-insert-allreduce has run).
    bool isBucketed() { return getGrads().has_value(); }
  }];
}

def BitPipe_AllReduceWaitOp : BitPipe_ProgramOp<"allreduce_wait"> {
  let summary = "wait for an all-reduce to complete";
  let description = [{
    ```mlir
    bitpipe.allreduce_wait %t
    ```
  }];

  let arguments = (ins BitPipe_TokenType:$token);
  let assemblyFormat = "$token attr-dict";
}

def BitPipe_OptimizerStepOp : BitPipe_ProgramOp<"optimizer_step"> {
  let summary = "update this rank's parameters from their gradients";
  let description = [{
    Applies the optimizer (AdamW) to every stage this rank holds. All
    gradient all-reduces started before it must have been waited for.

    The gradients are sums over micro-batches (and, after the all-reduces,
    over replicas); `microbatches` is the number of micro-batches they sum
    over in the whole world, and the step divides by it first, so that the
    update equals one process training on all of them. Without it the step
    takes the gradients as they are (a schedule whose gradients are not
    synchronised yet).

    ```mlir
    bitpipe.optimizer_step microbatches 32
    ```
  }];

  let arguments = (ins OptionalAttr<BitPipe_I64Attr>:$microbatches);
  let assemblyFormat = "(`microbatches` $microbatches^)? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Repetition
//===----------------------------------------------------------------------===//

def BitPipe_RepeatOp : BitPipe_Op<"repeat", [
    HasParent<"ProgramOp">,
    SingleBlockImplicitTerminator<"YieldOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmBlockArgumentNames",
                                                 "getAsmResultNames",
                                                 "getDefaultDialect"]>]> {
  let summary = "run a body of steps `count` times";
  let description = [{
    The steady state of a schedule repeats (docs/repetition.md): BitPipe per
    unit of D micro-batches, 1F1B per micro-batch. A repeat keeps one copy
    of such a run, so that a program does not grow with the number of
    micro-batches. Repetition k (0 <= k < count) runs the body with every
    `microbatch m step s` read as m + k*s, and every `batch b step s` as
    b + k*s; a number without `step` is the same in every repetition. The
    body holds steps only (load_input, forward, backward, weight_grad,
    send, recv, local_copy): all-reduces and the optimizer step happen
    once per training step.

    *Values across repetitions.* A step may use a value that an earlier
    repetition defined (a forward's `!bitpipe.saved` handle used by its
    backward d repetitions later). The body's arguments carry such values:
    in repetition 0 they are `inits`; in repetition k > 0, the first
    values the body yielded in repetition k - 1. A window of the last d
    repetitions' handles is d arguments, rotated by the yield. The op's
    results are what the last repetition yielded: the window, and any
    further values the steps after the repeat use.

    ```mlir
    %w:2 = bitpipe.repeat 12 (%s1 = %saved_s0_m0, %s2 = %saved_s0_m1)
        : !bitpipe.saved, !bitpipe.saved {
      %s = bitpipe.forward(...) stage 0 microbatch 2 step 1 : ...
      bitpipe.backward(%s2) stage 0 microbatch 0 step 1 : ...
      bitpipe.yield %s, %s1 : !bitpipe.saved, !bitpipe.saved
    }
    ```

    `bitpipe-reroll` writes repeats, `bitpipe-unroll` removes them; the
    passes and the lowering read a program with repeats as the straight
    program it unrolls to (ProgramTrace.h).
  }];

  let arguments = (ins BitPipe_I64Attr:$count, Variadic<AnyType>:$inits);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    mlir::Block &getBodyBlock() { return getBody().front(); }
    YieldOp getYield();
    /// The body's steps, without the yield.
    auto getSteps() { return getBodyBlock().without_terminator(); }
  }];
}

def BitPipe_YieldOp : BitPipe_Op<"yield", [HasParent<"RepeatOp">, Terminator]> {
  let summary = "end a repetition, handing values to the next and after";
  let description = [{
    The first operands become the body's arguments in the next repetition
    (one per argument); all of them are the repeat's results after the last
    repetition. Printed only when it has operands.

    ```mlir
    bitpipe.yield %s, %s1 : !bitpipe.saved, !bitpipe.saved
    ```
  }];

  let arguments = (ins Variadic<AnyType>:$values);
  let builders = [OpBuilder<(ins), [{ /* nothing to yield */ }]>];
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

#endif // BITPIPE_DIALECT_BITPIPE_BITPIPEOPS_TD
