//===- NNToRuntime.cpp - nn ops to runtime kernel calls -------------------===//
//
// Lowers functions of nn ops on tensors to functions on memrefs that call the
// C ABI of `runtime/include/bitpipe/runtime.h`. The kernels are the only
// implementation of the ops: this pass decides buffers, sizes and the order
// of calls, never arithmetic.
//
// Three things the nn ops leave implicit and the kernels need explicit:
//  * accumulation: parameter-gradient kernels add into their outputs, while
//    an nn gradient op's results are fresh values, so they are zeroed first;
//  * saved statistics: the layer-norm and attention backward kernels read
//    the forward's mean/rstd and out/lse, which the nn backward ops do not
//    carry (they recompute), so the forward kernel is called again into
//    scratch buffers right before the backward kernel;
//  * memory: results get fresh buffers; temporaries are freed after their
//    last use, returned buffers belong to the caller.
//
// Most ops' patterns are generated from the kernel calls their definitions
// list (include/bitpipe/Dialect/NN/IR/NNKernelCalls.td); the others are
// below. Three choices are made outside the per-op patterns: the buffers'
// element types under bf16 (StoragePrecision.cpp), the f32 sums of
// parameter gradients under bf16 (GradientSums.cpp) and the linear + GELU
// calls (EpilogueFusion.cpp).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/NNToRuntime/NNToRuntime.h"

#include "KernelCallEmitter.h"
#include "Lowering.h"

#include "bitpipe/Conversion/RuntimeAbi/RuntimeAbi.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Func/Transforms/FuncConversions.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <algorithm>

namespace bitpipe {
#define GEN_PASS_DEF_LOWERNNTORUNTIME
#include "bitpipe/Conversion/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;
using abi::Kernel;

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

NNToRuntimeTypeConverter::NNToRuntimeTypeConverter() {
  // Everything that is not a tensor (scalars, !llvm.ptr, memrefs) is legal.
  addConversion([](Type type) { return type; });
  // Identity layout: the kernels take dense row-major buffers. A dynamic
  // shape has no conversion, so that nothing half-lowered survives (the pass
  // reports those with a message before converting).
  addConversion([](RankedTensorType type) -> std::optional<Type> {
    if (!type.hasStaticShape())
      return std::nullopt;
    return MemRefType::get(type.getShape(), type.getElementType());
  });
}

using namespace bitpipe::nn_lowering;

namespace {

//===----------------------------------------------------------------------===//
// Patterns generated from the ops' kernelCalls (NNKernelCalls.td)
//===----------------------------------------------------------------------===//

#include "NNKernelLowerings.cpp.inc"

//===----------------------------------------------------------------------===//
// Hand-written patterns: the lowerings that are not one fixed list of calls
//===----------------------------------------------------------------------===//

// Sizes come from the original (tensor) operands, which have the same static
// shapes as the converted buffers; buffers come from the adaptor.
//
// Attention picks one of six kernels, whose parameter lists differ, by the
// op's grouping and dropout, and its backward runs the forward again for
// the output and log-sum-exps where the nn ops do not carry them. nn.add is
// either a kernel call or, under bf16, no call at all (a parameter-gradient
// sum the GradientSumPlan accumulated in place). Splat constants are no nn
// op.

/// The dropout arguments of a kernel call (key, site, p), none without
/// dropout.
SmallVector<Value, 3> dropoutArgs(KernelCallEmitter &emit, Value key,
                                  nn::DropoutAttr dropout) {
  if (!dropout)
    return {};
  return {emit.pointer(key), emit.i32(dropout.getSite()),
          emit.f32(dropout.getP())};
}

/// The attention kernels of an op with \p kvHeads key/value heads: the
/// multi-head entry points when there is no grouping (the layout and kernels
/// GPT and BERT use, on every target), with \p dropout's arguments those
/// that drop the probabilities, and the grouped-query ones otherwise (the
/// verifier allows no dropout there).
void callAttention(KernelCallEmitter &emit, bool backward,
                   ArrayRef<Value> buffers, int64_t b, int64_t t, int64_t h,
                   int64_t heads, int64_t kvHeads, Value causal,
                   ArrayRef<Value> dropout) {
  SmallVector<Value> args(buffers);
  args.append({emit.i64(b), emit.i64(t), emit.i64(h), emit.i64(heads)});
  if (kvHeads == heads) {
    args.push_back(causal);
    if (!dropout.empty()) {
      args.append(dropout.begin(), dropout.end());
      emit.call(backward ? Kernel::bp_attention_dropout_bwd
                         : Kernel::bp_attention_dropout_fwd,
                args);
      return;
    }
    emit.call(backward ? Kernel::bp_attention_bwd : Kernel::bp_attention_fwd,
              args);
    return;
  }
  args.append({emit.i64(kvHeads), causal});
  emit.call(backward ? Kernel::bp_attention_gqa_bwd
                     : Kernel::bp_attention_gqa_fwd,
            args);
}

struct AttentionLowering : KernelPattern<nn::AttentionOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    int64_t b = dimSize(op.getQkv(), 0), t = dimSize(op.getQkv(), 1);
    int64_t h = lastDim(op.getResult());
    int64_t heads = op.getNumHeads();
    Value out = emit.alloc(op.getResult().getType());
    // The log-sum-exps: a result with `with_stats`, else scratch (the
    // backward computes them again).
    Value lse = op.getLse() ? emit.alloc(op.getLse().getType())
                            : emit.allocScratch({b, heads, t});
    callAttention(
        emit, /*backward=*/false,
        {emit.pointer(adaptor.getQkv()), emit.pointer(out), emit.pointer(lse)},
        b, t, h, heads, op.getKvHeadCount(), emit.i32(op.getCausal() ? 1 : 0),
        dropoutArgs(emit, adaptor.getKey(), op.getDropoutAttr()));
    if (op.getLse())
      rewriter.replaceOp(op, ValueRange{out, lse});
    else
      rewriter.replaceOp(op, out);
    return success();
  }
};

