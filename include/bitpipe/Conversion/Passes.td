//===- Passes.td - bitpipe conversion passes ----------------*- tablegen -*-===//
//
// Lowerings towards executables. Each runs alone in bitpipe-opt and has its
// lit tests under test/Conversion/<Name>/.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_CONVERSION_PASSES_TD
#define BITPIPE_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def LowerNNToRuntime : Pass<"bitpipe-lower-nn-to-runtime", "mlir::ModuleOp"> {
  let summary = "Lower functions of nn ops on tensors to calls of the runtime "
                "kernel ABI on memrefs";
  let description = [{
    A dialect conversion of every `func.func` of the module (stage functions,
    their backward functions, the model function that calls them):

    * tensors become memrefs of the same static shape (identity layout);
      function signatures, calls and returns follow;
    * every nn op (forward and backward) becomes a `memref.alloc` per result
      and a call of its kernel in `bitpipe/runtime.h`, declared once per
      module as `func.func private @bp_...(!llvm.ptr, ..., i64, ...) -> i32`.
      Buffers are passed as `!llvm.ptr` (their aligned address), sizes as
      i64 constants. Every status is passed to `@bp_check(status, name)`,
      which aborts with the op's name on an error;
    * results of accumulating kernels (the parameter gradients of
      `nn.linear_weight_grad`, `nn.layer_norm_grad`, `nn.embedding_grad`)
      are zeroed with `@bp_fill` first: nn gradients are fresh values;
    * `nn.layer_norm_grad` and `nn.attention_grad` carry no forward
      statistics, so the backward recomputes them by calling the forward
      kernel into scratch buffers first (an extra layer-norm forward: O(NH)
      flops, 2N floats; an extra attention forward: about a third of the
      attention backward's flops, B*T*H + B*nh*T floats);
    * splat `arith.constant` tensors (the loss seed) become filled buffers.

    Ownership: function arguments are borrowed; every returned buffer is a
    fresh allocation owned by the caller (an argument or a value returned
    twice is copied). Every other buffer is freed with `memref.dealloc`
    right after its last use (functions are straight-line).

    Only static shapes, f32 data and i32 token ids / labels have kernels;
    anything else is rejected with an error on the op.
  }];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect"];
}

#endif // BITPIPE_CONVERSION_PASSES_TD
