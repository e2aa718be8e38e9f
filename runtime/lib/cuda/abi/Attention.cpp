//===- Attention.cpp - runtime.h's bp_attention_* on the CUDA target ------===//
//
// The attention of compiled stage functions, on the device, on the
// execution context's stream (Kernels.cpp says the rest): fp32 runs the
// project's own kernels; bf16 runs cuDNN's fused attention
// where cuDNN supports the shape, else the project's own
// FlashAttention-2-style kernels. BITPIPE_CUDA_ATTENTION=own or =cudnn
// overrides that choice (read once; "cudnn" still falls back, with a
// message, where cuDNN cannot run the shape).
//
// Why cuDNN first: on Hopper its fused engines use the wgmma instructions
// that the project's mma.sync kernels do not, and its backward does five
// matrix products where ours, deterministic, does seven. That is an
// expectation: bench/gpu/check.sh times both on the H200
// (bench/RESULTS.md), and the default follows what it finds. Both
// compute the same lse (natural log of the scaled scores), so a forward of
// one and a backward of the other agree.
//
// Attention with dropout (bp_attention_dropout_*) never runs cuDNN's at
// p > 0: cuDNN's dropout draws its own random numbers, not the mask of
// docs/training-semantics.md, so a GPU run would drop other elements than a
// CPU run, and a recomputed forward others than its backward assumes. At
// p = 0 it is bp_attention_*, cuDNN's choice included.
//
//===----------------------------------------------------------------------===//

#include "../attention/AttentionKernels.h"
#include "bitpipe/cuda.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using bitpipe::runtime::cuda::attention::validDropout;

namespace {

enum class AttentionChoice { Auto, Own, Cudnn };

/// BITPIPE_CUDA_ATTENTION, read once; an unknown value is reported and
/// treated as unset.
AttentionChoice attentionChoice() {
  static const AttentionChoice choice = [] {
    const char *v = std::getenv("BITPIPE_CUDA_ATTENTION");
    if (!v || !*v || std::strcmp(v, "auto") == 0)
      return AttentionChoice::Auto;
    if (std::strcmp(v, "own") == 0)
      return AttentionChoice::Own;
    if (std::strcmp(v, "cudnn") == 0)
      return AttentionChoice::Cudnn;
    std::fprintf(stderr,
                 "bitpipe: cuda: BITPIPE_CUDA_ATTENTION is '%s'; expected "
                 "auto, own or cudnn (using auto)\n",
                 v);
    return AttentionChoice::Auto;
  }();
  return choice;
}

/// Whether a bf16 call of this shape goes to cuDNN.
bool useCudnn(int64_t B, int64_t T, int64_t H, int64_t nh, int32_t causal) {
  if (attentionChoice() == AttentionChoice::Own)
    return false;
  // bp_cudnn_attention_supported caches its answer per shape and says why
  // once when it is no.
  return bp_cudnn_attention_supported(B, T, H, nh, causal) != 0;
}

} // namespace

extern "C" void bp_cuda_prepare_attention(int64_t B, int64_t T, int64_t H,
                                          int64_t nh, int32_t causal) {
  (void)useCudnn(B, T, H, nh, causal);
}

extern "C" bp_status_t bp_attention_fwd(const float *qkv, float *out,
                                        float *lse, int64_t B, int64_t T,
                                        int64_t H, int64_t nh,
                                        int32_t causal) {
  return bp_cuda_attention_fwd_f32(qkv, out, lse, B, T, H, nh, causal,
                                   bp_cuda_stream());
}

extern "C" bp_status_t bp_attention_fwd_bf16(const bp_bf16_t *qkv,
                                             bp_bf16_t *out, float *lse,
                                             int64_t B, int64_t T, int64_t H,
                                             int64_t nh, int32_t causal) {
  void *s = bp_cuda_stream();
  if (useCudnn(B, T, H, nh, causal))
    return bp_cudnn_attention_fwd(qkv, out, lse, B, T, H, nh, causal, s);
  return bp_cuda_attention_fwd(qkv, out, lse, B, T, H, nh, causal, s);
}

