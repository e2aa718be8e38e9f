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
// Three choices are made outside the per-op patterns: the buffers' element
// types under bf16 (StoragePrecision.cpp), the f32 sums of parameter
// gradients under bf16 (GradientSums.cpp) and the linear + GELU calls
// (EpilogueFusion.cpp).
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
// Patterns, one per nn op family
//===----------------------------------------------------------------------===//

// Sizes come from the original (tensor) operands, which have the same static
// shapes as the converted buffers; buffers come from the adaptor.

struct EmbeddingLowering : KernelPattern<nn::EmbeddingOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value out = emit.alloc(op.getType());
    // Without a position table (rotary models) the kernel takes NULL.
    Value wpe = adaptor.getWpe() ? emit.pointer(adaptor.getWpe()) : emit.null();
    emit.call(Kernel::bp_embedding_fwd,
              {emit.pointer(adaptor.getTokens()),
               emit.pointer(adaptor.getWte()), wpe,
               emit.pointer(out), emit.i64(dimSize(op.getTokens(), 0)),
               emit.i64(dimSize(op.getTokens(), 1)),
               emit.i64(lastDim(op.getWte())),
               emit.i64(dimSize(op.getWte(), 0))});
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// A pattern of an op whose results are parameter gradients (or their sum):
/// it follows the GradientSumPlan (Lowering.h).
template <typename Op> struct GradientPattern : KernelPattern<Op> {
  GradientPattern(const TypeConverter &converter, MLIRContext *context,
                  Precision precision, const GradientSumPlan &plan)
      : KernelPattern<Op>(converter, context, precision), plan(plan) {}

  /// The buffer a kernel accumulates \p result into: freshly zeroed (an nn
  /// gradient is a fresh value), or the buffer of the gradient it is summed
  /// with.
  Value accumulator(KernelCallEmitter &emit, Value result,
                    ConversionPatternRewriter &rewriter) const {
    auto into = plan.accumulateInto.find(result);
    if (into != plan.accumulateInto.end())
      return rewriter.getRemappedValue(into->second);
    return emit.allocFilled(result.getType(), 0.0f);
  }

  const GradientSumPlan &plan;
};

struct EmbeddingGradLowering : GradientPattern<nn::EmbeddingGradOp> {
  using GradientPattern::GradientPattern;
  LogicalResult
  matchAndRewrite(nn::EmbeddingGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    // Both tables' gradients accumulate (scatter-add); a missing position
    // table is NULL to the kernel.
    Value dwte = accumulator(emit, op.getWteGrad(), rewriter);
    Value dwpe;
    if (Value wpeGrad = op.getWpeGrad())
      dwpe = accumulator(emit, wpeGrad, rewriter);
    emit.call(Kernel::bp_embedding_bwd,
              {emit.pointer(adaptor.getTokens()),
               emit.pointer(adaptor.getGrad()), emit.pointer(dwte),
               dwpe ? emit.pointer(dwpe) : emit.null(),
               emit.i64(dimSize(op.getTokens(), 0)),
               emit.i64(dimSize(op.getTokens(), 1)),
               emit.i64(lastDim(op.getWteGrad())),
               emit.i64(dimSize(op.getWteGrad(), 0))});
    SmallVector<Value> results{dwte};
    if (dwpe)
      results.push_back(dwpe);
    rewriter.replaceOp(op, results);
    return success();
  }
};

