//===- RuntimeAbi.cpp - The runtime's C ABI, as the compiler sees it ------===//

#include "bitpipe/Conversion/RuntimeAbi/RuntimeAbi.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/raw_ostream.h"

#include <iterator>
#include <utility>

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::abi;
// The .def files spell kinds, and Kernels.h roles, by their bare names.
using namespace bitpipe::abi::kind;
using namespace bitpipe::abi::role;

namespace {

// The parameter kinds of every entry, one array each, named after the
// function; the signature tables below point into them.
namespace params {
#define BP_RT_CALL(symbol, result, ...) constexpr Kind symbol[] = {__VA_ARGS__};
#include "bitpipe/abi/RuntimeCalls.def"
#define BP_KERNEL_PARAMS_(kernel)                                              \
  constexpr Kind bp_##kernel[] = {BP_KERNEL_KINDS(F32, kernel)};               \
  constexpr Kind bp_##kernel##_bf16[] = {BP_KERNEL_KINDS(BF16, kernel)};       \
  constexpr Role bp_##kernel##_roles[] = {BP_KERNEL_ROLES_OF(kernel)};         \
  constexpr const char *bp_##kernel##_names[] = {BP_KERNEL_PARAM_NAMES(kernel)};
BP_KERNELS(BP_KERNEL_PARAMS_)
#undef BP_KERNEL_PARAMS_
#define BP_GRAD_KERNEL_PARAMS_(kernel)                                         \
  constexpr Kind bp_##kernel##_g64[] = {BP_KERNEL_KINDS(F32_G64, kernel)};
BP_GRAD_KERNELS(BP_GRAD_KERNEL_PARAMS_)
#undef BP_GRAD_KERNEL_PARAMS_
#define BP_SUPPORT_FN(symbol, result, ...)                                     \
  constexpr Kind symbol[] = {__VA_ARGS__};
#include "bitpipe/abi/Support.def"
#define BP_MODEL_TABLE(table, count, countKind, entryResult, ...)              \
  constexpr Kind table[] = {__VA_ARGS__};
#include "bitpipe/abi/ModelSymbols.def"
} // namespace params

const Signature runtimeCalls[] = {
#define BP_RT_CALL(symbol, result, ...) {#symbol, result, params::symbol},
#include "bitpipe/abi/RuntimeCalls.def"
};

// Each kernel in fp32 and in bf16, in Kernel's order.
const Signature kernels[][2] = {
#define BP_KERNEL_SIGNATURES_(kernel)                                          \
  {{"bp_" #kernel, STATUS, params::bp_##kernel, params::bp_##kernel##_roles,   \
    params::bp_##kernel##_names},                                              \
   {"bp_" #kernel "_bf16", STATUS, params::bp_##kernel##_bf16,                 \
    params::bp_##kernel##_roles, params::bp_##kernel##_names}},
    BP_KERNELS(BP_KERNEL_SIGNATURES_)
#undef BP_KERNEL_SIGNATURES_
};

// The float64-accumulator forms, with the kernel each is a form of.
const std::pair<Kernel, Signature> float64GradientKernels[] = {
#define BP_GRAD_KERNEL_SIGNATURE_(kernel)                                      \
  {Kernel::bp_##kernel,                                                        \
   {"bp_" #kernel "_g64", STATUS, params::bp_##kernel##_g64,                   \
    params::bp_##kernel##_roles, params::bp_##kernel##_names}},
    BP_GRAD_KERNELS(BP_GRAD_KERNEL_SIGNATURE_)
#undef BP_GRAD_KERNEL_SIGNATURE_
};

const Signature supportFunctions[] = {
#define BP_SUPPORT_FN(symbol, result, ...) {#symbol, result, params::symbol},
#include "bitpipe/abi/Support.def"
};

const TableSymbols tables[] = {
#define BP_MODEL_TABLE(table, count, countKind, entryResult, ...)              \
  {#table, #count, countKind, {#table, entryResult, params::table}},
#include "bitpipe/abi/ModelSymbols.def"
};

const BytesSymbols blobs[] = {
#define BP_MODEL_BYTES(data, size, sizeKind) {#data, #size, sizeKind},
#include "bitpipe/abi/ModelSymbols.def"
};

/// The MACHINE column of ArgKinds.def.
Kind machineOf(Kind k) {
  switch (k) {
#define BP_ABI_KIND(kind, ctype, machine)                                      \
  case kind:                                                                   \
    return machine;
#include "bitpipe/abi/ArgKinds.def"
  }
  llvm_unreachable("unknown ABI kind");
}

/// The kind's name in ArgKinds.def, for messages.
StringRef nameOf(Kind k) {
  switch (k) {
#define BP_ABI_KIND(kind, ctype, machine)                                      \
  case kind:                                                                   \
    return #kind;
#include "bitpipe/abi/ArgKinds.def"
  }
  llvm_unreachable("unknown ABI kind");
}

} // namespace

StringRef abi::roleName(Role r) {
  switch (r) {
#define BP_ROLE_NAME_(role)                                                    \
  case role:                                                                   \
    return #role;
    BP_KERNEL_ROLES(BP_ROLE_NAME_)
#undef BP_ROLE_NAME_
  }
  llvm_unreachable("unknown kernel role");
}

const Signature &abi::signatureOf(RuntimeCall call) {
  return runtimeCalls[static_cast<size_t>(call)];
}

const Signature &abi::signatureOf(Kernel kernel, Precision precision) {
  const size_t index = static_cast<size_t>(kernel);
  if (index < std::size(kernels))
    return kernels[index][precision == Precision::BF16 ? 1 : 0];
  return supportFunctions[index - std::size(kernels)];
}

const Signature *abi::float64GradientSignatureOf(Kernel kernel) {
  for (const auto &[of, signature] : float64GradientKernels)
    if (of == kernel)
      return &signature;
  return nullptr;
}

const TableSymbols &abi::symbolsOf(ModelTable table) {
  return tables[static_cast<size_t>(table)];
}

const BytesSymbols &abi::symbolsOf(ModelBytes bytes) {
  return blobs[static_cast<size_t>(bytes)];
}

Type abi::typeOf(Kind k, MLIRContext *ctx) {
  switch (machineOf(k)) {
  case VOID:
    return Type();
  case I32:
    return IntegerType::get(ctx, 32);
  case I64:
    return IntegerType::get(ctx, 64);
  case F32:
    return Float32Type::get(ctx);
  case PTR:
    return LLVM::LLVMPointerType::get(ctx);
  default:
    llvm_unreachable("ArgKinds.def names a MACHINE kind the compiler lacks");
  }
}

FunctionType abi::functionTypeOf(const Signature &signature, MLIRContext *ctx) {
  SmallVector<Type> params;
  for (Kind k : signature.params)
    params.push_back(typeOf(k, ctx));
  SmallVector<Type, 1> results;
  if (Type result = typeOf(signature.result, ctx))
    results.push_back(result);
  return FunctionType::get(ctx, params, results);
}

LLVM::LLVMFunctionType abi::llvmFunctionTypeOf(const Signature &signature,
                                               MLIRContext *ctx) {
  SmallVector<Type> params;
  for (Kind k : signature.params)
    params.push_back(typeOf(k, ctx));
  Type result = typeOf(signature.result, ctx);
  return LLVM::LLVMFunctionType::get(
      result ? result : LLVM::LLVMVoidType::get(ctx), params);
}

FlatSymbolRefAttr abi::declare(OpBuilder &builder, ModuleOp module,
                               const Signature &signature) {
  MLIRContext *ctx = module.getContext();
  if (!module.lookupSymbol(signature.name)) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(module.getBody());
    auto decl = builder.create<func::FuncOp>(module.getLoc(), signature.name,
                                             functionTypeOf(signature, ctx));
    decl.setPrivate();
  }
  return FlatSymbolRefAttr::get(ctx, signature.name);
}

void abi::checkArguments(const Signature &signature, ValueRange args) {
  std::string problem;
  llvm::raw_string_ostream os(problem);
  if (args.size() != signature.params.size()) {
    os << args.size() << " arguments, but it has " << signature.params.size();
  } else {
    for (auto [i, arg, k] : llvm::enumerate(args, signature.params)) {
      Type want = typeOf(k, arg.getContext());
      if (arg.getType() != want) {
        os << "argument #" << i << " of type " << arg.getType()
           << ", but the parameter is " << nameOf(k) << " (" << want << ")";
        break;
      }
    }
  }
  if (!problem.empty())
    llvm::report_fatal_error(
        llvm::Twine("bitpipe: internal error: a call of ") + signature.name +
        " with " + problem + " in runtime/include/bitpipe/abi");
}
