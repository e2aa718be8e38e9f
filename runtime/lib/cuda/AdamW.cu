//===- AdamW.cu - One fused AdamW step over every parameter ---------------===//
//
// bp_cuda_adamw_step: a multi-tensor launch (MultiTensor.cuh) that updates
// the fp32 master weights and both moments in place and, under bf16, writes
// the weights' bf16 copy in the same pass (one read and one write of each
// array per step, instead of a separate cast). Each segment says where its
// master weights and moments lie (bitpipe/cuda.h): a sharded optimizer's
// rank passes the parts it owns, their state kept compactly.
//
// The arithmetic per element is the CPU optimizer's
// (runtime/lib/train/AdamW.cpp), operation for operation, with the same
// per-step constants (formed on the host in double and rounded once): so
// that --precision fp32 trains to the same bits on both targets as long as
// the gradients agree. Every operation is an explicitly rounded intrinsic
// (__fmul_rn, __fadd_rn, __fdiv_rn, __fsqrt_rn, __dmul_rn): nvcc would
// otherwise contract a * b + c into one FMA (rounded once), which the CPU
// build (x86-64 without FMA) never does, and the two would drift apart by an
// ulp here and there. The intrinsics are never contracted (CUDA C
// Programming Guide, "Intrinsic Functions"), whatever -fmad says.
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

/// One element, as AdamW::stepWithGlobalNorm:
///   g = (float)(grad * gScale)
///   m = b1 m + (1 - b1) g;   v = b2 v + ((1 - b2) g) g
///   p = p * decay - (stepSize m) / (sqrt(v) / rootBc2 + eps)
__device__ inline void adamwElement(float &p, float grad, float &m, float &v,
                                    float decay,
                                    const bp_cuda_adamw_constants &c) {
  const float g = __double2float_rn(
      __dmul_rn(static_cast<double>(grad), c.grad_scale));
  m = __fadd_rn(__fmul_rn(c.beta1, m), __fmul_rn(c.one_minus_beta1, g));
  v = __fadd_rn(__fmul_rn(c.beta2, v),
                __fmul_rn(__fmul_rn(c.one_minus_beta2, g), g));
  const float denom = __fadd_rn(__fdiv_rn(__fsqrt_rn(v), c.root_bc2), c.eps);
  p = __fsub_rn(__fmul_rn(p, decay), __fdiv_rn(__fmul_rn(c.step_size, m), denom));
}

__global__ void __launch_bounds__(kMultiTensorThreads)
    adamwKernel(float *params, const float *grads, float *m, float *v,
                bf16 *paramsBf16, const bp_cuda_segment *segments,
                const int64_t *table, int32_t numSegments,
                bp_cuda_adamw_constants c, bool packs) {
  const int64_t total = table[numSegments];
  for (int64_t chunk = blockIdx.x; chunk < total; chunk += gridDim.x) {
    const int32_t s = segmentOfChunk(table, numSegments, chunk);
    const bp_cuda_segment seg = segments[s];
    const ChunkRange r = chunkRange(seg, chunk - table[s]);
    const float decay = seg.decay ? c.decay_factor : 1.0f;
    forChunk(r, packs && r.packable, [&](int64_t i, auto width) {
      constexpr int W = decltype(width)::value;
      const int64_t master = i + r.toMaster, moment = i + r.toMoment;
      Pack<float, W> p = loadPack<W>(params, master);
      const Pack<float, W> g = loadPack<W>(grads, i);
      Pack<float, W> mm = loadPack<W>(m, moment);
      Pack<float, W> vv = loadPack<W>(v, moment);
      for (int k = 0; k < W; ++k)
        adamwElement(p.v[k], g.v[k], mm.v[k], vv.v[k], decay, c);
      storePack(params, master, p);
      storePack(m, moment, mm);
      storePack(v, moment, vv);
      if (paramsBf16) {
        Pack<bf16, W> b;
        for (int k = 0; k < W; ++k)
          store(b.v, k, p.v[k]);
        storePack(paramsBf16, i, b);
      }
    });
  }
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(adamwKernel);

extern "C" bp_status_t bp_cuda_adamw_step(float *params, const float *grads,
                                          float *m, float *v,
                                          bp_bf16_t *params_bf16,
                                          const bp_cuda_segment *segments,
                                          int32_t num_segments,
                                          const bp_cuda_adamw_constants *c,
                                          void *stream) {
  if (!allNonNull({params, grads, m, v, segments, c}) || num_segments <= 0)
    return BP_ERR_INVALID_ARGUMENT;
  const cudaStream_t s = asStream(stream);
  auto *table = static_cast<int64_t *>(bp_cuda_alloc(
      (static_cast<int64_t>(num_segments) + 1) * sizeof(int64_t), stream));
  if (!table)
    return BP_ERR_OUT_OF_MEMORY;
  bp_status_t status =
      launchChunkTable(segments, num_segments, table, kAdamWSegmentReporter, s,
                       "bp_cuda_adamw_step");
  if (status == BP_OK) {
    // 16-byte packs of fp32 and 8-byte packs of bf16 (a null bf16 pointer
    // is aligned).
    const bool packs = isAligned({params, grads, m, v}, 4 * sizeof(float)) &&
                       isAligned({params_bf16}, 4 * sizeof(bp_bf16_t));
    adamwKernel<<<kMultiTensorBlocks, kMultiTensorThreads, 0, s>>>(
        params, grads, m, v, params_bf16 ? asBf16(params_bf16) : nullptr,
        segments, table, num_segments, *c, packs);
    status = checkLaunch("bp_cuda_adamw_step");
  }
  bp_cuda_free(table, stream); // In stream order: after the kernels above.
  return status;
}
