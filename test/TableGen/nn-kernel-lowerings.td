// RUN: bitpipe-tblgen -gen-nn-kernel-lowerings %tblgen_includes %s | FileCheck %s

// The patterns -gen-nn-kernel-lowerings writes from kernelCalls, on test
// ops in the nn dialect that call real kernels of bitpipe/abi/Kernels.h.
// The patterns come in the order of the ops' names.

include "bitpipe/Dialect/NN/IR/NNDialect.td"
include "bitpipe/Dialect/NN/IR/NNAttrs.td"

def AnyTensor_ : AnyTypeOf<[AnyRankedTensor]>;

// An op without kernelCalls gets no pattern.
// CHECK-NOT: struct PlainOpKernelLowering
def PlainOp : NN_Op<"plain"> {
  let arguments = (ins AnyTensor_:$x);
  let results = (outs AnyTensor_:$y);
}

// A variant kernel with the same parameters, chosen by C++ on the op; an
// i32 from an integer attribute.
// CHECK-LABEL: /// nn.test_ce: bp_cross_entropy_fwd.
// CHECK:         emit.i32(op.getIgnoreAttr().getInt())});
// CHECK-LABEL: /// nn.test_gelu: bp_gelu_fwd or bp_gelu_erf_fwd.
// CHECK:         emit.call((op.getExact()) ? Kernel::bp_gelu_erf_fwd : Kernel::bp_gelu_fwd,
def TestCEOp : NN_Op<"test_ce"> {
  let arguments = (ins AnyTensor_:$logits, AnyTensor_:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore);
  let results = (outs AnyTensor_:$loss);
  let kernelCalls = [NN_KernelCall<"cross_entropy_fwd", (call
      (operand $logits), (operand $labels), (result $loss),
      (scratch (rows $logits)), (scratch (rows $logits)), (rows $logits),
      (last_dim $logits), (i32 $ignore))>];
}
def TestGeluOp : NN_Op<"test_gelu"> {
  let arguments = (ins AnyTensor_:$x, UnitAttr:$exact);
  let results = (outs AnyTensor_:$y);
  let kernelCalls = [NN_KernelCall<"gelu_fwd", (call
      (operand $x), (result $y), (numel $x)), "$_op.getExact()",
      "gelu_erf_fwd">];
}

// Results are allocated in result order before the calls; an Optional
// operand is NULL when absent; sizes come from the tensors' shapes.
// CHECK-LABEL: /// nn.test_linear: bp_linear_fwd.
// CHECK-NEXT:  struct TestLinearOpKernelLowering : KernelPattern<::bitpipe::nn::TestLinearOp> {
// CHECK:         KernelCallEmitter emit = this->emitter(op, rewriter);
// CHECK-NEXT:    Value yBuffer = emit.alloc(op.getY().getType());
// CHECK-NEXT:    emit.call(Kernel::bp_linear_fwd,
// CHECK-NEXT:              {emit.pointer(adaptor.getX()),
// CHECK-NEXT:               emit.pointer(adaptor.getW()),
// CHECK-NEXT:               adaptor.getB() ? emit.pointer(adaptor.getB()) : emit.null(),
// CHECK-NEXT:               emit.pointer(yBuffer),
// CHECK-NEXT:               emit.i64(rows(op.getX())),
// CHECK-NEXT:               emit.i64(dimSize(op.getW(), 1)),
// CHECK-NEXT:               emit.i64(lastDim(op.getY()))});
// CHECK-NEXT:    rewriter.replaceOp(op, ValueRange{yBuffer});
// CHECK-NEXT:    return success();
def TestLinearOp : NN_Op<"test_linear"> {
  let arguments = (ins AnyTensor_:$x, AnyTensor_:$w, Optional<AnyTensor_>:$b);
  let results = (outs AnyTensor_:$y);
  let kernelCalls = [NN_KernelCall<"linear_fwd", (call
      (operand $x), (operand $w), (operand $b), (result $y), (rows $x),
      (dim $w, 1), (last_dim $y))>];
}

