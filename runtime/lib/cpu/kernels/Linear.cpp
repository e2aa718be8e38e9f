//===- Linear.cpp - Fully connected layer through OpenBLAS ------*- C++ -*-===//
//
// y = x W^T + b with W [Out, In]. Every product is cblas_sgemm on the
// row-major buffers as they are (the transposes are sgemm flags, not
// copies), one call per block of output rows on the kernel's threads.
// The GELU-fused entry points apply the GELU in the same task, to the rows
// the thread's product just wrote (still partly in its cache), instead of
// a second pass over the whole output after a barrier: the same row blocks
// and the same element loops (Gelu.h), so a fused program computes bit for
// bit what the unfused one does at the same thread count.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "Gelu.h"
#include "GradChunk.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

#include <algorithm>
#include <atomic>
#include <cblas.h>
#include <cstring>

using namespace bitpipe::runtime::cpu;

/// Rows [first, last) of y = x W^T + b.
static void forwardRows(const float *x, const float *w, const float *b,
                        float *y, int64_t In, int64_t Out, int64_t first,
                        int64_t last) {
  float *rows = y + first * Out;
  // Broadcast the bias into y first and let sgemm add onto it (beta = 1):
  // one pass over y instead of a second pass after the product.
  float beta = 0.0f;
  if (b) {
    for (int64_t i = first; i < last; ++i)
      std::memcpy(y + i * Out, b, static_cast<size_t>(Out) * sizeof(float));
    beta = 1.0f;
  }
  // y[rows, Out] = x[rows, In] * W[Out, In]^T
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, last - first, Out, In,
              1.0f, x + first * In, In, w, In, beta, rows, Out);
}

/// Rows [first, last) of dx = dy W.
static void inputGradRows(const float *dy, const float *w, float *dx,
                          int64_t In, int64_t Out, int64_t first,
                          int64_t last) {
  // dx[rows, In] = dy[rows, Out] * W[Out, In]
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, last - first, In, Out,
              1.0f, dy + first * Out, Out, w, In, 0.0f, dx + first * In, In);
}

