//===- Embedding.cu - Token + position embedding, bf16 / fp32 grads -----===//
//
// Forward: one block per (b, t) row gathers the token row and adds the
// position row. Backward: one block per position t walks the batch in
// order; the token-row gradient goes to dwte with fp32 atomicAdd (a token
// may repeat anywhere in the batch, and partitioning by token would need a
// sort), while dwpe[t] has exactly one owner thread per element, so it is
// summed in registers and added once, deterministically.
//
// Token ids are checked on the device (runtime.h checks them on the host):
// an id outside [0, V) is never dereferenced; it is recorded for
// bp_cuda_synchronize, and its output row is NaN.
//
// None of this has run on a GPU yet.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "Launch.h"
#include "core/ArgChecks.h"

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::allNonNull;
using bitpipe::runtime::allPositive;

namespace {

__global__ void embeddingFwdKernel(const int32_t *tokens, const bf16 *wte,
                                   const bf16 *wpe, bf16 *out, int64_t rows,
                                   int64_t T, int64_t H, int64_t V,
                                   int32_t *indexError) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int32_t token = tokens[row];
    bf16 *outRow = out + row * H;
    if (!inRange(token, V)) {
      if (threadIdx.x == 0)
        reportBadIndex(indexError, kEmbeddingFwdReporter);
      for (int64_t c = threadIdx.x; c < H; c += blockDim.x)
        store(outRow, c, NAN);
      continue;
    }
    const bf16 *tokRow = wte + static_cast<int64_t>(token) * H;
    const bf16 *posRow = wpe + (row % T) * H;
    for (int64_t c = threadIdx.x; c < H; c += blockDim.x)
      store(outRow, c, load(tokRow, c) + load(posRow, c));
  }
}

__global__ void embeddingBwdKernel(const int32_t *tokens, const bf16 *dout,
                                   float *dwte, float *dwpe, int64_t B,
                                   int64_t T, int64_t H, int64_t V,
                                   int32_t *indexError) {
  for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
    for (int64_t c = threadIdx.x; c < H; c += blockDim.x) {
      float pos = 0.0f;
      for (int64_t b = 0; b < B; ++b) {
        const int32_t token = tokens[b * T + t];
        if (!inRange(token, V)) {
          if (c == threadIdx.x)
            reportBadIndex(indexError, kEmbeddingBwdReporter);
          continue;
        }
        const float g = load(dout, (b * T + t) * H + c);
        atomicAdd(dwte + static_cast<int64_t>(token) * H + c, g);
        pos += g;
      }
      dwpe[t * H + c] += pos;
    }
  }
}

} // namespace

extern "C" bp_status_t bp_cuda_embedding_fwd(const int32_t *tokens,
                                             const bp_bf16_t *wte,
                                             const bp_bf16_t *wpe,
                                             bp_bf16_t *out, int64_t B,
                                             int64_t T, int64_t H, int64_t V,
                                             void *stream) {
  if (!allNonNull({tokens, wte, wpe, out}) || !allPositive({B, T, H, V}))
    return BP_ERR_INVALID_ARGUMENT;
  int32_t *indexError = indexErrorWord();
  if (!indexError)
    return BP_ERR_DEVICE;
  embeddingFwdKernel<<<gridBlocks(B * T, 1), rowThreads(H, 4), 0,
                       asStream(stream)>>>(tokens, asBf16(wte), asBf16(wpe),
                                           asBf16(out), B * T, T, H, V,
                                           indexError);
  return checkLaunch("bp_cuda_embedding_fwd");
}

extern "C" bp_status_t bp_cuda_embedding_bwd(const int32_t *tokens,
                                             const bp_bf16_t *dout,
                                             float *dwte, float *dwpe,
                                             int64_t B, int64_t T, int64_t H,
                                             int64_t V, void *stream) {
  if (!allNonNull({tokens, dout, dwte, dwpe}) || !allPositive({B, T, H, V}))
    return BP_ERR_INVALID_ARGUMENT;
  int32_t *indexError = indexErrorWord();
  if (!indexError)
    return BP_ERR_DEVICE;
  embeddingBwdKernel<<<gridBlocks(T, 1), rowThreads(H, 4), 0,
                       asStream(stream)>>>(tokens, asBf16(dout), dwte, dwpe,
                                           B, T, H, V, indexError);
  return checkLaunch("bp_cuda_embedding_bwd");
}
