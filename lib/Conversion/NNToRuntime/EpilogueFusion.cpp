//===- EpilogueFusion.cpp - Linear and GELU as one call -------------------===//
//
// On the GPU a GELU after a matrix product is free in the product's
// epilogue (cuBLASLt's GELU_AUX and DGELU epilogues) and costs a full read
// and write of the activation as a separate kernel; the MLP of every
// transformer block has one in the forward and one in the backward. So
// where the nn ops have that shape, one call does both:
//
//   %pre = nn.linear %x, %w, %b           bp_linear_gelu_fwd(x, w, b, y, pre)
//   %y   = nn.gelu %pre
//
//   %g   = nn.linear_input_grad %dy, %w   bp_linear_bwd_input_gelu(dy, w,
//   %dx  = nn.gelu_grad %pre, %g                                   pre, dx)
//
// The forward keeps the linear's result (pre): the backward's gelu_grad
// reads it, and other users may. The backward needs %g to have no other
// user (it is never materialised) and %pre to exist before the product.
// Both patterns are rooted at the linear op, which the conversion reaches
// before the GELU, and replace the GELU too. The CPU implementations run
// the two kernels' loops on the same row blocks, so fusing changes no CPU
// result.
// docs/architecture.md, "Epilogue fusion".
//
//===----------------------------------------------------------------------===//

#include "KernelCallEmitter.h"
#include "Lowering.h"

#include "bitpipe/Dialect/NN/IR/NNOps.h"

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::nn_lowering;

namespace {

/// Above the per-op patterns, which would otherwise lower the linear alone.
constexpr unsigned kFusedBenefit = 2;

/// The fused kernels compute the tanh form, as cuBLASLt's GELU epilogues
/// do; an exact (erf) GELU stays a call of its own.
bool fusable(nn::GeluForm form) { return form == nn::GeluForm::Tanh; }

/// The first tanh-form nn.gelu that reads \p value, if any.
nn::GeluOp geluOf(Value value) {
  for (Operation *user : value.getUsers())
    if (auto gelu = dyn_cast<nn::GeluOp>(user))
      if (gelu.getInput() == value && fusable(gelu.getForm()))
        return gelu;
  return {};
}

struct LinearGeluFusion : KernelPattern<nn::LinearOp> {
  LinearGeluFusion(const TypeConverter &converter, MLIRContext *context,
                   Precision precision)
      : KernelPattern(converter, context, precision, kFusedBenefit) {}

  LogicalResult
  matchAndRewrite(nn::LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    nn::GeluOp gelu = geluOf(op.getResult());
    if (!gelu)
      return rewriter.notifyMatchFailure(op, "no nn.gelu reads the result");
    KernelCallEmitter emit = emitter(op, rewriter);
    Value pre = emit.alloc(op.getType());
    Value y = emit.alloc(gelu.getType());
    Value bias =
        adaptor.getBias() ? emit.pointer(adaptor.getBias()) : emit.null();
    emit.call(Kernel::bp_linear_gelu_fwd,
              {emit.pointer(adaptor.getInput()),
               emit.pointer(adaptor.getWeight()), bias, emit.pointer(y),
               emit.pointer(pre), emit.i64(rows(op.getInput())),
               emit.i64(lastDim(op.getInput())),
               emit.i64(lastDim(op.getResult()))});
    // y is defined here, before the GELU and so before all its users.
    rewriter.replaceOp(gelu, y);
    rewriter.replaceOp(op, pre);
    return success();
  }
};

struct LinearInputGradGeluFusion : KernelPattern<nn::LinearInputGradOp> {
  LinearInputGradGeluFusion(const TypeConverter &converter,
                            MLIRContext *context, Precision precision)
      : KernelPattern(converter, context, precision, kFusedBenefit) {}

  LogicalResult
  matchAndRewrite(nn::LinearInputGradOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!op->hasOneUse())
      return rewriter.notifyMatchFailure(op, "the gradient has other users");
    auto geluGrad = dyn_cast<nn::GeluGradOp>(*op->user_begin());
    if (!geluGrad || geluGrad.getGrad() != op.getResult())
      return rewriter.notifyMatchFailure(op, "not the grad of an nn.gelu_grad");
    if (!fusable(geluGrad.getForm()))
      return rewriter.notifyMatchFailure(op, "an exact GELU does not fuse");
    // The call is placed here, so the GELU's input must already exist.
    Value preTensor = geluGrad.getInput();
    Operation *preDef = preTensor.getDefiningOp();
    if (preDef && (preDef->getBlock() != op->getBlock() ||
                   !preDef->isBeforeInBlock(op)))
      return rewriter.notifyMatchFailure(op, "pre is defined after the op");
    Value pre = rewriter.getRemappedValue(preTensor);
    if (!pre)
      return rewriter.notifyMatchFailure(op, "pre has no buffer");
    KernelCallEmitter emit = emitter(op, rewriter);
    Value dx = emit.alloc(geluGrad.getType());
    emit.call(Kernel::bp_linear_bwd_input_gelu,
              {emit.pointer(adaptor.getGrad()),
               emit.pointer(adaptor.getWeight()), emit.pointer(pre),
               emit.pointer(dx), emit.i64(rows(op.getGrad())),
               emit.i64(lastDim(op.getResult())),
               emit.i64(lastDim(op.getGrad()))});
    rewriter.replaceOp(geluGrad, dx);
    // The unfused gradient had one user, now gone.
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void nn_lowering::populateEpilogueFusionPatterns(const TypeConverter &converter,
                                                 RewritePatternSet &patterns,
                                                 Precision precision) {
  patterns.add<LinearGeluFusion, LinearInputGradGeluFusion>(
      converter, patterns.getContext(), precision);
}
