//===- SumSquares.cu - The squared gradient norm over segments, in fp64 ---===//
//
// bp_cuda_sum_squares: sum over the segments of (scale * g[i])^2, for the
// global gradient norm that clipping needs (runtime/lib/train/AdamW.h: the
// CPU's AdamW::sumSquaredGradients, with scale = 1 / micro-batches). Each
// element is widened to double, scaled and squared in double, as the CPU
// does; the sum is deterministic: every block of the fixed grid
// (MultiTensor.cuh) adds its chunks in a fixed order into one double per
// thread, reduces its threads with a fixed tree, and writes one partial;
// then a single block adds the partials, again with a fixed tree. Same
// segments, same bits, every run. (Not the CPU's bits: it adds one element
// after another; the two differ by rounding in the last digits only.)
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"
#include "MultiTensor.cuh"
#include "core/ArgChecks.h"

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::allNonNull;

namespace {

__global__ void __launch_bounds__(kMultiTensorThreads)
    sumSquaresPartialKernel(const float *g, const bp_cuda_segment *segments,
                            const int64_t *table, int32_t numSegments,
                            double scale, bool packs, double *partial) {
  const int64_t total = table[numSegments];
  double acc = 0.0;
  for (int64_t c = blockIdx.x; c < total; c += gridDim.x) {
    const int32_t s = segmentOfChunk(table, numSegments, c);
    const ChunkRange r = chunkRange(segments[s], c - table[s]);
    forChunk(r, packs && r.packable, [&](int64_t i, auto width) {
      constexpr int W = decltype(width)::value;
      const Pack<float, W> p = loadPack<W>(g, i);
      for (int k = 0; k < W; ++k) {
        const double x = __dmul_rn(static_cast<double>(p.v[k]), scale);
        acc = __dadd_rn(acc, __dmul_rn(x, x));
      }
    });
  }
  acc = blockReduce(acc, Plus(), 0.0);
  if (threadIdx.x == 0)
    partial[blockIdx.x] = acc;
}

__global__ void sumSquaresFinishKernel(const double *partial, int count,
                                       double *out) {
  double acc = 0.0;
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    acc += partial[i];
  acc = blockReduce(acc, Plus(), 0.0);
  if (threadIdx.x == 0)
    *out = acc;
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(sumSquaresFinishKernel);

extern "C" bp_status_t bp_cuda_sum_squares(const float *g,
                                           const bp_cuda_segment *segments,
                                           int32_t num_segments, double scale,
                                           double *out, void *stream) {
  if (!allNonNull({g, segments, out}) || num_segments <= 0)
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  // One scratch block: the chunk table, then the per-block partials.
  const int64_t tableBytes =
      (static_cast<int64_t>(num_segments) + 1) * sizeof(int64_t);
  auto *scratch = static_cast<char *>(bp_cuda_alloc(
      tableBytes + kMultiTensorBlocks * sizeof(double), stream));
  if (!scratch)
    return BP_ERR_OUT_OF_MEMORY;
  auto *table = reinterpret_cast<int64_t *>(scratch);
  auto *partial = reinterpret_cast<double *>(scratch + tableBytes);

  bp_status_t status =
      launchChunkTable(segments, num_segments, table,
                       kSumSquaresSegmentReporter, s, "bp_cuda_sum_squares");
  if (status == BP_OK) {
    sumSquaresPartialKernel<<<kMultiTensorBlocks, kMultiTensorThreads, 0, s>>>(
        g, segments, table, num_segments, scale,
        isAligned({g}, 4 * sizeof(float)), partial);
    status = checkLaunch("bp_cuda_sum_squares");
  }
  if (status == BP_OK) {
    sumSquaresFinishKernel<<<1, kMaxThreads, 0, s>>>(
        partial, kMultiTensorBlocks, out);
    status = checkLaunch("bp_cuda_sum_squares");
  }
  bp_cuda_free(scratch, stream); // In stream order: after the kernels above.
  return status;
}