extern "C" bp_status_t bp_linear_fwd(const float *x, const float *w,
                                     const float *b, float *y, int64_t N,
                                     int64_t In, int64_t Out) {
  BP_PROFILE_KERNEL(linear_fwd);
  if (!BP_KERNEL_ARGS_VALID(linear_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  // Rows of y on the kernel's threads (cpu/Parallel.h).
  parallelFor(N, productRowGrain(In * Out), [&](int64_t first, int64_t last) {
    forwardRows(x, w, b, y, In, Out, first, last);
  });
  return BP_OK;
}

extern "C" bp_status_t bp_linear_bwd_input(const float *dy, const float *w,
                                           float *dx, int64_t N, int64_t In,
                                           int64_t Out) {
  BP_PROFILE_KERNEL(linear_bwd_input);
  if (!BP_KERNEL_ARGS_VALID(linear_bwd_input))
    return BP_ERR_INVALID_ARGUMENT;
  // Rows of dx on the kernel's threads.
  parallelFor(N, productRowGrain(In * Out), [&](int64_t first, int64_t last) {
    inputGradRows(dy, w, dx, In, Out, first, last);
  });
  return BP_OK;
}

/// Floats of a weight gradient's tile (4 MiB): under a float64 accumulator
/// the product writes f32 scratch of this size, which finish() reads back
/// while it is still in the cache. Smaller tiles cost more than they save:
/// OpenBLAS packs the whole of x again for every product (64 Ki-float
/// tiles made the weight gradient 9-15 % slower at llama-cpu-large's
/// shapes; bench/RESULTS.md, "Step time on one rank").
static constexpr int64_t kWeightGradTileFloats = int64_t(1) << 20;

/// bp_linear_bwd_weight into accumulators of type Acc (GradChunk.h).
template <typename Acc>
static bp_status_t linearWeightGrad(const float *dy, const float *x, Acc *dw,
                                    Acc *db, int64_t N, int64_t In,
                                    int64_t Out) {
  std::atomic<bool> outOfMemory{false};
  // Rows of dW (output features) on the kernel's threads; each sums db over
  // the rows of dy in order for its own features.
  parallelFor(Out, productRowGrain(N * In), [&](int64_t first, int64_t last) {
    // dW[rows, In] += dy[N, rows]^T * x[N, In] by tiles of rows; the fp32
    // form accumulates over micro-batches (and over tied uses of the same
    // weight) with beta = 1, the float64 form writes its scratch with
    // beta = 0 (GradChunk.h, ChunkFill::Written). Both forms take the same
    // tiles, because OpenBLAS's sums depend on the rows a product is given:
    // the float64 form then adds exactly what the fp32 form accumulates.
    const int64_t tile = std::max<int64_t>(1, kWeightGradTileFloats / In);
    for (int64_t r = first; r < last; r += tile) {
      const int64_t rows = std::min(tile, last - r);
      GradChunk<Acc> chunk(dw + r * In, rows * In, 0, ChunkFill::Written);
      if (!chunk.ok()) {
        outOfMemory = true;
        return;
      }
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, rows, In, N, 1.0f,
                  dy + r, Out, x, In, chunk.beta(), chunk.data(), In);
      chunk.finish();
    }
    if (!db)
      return;
    GradChunk<Acc> bias(db + first, last - first);
    if (!bias.ok()) {
      outOfMemory = true;
      return;
    }
    float *sum = bias.data();
    for (int64_t i = 0; i < N; ++i) {
      const float *row = dy + i * Out + first;
      for (int64_t o = 0; o < last - first; ++o)
        sum[o] += row[o];
    }
    bias.finish();
  });
  return outOfMemory ? BP_ERR_OUT_OF_MEMORY : BP_OK;
}

extern "C" bp_status_t bp_linear_bwd_weight(const float *dy, const float *x,
                                            float *dw, float *db, int64_t N,
                                            int64_t In, int64_t Out) {
  BP_PROFILE_KERNEL(linear_bwd_weight);
  if (!BP_KERNEL_ARGS_VALID(linear_bwd_weight))
    return BP_ERR_INVALID_ARGUMENT;
  return linearWeightGrad(dy, x, dw, db, N, In, Out);
}

extern "C" bp_status_t bp_linear_bwd_weight_g64(const float *dy, const float *x,
                                                double *dw, double *db,
                                                int64_t N, int64_t In,
                                                int64_t Out) {
  BP_PROFILE_KERNEL(linear_bwd_weight);
  if (!BP_KERNEL_ARGS_VALID(linear_bwd_weight))
    return BP_ERR_INVALID_ARGUMENT;
  return linearWeightGrad(dy, x, dw, db, N, In, Out);
}

extern "C" bp_status_t bp_linear_gelu_fwd(const float *x, const float *w,
                                          const float *b, float *y,
                                          float *pre, int64_t N, int64_t In,
                                          int64_t Out) {
  BP_PROFILE_KERNEL(linear_gelu_fwd);
  if (!BP_KERNEL_ARGS_VALID(linear_gelu_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  // bp_linear_fwd's row blocks, each followed by the GELU of its rows.
  parallelFor(N, productRowGrain(In * Out), [&](int64_t first, int64_t last) {
    forwardRows(x, w, b, pre, In, Out, first, last);
    geluForwardRange(pre, y, first * Out, last * Out);
  });
  return BP_OK;
}

extern "C" bp_status_t bp_linear_bwd_input_gelu(const float *dy,
                                                const float *w,
                                                const float *pre, float *dx,
                                                int64_t N, int64_t In,
                                                int64_t Out) {
  BP_PROFILE_KERNEL(linear_bwd_input_gelu);
  if (!BP_KERNEL_ARGS_VALID(linear_bwd_input_gelu))
    return BP_ERR_INVALID_ARGUMENT;
  // bp_linear_bwd_input's row blocks, each product then scaled in place by
  // gelu' of its rows (the GELU loop lets dx alias dy).
  parallelFor(N, productRowGrain(In * Out), [&](int64_t first, int64_t last) {
    inputGradRows(dy, w, dx, In, Out, first, last);
    geluBackwardRange(dx, pre, dx, first * In, last * In);
  });
  return BP_OK;
}