// Two calls share named scratch buffers, allocated after the results and
// before the first call; a result may fill a parameter of each call; f32
// and i32 read attributes or C++ on the op.
// CHECK-LABEL: /// nn.test_norm_grad: bp_rms_norm_fwd, bp_rms_norm_bwd.
// CHECK:         Value dxBuffer = emit.alloc(op.getDx().getType());
// CHECK-NEXT:    Value dgammaBuffer = accumulator(emit, op.getDgamma(), rewriter);
// CHECK-NEXT:    Value rstdBuffer = emit.allocScratch({rows(op.getX()), numElements(op.getGamma())});
// CHECK-NEXT:    emit.call(Kernel::bp_rms_norm_fwd,
// CHECK:                    emit.pointer(dxBuffer),
// CHECK-NEXT:               emit.pointer(rstdBuffer),
// CHECK:                    emit.f32(op.getEps().convertToFloat())});
// CHECK-NEXT:    emit.call(Kernel::bp_rms_norm_bwd,
// CHECK:                    emit.pointer(rstdBuffer),
// CHECK-NEXT:               emit.pointer(dxBuffer),
// CHECK-NEXT:               emit.pointer(dgammaBuffer),
// CHECK-NEXT:               emit.i64((op.getN() * 2)),
// CHECK-NEXT:               emit.i64(lastDim(op.getX()))});
// CHECK-NEXT:    rewriter.replaceOp(op, ValueRange{dxBuffer, dgammaBuffer});
def TestNormGradOp : NN_Op<"test_norm_grad"> {
  let arguments = (ins AnyTensor_:$x, AnyTensor_:$gamma, AnyTensor_:$dy,
                       F32Attr:$eps, I64Attr:$n);
  let results = (outs AnyTensor_:$dx, AnyTensor_:$dgamma);
  let kernelCalls = [
    NN_KernelCall<"rms_norm_fwd", (call
        (operand $x), (operand $gamma), (result $dx),
        (scratch (rows $x), (numel $gamma)):$rstd, (rows $x), (last_dim $x),
        (f32 $eps))>,
    NN_KernelCall<"rms_norm_bwd", (call
        (operand $dy), (operand $x), (operand $gamma), $rstd, (result $dx),
        (grad_acc $dgamma), (i64 "$_op.getN() * 2"), (last_dim $x))>];
}

// Statistics: (stat $x, i, sizes...) is element i of the variadic result or
// operand $x when the op has them, else scratch; the forward returns them
// only when present, and the backward's recomputation (emitIf) runs only
// when they are absent.
// CHECK-LABEL: /// nn.test_stats_grad: bp_rms_norm_fwd (when op.getStats().empty()), bp_rms_norm_bwd.
// CHECK:         Value stats0Buffer = adaptor.getStats().empty() ? emit.allocScratch({rows(op.getX())}) : Value(adaptor.getStats()[0]);
// CHECK-NEXT:    if (op.getStats().empty())
// CHECK-NEXT:      emit.call(Kernel::bp_rms_norm_fwd,
// CHECK:                      emit.pointer(stats0Buffer),
// CHECK:         emit.call(Kernel::bp_rms_norm_bwd,
// CHECK:                    emit.pointer(stats0Buffer),
// A loss the op discards fills a LOSS_OUT from scratch; an unnamed scratch
// buffer of a call under emitIf is allocated only when the call is made,
// a named one (used by a later call) always.
// CHECK-LABEL: /// nn.test_stats_loss_grad: bp_cross_entropy_fwd (when op.getStats().empty()), bp_cross_entropy_bwd.
// CHECK:         Value scratch0Buffer = (op.getStats().empty()) ? emit.allocScratch({(1)}) : Value();
// CHECK-NEXT:    Value stats0Buffer = adaptor.getStats().empty()
// CHECK-NEXT:    Value stats1Buffer = adaptor.getStats().empty()
// CHECK-NEXT:    if (op.getStats().empty())
// CHECK-NEXT:      emit.call(Kernel::bp_cross_entropy_fwd,
// CHECK-NEXT:                {emit.pointer(adaptor.getLogits()),
// CHECK-NEXT:                 emit.pointer(adaptor.getLabels()),
// CHECK-NEXT:                 emit.pointer(scratch0Buffer),
// CHECK:         emit.call(Kernel::bp_cross_entropy_bwd,
// CHECK-LABEL: /// nn.test_stats: bp_rms_norm_fwd.
// CHECK:         Value yBuffer = emit.alloc(op.getY().getType());
// CHECK-NEXT:    Value stats0Buffer = op.getStats().empty() ? emit.allocScratch({rows(op.getX())}) : Value(emit.alloc(op.getStats()[0].getType()));
// CHECK:         SmallVector<Value> results;
// CHECK-NEXT:    results.push_back(yBuffer);
// CHECK-NEXT:    if (!op.getStats().empty())
// CHECK-NEXT:      results.append({stats0Buffer});
// CHECK-NEXT:    rewriter.replaceOp(op, results);
def TestStatsOp : NN_Op<"test_stats"> {
  let arguments = (ins AnyTensor_:$x, AnyTensor_:$gamma, F32Attr:$eps);
  let results = (outs AnyTensor_:$y, Variadic<AnyTensor_>:$stats);
  let kernelCalls = [NN_KernelCall<"rms_norm_fwd", (call
      (operand $x), (operand $gamma), (result $y),
      (stat $stats, 0, (rows $x)), (rows $x), (last_dim $x), (f32 $eps))>];
}
def TestStatsGradOp : NN_Op<"test_stats_grad"> {
  let arguments = (ins AnyTensor_:$x, AnyTensor_:$gamma, AnyTensor_:$dy,
                       Variadic<AnyTensor_>:$stats, F32Attr:$eps);
  let results = (outs AnyTensor_:$dx, AnyTensor_:$dgamma);
  let kernelCalls = [
    NN_KernelCall<"rms_norm_fwd", (call
        (operand $x), (operand $gamma), (result $dx),
        (stat $stats, 0, (rows $x)):$rstd, (rows $x), (last_dim $x),
        (f32 $eps)), "", "", "$_op.getStats().empty()">,
    NN_KernelCall<"rms_norm_bwd", (call
        (operand $dy), (operand $x), (operand $gamma), $rstd, (result $dx),
        (grad_acc $dgamma), (rows $x), (last_dim $x))>];
}