struct AttentionGradLowering : KernelPattern<nn::AttentionGradOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::AttentionGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    int64_t b = dimSize(op.getQkv(), 0), t = dimSize(op.getQkv(), 1);
    int64_t h = lastDim(op.getGrad());
    int64_t heads = op.getNumHeads(), kvHeads = op.getKvHeadCount();
    Value causal = emit.i32(op.getCausal() ? 1 : 0);
    Value dqkv = emit.alloc(op.getType());
    Value qkv = emit.pointer(adaptor.getQkv());
    SmallVector<Value, 3> dropout =
        dropoutArgs(emit, adaptor.getKey(), op.getDropoutAttr());
    // The backward kernel reads the forward's output and log-sum-exps: the
    // saved ones, or else the forward's again, into scratch. Cost: one
    // attention forward (about half the backward's flops) and B*T*H +
    // B*nh*T floats, freed right after. The output has the activations'
    // element type (bf16 under bf16), as dout has; the log-sum-exps are
    // f32 statistics.
    Value out = adaptor.getOut(), lse = adaptor.getLse();
    if (!out) {
      out = emit.allocScratch(
          {b, t, h},
          cast<MemRefType>(adaptor.getGrad().getType()).getElementType());
      lse = emit.allocScratch({b, heads, t});
      // The forward again with the same mask: its output is what the
      // backward's correction term reads.
      callAttention(emit, /*backward=*/false,
                    {qkv, emit.pointer(out), emit.pointer(lse)}, b, t, h, heads,
                    kvHeads, causal, dropout);
    }
    callAttention(emit, /*backward=*/true,
                  {qkv, emit.pointer(out), emit.pointer(adaptor.getGrad()),
                   emit.pointer(lse), emit.pointer(dqkv)},
                  b, t, h, heads, kvHeads, causal, dropout);
    rewriter.replaceOp(op, dqkv);
    return success();
  }
};

