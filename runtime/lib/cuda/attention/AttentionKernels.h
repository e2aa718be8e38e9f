//===- AttentionKernels.h - The attention kernels' launchers ----*- C++ -*-===//
//
// What the entry points (AttentionEntry.cpp: bitpipe/cuda.h's
// bp_cuda_attention_*) call: the launchers of the two kernel families, both
// FlashAttention-2's algorithm (online softmax over key blocks; a backward
// that recomputes the probabilities from the saved row log-sum-exp), neither
// ever holding a T x T matrix:
//  - FlashAttention.cu: bf16 on tensor cores (mma.sync m16n8k16), for head
//    dimensions that are a multiple of 8 up to 128 on 16-byte aligned
//    tensors (every GPT / BERT shape);
//  - SimtAttention.cu: fp32 arithmetic on CUDA cores, templated on the
//    element type: the fp32 kernels, and the bf16 fallback for any other
//    head dimension (up to kSimtMaxHeadDim).
// The launchers check nothing that the entry points check (pointers, sizes)
// and enqueue on `stream`; each returns checkLaunch's status.
//
// Dropout on the probabilities (attention_dropout_*) is a template flag of
// every kernel of both families: its instantiations draw the keep bit of
// each (b, h, i, j) they touch from one DropoutMask (core/Dropout.h) per
// thread, the forward after its row sums (lse stays the undropped P's) and
// before P V, the backward in P' for dV and in dS = P' dP' - P D. Without
// dropout the instantiations are attention's kernels, unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ATTENTION_ATTENTIONKERNELS_H
#define BITPIPE_RUNTIME_CUDA_ATTENTION_ATTENTIONKERNELS_H

#include "bitpipe/cuda.h"

#include <cmath>
#include <cstdint>

namespace bitpipe::runtime::cuda::attention {

/// One call's geometry, passed to the kernels by value. Sizes fit in int
/// (the entry points check it); element offsets are formed in int64_t
/// inside the kernels.
struct Shape {
  int B, T, H, nh, d;
  bool causal;
  /// Scores are scaled by 1 / sqrt(d), rounded to float as the CPU kernel
  /// rounds it.
  float scale;
};

inline Shape makeShape(int64_t B, int64_t T, int64_t H, int64_t nh,
                       bool causal) {
  const int d = static_cast<int>(H / nh);
  return {static_cast<int>(B), static_cast<int>(T), static_cast<int>(H),
          static_cast<int>(nh), d, causal,
          1.0f / std::sqrt(static_cast<float>(d))};
}

/// A call's dropout, passed to the kernels by value: the micro-batch's
/// random key (device memory, four words, which each thread reads to form
/// its mask), the site and p. No key: no dropout, attention's kernels.
struct DropoutArgs {
  const int32_t *key = nullptr;
  int32_t site = 0;
  float p = 0.0f;
  bool on() const { return key != nullptr; }
};

/// Whether a dropout call's own arguments are valid (Kernels.h,
/// attention_dropout_fwd), the roles' already checked: a mask that
/// core/Dropout.h draws (0 <= p < 1, 0 <= site < 2^24) over
/// [B, nh, T, T] elements, at most 2^40. Prints what was expected when
/// not, naming \p fn (AttentionEntry.cpp).
bool validDropout(const char *fn, int64_t B, int64_t T, int64_t nh,
                  int32_t site, float p);

/// The largest head dimension the CUDA-core kernels take (8 fp32 values of
/// a row per lane); the tensor-core kernels take up to 128.
constexpr int kSimtMaxHeadDim = 256;
constexpr int kFlashMaxHeadDim = 128;

/// Whether the tensor-core kernels take this head dimension: a multiple of
/// 8 (their 16-byte loads never straddle a head) and at most 128.
inline bool flashSupportsHeadDim(int d) {
  return d % 8 == 0 && d <= kFlashMaxHeadDim;
}

// Tensor-core kernels, bf16 (FlashAttention.cu). Every pointer must be
// 16-byte aligned and flashSupportsHeadDim(d). rowDot [B, nh, T] fp32 is
// scratch: rowDot[b, h, t] = dout[b, t, h] . out[b, t, h] (the backward's
// preprocessing, written here before it is read; the same D under
// dropout, whose out is P' V).
bp_status_t flashForward(const bp_bf16_t *qkv, bp_bf16_t *out, float *lse,
                         const Shape &s, const DropoutArgs &dropout,
                         void *stream);
bp_status_t flashBackward(const bp_bf16_t *qkv, const bp_bf16_t *out,
                          const bp_bf16_t *dout, const float *lse,
                          bp_bf16_t *dqkv, float *rowDot, const Shape &s,
                          const DropoutArgs &dropout, void *stream);

// CUDA-core kernels (SimtAttention.cu), for d <= kSimtMaxHeadDim.
bp_status_t simtForward(const float *qkv, float *out, float *lse,
                        const Shape &s, const DropoutArgs &dropout,
                        void *stream);
bp_status_t simtForward(const bp_bf16_t *qkv, bp_bf16_t *out, float *lse,
                        const Shape &s, const DropoutArgs &dropout,
                        void *stream);
bp_status_t simtBackward(const float *qkv, const float *out, const float *dout,
                         const float *lse, float *dqkv, float *rowDot,
                         const Shape &s, const DropoutArgs &dropout,
                         void *stream);
bp_status_t simtBackward(const bp_bf16_t *qkv, const bp_bf16_t *out,
                         const bp_bf16_t *dout, const float *lse,
                         bp_bf16_t *dqkv, float *rowDot, const Shape &s,
                         const DropoutArgs &dropout, void *stream);

// Each kernel's shared-memory allowance (cudaFuncSetAttribute, which also
// loads the kernel's module), for every instantiation: done at start-up by
// bp_cuda_prepare, so that no first launch in a step makes the call.
bp_status_t prepareFlashAttention();
bp_status_t prepareSimtAttention();

} // namespace bitpipe::runtime::cuda::attention

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_ATTENTIONKERNELS_H
