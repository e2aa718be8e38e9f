//===- CrossEntropy.cu - Softmax cross-entropy over bf16 or fp32 logits -===//
//
// One block per row (grid-stride over rows): the row's (max, sum of exp)
// pair is built online in one pass of the up to 50304 logits, 16 bytes a
// thread per access where the rows allow, and reduced across the block in
// fp32. The mean over labelled rows needs the count of
// labelled rows, a reduction over all of them, so each direction is two
// launches with a small scratch buffer from the pool:
//   forward:  per-row losses and normalisers (max, log-sum: the backward's
//             statistics), then one block sums the losses in double, in a
//             fixed order (as the CPU kernel sums in double) and divides;
//   backward: one block counts the labelled rows into the gradient scale
//             dloss / count, then the per-row gradients from the forward's
//             normalisers, one pass over each row.
// Results are the same bits on every run. The row kernels are templates over
// the element type of the logits and their gradient (bf16 or fp32:
// DeviceMath.cuh's load / store); the loss is fp32 in both precisions.
//
// Labels are checked on the device: a label outside [0, V) that is not the
// ignore index is recorded for bp_cuda_synchronize, never dereferenced, and
// makes its row's loss (hence the mean) and gradient row NaN.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"

using namespace bitpipe::runtime::cuda;

namespace {

// The row kernels are templates over P, the logits a thread moves per
// access (DeviceMath.cuh's forEachInRow): 16 bytes' worth when every row
// starts on a 16-byte boundary (V a multiple of the pack, as padded
// vocabularies are), else 1.

/// A row's softmax normaliser, reduced over the block: every thread gets it.
template <int P, typename T>
__device__ MaxSum rowMaxSum(const T *row, int64_t V) {
  MaxSum acc = emptyMaxSum();
  forEachInRow<P>(V, [&](int64_t j, auto w) {
    float v[decltype(w)::value];
    loadFloats(row, j, v);
    for (float e : v)
      acc = push(acc, e);
  });
  return blockReduce(acc, Combine(), emptyMaxSum());
}

template <int P, typename T>
__global__ void
crossEntropyRowLossKernel(const T *logits, const int32_t *labels,
                          float *rowLoss, float *rowMax, float *logSum,
                          int64_t N, int64_t V, int32_t ignoreIndex,
                          int32_t *indexError) {
  for (int64_t i = blockIdx.x; i < N; i += gridDim.x) {
    const int32_t label = labels[i];
    // The label is the same for the whole block: uniform branches, so the
    // reduction below is reached by every thread or by none.
    if (label == ignoreIndex) {
      if (threadIdx.x == 0)
        rowLoss[i] = rowMax[i] = logSum[i] = 0.0f;
      continue;
    }
    if (!inRange(label, V)) {
      if (threadIdx.x == 0) {
        reportBadIndex(indexError, kCrossEntropyFwdReporter);
        rowLoss[i] = rowMax[i] = logSum[i] = NAN;
      }
      continue;
    }
    const T *row = logits + i * V;
    const MaxSum ms = rowMaxSum<P>(row, V);
    // -log softmax(row)[label] = log(sum) - (row[label] - max): the parts
    // kept apart, as the CPU kernel does, so large logits lose no bits.
    if (threadIdx.x == 0) {
      const float sum = logf(ms.sum);
      rowMax[i] = ms.max;
      logSum[i] = sum;
      rowLoss[i] = sum - (load(row, label) - ms.max);
    }
  }
}

/// The labelled rows (label in range, not ignored), counted by one block.
__device__ int64_t blockCountLabelled(const int32_t *labels, int64_t N,
                                      int64_t V, int32_t ignoreIndex) {
  int64_t count = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x)
    count += labels[i] != ignoreIndex && inRange(labels[i], V);
  return blockReduce(count, Plus(), int64_t(0));
}

