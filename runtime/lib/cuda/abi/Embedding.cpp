//===- Embedding.cpp - runtime.h's bp_embedding_* on CUDA ------------------===//
//
// wte, wpe, out and dout in the context's precision; the gradients dwte and
// dwpe are fp32 accumulators in both. Token ids are checked on the device
// (bitpipe/cuda.h), not before the call as on the CPU. See Dispatch.h.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

using namespace bitpipe::runtime::cuda;

extern "C" bp_status_t bp_embedding_fwd(const int32_t *tokens, const float *wte,
                                        const float *wpe, float *out, int64_t B,
                                        int64_t T, int64_t H, int64_t V) {
  return byPrecision(
      "bp_embedding_fwd",
      [&](void *s) {
        return bp_cuda_embedding_fwd_f32(tokens, wte, wpe, out, B, T, H, V, s);
      },
      [&](void *s) {
        return bp_cuda_embedding_fwd(tokens, asBf16Bits(wte), asBf16Bits(wpe),
                                     asBf16Bits(out), B, T, H, V, s);
      });
}

extern "C" bp_status_t bp_embedding_bwd(const int32_t *tokens,
                                        const float *dout, float *dwte,
                                        float *dwpe, int64_t B, int64_t T,
                                        int64_t H, int64_t V) {
  return byPrecision(
      "bp_embedding_bwd",
      [&](void *s) {
        return bp_cuda_embedding_bwd_f32(tokens, dout, dwte, dwpe, B, T, H, V,
                                         s);
      },
      [&](void *s) {
        return bp_cuda_embedding_bwd(tokens, asBf16Bits(dout), dwte, dwpe, B,
                                     T, H, V, s);
      });
}
