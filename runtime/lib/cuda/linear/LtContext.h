//===- LtContext.h - The process's cuBLASLt handle and workspace -*- C++
//-*-===//
//
// What every matrix product of bitpipe/cuda.h shares: one cuBLASLt handle per
// process (one rank drives one device), created on first use, and the
// workspace cuBLASLt's algorithms may use (split-K partial sums and the
// like). Both live until the process ends: destroying them at exit would race
// with CUDA's own teardown.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_LINEAR_LTCONTEXT_H
#define BITPIPE_RUNTIME_CUDA_LINEAR_LTCONTEXT_H

#include "bitpipe/cuda.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace bitpipe::runtime::cuda::linear {

/// Bytes of workspace offered to cuBLASLt's heuristic: NVIDIA's advice for
/// Hopper (the largest split-K and stream-K configurations fit; PyTorch
/// uses the same on sm_90).
constexpr size_t kWorkspaceBytes = size_t(32) << 20;

/// The function, and the shape it was called with, that error messages name.
struct CallSite {
  const char *function;
  int64_t N, In, Out;
};

/// Prints "bitpipe: cuda: <function> (N=.., In=.., Out=..): <what>" on
/// stderr.
void reportError(const CallSite &site, const char *what);

/// BP_OK for CUBLAS_STATUS_SUCCESS; otherwise names the cuBLASLt call, the
/// status and the caller's shape, and returns BP_ERR_DEVICE.
bp_status_t checkCublas(cublasStatus_t status, const char *call,
                        const CallSite &site);

/// The process's handle, created on the first call (on the current device).
/// Null, after a message, if cuBLASLt could not be initialised.
cublasLtHandle_t ltHandle(const CallSite &site);

/// The workspace of \p stream: kWorkspaceBytes from the device pool, taken
/// on a stream's first product and kept. One per stream, not one per
/// process, because two streams running products at the same time must not
/// share scratch memory; a rank enqueues its kernels on one stream
/// (bitpipe/cuda.h's execution context), so in practice there is one.
/// Null, after a message, if the pool has no memory left.
void *workspaceFor(cudaStream_t stream, const CallSite &site);

/// The largest power of two (at most 256) that divides \p p's address:
/// cuBLASLt's heuristic must be told how aligned the operands are (it
/// otherwise assumes 256 bytes and may pick a kernel whose vector loads
/// fault on a less aligned pointer).
uint32_t alignmentOf(const void *p);

} // namespace bitpipe::runtime::cuda::linear

#endif // BITPIPE_RUNTIME_CUDA_LINEAR_LTCONTEXT_H
