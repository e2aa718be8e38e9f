//===- GradientAccumulators.cpp - Parameter gradients in place ------------===//
//
// Lowering.h's passGradientAccumulators. A backward stage function returns
// each parameter's gradient (a result carrying nn.param), which the rank
// adds into its accumulator of that parameter. Rather than return a fresh
// buffer per micro-batch, zeroed, filled and then summed by the executor,
// the lowered function takes the accumulator itself and its gradient
// kernels add into it: the result becomes an argument of the target's
// accumulator type (float64 on the CPU, fp32 on CUDA), appended after the
// arguments in result order, and the runtime passes the accumulator in the
// result's slot (docs/runtime-abi.md, "Parameter gradients").
//
// The gradient must be made by gradient kernels alone: the parameter
// gradient of one gradient op, or a sum (nn.add) of such (a weight used
// twice in one stage); each used only there. Every kernel then accumulates
// into the argument, and the sums go.
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "bitpipe/Conversion/NNToRuntime/NNToRuntime.h"
#include "bitpipe/Conversion/Target/StorageType.h"
#include "bitpipe/Dialect/NN/IR/NNAttrNames.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "llvm/ADT/BitVector.h"

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::nn_lowering;

namespace {

/// Collects into \p leaves the gradient-kernel results whose sum is
/// \p value, and into \p sums the nn.add ops that form it; fails, naming
/// the value that is neither, where \p value is not such a sum.
LogicalResult collectGradientTerms(Value value, SmallVectorImpl<Value> &leaves,
                                   SmallVectorImpl<Operation *> &sums,
                                   Value &offending) {
  if (!value.hasOneUse()) {
    offending = value;
    return failure();
  }
  if (isAccumulatedResult(value)) {
    leaves.push_back(value);
    return success();
  }
  auto add = value.getDefiningOp<nn::AddOp>();
  if (!add || !isParameterGradient(value)) {
    offending = value;
    return failure();
  }
  sums.push_back(add);
  return success(
      succeeded(collectGradientTerms(add.getLhs(), leaves, sums, offending)) &&
      succeeded(collectGradientTerms(add.getRhs(), leaves, sums, offending)));
}

/// "nn.linear_weight_grad result #1" or "argument #3".
std::string describe(Value value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (auto result = dyn_cast<OpResult>(value))
    os << result.getOwner()->getName() << " result #"
       << result.getResultNumber();
  else
    os << "argument #" << cast<BlockArgument>(value).getArgNumber();
  return text;
}

LogicalResult passAccumulators(func::FuncOp fn, FloatType accumulatorType,
                               GradientSumPlan &plan) {
  SmallVector<unsigned> gradients;
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i)
    if (fn.getResultAttr(i, nn::attr::kParam))
      gradients.push_back(i);
  if (gradients.empty() || fn.isExternal())
    return success();
  if (!fn.getBody().hasOneBlock())
    return fn.emitError() << "has parameter-gradient results and "
                          << fn.getBody().getBlocks().size()
                          << " blocks; expected a straight-line function";
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(fn, fn->getParentOp()))
    for (const SymbolTable::SymbolUse &use : *uses)
      if (isa<CallOpInterface>(use.getUser()))
        return use.getUser()->emitOpError()
               << "calls " << fn.getSymNameAttr()
               << ", whose parameter gradients (" << nn::attr::kParam
               << " results) accumulate in place: such a function is called "
                  "by the runtime only, which passes the accumulators";

  auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
  SmallVector<Operation *> sums;
  llvm::BitVector removed(fn.getNumResults());
  SmallVector<int64_t> accumulated;
  for (unsigned i : gradients) {
    Value returned = ret.getOperand(i);
    auto type = cast<RankedTensorType>(returned.getType());
    SmallVector<Value> leaves;
    Value offending;
    if (failed(collectGradientTerms(returned, leaves, sums, offending)))
      return fn.emitError()
             << "returns the gradient of parameter "
             << fn.getResultAttr(i, nn::attr::kParam) << " (result #" << i
             << ") through " << describe(offending)
             << ", which cannot accumulate in place; expected the parameter "
                "gradient of a gradient op (nn.linear_weight_grad, "
                "nn.embedding_grad, nn.layer_norm_grad, nn.rms_norm_grad) or "
                "an nn.add of such, each used only there";
    BlockArgument accumulator = fn.getBody().addArgument(
        RankedTensorType::get(type.getShape(), accumulatorType), fn.getLoc());
    for (Value leaf : leaves)
      plan.accumulateInto[leaf] = accumulator;
    removed.set(i);
    accumulated.push_back(i);
  }

  // Results and sums go; the arguments join the signature.
  for (int i = static_cast<int>(ret.getNumOperands()) - 1; i >= 0; --i)
    if (removed.test(i))
      ret->eraseOperand(i);
  for (Operation *sum : llvm::reverse(sums))
    sum->erase();
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0, e = fn.getNumResults(); i < e; ++i)
    if (!removed.test(i))
      resultAttrs.push_back(fn.getResultAttrDict(i));
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    argAttrs.push_back(fn.getArgAttrDict(i));
  argAttrs.resize(fn.getBody().getNumArguments());
  fn.setType(FunctionType::get(fn.getContext(), fn.getBody().getArgumentTypes(),
                               ret.getOperandTypes()));
  fn.setAllArgAttrs(argAttrs);
  fn.setAllResultAttrs(resultAttrs);
  fn->setAttr(kAccumulatedResultsAttrName,
              DenseI64ArrayAttr::get(fn.getContext(), accumulated));
  return success();
}

/// Where an op's parameter gradients accumulate into different element
/// types (one into a float64 argument, another into a fresh f32 buffer),
/// no kernel form takes both: the error names the op.
LogicalResult checkOneAccumulatorType(ModuleOp module,
                                      const GradientSumPlan &plan) {
  WalkResult walk =
      module.walk([&](Operation *op) {
        Type seen;
        for (Value result : op->getResults()) {
          if (!isAccumulatedResult(result))
            continue;
          // Not planned: a fresh, zeroed f32 buffer (GradientPattern).
          auto into = plan.accumulateInto.find(result);
          Type element = into == plan.accumulateInto.end()
                             ? Type(Float32Type::get(op->getContext()))
                             : getElementTypeOrSelf(into->second.getType());
          if (seen && seen != element) {
            op->emitOpError()
                << "accumulates its parameter gradients into " << seen
                << " and " << element
                << "; expected every one of them returned as a parameter "
                   "gradient ("
                << nn::attr::kParam << ") or none";
            return WalkResult::interrupt();
          }
          seen = element;
        }
        return WalkResult::advance();
      });
  return failure(walk.wasInterrupted());
}

} // namespace

LogicalResult nn_lowering::passGradientAccumulators(ModuleOp module,
                                                    TargetKind target,
                                                    GradientSumPlan &plan) {
  Builder b(module.getContext());
  FloatType accumulatorType = gradientAccumulatorBits(target) == 64
                                  ? FloatType(b.getF64Type())
                                  : FloatType(b.getF32Type());
  for (auto fn : llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (failed(passAccumulators(fn, accumulatorType, plan)))
      return failure();
  return checkOneAccumulatorType(module, plan);
}