extern "C" bp_status_t bp_attention_bwd(const float *qkv, const float *out,
                                        const float *dout, const float *lse,
                                        float *dqkv, int64_t B, int64_t T,
                                        int64_t H, int64_t nh,
                                        int32_t causal) {
  return bp_cuda_attention_bwd_f32(qkv, out, dout, lse, dqkv, B, T, H, nh,
                                   causal, bp_cuda_stream());
}

extern "C" bp_status_t bp_attention_bwd_bf16(const bp_bf16_t *qkv,
                                             const bp_bf16_t *out,
                                             const bp_bf16_t *dout,
                                             const float *lse, bp_bf16_t *dqkv,
                                             int64_t B, int64_t T, int64_t H,
                                             int64_t nh, int32_t causal) {
  void *s = bp_cuda_stream();
  if (useCudnn(B, T, H, nh, causal))
    return bp_cudnn_attention_bwd(qkv, out, dout, lse, dqkv, B, T, H, nh,
                                  causal, s);
  return bp_cuda_attention_bwd(qkv, out, dout, lse, dqkv, B, T, H, nh, causal,
                               s);
}

extern "C" bp_status_t
bp_attention_dropout_fwd(const float *qkv, float *out, float *lse, int64_t B,
                         int64_t T, int64_t H, int64_t nh, int32_t causal,
                         const int32_t *key, int32_t site, float p) {
  return bp_cuda_attention_dropout_fwd_f32(qkv, out, lse, B, T, H, nh, causal,
                                           key, site, p, bp_cuda_stream());
}

extern "C" bp_status_t
bp_attention_dropout_fwd_bf16(const bp_bf16_t *qkv, bp_bf16_t *out, float *lse,
                              int64_t B, int64_t T, int64_t H, int64_t nh,
                              int32_t causal, const int32_t *key, int32_t site,
                              float p) {
  void *s = bp_cuda_stream();
  if (p == 0.0f && useCudnn(B, T, H, nh, causal)) {
    if (!BP_KERNEL_ARGS_VALID(attention_dropout_fwd) ||
        !validDropout("bp_attention_dropout_fwd_bf16", B, T, nh, site, p))
      return BP_ERR_INVALID_ARGUMENT;
    return bp_cudnn_attention_fwd(qkv, out, lse, B, T, H, nh, causal, s);
  }
  return bp_cuda_attention_dropout_fwd(qkv, out, lse, B, T, H, nh, causal, key,
                                       site, p, s);
}

extern "C" bp_status_t
bp_attention_dropout_bwd(const float *qkv, const float *out, const float *dout,
                         const float *lse, float *dqkv, int64_t B, int64_t T,
                         int64_t H, int64_t nh, int32_t causal,
                         const int32_t *key, int32_t site, float p) {
  return bp_cuda_attention_dropout_bwd_f32(qkv, out, dout, lse, dqkv, B, T, H,
                                           nh, causal, key, site, p,
                                           bp_cuda_stream());
}

extern "C" bp_status_t bp_attention_dropout_bwd_bf16(
    const bp_bf16_t *qkv, const bp_bf16_t *out, const bp_bf16_t *dout,
    const float *lse, bp_bf16_t *dqkv, int64_t B, int64_t T, int64_t H,
    int64_t nh, int32_t causal, const int32_t *key, int32_t site, float p) {
  void *s = bp_cuda_stream();
  if (p == 0.0f && useCudnn(B, T, H, nh, causal)) {
    if (!BP_KERNEL_ARGS_VALID(attention_dropout_bwd) ||
        !validDropout("bp_attention_dropout_bwd_bf16", B, T, nh, site, p))
      return BP_ERR_INVALID_ARGUMENT;
    return bp_cudnn_attention_bwd(qkv, out, dout, lse, dqkv, B, T, H, nh,
                                  causal, s);
  }
  return bp_cuda_attention_dropout_bwd(qkv, out, dout, lse, dqkv, B, T, H, nh,
                                       causal, key, site, p, s);
}
