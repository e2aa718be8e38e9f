// Each case is a kernelCalls list that does not fit its kernel or its op:
// the generator stops with the op, the call and the parameter named.
//
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DUNKNOWN_KERNEL %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN-KERNEL
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DARITY %s 2>&1 | FileCheck %s --check-prefix=ARITY
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DROLE %s 2>&1 | FileCheck %s --check-prefix=ROLE
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DOPTIONAL_OPERAND %s 2>&1 | FileCheck %s --check-prefix=OPTIONAL-OPERAND
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DMISSING_RESULT %s 2>&1 | FileCheck %s --check-prefix=MISSING-RESULT
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DUNKNOWN_NAME %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN-NAME
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DSCRATCH_REF %s 2>&1 | FileCheck %s --check-prefix=SCRATCH-REF
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DUNKNOWN_FORM %s 2>&1 | FileCheck %s --check-prefix=UNKNOWN-FORM
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DATTR_KIND %s 2>&1 | FileCheck %s --check-prefix=ATTR-KIND
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DVARIANT %s 2>&1 | FileCheck %s --check-prefix=VARIANT
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DRESULT_TWICE %s 2>&1 | FileCheck %s --check-prefix=RESULT-TWICE
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DUNWRITTEN_SCRATCH %s 2>&1 | FileCheck %s --check-prefix=UNWRITTEN-SCRATCH
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DSTAT_NOT_VARIADIC %s 2>&1 | FileCheck %s --check-prefix=STAT-NOT-VARIADIC
// RUN: not bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes -DSTAT_MISSING %s 2>&1 | FileCheck %s --check-prefix=STAT-MISSING

include "bitpipe/Dialect/NN/IR/NNDialect.td"

def T : AnyTypeOf<[AnyRankedTensor]>;

#ifdef UNKNOWN_KERNEL
// UNKNOWN-KERNEL: error: nn.bad: kernelCalls[0] (bp_gelu_forward): no kernel 'gelu_forward' in runtime/include/bitpipe/abi/Kernels.h's BP_KERNELS
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"gelu_forward", (call
      (operand $x), (result $y), (numel $x))>];
}
#endif

#ifdef ARITY
// ARITY: error: nn.bad: kernelCalls[0] (bp_gelu_fwd): 2 arguments for the kernel's 3 parameters (ACT_IN x, ACT_OUT y, DIM n)
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $x), (result $y))>];
}
#endif

#ifdef ROLE
// ROLE: error: nn.bad: kernelCalls[0] (bp_gelu_fwd), argument 1 (y, ACT_OUT): an operand cannot fill a parameter of role ACT_OUT; it fills ACT_IN, WEIGHT, WEIGHT_OPT, IDS, RNG_KEY, LOSS_IN, STAT_IN
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x, T:$z);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $x), (operand $z), (numel $x))>];
}
#endif

#ifdef OPTIONAL_OPERAND
// OPTIONAL-OPERAND: error: nn.bad: kernelCalls[0] (bp_gelu_fwd), argument 0 (x, ACT_IN): an operand (Optional) cannot fill a parameter of role ACT_IN; it fills WEIGHT_OPT (NULL when absent)
def BadOp : NN_Op<"bad"> {
  let arguments = (ins Optional<T>:$x);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $x), (result $y), (numel $y))>];
}
#endif

#ifdef MISSING_RESULT
// MISSING-RESULT: error: nn.bad: result 'extra' is in no kernel call; each result must be the (result ...) or (grad_acc ...) argument of one
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x);
  let results = (outs T:$y, T:$extra);
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $x), (result $y), (numel $x))>];
}
#endif

#ifdef UNKNOWN_NAME
// UNKNOWN-NAME: error: nn.bad: kernelCalls[0] (bp_gelu_fwd), argument 2 (n, DIM): 'w' is neither an operand nor a result
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $x), (result $y), (numel $w))>];
}
#endif

#ifdef SCRATCH_REF
// SCRATCH-REF: error: nn.bad: kernelCalls[0] (bp_rms_norm_bwd), argument 3 (rstd, STAT_IN): `$rstd` names no scratch buffer made by an earlier argument
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$dy, T:$x, T:$gamma);
  let results = (outs T:$dx, T:$dgamma);
  let kernelCalls = [NN_KernelCall<"rms_norm_bwd", (call
      (operand $dy), (operand $x), (operand $gamma), $rstd, (result $dx),
      (grad_acc $dgamma), (rows $x), (last_dim $x))>];
}
#endif