struct LayerNormLowering : KernelPattern<nn::LayerNormOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    int64_t n = rows(op.getInput());
    Value y = emit.alloc(op.getType());
    // The statistics are not an nn result: the backward recomputes them.
    Value mean = emit.allocScratch({n});
    Value rstd = emit.allocScratch({n});
    emit.call(
        Kernel::bp_layer_norm_fwd,
        {emit.pointer(adaptor.getInput()), emit.pointer(adaptor.getGamma()),
         emit.pointer(adaptor.getBeta()), emit.pointer(y), emit.pointer(mean),
         emit.pointer(rstd), emit.i64(n), emit.i64(lastDim(op.getInput())),
         emit.f32(op.getEpsilon().convertToFloat())});
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct LayerNormGradLowering : GradientPattern<nn::LayerNormGradOp> {
  using GradientPattern::GradientPattern;
  LogicalResult
  matchAndRewrite(nn::LayerNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    int64_t n = rows(op.getInput());
    int64_t h = lastDim(op.getInput());
    Value dx = emit.alloc(op.getInputGrad().getType());
    Value dgamma = accumulator(emit, op.getGammaGrad(), rewriter);
    Value dbeta = accumulator(emit, op.getBetaGrad(), rewriter);
    // Recompute mean and rstd with the forward kernel. Its normalised output
    // is not needed: it goes to dx, which the backward kernel overwrites
    // anyway. The op has no beta operand, and beta does not affect the
    // statistics: gamma stands in, an [H] weight of the right element type
    // in either precision. Cost: one layer-norm forward, O(N*H) flops, and
    // 2*N floats of scratch.
    Value mean = emit.allocScratch({n});
    Value rstd = emit.allocScratch({n});
    emit.call(Kernel::bp_layer_norm_fwd,
              {emit.pointer(adaptor.getInput()),
               emit.pointer(adaptor.getGamma()),
               emit.pointer(adaptor.getGamma()),
               emit.pointer(dx), emit.pointer(mean), emit.pointer(rstd),
               emit.i64(n), emit.i64(h),
               emit.f32(op.getEpsilon().convertToFloat())});
    emit.call(Kernel::bp_layer_norm_bwd,
              {emit.pointer(adaptor.getGrad()),
               emit.pointer(adaptor.getInput()),
               emit.pointer(adaptor.getGamma()), emit.pointer(mean),
               emit.pointer(rstd), emit.pointer(dx), emit.pointer(dgamma),
               emit.pointer(dbeta), emit.i64(n), emit.i64(h)});
    rewriter.replaceOp(op, {dx, dgamma, dbeta});
    return success();
  }
};

struct RMSNormLowering : KernelPattern<nn::RMSNormOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::RMSNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    int64_t n = rows(op.getInput());
    Value y = emit.alloc(op.getType());
    // rstd is not an nn result: the backward recomputes it.
    Value rstd = emit.allocScratch({n});
    emit.call(Kernel::bp_rms_norm_fwd,
              {emit.pointer(adaptor.getInput()),
               emit.pointer(adaptor.getGamma()), emit.pointer(y),
               emit.pointer(rstd), emit.i64(n),
               emit.i64(lastDim(op.getInput())),
               emit.f32(op.getEpsilon().convertToFloat())});
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct RMSNormGradLowering : GradientPattern<nn::RMSNormGradOp> {
  using GradientPattern::GradientPattern;
  LogicalResult
  matchAndRewrite(nn::RMSNormGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    int64_t n = rows(op.getInput());
    int64_t h = lastDim(op.getInput());
    Value dx = emit.alloc(op.getInputGrad().getType());
    Value dgamma = accumulator(emit, op.getGammaGrad(), rewriter);
    // Recompute rstd with the forward kernel, as for the layer norm: its
    // output goes to dx, which the backward kernel overwrites. Cost: one
    // rms-norm forward and N floats of scratch.
    Value rstd = emit.allocScratch({n});
    emit.call(Kernel::bp_rms_norm_fwd,
              {emit.pointer(adaptor.getInput()),
               emit.pointer(adaptor.getGamma()), emit.pointer(dx),
               emit.pointer(rstd), emit.i64(n), emit.i64(h),
               emit.f32(op.getEpsilon().convertToFloat())});
    emit.call(Kernel::bp_rms_norm_bwd,
              {emit.pointer(adaptor.getGrad()),
               emit.pointer(adaptor.getInput()),
               emit.pointer(adaptor.getGamma()), emit.pointer(rstd),
               emit.pointer(dx), emit.pointer(dgamma), emit.i64(n),
               emit.i64(h)});
    rewriter.replaceOp(op, {dx, dgamma});
    return success();
  }
};

struct LinearLowering : KernelPattern<nn::LinearOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value y = emit.alloc(op.getType());
    Value x = emit.pointer(adaptor.getInput());
    Value w = emit.pointer(adaptor.getWeight());
    Value bias =
        adaptor.getBias() ? emit.pointer(adaptor.getBias()) : emit.null();
    emit.call(Kernel::bp_linear_fwd,
              {x, w, bias, emit.pointer(y), emit.i64(rows(op.getInput())),
               emit.i64(lastDim(op.getInput())),
               emit.i64(lastDim(op.getResult()))});
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct LinearInputGradLowering : KernelPattern<nn::LinearInputGradOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::LinearInputGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value dx = emit.alloc(op.getType());
    emit.call(Kernel::bp_linear_bwd_input,
              {emit.pointer(adaptor.getGrad()),
               emit.pointer(adaptor.getWeight()), emit.pointer(dx),
               emit.i64(rows(op.getGrad())), emit.i64(lastDim(op.getResult())),
               emit.i64(lastDim(op.getGrad()))});
    rewriter.replaceOp(op, dx);
    return success();
  }
};