/// Residual adds, and the sums of gradients that backward functions build
/// with nn.add where a value fans out.
struct AddLowering : GradientPattern<nn::AddOp> {
  using GradientPattern::GradientPattern;
  LogicalResult
  matchAndRewrite(nn::AddOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // A sum of parameter gradients that the later gradient's kernel has
    // already accumulated into the other's buffer.
    auto sum = plan.sums.find(op);
    if (sum != plan.sums.end()) {
      rewriter.replaceOp(op, adaptor.getOperands()[sum->second]);
      return success();
    }
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value out = emit.alloc(op.getType());
    emit.call(Kernel::bp_add_fwd,
              {emit.pointer(adaptor.getLhs()), emit.pointer(adaptor.getRhs()),
               emit.pointer(out), emit.i64(numElements(op.getResult()))});
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// Splat f32 tensor constants (the loss seed `dense<1.0> : tensor<f32>` of
/// backward functions) become filled buffers.
struct SplatConstantLowering : KernelPattern<arith::ConstantOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(arith::ConstantOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto value = dyn_cast<SplatElementsAttr>(op.getValue());
    if (!value || !isa<RankedTensorType>(op.getType()) ||
        !value.getElementType().isF32())
      return rewriter.notifyMatchFailure(op, "not a splat f32 tensor");
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value buffer = emit.allocFilled(
        op.getType(), value.getSplatValue<APFloat>().convertToFloat());
    rewriter.replaceOp(op, buffer);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Checks before converting
//===----------------------------------------------------------------------===//

/// The kernels exist for static shapes, f32 data and i32 ids only. Reports
/// the first offending value of \p op with the op's name, so that the user
/// sees what cannot be lowered rather than a failed legalization.
LogicalResult checkLowerable(Operation *op) {
  auto check = [&](Type type, StringRef what, unsigned index) -> LogicalResult {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return success();
    if (!tensor.hasStaticShape())
      return op->emitOpError()
             << what << " #" << index << " has dynamic shape " << tensor
             << "; bitpipe-lower-nn-to-runtime needs static shapes (the "
                "kernels take sizes as constants)";
    if (tensor.getNumElements() == 0)
      return op->emitOpError() << what << " #" << index << " is empty ("
                               << tensor << "); the kernels need sizes > 0";
    Type element = tensor.getElementType();
    if (!element.isF32() && !element.isInteger(32))
      return op->emitOpError()
             << what << " #" << index << " has element type " << element
             << "; the runtime has fp32 kernels with i32 token ids and labels";
    return success();
  };
  for (auto [i, type] : llvm::enumerate(op->getOperandTypes()))
    if (failed(check(type, "operand", i)))
      return failure();
  for (auto [i, type] : llvm::enumerate(op->getResultTypes()))
    if (failed(check(type, "result", i)))
      return failure();
  if (auto ignore = op->getAttrOfType<IntegerAttr>("ignore_index")) {
    int64_t v = ignore.getInt();
    if (v < INT32_MIN || v > INT32_MAX)
      return op->emitOpError() << "ignore_index " << v
                               << " does not fit the ABI's int32_t";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Buffer ownership
//===----------------------------------------------------------------------===//

/// The last op of \p block that uses \p buffer, directly or through a value
/// derived from it that is not itself a buffer: its address, a scalar loaded
/// from it, the status of the kernel that read it. A buffer passed to a call
/// that returns buffers stays live only until that call (callees return
/// fresh buffers).
Operation *lastUse(Value buffer, Block &block) {
  Operation *last = buffer.getDefiningOp();
  SmallVector<Value> worklist{buffer};
  llvm::SmallPtrSet<Value, 8> seen{buffer};
  while (!worklist.empty()) {
    Value v = worklist.pop_back_val();
    for (Operation *user : v.getUsers()) {
      Operation *op = block.findAncestorOpInBlock(*user);
      if (!op)
        continue;
      if (last->isBeforeInBlock(op))
        last = op;
      for (Value result : op->getResults())
        if (!isa<MemRefType>(result.getType()) && seen.insert(result).second)
          worklist.push_back(result);
    }
  }
  return last;
}

/// Makes the lowered, straight-line function \p fn own its memory: returned
/// buffers are fresh allocations handed to the caller, every other buffer
/// it allocates or receives from a call is freed after its last use.
void placeDeallocations(func::FuncOp fn) {
  if (fn.isExternal() || !fn.getBody().hasOneBlock())
    return;
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  OpBuilder b(ret);

  // A returned argument (borrowed) or a buffer returned twice would make
  // the caller free what it does not own, or free twice: copy those.
  llvm::SmallPtrSet<Value, 8> returned;
  for (OpOperand &operand : ret->getOpOperands()) {
    Value v = operand.get();
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type)
      continue;
    if (!isa<BlockArgument>(v) && returned.insert(v).second)
      continue;
    Value copy = b.create<memref::AllocOp>(ret.getLoc(), type);
    b.create<memref::CopyOp>(ret.getLoc(), v, copy);
    operand.set(copy);
    returned.insert(copy);
  }

  // Buffers this function owns: its allocations and what its calls return.
  SmallVector<Value> owned;
  for (Operation &op : body.without_terminator())
    if (isa<memref::AllocOp, func::CallOp>(op))
      for (Value result : op.getResults())
        if (isa<MemRefType>(result.getType()) && !returned.contains(result))
          owned.push_back(result);
  for (Value buffer : owned) {
    b.setInsertionPointAfter(lastUse(buffer, body));
    b.create<memref::DeallocOp>(buffer.getLoc(), buffer);
  }
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

struct LowerNNToRuntimePass
    : bitpipe::impl::LowerNNToRuntimeBase<LowerNNToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();

    WalkResult checked = module.walk([](Operation *op) {
      if (isa<nn::NNDialect>(op->getDialect()))
        return failed(checkLowerable(op)) ? WalkResult::interrupt()
                                          : WalkResult::advance();
      if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
        auto splat = dyn_cast<SplatElementsAttr>(constant.getValue());
        if (isa<RankedTensorType>(constant.getType()) &&
            (!splat || !splat.getElementType().isF32() ||
             failed(checkLowerable(op)))) {
          constant.emitOpError()
              << "only splat f32 tensor constants can be lowered to "
                 "runtime buffers";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (checked.wasInterrupted())
      return signalPassFailure();
    GradientSumPlan sums;
    if (failed(assignStoragePrecision(module, precision)) ||
        failed(passGradientAccumulators(module, target, sums)) ||
        failed(planGradientSums(module, precision, sums)))
      return signalPassFailure();

    NNToRuntimeTypeConverter converter;
    ConversionTarget target(*ctx);
    target.addIllegalDialect<nn::NNDialect>();
    target.addLegalDialect<memref::MemRefDialect, LLVM::LLVMDialect>();
    target.addDynamicallyLegalOp<arith::ConstantOp>([](arith::ConstantOp op) {
      return !isa<TensorType>(op.getType());
    });
    target.markUnknownOpDynamicallyLegal(
        [](Operation *) { return true; });
    target.addDynamicallyLegalOp<func::FuncOp>([&](func::FuncOp fn) {
      return converter.isSignatureLegal(fn.getFunctionType()) &&
             converter.isLegal(&fn.getBody());
    });
    target.addDynamicallyLegalOp<func::CallOp, func::ReturnOp>(
        [&](Operation *op) { return converter.isLegal(op); });

    RewritePatternSet patterns(ctx);
    populateNNToRuntimeConversionPatterns(converter, patterns, precision, sums);
    populateEpilogueFusionPatterns(converter, patterns, precision);
    populateFunctionOpInterfaceTypeConversionPattern<func::FuncOp>(patterns,
                                                                   converter);
    populateCallOpTypeConversionPattern(patterns, converter);
    populateReturnOpTypeConversionPattern(patterns, converter);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();

    for (auto fn : module.getOps<func::FuncOp>())
      placeDeallocations(fn);
  }
};

} // namespace

void bitpipe::populateNNToRuntimeConversionPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  // No sums planned: every parameter-gradient sum is a bp_add_fwd, as
  // under fp32.
  static const GradientSumPlan kNoSums;
  nn_lowering::populateNNToRuntimeConversionPatterns(converter, patterns,
                                                     Precision::FP32, kNoSums);
}

void nn_lowering::populateNNToRuntimeConversionPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns,
    Precision precision, const GradientSumPlan &sums) {
  MLIRContext *context = patterns.getContext();
  populateKernelCallPatterns(converter, patterns, precision, sums);
  patterns.add<AttentionLowering, AttentionGradLowering, SplatConstantLowering>(
      converter, context, precision);
  patterns.add<AddLowering>(converter, context, precision, sums);
}
