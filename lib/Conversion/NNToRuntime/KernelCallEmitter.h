//===- KernelCallEmitter.h - Building kernel calls --------------*- C++ -*-===//
//
// What every pattern of bitpipe-lower-nn-to-runtime needs to emit one nn
// op's kernel calls: sizes from tensor shapes, buffers, their addresses, and
// checked calls of the kernels of bitpipe/abi/Kernels.h in the precision the
// pass lowers in. Shared by the patterns generated from the nn ops'
// kernelCalls (NNKernelCalls.td), the hand-written ones (NNToRuntime.cpp)
// and the fused ones (EpilogueFusion.cpp), which derive from KernelPattern
// or, where they make parameter gradients, GradientPattern.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_CONVERSION_NNTORUNTIME_KERNELCALLEMITTER_H
#define BITPIPE_LIB_CONVERSION_NNTORUNTIME_KERNELCALLEMITTER_H

#include "Lowering.h"

#include "bitpipe/Conversion/RuntimeAbi/RuntimeAbi.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Support/DebugStringHelper.h"
#include "llvm/Support/ErrorHandling.h"

#include <algorithm>

namespace bitpipe::nn_lowering {

using namespace mlir;
using abi::Kernel;


inline int64_t numElements(mlir::Value v) {
  return cast<ShapedType>(v.getType()).getNumElements();
}
inline int64_t dimSize(mlir::Value v, int64_t i) {
  return cast<ShapedType>(v.getType()).getDimSize(i);
}
inline int64_t lastDim(mlir::Value v) {
  auto type = cast<ShapedType>(v.getType());
  return type.getDimSize(type.getRank() - 1);
}
/// Rows of a [..., features] tensor seen as [N, features], as the kernels do.
inline int64_t rows(mlir::Value v) { return numElements(v) / lastDim(v); }

//===----------------------------------------------------------------------===//
// Emitting kernel calls
//===----------------------------------------------------------------------===//

/// Builds, at the rewriter's insertion point, the IR of one nn op's kernel
/// calls: buffers, their addresses, size constants, and checked calls. The
/// kernels are those of \p precision (bp_<kernel> or bp_<kernel>_bf16),
/// declared in the module on first use with the types of
/// bitpipe/abi/Kernels.h.
class KernelCallEmitter {
public:
  KernelCallEmitter(Operation *op, ConversionPatternRewriter &rewriter,
                    Precision precision)
      : op(op), rewriter(rewriter), loc(op->getLoc()),
        ptrType(LLVM::LLVMPointerType::get(op->getContext())),
        precision(precision) {}

  /// The aligned address of \p buffer as the `float *` / `int32_t *` of the
  /// ABI. Through an index and i64 because memref has no pointer type.
  Value pointer(Value buffer) {
    Value index =
        rewriter.create<memref::ExtractAlignedPointerAsIndexOp>(loc, buffer);
    Value address = rewriter.create<arith::IndexCastOp>(
        loc, rewriter.getI64Type(), index);
    return rewriter.create<LLVM::IntToPtrOp>(loc, ptrType, address);
  }
  /// NULL: the ABI's "no bias".
  Value null() { return rewriter.create<LLVM::ZeroOp>(loc, ptrType); }
  Value i64(int64_t value) {
    return rewriter.create<arith::ConstantIntOp>(loc, value, 64);
  }
  Value i32(int64_t value) {
    return rewriter.create<arith::ConstantIntOp>(loc, value, 32);
  }
  Value f32(float value) {
    return rewriter.create<arith::ConstantOp>(loc,
                                              rewriter.getF32FloatAttr(value));
  }

  /// A fresh buffer for a value of tensor type \p type.
  Value alloc(Type type) {
    auto tensor = cast<RankedTensorType>(type);
    return rewriter.create<memref::AllocOp>(
        loc, MemRefType::get(tensor.getShape(), tensor.getElementType()));
  }
  /// A fresh buffer of \p shape for scratch: f32 (statistics), unless
  /// \p element says otherwise.
  Value allocScratch(ArrayRef<int64_t> shape, Type element = {}) {
    return rewriter.create<memref::AllocOp>(
        loc, MemRefType::get(shape, element ? element : rewriter.getF32Type()));
  }
  /// A fresh buffer holding \p value everywhere.
  /// bp_fill writes floats: a bf16 buffer here would be a lowering bug
  /// (only f32 parameter gradients and the f32 loss seed are filled), so
  /// it stops the compiler rather than emit a wrong program.
  Value allocFilled(Type type, float value) {
    if (!cast<ShapedType>(type).getElementType().isF32())
      llvm::report_fatal_error(
          llvm::Twine("bitpipe: internal error: ") + op->getName().getStringRef() +
          " would fill a buffer of " +
          llvm::Twine(debugString(cast<ShapedType>(type).getElementType())) +
          " with bp_fill, which writes f32 only");
    Value buffer = alloc(type);
    call(Kernel::bp_fill,
         {pointer(buffer), f32(value), i64(numElements(buffer))});
    return buffer;
  }