#ifdef UNKNOWN_FORM
// UNKNOWN-FORM: error: nn.bad: kernelCalls[0] (bp_gelu_fwd), argument 2 (n, DIM): unknown form (size ...); expected operand, result, grad_acc, scratch, stat, rows, last_dim, dim, numel, i64, f32 or i32
def size;
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $x), (result $y), (size $x))>];
}
#endif

#ifdef ATTR_KIND
// ATTR-KIND: error: nn.bad: kernelCalls[0] (bp_rms_norm_fwd), argument 6 (eps, SCALAR): attribute 'n' is stored as ::mlir::IntegerAttr; (f32 $attr) reads a ::mlir::FloatAttr (pass anything else as code)
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x, T:$gamma, I64Attr:$n);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"rms_norm_fwd", (call
      (operand $x), (operand $gamma), (result $y), (scratch (rows $x)),
      (rows $x), (last_dim $x), (f32 $n))>];
}
#endif

#ifdef VARIANT
// VARIANT: error: nn.bad: kernelCalls[0] (bp_gelu_fwd): the variant bp_gelu_bwd does not take bp_gelu_fwd's parameters
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x, UnitAttr:$exact);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $x), (result $y), (numel $x)), "$_op.getExact()",
      "gelu_bwd">];
}
#endif

#ifdef RESULT_TWICE
// RESULT-TWICE: error: nn.bad: kernelCalls[1] (bp_rms_norm_bwd), argument 5 (dgamma, GRAD_ACC): result 'dx' is a result in an earlier argument
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$dy, T:$x, T:$gamma, F32Attr:$eps);
  let results = (outs T:$dx);
  let kernelCalls = [
    NN_KernelCall<"rms_norm_fwd", (call
        (operand $x), (operand $gamma), (result $dx),
        (scratch (rows $x)):$rstd, (rows $x), (last_dim $x), (f32 $eps))>,
    NN_KernelCall<"rms_norm_bwd", (call
        (operand $dy), (operand $x), (operand $gamma), $rstd, (result $dx),
        (grad_acc $dx), (rows $x), (last_dim $x))>];
}
#endif

#ifdef UNWRITTEN_SCRATCH
// UNWRITTEN-SCRATCH: error: nn.bad: kernelCalls[0] (bp_rms_norm_bwd), argument 3 (rstd, STAT_IN): a new scratch buffer cannot fill a parameter of role STAT_IN; it fills STAT_OUT
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$dy, T:$x, T:$gamma);
  let results = (outs T:$dx, T:$dgamma);
  let kernelCalls = [NN_KernelCall<"rms_norm_bwd", (call
      (operand $dy), (operand $x), (operand $gamma), (scratch (rows $x)),
      (result $dx), (grad_acc $dgamma), (rows $x), (last_dim $x))>];
}
#endif

#ifdef STAT_NOT_VARIADIC
// STAT-NOT-VARIADIC: error: nn.bad: kernelCalls[0] (bp_rms_norm_fwd), argument 3 (rstd, STAT_OUT): 'y' is no variadic result or operand
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x, T:$gamma, F32Attr:$eps);
  let results = (outs T:$y);
  let kernelCalls = [NN_KernelCall<"rms_norm_fwd", (call
      (operand $x), (operand $gamma), (result $y), (stat $y, 0, (rows $x)),
      (rows $x), (last_dim $x), (f32 $eps))>];
}
#endif

#ifdef STAT_MISSING
// STAT-MISSING: error: nn.bad: statistic 0 of 'stats' is in no kernel call
def BadOp : NN_Op<"bad"> {
  let arguments = (ins T:$x, T:$gamma, F32Attr:$eps);
  let results = (outs T:$y, Variadic<T>:$stats);
  let kernelCalls = [NN_KernelCall<"layer_norm_fwd", (call
      (operand $x), (operand $gamma), (operand $gamma), (result $y),
      (scratch (rows $x)), (stat $stats, 1, (rows $x)), (rows $x),
      (last_dim $x), (f32 $eps))>];
}
#endif