def TestStatsLossGradOp : NN_Op<"test_stats_loss_grad"> {
  let arguments = (ins AnyTensor_:$logits, AnyTensor_:$labels,
                       AnyTensor_:$dloss, Variadic<AnyTensor_>:$stats);
  let results = (outs AnyTensor_:$dlogits);
  let kernelCalls = [
    NN_KernelCall<"cross_entropy_fwd", (call
        (operand $logits), (operand $labels), (scratch (i64 "1")),
        (stat $stats, 0, (rows $logits)):$max,
        (stat $stats, 1, (rows $logits)):$sum, (rows $logits),
        (last_dim $logits), (i32 "-100")), "", "", "$_op.getStats().empty()">,
    NN_KernelCall<"cross_entropy_bwd", (call
        (operand $logits), (operand $labels), (operand $dloss), $max, $sum,
        (result $dlogits), (rows $logits), (last_dim $logits),
        (i32 "-100"))>];
}

// A grad_acc result makes a GradientPattern; an Optional one is only
// accumulated, passed and returned when present.
// CHECK-LABEL: /// nn.test_weight_grad: bp_linear_bwd_weight.
// CHECK-NEXT:  struct TestWeightGradOpKernelLowering : GradientPattern<::bitpipe::nn::TestWeightGradOp> {
// CHECK-NEXT:    using GradientPattern::GradientPattern;
// CHECK:         Value dwBuffer = accumulator(emit, op.getDw(), rewriter);
// CHECK-NEXT:    Value dbBuffer;
// CHECK-NEXT:    if (Value result = op.getDb())
// CHECK-NEXT:      dbBuffer = accumulator(emit, result, rewriter);
// CHECK:                    dbBuffer ? emit.pointer(dbBuffer) : emit.null(),
// CHECK:         SmallVector<Value> results;
// CHECK-NEXT:    results.push_back(dwBuffer);
// CHECK-NEXT:    if (dbBuffer)
// CHECK-NEXT:      results.push_back(dbBuffer);
// CHECK-NEXT:    rewriter.replaceOp(op, results);
def TestWeightGradOp : NN_Op<"test_weight_grad"> {
  let arguments = (ins AnyTensor_:$dy, AnyTensor_:$x);
  let results = (outs AnyTensor_:$dw, Optional<AnyTensor_>:$db);
  let kernelCalls = [NN_KernelCall<"linear_bwd_weight", (call
      (operand $dy), (operand $x), (grad_acc $dw), (grad_acc $db), (rows $x),
      (last_dim $x), (last_dim $dy))>];
}

// The function that adds them all, with the plan for the gradient ones.
// CHECK-LABEL: static void populateKernelCallPatterns(
// CHECK:         patterns.add<TestCEOpKernelLowering>(converter, context, precision);
// CHECK-NEXT:    patterns.add<TestGeluOpKernelLowering>(converter, context, precision);
// CHECK-NEXT:    patterns.add<TestLinearOpKernelLowering>(converter, context, precision);
// CHECK-NEXT:    patterns.add<TestNormGradOpKernelLowering>(converter, context, precision, sums);
// CHECK-NEXT:    patterns.add<TestStatsGradOpKernelLowering>(converter, context, precision, sums);
// CHECK-NEXT:    patterns.add<TestStatsLossGradOpKernelLowering>(converter, context, precision);
// CHECK-NEXT:    patterns.add<TestStatsOpKernelLowering>(converter, context, precision);
// CHECK-NEXT:    patterns.add<TestWeightGradOpKernelLowering>(converter, context, precision, sums);
// CHECK-NEXT:  }