struct LinearWeightGradLowering : GradientPattern<nn::LinearWeightGradOp> {
  using GradientPattern::GradientPattern;
  LogicalResult
  matchAndRewrite(nn::LinearWeightGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    // dw and db accumulate.
    Value dw = accumulator(emit, op.getWeightGrad(), rewriter);
    Value db;
    if (Value biasGrad = op.getBiasGrad())
      db = accumulator(emit, biasGrad, rewriter);
    emit.call(Kernel::bp_linear_bwd_weight,
              {emit.pointer(adaptor.getGrad()),
               emit.pointer(adaptor.getInput()), emit.pointer(dw),
               db ? emit.pointer(db) : emit.null(),
               emit.i64(rows(op.getInput())), emit.i64(lastDim(op.getInput())),
               emit.i64(lastDim(op.getGrad()))});
    SmallVector<Value> results{dw};
    if (db)
      results.push_back(db);
    rewriter.replaceOp(op, results);
    return success();
  }
};

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
    Value out = emit.alloc(op.getType());
    // The log-sum-exps are not an nn result: the backward recomputes them.
    Value lse = emit.allocScratch({b, heads, t});
    callAttention(
        emit, /*backward=*/false,
        {emit.pointer(adaptor.getQkv()), emit.pointer(out), emit.pointer(lse)},
        b, t, h, heads, op.getKvHeadCount(), emit.i32(op.getCausal() ? 1 : 0),
        dropoutArgs(emit, adaptor.getKey(), op.getDropoutAttr()));
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
    // The backward kernel reads the forward's output and log-sum-exps: run
    // the forward again into scratch. Cost: one attention forward (about
    // half the backward's flops) and B*T*H + B*nh*T floats, freed right
    // after; the alternative, saving them, would change the nn ops.
    // The output has the activations' element type (bf16 under bf16), as
    // dout has; the log-sum-exps are f32 statistics.
    Value out = emit.allocScratch(
        {b, t, h}, cast<MemRefType>(adaptor.getGrad().getType()).getElementType());
    Value lse = emit.allocScratch({b, heads, t});
    Value qkv = emit.pointer(adaptor.getQkv());
    // The forward again with the same mask: its output is what the
    // backward's correction term reads.
    SmallVector<Value, 3> dropout =
        dropoutArgs(emit, adaptor.getKey(), op.getDropoutAttr());
    callAttention(emit, /*backward=*/false,
                  {qkv, emit.pointer(out), emit.pointer(lse)}, b, t, h, heads,
                  kvHeads, causal, dropout);
    callAttention(emit, /*backward=*/true,
                  {qkv, emit.pointer(out), emit.pointer(adaptor.getGrad()),
                   emit.pointer(lse), emit.pointer(dqkv)},
                  b, t, h, heads, kvHeads, causal, dropout);
    rewriter.replaceOp(op, dqkv);
    return success();
  }
};

/// nn.rotary and nn.rotary_grad: one kernel each over the fused q/k/v
/// tensor, with the heads and base of the op.
template <typename Op, Kernel kernel> struct RotaryPattern : KernelPattern<Op> {
  using KernelPattern<Op>::KernelPattern;
  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value input = op->getOperand(0);
    int64_t heads = op.getNumHeads(), kvHeads = op.getKvHeadCount();
    int64_t d = lastDim(input) / (heads + 2 * kvHeads);
    Value out = emit.alloc(op.getType());
    emit.call(kernel, {emit.pointer(adaptor.getOperands()[0]),
                       emit.pointer(out), emit.i64(dimSize(input, 0)),
                       emit.i64(dimSize(input, 1)), emit.i64(heads * d),
                       emit.i64(heads), emit.i64(kvHeads),
                       emit.f32(op.getBase().convertToFloat())});
    rewriter.replaceOp(op, out);
    return success();
  }
};
using RotaryLowering = RotaryPattern<nn::RotaryOp, Kernel::bp_rotary_fwd>;
using RotaryGradLowering =
    RotaryPattern<nn::RotaryGradOp, Kernel::bp_rotary_bwd>;

struct SwiGLULowering : KernelPattern<nn::SwiGLUOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::SwiGLUOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value y = emit.alloc(op.getType());
    emit.call(Kernel::bp_swiglu_fwd,
              {emit.pointer(adaptor.getGate()), emit.pointer(adaptor.getUp()),
               emit.pointer(y), emit.i64(numElements(op.getResult()))});
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct SwiGLUGradLowering : KernelPattern<nn::SwiGLUGradOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::SwiGLUGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value dgate = emit.alloc(op.getGateGrad().getType());
    Value dup = emit.alloc(op.getUpGrad().getType());
    emit.call(Kernel::bp_swiglu_bwd,
              {emit.pointer(adaptor.getGrad()), emit.pointer(adaptor.getGate()),
               emit.pointer(adaptor.getUp()), emit.pointer(dgate),
               emit.pointer(dup), emit.i64(numElements(op.getGate()))});
    rewriter.replaceOp(op, {dgate, dup});
    return success();
  }
};

