//===- Passes.td - bitpipe passes ---------------------------*- tablegen -*-===//
//
// Every pass is prefixed `bitpipe-`, runs alone in bitpipe-opt and has its own
// lit test under test/Transforms/<pass-name>.mlir.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TRANSFORMS_PASSES_TD
#define BITPIPE_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def AnnotateCost : Pass<"bitpipe-annotate-cost", "mlir::ModuleOp"> {
  let summary = "Annotate nn ops with FLOPs, parameter bytes and activation bytes";
  let description = [{
    Attaches `nn.cost = #nn.cost<fwd_flops, bwd_flops, param_bytes,
    act_bytes>` to every nn forward op of every function (see `CostModel.h`
    for what each number counts) and, with `print-summary`, prints a
    per-layer table and
    the model's parameter count to standard output. Functions must have
    static shapes and `nn.layer` on every nn op, as bitpipe-import writes
    them.
  }];
  let dependentDialects = ["bitpipe::nn::NNDialect"];
  let options = [
    Option<"printSummary", "print-summary", "bool", /*default=*/"false",
           "Print a per-layer cost table to standard output">,
  ];
}

def GenerateBackward : Pass<"bitpipe-generate-backward", "mlir::ModuleOp"> {
  let summary = "Build the backward function of every stage function";
  let description = [{
    For every function with `bitpipe.stage`, builds its backward from the nn
    ops' backward rules (`nn::BackwardOpInterface`; no per-op cases here) and
    makes what the forward keeps for it explicit:

    * the forward function additionally returns the op results its backward
      reads (result attribute `bitpipe.saved`), and its callers are updated;
    * `@<stage>_bwd(args..., saved..., grads...) -> (arg grads...)` takes the
      forward arguments the backward reads (with their `nn.param` /
      `nn.input` attributes), the saved values (`bitpipe.saved = i`: the
      forward's i-th saved result) and the gradients of the forward's
      outputs (`bitpipe.grad_of_result = i`), and returns the gradient of
      every differentiable forward argument (`bitpipe.grad_of_arg = i`, plus
      `nn.param` for parameters). Token ids and labels have none. A 0-d
      output is the loss: its gradient is seeded with 1 inside the backward
      instead of being an argument (gradients are sums over micro-batches;
      averaging is the optimizer step's business).

    `recompute` trades memory for time (docs/recompute.md):

    * `none` (the default): every active op that can return the statistics
      its backward reads does so (`buildWithStatistics`: `nn.attention ...
      with_stats` returns its rows' log-sum-exps, the norms their mean and
      rstd), and the backward ops read them as saved values instead of
      running the forward kernels again (docs/architecture.md, "Saved
      statistics");
    * `selective`: the ops keep their plain form; their backward ops
      compute the statistics again (attention's probabilities are computed
      again in every mode);
    * `full`: the forward returns nothing for its backward; the backward
      takes the forward arguments its recomputation reads and starts by
      running again the forward ops whose results the backward rules read
      (and the ops they depend on), in forward order, in their statistics
      form as under `none`.

    With `split`, the backward is two functions, as zero-bubble schedules
    need: `@<stage>_bwd_input` (input gradients and the parameter gradients
    that fall out of input-gradient ops, such as layer-norm gains) and
    `@<stage>_bwd_weight` (the ops with the `NN_WeightGradient` trait). The
    input half additionally returns what the weight half needs (result
    attribute `bitpipe.stash = j`), which the weight half takes as
    arguments with the same attribute.

    The forward function records its backward as `bitpipe.backward =
    @<stage>_bwd`, or `bitpipe.backward_input` and `bitpipe.backward_weight`;
    each backward function names its forward in `bitpipe.backward_of` (it
    is not a stage function itself). Under `recompute` selective or full
    the module records the mode (`bitpipe.recompute`), so that the costs
    read from the IR count what the stages keep.
  }];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect",
                           "bitpipe::nn::NNDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
  let options = [
    Option<"split", "split", "bool", /*default=*/"false",
           "Split the backward into input-gradient and weight-gradient functions">,
    Option<"recompute", "recompute", "::bitpipe::sched::Recompute",
           /*default=*/"::bitpipe::sched::Recompute::None",
           "What the backward computes again (none | selective | full)",
           "::bitpipe::recomputeValues()">,
  ];
}

def Partition : Pass<"bitpipe-partition", "mlir::ModuleOp"> {
  let summary = "Cut the model into contiguous chunks of layers and outline "
                "each as a stage function";
  let description = [{
    Cuts the model function (the `func.func` with `nn.model`, or else the only
    function holding nn ops) into K contiguous chunks of layers (`nn.layer`,
    numbered 0..L-1 without gaps) and outlines chunk k as
    `func.func @<model>_stage<k>` with `bitpipe.stage = k` and
    `bitpipe.layers = array<i64: first, last>`.

    With `chunks=K` the cut minimises the most expensive chunk, measured in
    forward + backward FLOPs per micro-batch from the cost model (embedding
    and head included, so chunks need not hold equal numbers of layers);
    among equally good cuts the earliest boundaries win. With
    `boundaries=b1,b2,...` the user names the layers that start chunks
    1..K-1 instead. Exactly one of the two must be given.

    A stage takes first the values that flow in from earlier chunks (the
    residual stream), then the model arguments it uses, in the model's order
    and with their `nn.param`/`nn.init`/`nn.input` attributes; it returns
    the values that later chunks or the model's return use (the last stage
    returns the loss). The model function's body becomes the sequence of
    calls of the stages, so it still computes the same loss.

    The module records the result as `bitpipe.partition =
    #bitpipe.partition<chunks, starts, costs, balance>`: the number of
    chunks, the first layer of each, each chunk's forward + backward FLOPs
    and max / mean (1.0 is perfect).
  }];
  let dependentDialects = ["mlir::func::FuncDialect",
                           "bitpipe::bp::BitPipeDialect"];
  let options = [
    Option<"chunks", "chunks", "unsigned", /*default=*/"0",
           "Number of chunks (pipeline stages) to balance by FLOPs">,
    ListOption<"boundaries", "boundaries", "int64_t",
               "Layers that start a new chunk (e.g. 2,4,6), instead of "
               "chunks">,
    Option<"print", "print", "bool", /*default=*/"false",
           "Print a per-chunk cost table to standard output">,
  ];
}

def Place : Pass<"bitpipe-place", "mlir::ModuleOp"> {
  let summary = "Put the stage functions on devices";
  let description = [{
    Builds the placement with the schedule library (the one definition of
    every placement) and checks that the module has exactly the stage
    functions (`func.func` with `bitpipe.stage = k`) it needs:

    | placement         | stages  |
    |-------------------|---------|
    | `loop`            | D * v   |
    | `v`               | 2D      |
    | `bidirectional`   | D       |
    | `bidirectional-v` | 2D      |

    where D is `devices` and v is `chunks-per-device` (loop only). With
    `dp=K` the world is K data-parallel copies of the D devices: rank
    `copy * D + device` (as `sched::World`). Writes
    `bitpipe.placement = #bitpipe.placement<...>`,
    `bitpipe.world_size = D * K` and `bitpipe.data_parallel = K` on the
    module, and `bitpipe.devices = array<i64: ...>` (the sorted
    devices holding a replica of the stage, the group that all-reduces its
    gradients) on each stage function. The placement is explicit:
    `bitpipe-schedule` checks that the schedule it is asked for runs on it.

    ```
    bitpipe-opt m.mlir --bitpipe-place="placement=bidirectional-v devices=4"
    ```
  }];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
  let options = [
    Option<"placement", "placement", "std::string", /*default=*/"",
           "The placement kind, as the schedule library spells it (required; "
           "the error for an unknown kind lists them)">,
    Option<"devices", "devices", "int", /*default=*/"0",
           "Number of pipeline devices D (required; 1..4096)">,
    Option<"chunksPerDevice", "chunks-per-device", "int", /*default=*/"1",
           "Stages per device of the loop placement (1..64; interleaved 1F1B: >= 2)">,
    Option<"dataParallel", "dp", "int", /*default=*/"1",
           "Data-parallel copies K of the pipeline (1..65536; world = D * K ranks, at most 2^20)">,
  ];
}

def Schedule : Pass<"bitpipe-schedule", "mlir::ModuleOp"> {
  let summary = "Build one ordered program per rank from a schedule";
  let description = [{
    Runs the schedule library's generator `schedule` for the module's
    placement and `microbatches` micro-batches, checks the result with the
    library's verifier, and writes one `bitpipe.program @rank<r> rank r` per
    rank of the world holding that rank's compute steps in execution order.
    With `bitpipe.data_parallel = K` the world has K copies of the
    pipeline: rank `copy * D + device` runs device's program, with the same
    micro-batch numbers in every copy (the data of micro-batch m of copy c
    is global micro-batch c * N + m; see the dialect). The steps:

    - `F<m>.s<k>`: `bitpipe.forward` of stage k for micro-batch m, preceded
      by a `bitpipe.load_input` for each training input (`nn.input` argument
      of the stage function: tokens or labels) it reads;
    - `B<m>.s<k>` / `W<m>.s<k>`: `bitpipe.backward` / `bitpipe.weight_grad`
      consuming that forward's `!bitpipe.saved` handle;
    - `AR(...)`: `bitpipe.allreduce_start` in its marker form over every
      rank holding the stages (pipeline replicas and data-parallel copies;
      one op per marker, numbered per rank), waited for at the end, before
      the final `bitpipe.optimizer_step`. `bitpipe-insert-allreduce`
      replaces the markers with gradient buckets.

    The compute ops are in their *unbound* form (no callee, no tensors
    between stages): sends, receives and local copies are inserted later by
    `bitpipe-insert-transfers`, which binds the stage functions. The module
    gets `bitpipe.schedule = {name, microbatches, microbatch_pipelines,
    split_backward[, note]}`; from here on the programs are the record of
    the order (see ScheduleFromIR.h).

    With `loops` (the default) the programs are written with their
    repeated runs as `bitpipe.repeat`, exactly as `bitpipe-reroll` would
    roll the straight programs, and only the ops the loops keep are
    created (docs/repetition.md); short programs stay straight.

    The options, with D (and the chunks per device of a loop placement)
    from the module's placement, are a request of the schedule registry
    (`sched::ScheduleOptions`, Registry.h): it knows every schedule, checks
    the request and fills what is left out (N = 2 D).

    Errors name what to change: a schedule that needs another placement
    (both named), a request the registry refuses (the option and what it
    expects), a micro-batch count the generator refuses (its reason), a
    schedule that fails verification (the verifier's message and the grid
    with the failing step marked).
  }];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
  let options = [
    Option<"schedule", "schedule", "std::string", /*default=*/"",
           "The schedule, by its name in the registry (required; the error "
           "for an unknown name lists them)">,
    Option<"microbatches", "microbatches", "int", /*default=*/"0",
           "Micro-batches per training step N (default: the schedule's, "
           "2 D)">,
    Option<"maxInFlight", "max-in-flight", "int", /*default=*/"0",
           "Micro-batches a rank may hold in flight, 1..D, for 1f1b "
           "(0, the default: not given, D for 1f1b; docs/schedules.md)">,
    Option<"loops", "loops", "bool", /*default=*/"true",
           "Write each program's repeated runs as bitpipe.repeat, as "
           "bitpipe-reroll would (false: one op per step)">,
    Option<"checkResult", "check-result", "bool", /*default=*/"true",
           "Verify the generated schedule and read the programs back "
           "(false: a later bitpipe-verify or the lowering does)">,
  ];
}

def InsertAllReduce : Pass<"bitpipe-insert-allreduce", "mlir::ModuleOp"> {
  let summary = "Eager, bucketed, asynchronous gradient all-reduce (DDP)";
  let description = [{
    Synchronises the gradients of replicated stages as the PyTorch DDP
    paper does, on every rank's program:

    * *Where.* The sync points are the schedule's (sched::gradientSyncPoints
      on the programs read back): BitPipe's and Chimera's all-reduce
      markers, which this pass replaces, or else the last backward (the
      last weight-gradient step when the backward is split) of each stage
      on the rank. Earlier micro-batches only accumulate (DDP's no_sync).
    * *What.* The gradients of the rank's stages are the `nn.param`
      results of the stages' backward functions (`bitpipe.backward`, or
      `bitpipe.backward_input` then `bitpipe.backward_weight`), in the
      order the backward finishes them (the order of the ops producing
      them), sized by their tensor types. Stages that sync at the same
      point are listed from the last stage to the first.
    * *With whom.* A stage's gradients are summed over every rank holding
      it (sched::stageReplicaRanks: the mirror partner of a bidirectional
      placement and the data-parallel copies), in one all-reduce. A
      parameter held by several stages (the tied token embedding) has one
      gradient buffer per rank, final at the later of its stages' sync
      points, and is summed over the holders of all those stages; when
      that is a larger group than its stage's (loop placements: first and
      last device), it gets a bucket of its own.
    * *How.* Buckets of at most `bucket-mb` MiB (`bucket-bytes`, when
      given, wins), from sched::planGradientBuckets. Each bucket is a
      bucketed `bitpipe.allreduce_start` right after its sync point (after
      the transfers of that step, which the next stage waits for), and its
      `bitpipe.allreduce_wait` sits right before `bitpipe.optimizer_step`,
      in start order. The optimizer step gets `microbatches = N * K` (the
      schedule's N micro-batches in each of the K data-parallel copies):
      gradients are sums, and the update is that of one process training
      on all N * K micro-batches.

    * *In how many steps.* With `sync=hierarchical` (the default) a group
      of two or more pipeline ranks in two or more copies sums each bucket
      in two levels at run time: a reduce-scatter among its members of one
      copy, an all-reduce of each member's shard across the copies, an
      all-gather in the copy; a rank then sends across copies only its
      shard (docs/data-parallel.md, "Two levels"). The scheme is the
      module's `bitpipe.gradient_sync`; the buckets are the same either
      way.

    Every member of a group must issue the same buckets in the same order;
    the pass checks it across programs and names both ranks when they
    disagree. Programs must come from bitpipe-schedule (markers, not
    buckets), and the stage functions must have their backward functions
    (bitpipe-generate-backward).
  }];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
  let options = [
    Option<"bucketMb", "bucket-mb", "double", /*default=*/"25.0",
           "Bucket capacity in MiB (DDP's default: 25), in (0, 1048576]; fractions allowed">,
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"0",
           "Bucket capacity in bytes, in [0, 2^40]; overrides bucket-mb when positive">,
    Option<"checkResult", "check-result", "bool", /*default=*/"true",
           "Verify the programs with their buckets (false: a later "
           "bitpipe-verify or the lowering does)">,
    Option<"sync", "sync", "::bitpipe::sched::GradientSync",
           /*default=*/"::bitpipe::sched::GradientSync::Hierarchical",
           "How a group of several pipeline ranks sums across the "
           "data-parallel copies (flat | hierarchical), written as "
           "bitpipe.gradient_sync",
           "::bitpipe::gradientSyncValues()">,
  ];
}

def Simulate : Pass<"bitpipe-simulate", "mlir::ModuleOp"> {
  let summary = "Simulate the per-rank programs; print the grid and a summary";
  let description = [{
    Reads the schedule back from the programs (ScheduleFromIR.h), verifies
    it, runs the schedule library's event simulator and prints to standard
    output, with `grid`, the text grid (`P0: F0.s0 F1.s0 ...`, the library's
    format), with `comms`, the programs with their transfers (bound
    programs: the sends, receives and local copies the IR holds; unbound
    ones: those the library derives), then a summary: makespan, bubble ratio overall and per rank,
    peak in-flight activations per rank (chunks and bytes), point-to-point
    bytes sent per rank, all-reduce time and how much of it overlaps
    compute. `timeline`, `trace` and `torch-csv` write an SVG timeline, a
    Chrome trace and torch.distributed.pipelining's CSV, each atomically.
    The IR is not changed.

    Data parallelism. With `bitpipe.data_parallel = K` the reader checks
    that every copy runs its device's program and simulates one copy (the
    D pipeline ranks): copies only meet in all-reduces, and each
    all-reduce is charged once per rank, whoever else is in its group.
    The summary says how many copies the world has. Bucketed all-reduces
    (after bitpipe-insert-allreduce) read back as AR steps: a run of
    consecutive starts is one step per pipeline replica group, carrying
    the union of their stages.

    Costs. `costs=unit`: forward, backward and weight-gradient times are
    `f-cost`, `b-cost`, `w-cost` for every stage (the papers' slot counts;
    zero-bubble schedules are usually measured with `b-cost=1`).
    `costs=ir`: each stage's forward and backward time is the sum of
    `nn.cost` `fwd_flops` / `bwd_flops` over its function's ops (run
    bitpipe-annotate-cost), divided by `tflops` (times in milliseconds on a
    device of that many TFLOP/s) or, without it, normalised so that the
    cheapest stage's forward takes 1; with a split backward, W takes the
    FLOPs that only make weight gradients (the linears' weight products,
    biases', the embedding tables': the cost analysis's split,
    sched::ComputeWork) and B the rest. With `cluster=FILE` (costs=ir; not
    with tflops) times are seconds on that cluster (docs/clusters.md): each
    stage's work at its rates (by kernel shape where the file has
    kernel_rates), transfers and all-reduces on its links for the world the
    IR says (`bitpipe.data_parallel`), as bitpipe-plan prices a plan; the
    latency options are then unused. Bytes always come from the IR: the
    activation a stage hands on is its function's result type, the memory a forward keeps is the sum of
    `nn.cost` `act_bytes`, and the gradient an all-reduce moves is the size
    of the `nn.param` arguments. Communication takes `p2p-latency` per
    transfer and `ar-latency` per all-reduce (default 0: free), so that the
    summary shows how much of the all-reduce hides behind compute. They run
    under `transport`'s rules: MPI's (the default: a send leaves when its
    producer ends) or NCCL's (it leaves once its receive is posted, each
    batch one group on its stream as `bitpipe.transfer_streams` lays them
    out, each group of ranks on its own all-reduce stream;
    docs/nccl-transfers.md).
  }];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
  let options = [
    Option<"grid", "grid", "bool", /*default=*/"false",
           "Print the per-rank text grid before the summary">,
    Option<"comms", "comms", "bool", /*default=*/"false",
           "Print the per-rank programs with their transfers, one line per "
           "rank (F0.s0 SEND_F0.s0->P1 RECV_B0.s1<-P1 COPY_F0.s3 ...): read "
           "from the IR once bound, else as the library derives them">,
    Option<"timeline", "timeline", "std::string", /*default=*/"",
           "Write an SVG timeline to this file">,
    Option<"trace", "trace", "std::string", /*default=*/"",
           "Write a Chrome trace (JSON) to this file">,
    Option<"torchCsv", "torch-csv", "std::string", /*default=*/"",
           "Write torch.distributed.pipelining's compute-only CSV to this file">,
    Option<"costs", "costs", "std::string", /*default=*/"\"unit\"",
           "unit (f-cost, b-cost, w-cost) or ir (nn.cost FLOPs per stage)">,
    Option<"tflops", "tflops", "double", /*default=*/"0.0",
           "costs=ir: device speed in TFLOP/s, in [0, 1e6] (times in ms); 0: relative units">,
    Option<"cluster", "cluster", "std::string", /*default=*/"",
           "costs=ir: a cluster file (docs/clusters.md); times in seconds, "
           "each stage's work at its rates, transfers and all-reduces on "
           "its links">,
    Option<"forwardCost", "f-cost", "double", /*default=*/"1.0",
           "costs=unit: time of one forward, in (0, 1e9]">,
    Option<"backwardCost", "b-cost", "double", /*default=*/"2.0",
           "costs=unit: time of one backward (input-gradient half if split), in (0, 1e9]">,
    Option<"weightGradCost", "w-cost", "double", /*default=*/"1.0",
           "costs=unit: time of one weight-gradient step, in (0, 1e9]">,
    Option<"p2pLatency", "p2p-latency", "double", /*default=*/"0.0",
           "Time of one point-to-point transfer (same unit as the costs), in [0, 1e9]">,
    Option<"allReduceLatency", "ar-latency", "double", /*default=*/"0.0",
           "Time of one gradient all-reduce (same unit as the costs), in [0, 1e9]">,
    Option<"transport", "transport", "::bitpipe::sched::Transport",
           /*default=*/"::bitpipe::sched::Transport::Mpi",
           "The rules the transfers run under (mpi | nccl)",
           "::bitpipe::transportValues()">,
  ];
}

