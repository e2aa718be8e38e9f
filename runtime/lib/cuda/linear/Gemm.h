//===- Gemm.h - One cuBLASLt product, its algorithm cached -------*- C++
//-*-===//
//
// A matrix product in cuBLASLt's own column-major terms,
//   D [m, n] = op(A) [m, k] op(B) [k, n]  (+ beta D)  then the epilogue,
// with fp32 accumulation and fp32 alpha/beta (CUBLAS_COMPUTE_32F: for fp32
// operands that is true fp32, never TF32, which only the _FAST_ compute types
// allow). Linear.cpp maps the row-major linear layers onto it.
//
// The first product of each (description, operand alignments) asks
// cublasLtMatmulAlgoGetHeuristic for its best algorithm and keeps it, with
// the descriptors, for every later call: training repeats the same shapes
// every micro-batch, so after the first step no heuristic runs.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_LINEAR_GEMM_H
#define BITPIPE_RUNTIME_CUDA_LINEAR_GEMM_H

#include "LtContext.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace bitpipe::runtime::cuda::linear {

enum class Element : uint8_t { Bf16, F32 };

/// What is fixed for a call site's shape (the cache key, with the operands'
/// alignments).
struct GemmDesc {
  Element ab; ///< A and B
  Element cd; ///< C = D, and the epilogue's bias and aux
  bool transA, transB;
  int64_t m, n, k;
  int64_t lda, ldb, ldd;
  /// CUBLASLT_EPILOGUE_DEFAULT, _BIAS, _GELU_AUX, _GELU_AUX_BIAS or _DGELU.
  cublasLtEpilogue_t epilogue;
  /// The aux matrix's leading dimension (epilogues with aux only).
  int64_t auxLd;
};

/// What changes from call to call.
struct GemmOperands {
  const void *a, *b;
  void *d;
  float beta;       ///< 0 writes D; 1 accumulates into it (C = D)
  const void *bias; ///< epilogues with a bias: [m], D's type
  void *aux;        ///< epilogues with aux: [m, n] at auxLd, D's type
};

/// Enqueues the product on \p stream. When \p mayDecline, returns BP_OK
/// with *ran = false, having enqueued nothing, if the heuristic has no
/// algorithm for this epilogue with these alignments, or cublasLtMatmul
/// refuses the one it offered (the caller then takes its unfused path);
/// otherwise either is an error. Errors (BP_ERR_DEVICE, BP_ERR_OUT_OF_MEMORY
/// for the workspace) are reported on stderr naming \p site.
bp_status_t runGemm(const GemmDesc &desc, const GemmOperands &ops,
                    cudaStream_t stream, const CallSite &site, bool mayDecline,
                    bool *ran);

} // namespace bitpipe::runtime::cuda::linear

#endif // BITPIPE_RUNTIME_CUDA_LINEAR_GEMM_H
