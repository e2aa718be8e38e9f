//===- Elementwise.h - The linear layers' own element-wise kernels -*- C++
//-*-=//
//
// What the matrix products need besides cuBLASLt:
//  - the unfused halves of the bias and GELU epilogues, for the shapes and
//    precisions where Linear.cpp does not use cuBLASLt's (see there);
//  - the bias gradient, which must accumulate (db += column sums of dy):
//    cuBLASLt's BGRAD epilogues write their sums instead of adding them.
//
// Each element is computed in fp32 and rounded once when stored; GELU is the
// tanh form with the CPU kernel's formula (runtime/lib/cpu/kernels/Gelu.cpp).
// bf16 tensors are cuda.h's raw bits; every call enqueues on `stream` and
// reports a launch failure as BP_ERR_DEVICE naming `function`.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_LINEAR_ELEMENTWISE_H
#define BITPIPE_RUNTIME_CUDA_LINEAR_ELEMENTWISE_H

#include "bitpipe/cuda.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace bitpipe::runtime::cuda::linear {

/// pre [rows, cols]: pre += bias (broadcast over rows) when bias is not
/// null; then y = gelu(pre) when y is not null (from pre as stored, so that
/// y is exactly gelu of the saved pre-activation). One of bias, y non-null.
bp_status_t biasGelu(bp_bf16_t *pre, const bp_bf16_t *bias, bp_bf16_t *y,
                     int64_t rows, int64_t cols, cudaStream_t stream,
                     const char *function);
bp_status_t biasGelu(float *pre, const float *bias, float *y, int64_t rows,
                     int64_t cols, cudaStream_t stream, const char *function);

/// dx [n] *= gelu'(pre [n]).
bp_status_t scaleByGeluGrad(bp_bf16_t *dx, const bp_bf16_t *pre, int64_t n,
                            cudaStream_t stream, const char *function);
bp_status_t scaleByGeluGrad(float *dx, const float *pre, int64_t n,
                            cudaStream_t stream, const char *function);

/// db [cols] += sum over the rows of dy [rows, cols], in fp32, in an order
/// fixed by (rows, cols) alone: the same bits every run. Scratch for the
/// partial sums comes from the device pool (BP_ERR_OUT_OF_MEMORY if not).
bp_status_t addColumnSums(const bp_bf16_t *dy, float *db, int64_t rows,
                          int64_t cols, cudaStream_t stream,
                          const char *function);
bp_status_t addColumnSums(const float *dy, float *db, int64_t rows,
                          int64_t cols, cudaStream_t stream,
                          const char *function);

} // namespace bitpipe::runtime::cuda::linear

#endif // BITPIPE_RUNTIME_CUDA_LINEAR_ELEMENTWISE_H