def InsertTransfers : Pass<"bitpipe-insert-transfers", "mlir::ModuleOp"> {
  let summary = "Bind the programs to the stage functions and insert sends, "
                "receives and local copies";
  let description = [{
    Turns every unbound `bitpipe.forward` / `backward` / `weight_grad` of
    bitpipe-schedule's programs into a call of its stage's function
    (`bitpipe.stage = k`; its `bitpipe.backward`, or `bitpipe.backward_input`
    and `bitpipe.backward_weight` when the schedule splits the backward)
    that passes real tensors, following the binding rule of
    `bitpipe.forward`: a forward takes the activations of the previous stage
    and the training inputs and returns its outputs and the saved handle; a
    backward takes the handle and the gradients of the outputs and returns
    the gradients of the activation inputs; the rest is stage state.

    Every hand-off between consecutive stages of a micro-batch becomes
    explicit, where the schedule library's `lowerComms` puts it: a
    `bitpipe.send` right after the producing step and a `bitpipe.recv` right
    before the consuming step when the two run on different ranks
    (activations forward, gradients backward), a `bitpipe.local_copy` after
    the producer when they share one (the bottom of BitPipe's V, a loop
    placement on one device). Each send and receive carries the `batch`
    (one NCCL group) the library gives it for `streams`, which the module
    records as `bitpipe.transfer_streams` (docs/nccl-transfers.md): with
    `channel` (the default) every hand-off is a batch of its own, on a
    communicator and stream of its channel; with `shared` the sends after
    one compute step and the receives of the next share a batch on the
    rank's one stream, which deadlocks some schedules under NCCL's rules.

    Before rewriting, the pass checks that the role-filtered signatures of
    consecutive stages agree (what stage s-1 returns is what stage s takes,
    and its gradient comes back), so a failure leaves the module as it was.
    Afterwards it reads the programs back, transfers included
    (ScheduleFromIR.h), and runs the library's verifier on them (channels
    matched in order, no deadlock by simulation); a failure reports the
    verifier's message with the grid and the failing step marked.
    `check-result=false` leaves that check to whoever verifies at the end
    (bitpipe-pipeline's bitpipe-verify, or the lowering's own check).

    The programs may hold `bitpipe.repeat`s (bitpipe-schedule writes
    them): the pass reads them as the straight programs they run
    (ProgramTrace.h) and writes each bound program anew, with `loops` (the
    default) its repeated runs as repeats, creating only the ops the loops
    keep (docs/repetition.md).
  }];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
  let options = [
    Option<"checkResult", "check-result", "bool", /*default=*/"true",
           "Verify the rewritten programs (false: a later bitpipe-verify or "
           "the lowering does)">,
    Option<"loops", "loops", "bool", /*default=*/"true",
           "Write each program's repeated runs as bitpipe.repeat (false: "
           "one op per step)">,
    Option<"streams", "streams", "::bitpipe::sched::TransferStreams",
           /*default=*/"::bitpipe::sched::TransferStreams::Channel",
           "How the CUDA runtime lays the transfers on NCCL communicators "
           "and streams (channel | shared); the batches follow it",
           "::bitpipe::transferStreamsValues()">,
  ];
}

