//===- Attention.cpp - runtime.h's bp_attention_* on the CUDA target ------===//
//
// The ABI compiled stage functions call (runtime.h) has no stream and types
// activations `float *`; on the CUDA target the execution context supplies
// both (bitpipe/cuda.h, "The execution context"): the pointers are device
// pointers whose elements are bf16 under BP_PRECISION_BF16, enqueued on
// bp_cuda_stream(). lse is fp32 in both precisions.
//
// This calls the project's own kernels; whether cuDNN's fused attention
// serves some shapes instead is chosen elsewhere.
//
// None of this has run on a GPU yet.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"
#include "bitpipe/program.h"

#include <cstdio>

namespace {
const bp_bf16_t *asBf16Bits(const float *p) {
  return reinterpret_cast<const bp_bf16_t *>(p);
}
bp_bf16_t *asBf16Bits(float *p) { return reinterpret_cast<bp_bf16_t *>(p); }

/// A precision that is neither fp32 nor bf16 is a broken set-up (the
/// executor sets it from the manifest): an error naming the call.
bp_status_t badPrecision(const char *what) {
  std::fprintf(stderr,
               "bitpipe: cuda: %s: the execution context's precision is %d; "
               "expected BP_PRECISION_FP32 (%d) or BP_PRECISION_BF16 (%d), "
               "set by bp_cuda_set_precision\n",
               what, static_cast<int>(bp_cuda_precision()),
               static_cast<int>(BP_PRECISION_FP32),
               static_cast<int>(BP_PRECISION_BF16));
  std::fflush(stderr);
  return BP_ERR_INVALID_ARGUMENT;
}
} // namespace

extern "C" bp_status_t bp_attention_fwd(const float *qkv, float *out,
                                        float *lse, int64_t B, int64_t T,
                                        int64_t H, int64_t nh,
                                        int32_t causal) {
  switch (bp_cuda_precision()) {
  case BP_PRECISION_BF16:
    return bp_cuda_attention_fwd(asBf16Bits(qkv), asBf16Bits(out), lse, B, T,
                                 H, nh, causal, bp_cuda_stream());
  case BP_PRECISION_FP32:
    return bp_cuda_attention_fwd_f32(qkv, out, lse, B, T, H, nh, causal,
                                     bp_cuda_stream());
  default:
    return badPrecision("bp_attention_fwd");
  }
}

extern "C" bp_status_t bp_attention_bwd(const float *qkv, const float *out,
                                        const float *dout, const float *lse,
                                        float *dqkv, int64_t B, int64_t T,
                                        int64_t H, int64_t nh,
                                        int32_t causal) {
  switch (bp_cuda_precision()) {
  case BP_PRECISION_BF16:
    return bp_cuda_attention_bwd(asBf16Bits(qkv), asBf16Bits(out),
                                 asBf16Bits(dout), lse, asBf16Bits(dqkv), B,
                                 T, H, nh, causal, bp_cuda_stream());
  case BP_PRECISION_FP32:
    return bp_cuda_attention_bwd_f32(qkv, out, dout, lse, dqkv, B, T, H, nh,
                                     causal, bp_cuda_stream());
  default:
    return badPrecision("bp_attention_bwd");
  }
}
