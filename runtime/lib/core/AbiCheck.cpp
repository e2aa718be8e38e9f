//===- AbiCheck.cpp - program.h and runtime.h against the abi/*.def -------===//
//
// The compiler declares every runtime function it calls from
// bitpipe/abi/RuntimeCalls.def, bitpipe/abi/Support.def and
// bitpipe/abi/Kernels.h, and defines the symbols of
// bitpipe/abi/ModelSymbols.def; the runtime defines and reads
// them from the declarations of program.h and runtime.h. This file holds
// the two statements to each other: for every entry of the .def files, the
// type the header declares must be exactly the type the entry's kinds spell
// (bitpipe/abi/ArgKinds.def), or the runtime does not build.
// Nothing here is called; it is compiled into the core library so that
// every build checks it.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/program.h"
#include "bitpipe/runtime.h"

#include <type_traits>

namespace bitpipe::runtime::abi_check {

// Every kind as the C type the headers use: `I32` is int32_t, ...
#define BP_ABI_KIND(kind, ctype, machine) using kind = ctype;
#include "bitpipe/abi/ArgKinds.def"

#define BP_RT_CALL(symbol, result, ...)                                        \
  static_assert(std::is_same_v<decltype(&::symbol), result (*)(__VA_ARGS__)>,  \
                "program.h declares " #symbol                                  \
                " with another type than bitpipe/abi/RuntimeCalls.def");
#include "bitpipe/abi/RuntimeCalls.def"

#define BP_SUPPORT_FN(symbol, result, ...)                                     \
  static_assert(std::is_same_v<decltype(&::symbol), result (*)(__VA_ARGS__)>,  \
                "runtime.h declares " #symbol                                  \
                " with another type than bitpipe/abi/Support.def");
#include "bitpipe/abi/Support.def"

// runtime.h spells the kernels' prototypes from Kernels.h's C types; the
// compiler declares them from the roles' ABI kinds. The two must agree.
#define BP_CHECK_KERNEL_(kernel)                                               \
  static_assert(std::is_same_v<decltype(&::bp_##kernel),                       \
                               STATUS (*)(BP_KERNEL_KINDS(F32, kernel))>,      \
                "bp_" #kernel ": the C types of its roles are not their "      \
                "ABI kinds (bitpipe/abi/KernelRoles.h)");                      \
  static_assert(std::is_same_v<decltype(&::bp_##kernel##_bf16),                \
                               STATUS (*)(BP_KERNEL_KINDS(BF16, kernel))>,     \
                "bp_" #kernel "_bf16: the C types of its roles are not their " \
                "ABI kinds (bitpipe/abi/KernelRoles.h)");
BP_KERNELS(BP_CHECK_KERNEL_)
#undef BP_CHECK_KERNEL_
#define BP_CHECK_GRAD_KERNEL_(kernel)                                          \
  static_assert(std::is_same_v<decltype(&::bp_##kernel##_g64),                 \
                               STATUS (*)(BP_KERNEL_KINDS(F32_G64, kernel))>,  \
                "bp_" #kernel "_g64: the C types of its roles are not their "  \
                "ABI kinds (bitpipe/abi/KernelRoles.h)");
BP_GRAD_KERNELS(BP_CHECK_GRAD_KERNEL_)
#undef BP_CHECK_GRAD_KERNEL_

#define BP_MODEL_TABLE(table, count, countKind, entryResult, ...)              \
  static_assert(                                                               \
      std::is_same_v<decltype(::table), entryResult (*const[])(__VA_ARGS__)>,  \
      "program.h declares " #table                                             \
      " with another type than bitpipe/abi/ModelSymbols.def");                 \
  static_assert(std::is_same_v<decltype(::count), const countKind>,            \
                "program.h declares " #count                                   \
                " with another type than bitpipe/abi/ModelSymbols.def");
#define BP_MODEL_BYTES(data, size, sizeKind)                                   \
  static_assert(std::is_same_v<decltype(::data), const char[]>,                \
                "program.h declares " #data                                    \
                " with another type than bitpipe/abi/ModelSymbols.def");       \
  static_assert(std::is_same_v<decltype(::size), const sizeKind>,              \
                "program.h declares " #size                                    \
                " with another type than bitpipe/abi/ModelSymbols.def");
#include "bitpipe/abi/ModelSymbols.def"

} // namespace bitpipe::runtime::abi_check
