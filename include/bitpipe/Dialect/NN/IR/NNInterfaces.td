//===- NNInterfaces.td - nn op interfaces -------------------*- tablegen -*-===//
//
// Two concerns, two interfaces: how an op is differentiated (its backward
// rule) and what it costs. Passes use only these interfaces, never a table of
// special cases per op.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_NN_NNINTERFACES_TD
#define BITPIPE_DIALECT_NN_NNINTERFACES_TD

include "mlir/IR/OpBase.td"

def NN_BackwardOpInterface : OpInterface<"BackwardOpInterface"> {
  let cppNamespace = "::bitpipe::nn";
  let description = [{
    A forward op that knows its backward. `buildBackward` emits, at the
    builder's insertion point, the backward ops that turn the gradients of the
    op's results into gradients of its operands. Weight gradients are emitted
    as separate ops (carrying the `NN_WeightGradient` trait) so that
    zero-bubble schedules can move them away from the input gradient.
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the backward of this op. `resultGrads` holds one gradient per
        result. On success `operandGrads` holds one value per operand: its
        gradient, or a null value for an operand that has none (token ids,
        labels).
      }],
      "::llvm::LogicalResult", "buildBackward",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::ValueRange":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>,
    InterfaceMethod<[{
        The forward values (operands or results) that `buildBackward` reads.
        They must stay alive from the forward to the backward: this is the
        memory a stage keeps per in-flight micro-batch.
      }],
      "::llvm::SmallVector<::mlir::Value>", "getSavedValues">,
    InterfaceMethod<[{
        True when operand `index` is a trainable weight: its gradient is
        accumulated over micro-batches and all-reduced over replicas.
      }],
      "bool", "isWeightOperand", (ins "unsigned":$index)>,
    InterfaceMethod<[{
        Creates, at the builder's insertion point, this op in the form that
        also returns the statistics its backward reads (attention's
        log-sum-exps), so that the backward does not compute them again;
        returns null when the op has none or returns them already. The new
        op's first result stands for this op's; the statistics are its
        last `getNumStatisticResults()` results.
      }],
      "::mlir::Operation *", "buildWithStatistics",
      (ins "::mlir::OpBuilder &":$builder), [{}], [{ return nullptr; }]>,
    InterfaceMethod<[{
        How many of the op's results, the last ones, are statistics for
        its backward: values that have no gradient.
      }],
      "unsigned", "getNumStatisticResults", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        The bytes of the statistics that the op's `buildWithStatistics` form
        returns, which the cost analysis counts among the saved activations
        while the op does not return them yet (bitpipe-generate-backward
        makes it, by default); 0 for an op with none.
      }],
      "int64_t", "getStatisticBytes", (ins), [{}], [{ return 0; }]>,
    InterfaceMethod<[{
        The values of this op, beyond `getSavedValues`, that its
        `buildWithStatistics` form's backward reads as well (attention's
        output), which the cost analysis counts as saved while the op does
        not return its statistics yet.
      }],
      "::llvm::SmallVector<::mlir::Value>", "getValuesSavedWithStatistics",
      (ins), [{}], [{ return {}; }]>,

    StaticInterfaceMethod<[{
        The names of the ops `buildBackward` may emit (for documentation,
        tests and legality checks).
      }],
      "::llvm::ArrayRef<::llvm::StringLiteral>", "getBackwardOpNames">,
  ];
}

def NN_CostOpInterface : OpInterface<"CostOpInterface"> {
  let cppNamespace = "::bitpipe::nn";
  let description = [{
    Floating-point operations of an op's forward and of its backward, for one
    micro-batch. Matrix products count 2 FLOPs per multiply-add; element-wise
    work counts a small documented constant per element (see each op).
  }];
  let methods = [
    InterfaceMethod<"FLOPs of the forward.", "int64_t", "getForwardFlops">,
    InterfaceMethod<"FLOPs of the whole backward (input and weight gradients).",
      "int64_t", "getBackwardFlops">,
  ];
}

// Marks a backward op whose results are weight gradients only: the "W" work
// of a split backward.
def NN_WeightGradient : NativeOpTrait<"WeightGradient"> {
  let cppNamespace = "::bitpipe::nn::OpTrait";
}

#endif // BITPIPE_DIALECT_NN_NNINTERFACES_TD