  /// Calls \p kernel with \p args and hands its status to bp_check with the
  /// op's name. \p kernel must return a bp_status_t, as every kernel and
  /// bp_fill do.
  ///
  /// A kernel of parameter gradients whose accumulators are f64 buffers
  /// (the CPU's, passGradientAccumulators) is called in its float64 form,
  /// bp_<kernel>_g64.
  void call(Kernel kernel, ArrayRef<Value> args) {
    const abi::Signature &signature = signatureFor(kernel, args);
    if (signature.result != abi::kind::STATUS)
      llvm::report_fatal_error(llvm::Twine("bitpipe: internal error: ") +
                               signature.name + " returns no status to check");
    abi::checkArguments(signature, args);
    checkBuffers(signature, args);
    auto module = op->getParentOfType<ModuleOp>();
    FlatSymbolRefAttr callee = abi::declare(rewriter, module, signature);
    Value status = rewriter
                       .create<func::CallOp>(
                           loc, callee,
                           abi::functionTypeOf(signature, rewriter.getContext())
                               .getResults(),
                           args)
                       .getResult(0);
    const abi::Signature &check = abi::signatureOf(Kernel::bp_check, precision);
    FlatSymbolRefAttr checkCallee = abi::declare(rewriter, module, check);
    SmallVector<Value, 2> checkArgs = {status, opName()};
    abi::checkArguments(check, checkArgs);
    rewriter.create<func::CallOp>(loc, checkCallee, TypeRange{}, checkArgs);
  }

private:
  /// \p kernel's form for \p args: bp_<kernel>_g64 where its accumulators
  /// are f64 buffers, else the precision's.
  const abi::Signature &signatureFor(Kernel kernel, ArrayRef<Value> args) {
    const abi::Signature &plain = abi::signatureOf(kernel, precision);
    bool float64 = false;
    for (auto [i, role] : llvm::enumerate(plain.roles))
      if ((role == abi::role::GRAD_ACC || role == abi::role::GRAD_ACC_OPT) &&
          i < args.size())
        if (Type element = bufferElementType(args[i]))
          float64 |= element.isF64();
    if (!float64)
      return plain;
    const abi::Signature *g64 = abi::float64GradientSignatureOf(kernel);
    if (!g64 || precision != Precision::FP32)
      llvm::report_fatal_error(
          llvm::Twine("bitpipe: internal error: ") +
          op->getName().getStringRef() + " accumulates into f64 buffers, but " +
          plain.name + " has no float64 form in precision " +
          stringifyPrecision(precision));
    return *g64;
  }

  /// The element type a buffer of \p role holds in this precision, where
  /// the call's ABI kind for it is \p kind: the roles' C types
  /// (KernelRoles.h) as MLIR types; a gradient accumulator's is its kind's
  /// (f64 in a _g64 form).
  Type elementTypeOf(abi::Role role, abi::Kind kind) {
    switch (role) {
    case abi::role::GRAD_ACC:
    case abi::role::GRAD_ACC_OPT:
      return kind == abi::kind::F64_OUT ? Type(rewriter.getF64Type())
                                        : Type(rewriter.getF32Type());
    case abi::role::ACT_IN:
    case abi::role::ACT_OUT:
    case abi::role::WEIGHT:
    case abi::role::WEIGHT_OPT:
      return precision == Precision::BF16 ? Type(rewriter.getBF16Type())
                                          : Type(rewriter.getF32Type());
    case abi::role::IDS:
    case abi::role::RNG_KEY:
      return rewriter.getI32Type();
    default:
      return rewriter.getF32Type();
    }
  }

