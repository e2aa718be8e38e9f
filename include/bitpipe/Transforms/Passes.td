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
    Attaches `nn.cost = {fwd_flops, bwd_flops, param_bytes, act_bytes}` to
    every nn forward op of every function (see `CostModel.h` for what each
    number counts) and, with `print-summary`, prints a per-layer table and
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

    With `split`, the backward is two functions, as zero-bubble schedules
    need: `@<stage>_bwd_input` (input gradients and the parameter gradients
    that fall out of input-gradient ops, such as layer-norm gains) and
    `@<stage>_bwd_weight` (the ops with the `NN_WeightGradient` trait). The
    input half additionally returns what the weight half needs (result
    attribute `bitpipe.stash = j`), which the weight half takes as
    arguments with the same attribute.

    The forward function records its backward as `bitpipe.backward =
    @<stage>_bwd`, or `bitpipe.backward_input` and `bitpipe.backward_weight`.
  }];
  let dependentDialects = ["bitpipe::nn::NNDialect",
                           "mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect"];
  let options = [
    Option<"split", "split", "bool", /*default=*/"false",
           "Split the backward into input-gradient and weight-gradient functions">,
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

    The module records the result as
    `bitpipe.partition = {chunks, starts, costs, max_cost, balance}`:
    the number of chunks, the first layer of each, each chunk's forward +
    backward FLOPs, the largest of them and max / mean (1.0 is perfect).
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
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

#endif // BITPIPE_TRANSFORMS_PASSES_TD
