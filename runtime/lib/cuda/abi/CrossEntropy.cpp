//===- CrossEntropy.cpp - runtime.h's bp_cross_entropy_* on CUDA -----------===//
//
// logits and dlogits in the context's precision; the loss is one fp32 in
// device memory (written by a kernel: read it after the stream's work), in
// both. Labels are checked on the device (bitpipe/cuda.h). See Dispatch.h.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_cross_entropy_fwd(const float *logits,
                                            const int32_t *labels, float *loss,
                                            int64_t N, int64_t V,
                                            int32_t ignore_index) {
  return byPrecision(
      "bp_cross_entropy_fwd",
      [&](void *s) {
        return bp_cuda_cross_entropy_fwd_f32(logits, labels, loss, N, V,
                                             ignore_index, s);
      },
      [&](void *s) {
        return bp_cuda_cross_entropy_fwd(asBf16Bits(logits), labels, loss, N,
                                         V, ignore_index, s);
      });
}

extern "C" bp_status_t bp_cross_entropy_bwd(const float *logits,
                                            const int32_t *labels,
                                            const float *dloss, float *dlogits,
                                            int64_t N, int64_t V,
                                            int32_t ignore_index) {
  return byPrecision(
      "bp_cross_entropy_bwd",
      [&](void *s) {
        return bp_cuda_cross_entropy_bwd_f32(logits, labels, dloss, dlogits, N,
                                             V, ignore_index, s);
      },
      [&](void *s) {
        return bp_cuda_cross_entropy_bwd(asBf16Bits(logits), labels, dloss,
                                         asBf16Bits(dlogits), N, V,
                                         ignore_index, s);
      });
}
