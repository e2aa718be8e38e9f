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
