//===- SharedMemoryOptIn.h - Dynamic shared memory above 48 KiB -*- C++ -*-===//
//
// A kernel launched with more than 48 KiB of dynamic shared memory must
// first be allowed it (cudaFuncAttributeMaxDynamicSharedMemorySize; up to
// 227 KiB a block on sm_90). The attention kernels' tiles need up to about
// 100 KiB.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ATTENTION_SHAREDMEMORYOPTIN_H
#define BITPIPE_RUNTIME_CUDA_ATTENTION_SHAREDMEMORYOPTIN_H

#include "../Launch.h"

namespace bitpipe::runtime::cuda::attention {

/// Lets \p Kernel use up to \p bytes of dynamic shared memory; asked once
/// per kernel (a template argument, so that kernels of the same function
/// type each get their own flag), \p bytes being the most it is ever
/// launched with. The status names \p what on failure.
template <auto Kernel>
bp_status_t allowSharedMemory(int bytes, const char *what) {
  static const cudaError_t err = cudaFuncSetAttribute(
      Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
  return checkCuda(err, what);
}

/// allowSharedMemory at start-up (bp_cuda_prepare), for an instantiation
/// that a model may or may not use: one that asks for more than this device
/// allows a block is left alone (a launch of it would report that, as
/// before), so that preparing never refuses a model that does not use it.
template <auto Kernel>
bp_status_t prepareSharedMemory(int bytes, const char *what) {
  int device = 0, limit = 0;
  if (bp_status_t st = checkCuda(cudaGetDevice(&device), what); st != BP_OK)
    return st;
  if (bp_status_t st = checkCuda(
          cudaDeviceGetAttribute(
              &limit, cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
          what);
      st != BP_OK)
    return st;
  if (bytes > limit)
    return BP_OK;
  return allowSharedMemory<Kernel>(bytes, what);
}

} // namespace bitpipe::runtime::cuda::attention

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_SHAREDMEMORYOPTIN_H