struct GeluLowering : KernelPattern<nn::GeluOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::GeluOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value y = emit.alloc(op.getType());
    emit.call(op.getForm() == nn::GeluForm::Erf ? Kernel::bp_gelu_erf_fwd
                                                : Kernel::bp_gelu_fwd,
              {emit.pointer(adaptor.getInput()), emit.pointer(y),
               emit.i64(numElements(op.getInput()))});
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct GeluGradLowering : KernelPattern<nn::GeluGradOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::GeluGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value dx = emit.alloc(op.getType());
    emit.call(op.getForm() == nn::GeluForm::Erf ? Kernel::bp_gelu_erf_bwd
                                                : Kernel::bp_gelu_bwd,
              {emit.pointer(adaptor.getGrad()),
               emit.pointer(adaptor.getInput()), emit.pointer(dx),
               emit.i64(numElements(op.getInput()))});
    rewriter.replaceOp(op, dx);
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

/// Both directions: the backward of nn.dropout is an nn.dropout of the
/// gradient (NNBackward.cpp).
struct DropoutLowering : KernelPattern<nn::DropoutOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::DropoutOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value y = emit.alloc(op.getType());
    SmallVector<Value> args{emit.pointer(adaptor.getInput()), emit.pointer(y)};
    args.append(dropoutArgs(emit, adaptor.getKey(), op.getDropoutAttr()));
    args.push_back(emit.i64(numElements(op.getResult())));
    emit.call(Kernel::bp_dropout, args);
    rewriter.replaceOp(op, y);
    return success();
  }
};

struct CrossEntropyLowering : KernelPattern<nn::CrossEntropyOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::CrossEntropyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    Value loss = emit.alloc(op.getType());
    emit.call(Kernel::bp_cross_entropy_fwd,
              {emit.pointer(adaptor.getLogits()),
               emit.pointer(adaptor.getLabels()), emit.pointer(loss),
               emit.i64(rows(op.getLogits())),
               emit.i64(lastDim(op.getLogits())),
               emit.i32(op.getIgnoreIndexAttr().getInt())});
    rewriter.replaceOp(op, loss);
    return success();
  }
};

struct CrossEntropyGradLowering : KernelPattern<nn::CrossEntropyGradOp> {
  using KernelPattern::KernelPattern;
  LogicalResult
  matchAndRewrite(nn::CrossEntropyGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    KernelCallEmitter emit = this->emitter(op, rewriter);
    // The loss gradient is passed by address (runtime.h): the buffer lives
    // where the tensors do, which on the CUDA target is the device, so the
    // kernel reads it there and no step waits for a host read.
    Value dloss = emit.pointer(adaptor.getLossGrad());
    Value dlogits = emit.alloc(op.getType());
    emit.call(Kernel::bp_cross_entropy_bwd,
              {emit.pointer(adaptor.getLogits()),
               emit.pointer(adaptor.getLabels()), dloss, emit.pointer(dlogits),
               emit.i64(rows(op.getLogits())),
               emit.i64(lastDim(op.getLogits())),
               emit.i32(op.getIgnoreIndexAttr().getInt())});
    rewriter.replaceOp(op, dlogits);
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
    FailureOr<GradientSumPlan> sums = planGradientSums(module, precision);
    if (failed(sums) || failed(assignStoragePrecision(module, precision)))
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
    populateNNToRuntimeConversionPatterns(converter, patterns, precision,
                                          *sums);
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
  patterns.add<EmbeddingLowering, LayerNormLowering, RMSNormLowering,
               LinearLowering, LinearInputGradLowering, AttentionLowering,
               AttentionGradLowering, RotaryLowering, RotaryGradLowering,
               GeluLowering, GeluGradLowering, SwiGLULowering,
               SwiGLUGradLowering, DropoutLowering, CrossEntropyLowering,
               CrossEntropyGradLowering, SplatConstantLowering>(
      converter, context, precision);
  patterns.add<EmbeddingGradLowering, LayerNormGradLowering,
               RMSNormGradLowering, LinearWeightGradLowering, AddLowering>(
      converter, context, precision, sums);
}
