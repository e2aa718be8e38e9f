//===- GroupedAttention.cpp - runtime.h's bp_attention_gqa_* on CUDA -------===//
//
// Grouped-query attention runs the multi-head bp_attention_* of
// Attention.cpp (their kernels and their cuDNN choice) on a copy of qkv
// with every key/value head repeated for its query heads, and folds the
// multi-head gradient back (KvHeads.cu says why and what it costs). With as
// many key/value heads as heads the layouts are the same: no copy.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"

namespace {

/// The precision-dependent half of a grouped-query call: the element type,
/// the kv-head kernels and the multi-head attention of that precision.
template <typename E> struct Precision;
template <> struct Precision<float> {
  static constexpr auto expand = bp_cuda_kv_heads_expand_f32;
  static constexpr auto fold = bp_cuda_kv_heads_fold_f32;
  static constexpr auto forward = bp_attention_fwd;
  static constexpr auto backward = bp_attention_bwd;
};
template <> struct Precision<bp_bf16_t> {
  static constexpr auto expand = bp_cuda_kv_heads_expand;
  static constexpr auto fold = bp_cuda_kv_heads_fold;
  static constexpr auto forward = bp_attention_fwd_bf16;
  static constexpr auto backward = bp_attention_bwd_bf16;
};

/// A [B, T, 3H] buffer of \p E, from the pool on the context's stream; null
/// when out of memory.
template <typename E> E *multiHeadBuffer(int64_t B, int64_t T, int64_t H) {
  return static_cast<E *>(bp_cuda_alloc(
      B * T * 3 * H * static_cast<int64_t>(sizeof(E)), bp_cuda_stream()));
}

template <typename E>
bp_status_t forward(const E *qkv, E *out, float *lse, int64_t B, int64_t T,
                    int64_t H, int64_t nh, int64_t nkv, int32_t causal) {
  if (!BP_KERNEL_ARGS_VALID(attention_gqa_fwd) || H % nh != 0 || nh % nkv != 0)
    return BP_ERR_INVALID_ARGUMENT;
  if (nkv == nh)
    return Precision<E>::forward(qkv, out, lse, B, T, H, nh, causal);
  E *mha = multiHeadBuffer<E>(B, T, H);
  if (!mha)
    return BP_ERR_OUT_OF_MEMORY;
  bp_status_t status =
      Precision<E>::expand(qkv, mha, B * T, H, nh, nkv, bp_cuda_stream());
  if (status == BP_OK)
    status = Precision<E>::forward(mha, out, lse, B, T, H, nh, causal);
  bp_cuda_free(mha, bp_cuda_stream()); // In stream order: after the kernels.
  return status;
}

template <typename E>
bp_status_t backward(const E *qkv, const E *out, const E *dout,
                     const float *lse, E *dqkv, int64_t B, int64_t T, int64_t H,
                     int64_t nh, int64_t nkv, int32_t causal) {
  if (!BP_KERNEL_ARGS_VALID(attention_gqa_bwd) || H % nh != 0 || nh % nkv != 0)
    return BP_ERR_INVALID_ARGUMENT;
  if (nkv == nh)
    return Precision<E>::backward(qkv, out, dout, lse, dqkv, B, T, H, nh,
                                  causal);
  E *mha = multiHeadBuffer<E>(B, T, H);
  E *dmha = mha ? multiHeadBuffer<E>(B, T, H) : nullptr;
  bp_status_t status = BP_ERR_OUT_OF_MEMORY;
  if (dmha) {
    status =
        Precision<E>::expand(qkv, mha, B * T, H, nh, nkv, bp_cuda_stream());
    if (status == BP_OK)
      status = Precision<E>::backward(mha, out, dout, lse, dmha, B, T, H, nh,
                                      causal);
    if (status == BP_OK)
      status =
          Precision<E>::fold(dmha, dqkv, B * T, H, nh, nkv, bp_cuda_stream());
  }
  bp_cuda_free(dmha, bp_cuda_stream());
  bp_cuda_free(mha, bp_cuda_stream());
  return status;
}

} // namespace

extern "C" bp_status_t
bp_attention_gqa_fwd(BP_KERNEL_PARAMS(F32, attention_gqa_fwd)) {
  return forward(BP_KERNEL_ARG_NAMES(attention_gqa_fwd));
}
extern "C" bp_status_t
bp_attention_gqa_fwd_bf16(BP_KERNEL_PARAMS(BF16, attention_gqa_fwd)) {
  return forward(BP_KERNEL_ARG_NAMES(attention_gqa_fwd));
}
extern "C" bp_status_t
bp_attention_gqa_bwd(BP_KERNEL_PARAMS(F32, attention_gqa_bwd)) {
  return backward(BP_KERNEL_ARG_NAMES(attention_gqa_bwd));
}
extern "C" bp_status_t
bp_attention_gqa_bwd_bf16(BP_KERNEL_PARAMS(BF16, attention_gqa_bwd)) {
  return backward(BP_KERNEL_ARG_NAMES(attention_gqa_bwd));
}