/// One block: loss = sum(rowLoss) / count, or 0 when nothing is labelled.
__global__ void crossEntropyMeanKernel(const float *rowLoss,
                                       const int32_t *labels, float *loss,
                                       int64_t N, int64_t V,
                                       int32_t ignoreIndex) {
  double total = 0.0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x)
    total += rowLoss[i]; // 0 for ignored rows, NaN for bad ones.
  total = blockReduce(total, Plus(), 0.0);
  const int64_t count = blockCountLabelled(labels, N, V, ignoreIndex);
  if (threadIdx.x == 0)
    *loss = count ? static_cast<float>(total / static_cast<double>(count))
                  : 0.0f;
}

/// One block: *scale = *dloss / count, or 0 when nothing is labelled.
__global__ void crossEntropyScaleKernel(const int32_t *labels,
                                        const float *dloss, float *scale,
                                        int64_t N, int64_t V,
                                        int32_t ignoreIndex) {
  const int64_t count = blockCountLabelled(labels, N, V, ignoreIndex);
  if (threadIdx.x == 0)
    *scale = count ? *dloss / static_cast<float>(count) : 0.0f;
}

template <int P, typename T>
__global__ void
crossEntropyGradKernel(const T *logits, const int32_t *labels,
                       const float *scalePtr, const float *rowMax,
                       const float *logSum, T *dlogits, int64_t N, int64_t V,
                       int32_t ignoreIndex, int32_t *indexError) {
  const float scale = *scalePtr;
  for (int64_t i = blockIdx.x; i < N; i += gridDim.x) {
    const int32_t label = labels[i];
    T *drow = dlogits + i * V;
    if (label == ignoreIndex || !inRange(label, V)) {
      if (label != ignoreIndex && threadIdx.x == 0)
        reportBadIndex(indexError, kCrossEntropyBwdReporter);
      const float fill = label == ignoreIndex ? 0.0f : NAN;
      forEachInRow<P>(V, [&](int64_t j, auto w) {
        float v[decltype(w)::value];
        for (float &e : v)
          e = fill;
        storeFloats(drow, j, v);
      });
      continue;
    }
    const T *row = logits + i * V;
    // Each thread reads element j before writing it: dlogits may alias
    // logits.
    const float max = rowMax[i], sum = logSum[i];
    forEachInRow<P>(V, [&](int64_t j, auto w) {
      constexpr int W = decltype(w)::value;
      float v[W];
      loadFloats(row, j, v);
      for (int k = 0; k < W; ++k)
        v[k] =
            expf((v[k] - max) - sum) * scale - (j + k == label ? scale : 0.0f);
      storeFloats(drow, j, v);
    });
  }
}

/// A row of the vocabulary per block: ~16 logits a thread (1024 threads at
/// V = 50304); the single-block reductions over N rows use all 1024.
int rowBlock(int64_t V) { return rowThreads(V, 16); }

