//===- GroupedAttention.cpp - runtime.h's bp_attention_gqa_* on CUDA -------===//
//
// Grouped-query attention runs the multi-head bp_attention_* of
// Attention.cpp (their kernels and their cuDNN choice) on a copy of qkv
// with every key/value head repeated for its query heads, and folds the
// multi-head gradient back (KvHeads.cu says why and what it costs). With as
// many key/value heads as heads the layouts are the same: no copy.
//
//===----------------------------------------------------------------------===//

#include "Dispatch.h"

#include "core/ArgChecks.h"

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::allNonNull;
using bitpipe::runtime::allPositive;

namespace {

bool validArgs(int64_t B, int64_t T, int64_t H, int64_t nh, int64_t nkv) {
  return allPositive({B, T, H, nh, nkv}) && H % nh == 0 && nh % nkv == 0;
}

/// A [B, T, 3H] buffer of the context's element type, from the pool on the
/// context's stream; null when out of memory.
float *multiHeadBuffer(int64_t B, int64_t T, int64_t H) {
  const int64_t element =
      bp_cuda_precision() == BP_PRECISION_BF16 ? 2 : int64_t(sizeof(float));
  return static_cast<float *>(
      bp_cuda_alloc(B * T * 3 * H * element, bp_cuda_stream()));
}

bp_status_t expand(const float *qkv, float *mha, int64_t rows, int64_t H,
                   int64_t nh, int64_t nkv) {
  return byPrecision(
      "bp_attention_gqa (expand)",
      [&](void *s) {
        return bp_cuda_kv_heads_expand_f32(qkv, mha, rows, H, nh, nkv, s);
      },
      [&](void *s) {
        return bp_cuda_kv_heads_expand(asBf16Bits(qkv), asBf16Bits(mha), rows,
                                       H, nh, nkv, s);
      });
}

} // namespace

extern "C" bp_status_t bp_attention_gqa_fwd(const float *qkv, float *out,
                                            float *lse, int64_t B, int64_t T,
                                            int64_t H, int64_t nh, int64_t nkv,
                                            int32_t causal) {
  if (!allNonNull({qkv, out, lse}) || !validArgs(B, T, H, nh, nkv))
    return BP_ERR_INVALID_ARGUMENT;
  if (nkv == nh)
    return bp_attention_fwd(qkv, out, lse, B, T, H, nh, causal);
  float *mha = multiHeadBuffer(B, T, H);
  if (!mha)
    return BP_ERR_OUT_OF_MEMORY;
  bp_status_t status = expand(qkv, mha, B * T, H, nh, nkv);
  if (status == BP_OK)
    status = bp_attention_fwd(mha, out, lse, B, T, H, nh, causal);
  bp_cuda_free(mha, bp_cuda_stream()); // In stream order: after the kernels.
  return status;
}

extern "C" bp_status_t bp_attention_gqa_bwd(const float *qkv, const float *out,
                                            const float *dout, const float *lse,
                                            float *dqkv, int64_t B, int64_t T,
                                            int64_t H, int64_t nh, int64_t nkv,
                                            int32_t causal) {
  if (!allNonNull({qkv, out, dout, lse, dqkv}) || !validArgs(B, T, H, nh, nkv))
    return BP_ERR_INVALID_ARGUMENT;
  if (nkv == nh)
    return bp_attention_bwd(qkv, out, dout, lse, dqkv, B, T, H, nh, causal);
  float *mha = multiHeadBuffer(B, T, H);
  float *dmha = mha ? multiHeadBuffer(B, T, H) : nullptr;
  bp_status_t status = BP_ERR_OUT_OF_MEMORY;
  if (dmha) {
    status = expand(qkv, mha, B * T, H, nh, nkv);
    if (status == BP_OK)
      status = bp_attention_bwd(mha, out, dout, lse, dmha, B, T, H, nh, causal);
    if (status == BP_OK)
      status = byPrecision(
          "bp_attention_gqa_bwd (fold)",
          [&](void *s) {
            return bp_cuda_kv_heads_fold_f32(dmha, dqkv, B * T, H, nh, nkv, s);
          },
          [&](void *s) {
            return bp_cuda_kv_heads_fold(asBf16Bits(dmha), asBf16Bits(dqkv),
                                         B * T, H, nh, nkv, s);
          });
  }
  bp_cuda_free(dmha, bp_cuda_stream());
  bp_cuda_free(mha, bp_cuda_stream());
  return status;
}
