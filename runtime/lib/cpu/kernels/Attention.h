//===- Attention.h - Blocked attention, internal entry points --*- C++ -*-===//
//
// The C ABI entry points bp_attention_{fwd,bwd} (nkv = nh),
// bp_attention_gqa_{fwd,bwd} and bp_attention_dropout_{fwd,bwd} call these
// with the default block sizes. They are exposed so that tests can use tiny
// blocks and cover partial blocks and the causal diagonal with small T.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_KERNELS_ATTENTION_H
#define BITPIPE_RUNTIME_CPU_KERNELS_ATTENTION_H

#include "bitpipe/runtime.h"

#include <cstdint>

namespace bitpipe::runtime {
struct DropoutMask;
} // namespace bitpipe::runtime

namespace bitpipe::runtime::cpu {

/// Rows of queries and of keys processed together. 64 x 64 float score
/// blocks (16 KiB) and the matching q/k/v tiles stay in L1/L2 for head
/// dimensions up to 128.
inline constexpr int64_t kAttentionBlockQ = 64;
inline constexpr int64_t kAttentionBlockK = 64;

/// bp_attention_gqa_fwd with explicit block sizes (each >= 1). With a
/// \p dropout mask (core/Dropout.h), bp_attention_dropout_fwd: the mask's
/// element ((b nh + h) T + i) T + j is query row i's probability of key j
/// in head h; the caller has checked that B nh T T fits the mask.
bp_status_t attentionForward(const float *qkv, float *out, float *lse,
                             int64_t B, int64_t T, int64_t H, int64_t nh,
                             int64_t nkv, bool causal, int64_t blockQ,
                             int64_t blockK,
                             const DropoutMask *dropout = nullptr);

/// bp_attention_gqa_bwd with explicit block sizes (each >= 1). The block
/// sizes need not match the forward's. \p dropout: the forward's mask.
bp_status_t attentionBackward(const float *qkv, const float *out,
                              const float *dout, const float *lse, float *dqkv,
                              int64_t B, int64_t T, int64_t H, int64_t nh,
                              int64_t nkv, bool causal, int64_t blockQ,
                              int64_t blockK,
                              const DropoutMask *dropout = nullptr);

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_ATTENTION_H