template <typename A>
bp_status_t crossEntropyFwd(const A *logits, const int32_t *labels, float *loss,
                            float *row_max, float *log_sum, int64_t N,
                            int64_t V, int32_t ignoreIndex, void *stream,
                            const char *name) {
  if (!BP_KERNEL_ARGS_VALID(cross_entropy_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  int32_t *indexError = indexErrorWord();
  if (!indexError)
    return BP_ERR_DEVICE;
  const cudaStream_t s = asStream(stream);
  auto *rowLoss = static_cast<float *>(
      bp_cuda_alloc(N * static_cast<int64_t>(sizeof(float)), stream));
  if (!rowLoss)
    return BP_ERR_OUT_OF_MEMORY;
  constexpr int kPack = kPack16<A>;
  bp_status_t status = withPackWidth<kPack>(
      rowsPackable(V, kPack, {logits}), [&](auto w) -> bp_status_t {
        crossEntropyRowLossKernel<decltype(w)::value>
            <<<gridBlocks(N, 1), rowBlock(V), 0, s>>>(
                asDevice(logits), labels, rowLoss, row_max, log_sum, N, V,
                ignoreIndex, indexError);
        return checkLaunch(name);
      });
  if (status == BP_OK) {
    crossEntropyMeanKernel<<<1, kMaxThreads, 0, s>>>(rowLoss, labels, loss, N,
                                                     V, ignoreIndex);
    status = checkLaunch(name);
  }
  bp_cuda_free(rowLoss, stream); // In stream order: after the kernels above.
  return status;
}

template <typename A>
bp_status_t crossEntropyBwd(const A *logits, const int32_t *labels,
                            const float *dloss, const float *row_max,
                            const float *log_sum, A *dlogits, int64_t N,
                            int64_t V, int32_t ignoreIndex, void *stream,
                            const char *name) {
  if (!BP_KERNEL_ARGS_VALID(cross_entropy_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  int32_t *indexError = indexErrorWord();
  if (!indexError)
    return BP_ERR_DEVICE;
  const cudaStream_t s = asStream(stream);
  auto *scale = static_cast<float *>(bp_cuda_alloc(sizeof(float), stream));
  if (!scale)
    return BP_ERR_OUT_OF_MEMORY;
  crossEntropyScaleKernel<<<1, kMaxThreads, 0, s>>>(labels, dloss, scale, N, V,
                                                    ignoreIndex);
  bp_status_t status = checkLaunch(name);
  if (status == BP_OK) {
    constexpr int kPack = kPack16<A>;
    status = withPackWidth<kPack>(
        rowsPackable(V, kPack, {logits, dlogits}), [&](auto w) -> bp_status_t {
          crossEntropyGradKernel<decltype(w)::value>
              <<<gridBlocks(N, 1), rowBlock(V), 0, s>>>(
                  asDevice(logits), labels, scale, row_max, log_sum,
                  asDevice(dlogits), N, V, ignoreIndex, indexError);
          return checkLaunch(name);
        });
  }
  bp_cuda_free(scale, stream); // In stream order: after the kernels above.
  return status;
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(crossEntropyMeanKernel);

extern "C" bp_status_t bp_cuda_cross_entropy_fwd(
    const bp_bf16_t *logits, const int32_t *labels, float *loss, float *row_max,
    float *log_sum, int64_t N, int64_t V, int32_t ignore_index, void *stream) {
  return crossEntropyFwd(logits, labels, loss, row_max, log_sum, N, V,
                         ignore_index, stream, "bp_cuda_cross_entropy_fwd");
}

extern "C" bp_status_t
bp_cuda_cross_entropy_bwd(const bp_bf16_t *logits, const int32_t *labels,
                          const float *dloss, const float *row_max,
                          const float *log_sum, bp_bf16_t *dlogits, int64_t N,
                          int64_t V, int32_t ignore_index, void *stream) {
  return crossEntropyBwd(logits, labels, dloss, row_max, log_sum, dlogits, N, V,
                         ignore_index, stream, "bp_cuda_cross_entropy_bwd");
}

extern "C" bp_status_t bp_cuda_cross_entropy_fwd_f32(
    const float *logits, const int32_t *labels, float *loss, float *row_max,
    float *log_sum, int64_t N, int64_t V, int32_t ignore_index, void *stream) {
  return crossEntropyFwd(logits, labels, loss, row_max, log_sum, N, V,
                         ignore_index, stream, "bp_cuda_cross_entropy_fwd_f32");
}

extern "C" bp_status_t
bp_cuda_cross_entropy_bwd_f32(const float *logits, const int32_t *labels,
                              const float *dloss, const float *row_max,
                              const float *log_sum, float *dlogits, int64_t N,
                              int64_t V, int32_t ignore_index, void *stream) {
  return crossEntropyBwd(logits, labels, dloss, row_max, log_sum, dlogits, N, V,
                         ignore_index, stream, "bp_cuda_cross_entropy_bwd_f32");
}
