//===- Manifest.h - The manifest of program.h, from the module --*- C++ -*-===//
//
// What bitpipe-lower-program-to-runtime learns about the module while it
// lowers the programs, in the manifest's one definition
// (bitpipe/base/ManifestFormat.h: its structs and its writer, which the
// runtime's reader shares). Kept apart from the lowering of the ops so that
// each file says one thing: the pass fills a manifest::Manifest, this file
// checks the stage functions' roles and reads the model's configuration.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_MANIFEST_H
#define BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_MANIFEST_H

#include "bitpipe/Conversion/Target/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/StringRef.h"

#include "bitpipe/base/ManifestFormat.h"

#include <vector>

namespace bitpipe::manifest {

/// The manifest's "kind" of a function, in the order functions are listed
/// for one stage; the values are program.h's bp_function_kind, which indexes
/// the names the runtime reads.
enum class FunctionKind {
  Forward = BP_FUNCTION_FORWARD,
  Backward = BP_FUNCTION_BACKWARD,
  BackwardInput = BP_FUNCTION_BACKWARD_INPUT,
  BackwardWeight = BP_FUNCTION_BACKWARD_WEIGHT,
};
llvm::StringRef stringifyFunctionKind(FunctionKind kind);

/// A function the programs call: the func.func, and what its entry of
/// "functions" says about it (its name is the function's).
struct StageFunction {
  mlir::func::FuncOp fn;
  FunctionKind kind;
  int64_t stage = -1;
  /// Each with the shape of the value on tensors and the dtype of its
  /// buffer once lowered in the manifest's precision (bf16 for most f32
  /// tensors under bf16; StorageType.h).
  std::vector<Role> args, results;
};

/// The entry of "functions" for \p function.
Function describeFunction(const StageFunction &function);

/// Fills `function.args` and `.results` from the role attributes of its
/// function, with the dtypes its buffers have under \p precision, and a
/// parameter gradient's the accumulator type of \p target (which its slot
/// holds: gradientAccumulatorBits). Fails, with an error at the function,
/// on a value without a role its kind allows, or of a type the runtime has
/// no buffer for (anything but a statically shaped tensor of f32 or i32).
mlir::LogicalResult describeRoles(StageFunction &function, TargetKind target,
                                  Precision precision);

/// Every parameter the functions take as a "param" argument, once, in the
/// order of first appearance, with its shape and `nn.init`. Fails, with an
/// error at the function, on a parameter without an initialiser or with
/// two shapes.
mlir::FailureOr<std::vector<Param>>
collectParams(llvm::ArrayRef<StageFunction> functions);

/// "model" from the `#nn.model` of the model function. Fails, with an
/// error at it, when it has none.
mlir::LogicalResult readModel(mlir::func::FuncOp function, Model &model);

} // namespace bitpipe::manifest

#endif // BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_MANIFEST_H
