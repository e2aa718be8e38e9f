//===- KernelTable.cpp - The runtime kernels, seen by the generator -------===//

#include "KernelTable.h"

#include "bitpipe/abi/Kernels.h"

using namespace bitpipe::tblgen;

namespace {

// One array of parameters per kernel, then the table of kernels.
#define BP_TBLGEN_PARAM_(unused, role, name)                                   \
  KernelParam { #role, #name }
#define BP_TBLGEN_PARAMS_(kernel)                                              \
  const KernelParam kParams_##kernel[] = {                                     \
      BP_PP_MAP_LIST(BP_TBLGEN_PARAM_, BP_PP_COMMA_, ~, BP_KERNEL_##kernel)};
BP_KERNELS(BP_TBLGEN_PARAMS_)
#undef BP_TBLGEN_PARAMS_
#undef BP_TBLGEN_PARAM_

#define BP_TBLGEN_KERNEL_(kernel) KernelInfo{#kernel, kParams_##kernel},
const KernelInfo kKernels[] = {BP_KERNELS(BP_TBLGEN_KERNEL_)};
#undef BP_TBLGEN_KERNEL_

} // namespace

const KernelInfo *bitpipe::tblgen::lookupKernel(llvm::StringRef name) {
  for (const KernelInfo &kernel : kKernels)
    if (kernel.name == name)
      return &kernel;
  return nullptr;
}
