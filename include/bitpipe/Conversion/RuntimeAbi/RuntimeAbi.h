//===- RuntimeAbi.h - The runtime's C ABI for the compiler ------*- C++ -*-===//
//
// The compiler's reading of runtime/include/bitpipe/abi/: the functions
// of program.h and runtime.h that lowered code calls, and the symbols a
// compiled model defines for the runtime, with the MLIR types of their
// parameters and results. The lowerings name a function or symbol by its
// enum and get its name and type from here, never by a string or a
// hand-written type, so that what they emit is what the runtime is built
// against (runtime/lib/core/AbiCheck.cpp holds the headers to the same .def
// files).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_CONVERSION_RUNTIMEABI_RUNTIMEABI_H
#define BITPIPE_CONVERSION_RUNTIMEABI_RUNTIMEABI_H

#include "bitpipe/Conversion/Target/Target.h"
#include "bitpipe/abi/Kernels.h"

#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace mlir {
class OpBuilder;
class ValueRange;
} // namespace mlir

namespace bitpipe::abi {

/// A kind of ABI value (ArgKinds.def). Unscoped inside its own namespace so
/// that the .def's bare kind names (`I32`, `F32_IN`) spell the values.
namespace kind {
enum Kind : uint8_t {
#define BP_ABI_KIND(kind, ctype, machine) kind,
#include "bitpipe/abi/ArgKinds.def"
};
} // namespace kind
using kind::Kind;

/// What a kernel's parameter holds (KernelRoles.h), which with the call's
/// precision fixes the element type of the buffer it points at. Unscoped
/// inside its own namespace, as Kind.
namespace role {
enum Role : uint8_t {
#define BP_ROLE_ENUM_(role) role,
  BP_KERNEL_ROLES(BP_ROLE_ENUM_)
#undef BP_ROLE_ENUM_
};
} // namespace role
using role::Role;

/// The role's name in KernelRoles.h, for messages.
llvm::StringRef roleName(Role role);

/// The bp_rt_* calls of program.h (RuntimeCalls.def).
enum class RuntimeCall {
#define BP_RT_CALL(symbol, ...) symbol,
#include "bitpipe/abi/RuntimeCalls.def"
};

/// The functions of runtime.h: the kernels of Kernels.h (bp_<kernel>),
/// then those of Support.def.
enum class Kernel {
#define BP_KERNEL_ENUM_(kernel) bp_##kernel,
  BP_KERNELS(BP_KERNEL_ENUM_)
#undef BP_KERNEL_ENUM_
#define BP_SUPPORT_FN(symbol, ...) symbol,
#include "bitpipe/abi/Support.def"
};

/// One function of the ABI: its C symbol and kinds; for a kernel of
/// Kernels.h also its parameters' roles and names.
struct Signature {
  llvm::StringLiteral name;
  Kind result;
  llvm::ArrayRef<Kind> params;
  llvm::ArrayRef<Role> roles = {};
  llvm::ArrayRef<const char *> paramNames = {};
};

const Signature &signatureOf(RuntimeCall call);
/// A kernel of Kernels.h in \p precision (bp_<kernel> or bp_<kernel>_bf16,
/// the roles' kinds in that precision); a function of Support.def has one
/// signature in both.
const Signature &signatureOf(Kernel kernel, Precision precision);
/// The float64-accumulator form of \p kernel (bp_<kernel>_g64, fp32
/// tensors: Kernels.h's BP_GRAD_KERNELS), or null where it has none.
const Signature *float64GradientSignatureOf(Kernel kernel);

/// The tables of ModelSymbols.def, named by the table's symbol.
enum class ModelTable {
#define BP_MODEL_TABLE(table, ...) table,
#include "bitpipe/abi/ModelSymbols.def"
};

/// A table of function pointers and its length.
struct TableSymbols {
  llvm::StringLiteral table, count;
  Kind countKind;
  /// The type of the functions it points to (named after the table).
  Signature entry;
};
const TableSymbols &symbolsOf(ModelTable table);

/// The byte blobs of ModelSymbols.def, named by the data's symbol.
enum class ModelBytes {
#define BP_MODEL_BYTES(data, ...) data,
#include "bitpipe/abi/ModelSymbols.def"
};

/// Bytes and their size.
struct BytesSymbols {
  llvm::StringLiteral data, size;
  Kind sizeKind;
};
const BytesSymbols &symbolsOf(ModelBytes bytes);

/// What generated code passes for \p kind (its MACHINE column): i32, i64,
/// f32 or !llvm.ptr; null for VOID.
mlir::Type typeOf(Kind kind, mlir::MLIRContext *ctx);

/// `(params) -> (result)` of \p signature, at the func dialect's level.
mlir::FunctionType functionTypeOf(const Signature &signature,
                                  mlir::MLIRContext *ctx);
/// The same as an LLVM dialect function type.
mlir::LLVM::LLVMFunctionType llvmFunctionTypeOf(const Signature &signature,
                                                mlir::MLIRContext *ctx);

/// The symbol of \p signature's function in \p module, declared there (a
/// private func.func at the module's start) on first use. Created through
/// \p builder, so that a conversion's rewriter sees the new op.
mlir::FlatSymbolRefAttr declare(mlir::OpBuilder &builder, mlir::ModuleOp module,
                                const Signature &signature);

/// Stops the compiler (report_fatal_error) unless \p args have the types
/// of \p signature's parameters: a lowering that would emit a call the
/// runtime does not define is a bug in the compiler, not in its input.
void checkArguments(const Signature &signature, mlir::ValueRange args);

} // namespace bitpipe::abi

#endif // BITPIPE_CONVERSION_RUNTIMEABI_RUNTIMEABI_H