def Verify : Pass<"bitpipe-verify", "mlir::ModuleOp"> {
  let summary = "Check that the per-rank programs of a module can run "
                "together";
  let description = [{
    The checks that need all programs at once, after bitpipe-insert-transfers
    (and bitpipe-insert-allreduce); op verifiers see one op and its program.
    Rejects, with an error at the op that names the rank, the step and the
    micro-batch:

    - a receive that no send matches on the peer (same kind, stage,
      micro-batch, and peers that name each other), a send that no receive
      matches, and a matched pair whose tensor types differ;
    - sends and receives of one channel (sender -> receiver) in different
      orders: the k-th send must carry what the k-th receive expects
      (sched::checkChannels);
    - a deadlock, found by running the programs in the schedule library's
      simulator under `transport`'s rules: NCCL's (the default: rendezvous
      sends, each batch one group, each stream's groups in order, as the
      module's `bitpipe.transfer_streams` lays them out; a program that
      passes runs under MPI's too) or MPI's (buffered sends). The error
      carries the per-rank grid with the steps involved marked, and one
      note per wait of the cycle: which rank waits at which step for
      which batch of which peer;
    - all-reduces of a group (`group`) whose members disagree: the k-th
      all-reduce with that group on each member must carry the same
      `stages` and, where the ops say, the same gradients (`grads`) and
      size (`bytes`); a member with fewer of them;
    - a gradient used while its all-reduce runs: a backward or weight
      gradient of a stage between the `allreduce_start` of that stage's
      gradients and its `allreduce_wait`;
    - and whatever else the library verifier finds in the schedule the
      programs hold (a step on a rank the placement does not assign, a
      micro-batch that misses a stage, ...), with its grid.

    A backward before its own forward, a weight gradient before its
    backward and an optimizer step before a wait cannot even be written:
    the op verifiers reject them (the saved handle and the token are SSA
    values). The IR is not changed.

    With `require-allreduce` (what bitpipe-pipeline asks for, after
    bitpipe-insert-allreduce), also a stage held by several ranks whose
    gradients some holder never all-reduces: its replicas would drift
    apart. Without it, programs that get their
    all-reduces later are accepted.
  }];
  let options = [
    Option<"requireAllReduce", "require-allreduce", "bool",
           /*default=*/"false",
           "Reject a replicated stage that some holder never all-reduces">,
    Option<"transport", "transport", "::bitpipe::sched::Transport",
           /*default=*/"::bitpipe::sched::Transport::Nccl",
           "The rules the deadlock check runs the transfers under (nccl | "
           "mpi)", "::bitpipe::transportValues()">,
  ];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
}

def InstantiateCopy : Pass<"bitpipe-instantiate-copy", "mlir::ModuleOp"> {
  let summary = "Write out one data-parallel copy's programs with world ranks, "
                "for reading";
  let description = [{
    A module holds one program per pipeline rank, which every data-parallel
    copy runs (docs/data-parallel.md): `rank`, send and receive peers and
    all-reduce `group`s are pipeline ranks. This pass writes copy `copy`
    out as the ranks of that copy see it: program `rank` p becomes world
    rank copy * D + p (and its symbol `@rank<w>`), each peer likewise, and
    each group lists its pipeline ranks in every copy, which is the set
    of world ranks the all-reduce spans. It marks the module with
    `bitpipe.data_parallel_copy = copy`.

    The result is for reading (what does world rank 13 run, with whom does
    it reduce?); passes and the lowering refuse it, since the one-program
    form is what they take. Any module with programs is accepted, before
    or after the transfers and all-reduces are inserted.
    ```
    bitpipe-opt m.mlir --bitpipe-instantiate-copy=copy=3
    ```
  }];
  let options = [
    Option<"copy", "copy", "int", /*default=*/"0",
           "The data-parallel copy to write out (0 .. bitpipe.data_parallel - 1)">,
  ];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
}

def Reroll : Pass<"bitpipe-reroll", "mlir::ModuleOp"> {
  let summary = "Keep the repeated runs of the rank programs as bitpipe.repeat";
  let description = [{
    The steady state of a schedule repeats (BitPipe per unit of D
    micro-batches, 1F1B per micro-batch); this pass finds each program's
    repeated runs (the schedule library's segmentRepetitions, over the ops
    with their micro-batch and batch numbers as the progressing lanes and
    the distances to their operands' definitions as part of the shape) and
    keeps each as one `bitpipe.repeat` whose numbers advance per
    repetition. Values used repetitions later (a forward's saved handle)
    are carried by a window of body arguments. The program runs the same
    steps in the same order: every pass and the lowering read it unrolled
    (ProgramTrace.h), and `bitpipe-unroll` gives back the straight program.

    A run becomes a repeat with at least `min-repetitions` repetitions that
    save at least `min-ops-saved` ops, so short programs stay straight.
    Runs any time after bitpipe-insert-allreduce; bitpipe-pipeline ends
    with it (`loops=false` leaves it out). See docs/repetition.md.
  }];
  let options = [
    Option<"minRepetitions", "min-repetitions", "int64_t", /*default=*/"4",
           "Repetitions a run needs to become a repeat (>= 2)">,
    Option<"minOpsSaved", "min-ops-saved", "int64_t", /*default=*/"64",
           "Ops a repeat must save (>= 1)">,
  ];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
}

def Unroll : Pass<"bitpipe-unroll", "mlir::ModuleOp"> {
  let summary = "Write every bitpipe.repeat out as the straight steps it runs";
  let description = [{
    The inverse of bitpipe-reroll: each repeat becomes `count` copies of its
    body, with the numbers of each repetition, and its carried values
    become the values they stand for. For reading, and for tools that want
    one op per step.
  }];
  let dependentDialects = ["bitpipe::bp::BitPipeDialect"];
}

#endif // BITPIPE_TRANSFORMS_PASSES_TD
