//===- KernelTable.h - The kernels, seen by the generator -------*- C++ -*-===//
//
// The kernels of runtime/include/bitpipe/abi/Kernels.h as data: each one's
// name and its parameters' roles and names, spelled from the same lists
// that give runtime.h its prototypes. The generator checks every argument of
// an nn op's kernel calls against these, so that a call that does not fit its
// kernel fails the build instead of a model's compile.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_BITPIPE_TBLGEN_KERNELTABLE_H
#define BITPIPE_TOOLS_BITPIPE_TBLGEN_KERNELTABLE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

namespace bitpipe::tblgen {

/// One parameter: its role (KernelRoles.h: "ACT_IN", "DIM", ...) and name.
struct KernelParam {
  llvm::StringRef role;
  llvm::StringRef name;
};

/// One kernel: its name after `bp_` and its parameters, in order.
struct KernelInfo {
  llvm::StringRef name;
  llvm::ArrayRef<KernelParam> params;
};

/// The kernel of Kernels.h named \p name (after `bp_`), or null.
const KernelInfo *lookupKernel(llvm::StringRef name);

} // namespace bitpipe::tblgen

#endif // BITPIPE_TOOLS_BITPIPE_TBLGEN_KERNELTABLE_H
