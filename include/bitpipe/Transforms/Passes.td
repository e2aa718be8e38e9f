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

#endif // BITPIPE_TRANSFORMS_PASSES_TD
