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
    * a parameter's gradient that a function returns (a result carrying
      `nn.param`: a backward stage function's) becomes an argument, the
      rank's accumulator of that parameter in the target's accumulator type
      (`memref<...xf64>` on the CPU, f32 on CUDA), appended after the
      arguments in result order and listed in the function's
      `bitpipe.accumulated_results`: the kernels that make the gradient
      (`nn.linear_weight_grad`, `nn.layer_norm_grad`, `nn.rms_norm_grad`,
      `nn.embedding_grad`, and the `nn.add` of two of them, which goes)
      accumulate straight into it, through the kernels' `_g64` forms on the
      CPU (docs/runtime-abi.md, "Parameter gradients"). Other results of
      accumulating kernels are zeroed with `@bp_fill` first: nn gradients
      are fresh values;
    * a forward op `with_stats` (attention, layer norm, RMS norm) writes
      its statistics into its further results, and its backward op reads
      them (bitpipe-generate-backward's default). Without them the backward
      recomputes them by calling the forward kernel into scratch buffers
      first (an extra layer-norm forward: O(NH) flops, 2N floats; an extra
      attention forward: about a third of the attention backward's flops,
      B*T*H + B*nh*T floats);
    * splat `arith.constant` tensors (the loss seed) become filled buffers.

    Ownership: function arguments are borrowed; every returned buffer is a
    fresh allocation owned by the caller (an argument or a value returned
    twice is copied). Every other buffer is freed with `memref.dealloc`
    right after its last use (functions are straight-line).

    * `nn.linear` whose result feeds a tanh-form `nn.gelu` becomes one call of
      `bp_linear_gelu_fwd` (the linear's result is its `pre` buffer), and
      `nn.gelu_grad` of an `nn.linear_input_grad` result used nowhere else
      one call of `bp_linear_bwd_input_gelu`: the GPU's matrix products
      apply the GELU in their epilogue (docs/architecture.md, "Epilogue
      fusion"). On the CPU each thread applies the GELU to the rows its
      product wrote: bit for bit the two kernels in sequence. An exact
      GELU (`form(erf)`) is `bp_gelu_erf_fwd` / `_bwd` of its own.

    `precision=bf16` (the CUDA target's mixed precision): every f32 tensor
    becomes a bf16 buffer except the parameter gradients, rank-0 tensors
    (the loss and its seed) and the kernels' statistics, as
    `bitpipe/Conversion/Target/StorageType.h` decides; signatures follow.
    `@bp_fill` only ever targets f32 buffers, and `@bp_add_fwd` adds bf16
    there, so a sum of two parameter gradients (`nn.add`) is lowered as an
    accumulation: the later gradient's kernel adds into the earlier one's
    buffer (an error on the add where that is not possible).

    Only static shapes, f32 data and i32 token ids / labels have kernels;
    anything else is rejected with an error on the op.
  }];
  let options = [
    Option<"target", "target", "::bitpipe::TargetKind",
           /*default=*/"::bitpipe::TargetKind::CPU",
           "The runtime linked, whose accumulators the parameter gradients "
           "add into (cpu | cuda)", "::bitpipe::targetKindValues()">,
    Option<"precision", "precision", "::bitpipe::Precision",
           /*default=*/"::bitpipe::Precision::FP32",
           "Element type of activations, their gradients and weight copies "
           "(fp32 | bf16)", "::bitpipe::precisionValues()">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::memref::MemRefDialect"];
}

def LowerProgramToRuntime : Pass<"bitpipe-lower-program-to-runtime",
                                 "mlir::ModuleOp"> {
  let summary = "Lower per-rank bitpipe.program ops to functions of calls "
                "of the program ABI, and the manifest";
  let description = [{
    Runs on the tensor-level output of `bitpipe-pipeline` (after
    `bitpipe-insert-allreduce`: bound programs, bucketed all-reduces) and
    implements the compiler's half of `runtime/include/bitpipe/program.h`:

    * every `bitpipe.program` of rank R becomes
      `func.func @bitpipe_rankR(%ctx: !llvm.ptr)`, the ops of the program
      as calls of the `bp_rt_*` functions in program order (declared once
      as private `func.func`s on i32, i64 and `!llvm.ptr`); with `loops`
      (the default) repeated runs of calls become `scf.for` loops whose
      arguments are affine in the counter, checked to unroll to the same
      calls (docs/repetition.md). Rank functions are `optnone`: calls with
      integer arguments leave an optimiser nothing to do. Every value of
      the program (tensor, saved handle, token) gets a dense id. A tensor
      value is released (`bp_rt_release`) right after its last use, or
      right after its definition when nothing uses it (the loss); the last
      transfer of each batch is followed by `bp_rt_end_batch`. A transfer
      carries as its MPI tag its position on its channel (sender ->
      receiver) in the step, modulo 32768, the smallest upper bound MPI
      guarantees: a send and its receive agree because bitpipe-verify has
      checked that both ends order every channel alike, and MPI keeps the
      messages of one tag in order;
    * the manifest of program.h (JSON, version BP_MANIFEST_VERSION, its
      words from bitpipe/abi/ManifestKeys.def) becomes the constant
      globals `@bitpipe_manifest` (bytes, not NUL-terminated) and
      `@bitpipe_manifest_size`. Its `functions` are the stage functions and
      backward functions (or halves) the programs call, ordered by stage,
      then forward, backward, backward_input, backward_weight, then name.
      Parameters take AdamW weight decay when they are matrices (rank 2 or
      more): biases and layer-norm gains and biases are 1-D;
    * the module attribute `bitpipe.entry_points = {functions = [...],
      ranks = [...]}` lists, in manifest order, the functions and the rank
      functions for `bitpipe-emit-entry-points`;
    * the programs, the `nn.model` function and the module attributes that
      describe the programs (`bitpipe.placement`, `bitpipe.schedule`,
      `bitpipe.world_size`, `bitpipe.data_parallel`) are erased. Stage
      functions stay on tensors for `bitpipe-lower-nn-to-runtime`, which
      must be given the same precision.

    Errors name the op and what was expected: an unbound compute op, a
    stage whose bound signature does not fit the ABI (more than two bound
    inputs or one bound output, more than one gradient in or out), a
    transfer without a batch, a tag out of range or repeated, an
    all-reduce that is still a schedule marker, a rank without a program,
    and any argument or result of a called function without a role the
    manifest can describe.
  }];
  let options = [
    Option<"manifestFile", "manifest-file", "std::string", /*default=*/"",
           "Also write the manifest to this file (for inspection and "
           "tests)">,
    Option<"target", "target", "::bitpipe::TargetKind",
           /*default=*/"::bitpipe::TargetKind::CPU",
           "The runtime the program is linked with (cpu | cuda), recorded "
           "in the manifest (target.name)", "::bitpipe::targetKindValues()">,
    Option<"precision", "precision", "::bitpipe::Precision",
           /*default=*/"::bitpipe::Precision::FP32",
           "The precision the stage functions are lowered in (fp32 | bf16; "
           "bf16 needs target=cuda): the manifest's target.precision and the "
           "roles' dtypes", "::bitpipe::precisionValues()">,
    Option<"loops", "loops", "bool", /*default=*/"true",
           "Emit repeated runs of calls (the schedule's steady state) as "
           "scf.for loops, so that a rank function does not grow with the "
           "micro-batch count; false keeps the straight line">,
    Option<"ncclRules", "nccl-rules", "bool", /*default=*/"false",
           "Check the programs under NCCL's rules for target=cpu too "
           "(target=cuda always is): for a CPU executable linked with the "
           "NCCL communicator">,
  ];
  let dependentDialects = ["mlir::arith::ArithDialect",
                           "mlir::func::FuncDialect",
                           "mlir::LLVM::LLVMDialect",
                           "mlir::scf::SCFDialect"];
}

def EmitEntryPoints : Pass<"bitpipe-emit-entry-points", "mlir::ModuleOp"> {
  let summary = "Emit the uniform stage entries and the tables of program.h "
                "on the LLVM dialect";
  let description = [{
    Runs after `bitpipe-lower-to-llvm` on a module that
    `bitpipe-lower-program-to-runtime` lowered, and reads its
    `bitpipe.entry_points` attribute (which it removes). For every listed
    function `@f` (A pointer arguments, and a pointer or a struct of R
    pointers, or nothing, as result) it emits
    `llvm.func @f_entry(%buffers: !llvm.ptr)`: the arguments are loaded
    from `buffers[0 .. A-1]`, the results stored into
    `buffers[A .. A+R-1]`. Then the constant external globals of
    program.h: `@bitpipe_stage_entries` (the entries, in manifest order),
    `@bitpipe_num_stage_entries` (i32), `@bitpipe_rank_programs` (the rank
    functions, by rank) and `@bitpipe_num_ranks` (i32).
  }];
  let dependentDialects = ["mlir::LLVM::LLVMDialect"];
}

#endif // BITPIPE_CONVERSION_PASSES_TD
