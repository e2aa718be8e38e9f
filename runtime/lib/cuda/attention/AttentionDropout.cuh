//===- AttentionDropout.cuh - The kernels' dropout mask --------*- CUDA -*-===//
//
// What the dropout instantiations of FlashAttention.cu and SimtAttention.cu
// share: each thread's DropoutMask (core/Dropout.h), drawn once from the
// call's key, and the mask's element index of a (query, key) probability,
// ((b nh + h) T + query) T + key over the call's [B, nh, T, T] (Kernels.h,
// attention_dropout_fwd).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ATTENTION_ATTENTIONDROPOUT_CUH
#define BITPIPE_RUNTIME_CUDA_ATTENTION_ATTENTIONDROPOUT_CUH

#include "AttentionKernels.h"
#include "core/Dropout.h"

#include <cstdint>

namespace bitpipe::runtime::cuda::attention {

/// The thread's mask under dropout (the key's four words read from device
/// memory), an unused one without.
template <bool kDropout>
__device__ inline DropoutMask maskOf(const DropoutArgs &drop) {
  if constexpr (kDropout)
    return dropoutMask(drop.key, drop.site, drop.p);
  else
    return DropoutMask{};
}

/// The mask's element of (query, key) in head h of batch b. Rows and keys
/// past T (which the kernels compute on and never store) give indices past
/// the call's elements, whose bits nothing reads.
__device__ inline uint64_t dropoutElement(const Shape &s, int b, int h,
                                          int query, int key) {
  return ((static_cast<uint64_t>(b) * s.nh + h) * s.T + query) * s.T + key;
}

/// The entry point a launch error names.
template <bool kDropout> constexpr const char *forwardName() {
  return kDropout ? "bp_cuda_attention_dropout_fwd" : "bp_cuda_attention_fwd";
}
template <bool kDropout> constexpr const char *backwardName() {
  return kDropout ? "bp_cuda_attention_dropout_bwd" : "bp_cuda_attention_bwd";
}

} // namespace bitpipe::runtime::cuda::attention

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_ATTENTIONDROPOUT_CUH
