//===- Manifest.h - The manifest of program.h, as data ----------*- C++ -*-===//
//
// What bitpipe-lower-program-to-runtime learns about the module while it
// lowers the programs, and the JSON text program.h specifies for it. Kept
// apart from the lowering of the ops so that each file says one thing: the
// pass fills a `Manifest`, this file checks the stage functions' roles and
// spells the result.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_MANIFEST_H
#define BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_MANIFEST_H

#include "bitpipe/Conversion/Target/Target.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include "bitpipe/program.h"

#include <optional>
#include <string>
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

/// One argument or result of a function: program.h's ROLE.
struct Role {
  bp_role_kind kind = BP_ROLE_ACTIVATION;
  /// The parameter ("param") or training input ("input").
  std::string name;
  /// The index of the other roles; -1 for those without one.
  int64_t index = -1;
  /// The tensor as the stage function on tensors has it (f32 or i32).
  mlir::RankedTensorType type;
  /// Its buffer's element type once lowered in the manifest's precision
  /// (bf16 for most f32 tensors under bf16; StorageType.h).
  bp_dtype dtype = BP_DTYPE_F32;
};

/// One entry of "functions".
struct Function {
  mlir::func::FuncOp fn;
  FunctionKind kind;
  int64_t stage = -1;
  llvm::SmallVector<Role> args, results;
};

/// One entry of "params".
struct Param {
  std::string name;
  llvm::SmallVector<int64_t> shape;
  bp_init_kind init = BP_INIT_NORMAL;
  double std = 0; ///< For BP_INIT_NORMAL.
  bool decay = false;
};

/// One entry of a rank's "buckets".
struct Bucket {
  int64_t group = -1; ///< Index into "groups".
  llvm::SmallVector<std::string> grads;
};

/// One entry of "ranks": a pipeline rank, whose program every data-parallel
/// copy runs (docs/data-parallel.md).
struct Rank {
  int64_t numValues = 0;
  /// Over the rank's program order: the most forward handles alive at once
  /// and the most bytes of their saved results.
  int64_t peakHandles = 0, peakSavedBytes = 0;
  llvm::SmallVector<std::string> params;
  llvm::SmallVector<Bucket> buckets;
};

struct Manifest {
  // "target"
  TargetKind target = TargetKind::CPU;
  Precision precision = Precision::FP32;
  // "model"
  std::string modelName, family;
  int64_t vocab = 0, seqLen = 0, microbatchSize = 0;
  int64_t heads = 0, maxPositions = 0;
  // The first norm's epsilon and the first rotary op's base, if any.
  std::optional<double> normEpsilon, ropeTheta;
  /// The form of the model's nn.gelu ops when they all have one; none when
  /// it has no GELU or mixes forms (no Hugging Face activation says that).
  std::optional<bp_gelu_form> gelu;
  bp_norm_position normPosition = BP_NORM_POSITION_PRE;
  // "schedule"
  std::string scheduleName;
  int64_t microbatches = 0, devices = 0, dataParallel = 1, worldSize = 0;
  /// How the CUDA target lays the transfers on streams, and every directed
  /// channel of pipeline ranks a send crosses, sorted.
  bp_transfer_streams transferStreams = BP_TRANSFER_STREAMS_CHANNEL;
  std::vector<std::pair<int64_t, int64_t>> channels;

  std::vector<Param> params;
  std::vector<Function> functions;
  /// Every all-reduce group, by pipeline ranks (each in every copy).
  std::vector<llvm::SmallVector<int64_t>> groups;
  std::vector<Rank> ranks;
};

/// Fills `function.args` and `.results` from the role attributes of its
/// function, with the dtypes its buffers have under \p precision. Fails,
/// with an error at the function, on a value without a role its kind
/// allows, or of a type the runtime has no buffer for (anything but a
/// statically shaped tensor of f32 or i32).
mlir::LogicalResult describeRoles(Function &function, Precision precision);

/// Every parameter the functions take as a "param" argument, once, in the
/// order of first appearance, with its shape and `nn.init`. Fails, with an
/// error at the function, on a parameter without an initialiser or with
/// two shapes.
mlir::FailureOr<std::vector<Param>>
collectParams(llvm::ArrayRef<Function> functions);

/// "model" from the `#nn.model` of the model function. Fails, with an
/// error at it, when it has none.
mlir::LogicalResult readModel(mlir::func::FuncOp model, Manifest &manifest);

/// The JSON text, compact, keys in program.h's order, every word from
/// bitpipe/abi/ManifestKeys.def and the version BP_MANIFEST_VERSION.
std::string writeManifest(const Manifest &manifest);

} // namespace bitpipe::manifest

#endif // BITPIPE_LIB_CONVERSION_PROGRAMTORUNTIME_MANIFEST_H
