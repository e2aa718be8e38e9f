//===- StoragePrecision.cpp - The buffers' element types ------------------===//
//
// Under bf16 the lowering retypes the tensors first, on the tensor level,
// rather than teach the type converter about values: a type converter maps
// types, and a weight [H, H] (bf16) and its gradient [H, H] (f32) have the
// same tensor type. Which values are which is StorageType.h's rule, the one
// the manifest's dtypes follow too. docs/architecture.md, "Targets and
// precision".
//
//===----------------------------------------------------------------------===//

#include "Lowering.h"

#include "bitpipe/Conversion/Target/StorageType.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

using namespace mlir;
using namespace bitpipe;

namespace {

/// What the rule cannot lower: constants other than the scalar loss seed
/// (a bf16 buffer bp_fill cannot write), and an nn.add whose operands
/// would have different element types (the kernel takes one).
LogicalResult checkRetypable(ModuleOp module, Precision precision) {
  WalkResult result = module.walk([&](Operation *op) {
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto tensor = dyn_cast<RankedTensorType>(constant.getType());
      if (tensor && storageType(constant, precision) != tensor) {
        constant.emitOpError()
            << "is a " << tensor << " constant, which precision="
            << stringifyPrecision(precision)
            << " would store as bf16; only scalar f32 constants (the loss "
               "seed) can be lowered, as bp_fill writes f32";
        return WalkResult::interrupt();
      }
    }
    if (auto add = dyn_cast<nn::AddOp>(op)) {
      Type lhs = getElementTypeOrSelf(storageType(add.getLhs(), precision));
      Type rhs = getElementTypeOrSelf(storageType(add.getRhs(), precision));
      if (lhs != rhs) {
        add.emitOpError() << "adds a " << lhs << " and a " << rhs
                          << " value under precision="
                          << stringifyPrecision(precision)
                          << "; expected two parameter gradients (f32) or "
                             "two activations or their gradients (bf16)";
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

} // namespace

LogicalResult nn_lowering::assignStoragePrecision(ModuleOp module,
                                                  Precision precision) {
  if (precision == Precision::FP32)
    return success();
  if (failed(checkRetypable(module, precision)))
    return failure();

  // Decide everything first: the rule reads the IR (element types, the
  // callees' returned values), which retyping changes.
  SmallVector<std::pair<Value, Type>> retype;
  auto plan = [&](Value value) {
    Type stored = storageType(value, precision);
    if (stored != value.getType())
      retype.push_back({value, stored});
  };
  SmallVector<func::FuncOp> functions;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn.isExternal())
      continue;
    functions.push_back(fn);
    fn.walk([&](Block *block) {
      for (BlockArgument arg : block->getArguments())
        plan(arg);
    });
    fn.walk([&](Operation *op) {
      for (Value result : op->getResults())
        plan(result);
    });
  }
  for (auto [value, type] : retype)
    value.setType(type);

  // Signatures follow their bodies.
  for (func::FuncOp fn : functions) {
    Block &entry = fn.getBody().front();
    Operation *terminator = fn.getBody().back().getTerminator();
    fn.setType(FunctionType::get(module.getContext(),
                                 entry.getArgumentTypes(),
                                 terminator->getOperandTypes()));
  }
  // A call's operands must fit the callee as retyped.
  WalkResult calls = module.walk([&](func::CallOp call) {
    auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!callee || TypeRange(call.getOperandTypes()) ==
                       TypeRange(callee.getArgumentTypes()))
      return WalkResult::advance();
    call.emitOpError() << "passes " << call.getOperandTypes() << " to "
                       << call.getCalleeAttr() << ", which takes "
                       << callee.getArgumentTypes() << " under precision="
                       << stringifyPrecision(precision)
                       << "; expected its arguments to be activations, "
                          "weights or token ids";
    return WalkResult::interrupt();
  });
  return failure(calls.wasInterrupted());
}