  /// Stops the compiler unless every pointer argument is the address of a
  /// buffer of the element type its role holds in this precision (so a
  /// bf16 activation never reaches an fp32 kernel, nor an f32 statistic a
  /// bf16 slot), or NULL where the role allows it: such a call would be a
  /// lowering bug that no test of the numbers might catch.
  void checkBuffers(const abi::Signature &signature, ArrayRef<Value> args) {
    for (auto [i, role] : llvm::enumerate(signature.roles)) {
      if (role == abi::role::DIM || role == abi::role::SCALAR ||
          role == abi::role::INT)
        continue;
      std::string found;
      if (args[i].getDefiningOp<LLVM::ZeroOp>()) {
        if (role == abi::role::WEIGHT_OPT || role == abi::role::GRAD_ACC_OPT)
          continue;
        found = "NULL";
      } else if (Type element = bufferElementType(args[i])) {
        if (element == elementTypeOf(role, signature.params[i]))
          continue;
        found = "a buffer of " + debugString(element);
      } else {
        found = "an address not made by KernelCallEmitter::pointer";
      }
      llvm::report_fatal_error(
          llvm::Twine("bitpipe: internal error: ") +
          op->getName().getStringRef() + " passes " + found + " to " +
          signature.name + "'s " + signature.paramNames[i] + " (" +
          abi::roleName(role) + ", which holds " +
          debugString(elementTypeOf(role, signature.params[i])) + ")");
    }
  }

  /// The element type of the buffer whose address pointer() made, or null.
  static Type bufferElementType(Value address) {
    auto toPointer = address.getDefiningOp<LLVM::IntToPtrOp>();
    auto toInt = toPointer
                     ? toPointer.getArg().getDefiningOp<arith::IndexCastOp>()
                     : nullptr;
    auto extract =
        toInt ? toInt.getIn()
                    .getDefiningOp<memref::ExtractAlignedPointerAsIndexOp>()
              : nullptr;
    if (!extract)
      return {};
    return cast<MemRefType>(extract.getSource().getType()).getElementType();
  }

  /// The address of a NUL-terminated global holding the op's name (e.g.
  /// "nn.linear"), once per module and op name.
  Value opName() {
    std::string text = op->getName().getStringRef().str();
    std::string symbol = "__bp_name_" + text;
    std::replace(symbol.begin(), symbol.end(), '.', '_');
    auto module = op->getParentOfType<ModuleOp>();
    if (!module.lookupSymbol(symbol)) {
      OpBuilder::InsertionGuard guard(rewriter);
      rewriter.setInsertionPointToStart(module.getBody());
      text.push_back('\0');
      auto type = LLVM::LLVMArrayType::get(rewriter.getI8Type(), text.size());
      rewriter.create<LLVM::GlobalOp>(module.getLoc(), type,
                                      /*isConstant=*/true,
                                      LLVM::Linkage::Internal, symbol,
                                      rewriter.getStringAttr(text));
    }
    return rewriter.create<LLVM::AddressOfOp>(loc, ptrType, symbol);
  }

  Operation *op;
  ConversionPatternRewriter &rewriter;
  Location loc;
  Type ptrType;
  Precision precision;
};

/// The base of the pass's patterns: the precision they lower in, which
/// names the kernels they call (KernelCallEmitter).
template <typename Op> struct KernelPattern : OpConversionPattern<Op> {
  KernelPattern(const TypeConverter &converter, MLIRContext *context,
                Precision precision, PatternBenefit benefit = 1)
      : OpConversionPattern<Op>(converter, context, benefit),
        precision(precision) {}

  KernelCallEmitter emitter(Operation *op,
                            ConversionPatternRewriter &rewriter) const {
    return KernelCallEmitter(op, rewriter, precision);
  }

  Precision precision;
};

/// A pattern of an op whose results are parameter gradients (or their sum):
/// it follows the GradientSumPlan (Lowering.h).
template <typename Op> struct GradientPattern : KernelPattern<Op> {
  GradientPattern(const TypeConverter &converter, MLIRContext *context,
                  Precision precision, const GradientSumPlan &plan)
      : KernelPattern<Op>(converter, context, precision), plan(plan) {}

  /// The buffer a kernel accumulates \p result into: the rank's
  /// accumulator where the function returns the gradient
  /// (passGradientAccumulators), the buffer of the gradient it is summed
  /// with, or else a freshly zeroed one (an nn gradient is a fresh value).
  Value accumulator(KernelCallEmitter &emit, Value result,
                    ConversionPatternRewriter &rewriter) const {
    auto into = plan.accumulateInto.find(result);
    if (into != plan.accumulateInto.end())
      return rewriter.getRemappedValue(into->second);
    return emit.allocFilled(result.getType(), 0.0f);
  }

  const GradientSumPlan &plan;
};

} // namespace bitpipe::nn_lowering

#endif // BITPIPE_LIB_CONVERSION_NNTORUNTIME_KERNELCALLEMITTER_H
