//===- Embedding.cu - Token + position embedding, bf16 or fp32 ----------===//
//
// Forward: one block per (b, t) row gathers the token row and adds the
// position row, 16 bytes a thread per access where the rows allow. Backward:
// one block per position t walks the batch in order; the token-row gradient
// goes to dwte with fp32 atomicAdd (a token may repeat anywhere in the batch,
// and partitioning by token would need a sort), while dwpe[t] has exactly one
// owner thread per element, so it is summed in registers and added once,
// deterministically.
//
// Token ids are checked on the device (runtime.h checks them on the host):
// an id outside [0, V) is never dereferenced; it is recorded for
// bp_cuda_synchronize, and its output row is NaN.
//
// One kernel template per direction serves both element types of the
// activations and weights (DeviceMath.cuh's load / store); the gradient
// accumulators are fp32 in both precisions.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"

using namespace bitpipe::runtime::cuda;

namespace {

// Kernels are templates over N, the elements a thread moves per access
// (DeviceMath.cuh's forEachInRow): 16 bytes' worth when every row of the
// tables, the activations and the accumulators starts on a 16-byte
// boundary, else 1.

template <int N, typename E>
__global__ void embeddingFwdKernel(const int32_t *tokens, const E *wte,
                                   const E *wpe, E *out, int64_t rows,
                                   int64_t T, int64_t H, int64_t V,
                                   int32_t *indexError) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int32_t token = tokens[row];
    E *outRow = out + row * H;
    if (!inRange(token, V)) {
      if (threadIdx.x == 0)
        reportBadIndex(indexError, kEmbeddingFwdReporter);
      for (int64_t c = threadIdx.x; c < H; c += blockDim.x)
        store(outRow, c, NAN);
      continue;
    }
    const E *tokRow = wte + static_cast<int64_t>(token) * H;
    // No position table (rotary models): the token row alone.
    const E *posRow = wpe ? wpe + (row % T) * H : nullptr;
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      constexpr int W = decltype(w)::value;
      float v[W], p[W] = {};
      loadFloats(tokRow, c, v);
      if (posRow)
        loadFloats(posRow, c, p);
      for (int k = 0; k < W; ++k)
        v[k] += p[k];
      storeFloats(outRow, c, v);
    });
  }
}

template <int N, typename E>
__global__ void embeddingBwdKernel(const int32_t *tokens, const E *dout,
                                   float *dwte, float *dwpe, int64_t B,
                                   int64_t T, int64_t H, int64_t V,
                                   int32_t *indexError) {
  for (int64_t t = blockIdx.x; t < T; t += gridDim.x) {
    forEachInRow<N>(H, [&](int64_t c, auto w) {
      constexpr int W = decltype(w)::value;
      float pos[W] = {};
      for (int64_t b = 0; b < B; ++b) {
        const int32_t token = tokens[b * T + t];
        if (!inRange(token, V)) {
          reportBadIndex(indexError, kEmbeddingBwdReporter);
          continue;
        }
        float g[W];
        loadFloats(dout, (b * T + t) * H + c, g);
        atomicAddFloats(dwte, static_cast<int64_t>(token) * H + c, g);
        for (int k = 0; k < W; ++k)
          pos[k] += g[k];
      }
      if (dwpe) // NULL: no position table.
        addToFloats(dwpe, t * H + c, pos);
    });
  }
}

template <typename A>
bp_status_t embeddingFwd(const int32_t *tokens, const A *wte, const A *wpe,
                         A *out, int64_t B, int64_t T, int64_t H, int64_t V,
                         void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(embedding_fwd))
    return BP_ERR_INVALID_ARGUMENT;
  int32_t *indexError = indexErrorWord();
  if (!indexError)
    return BP_ERR_DEVICE;
  constexpr int kPack = kPack16<A>;
  return withPackWidth<kPack>(
      rowsPackable(H, kPack, {wte, wpe, out}), [&](auto w) -> bp_status_t {
        constexpr int P = decltype(w)::value;
        embeddingFwdKernel<P>
            <<<gridBlocks(B * T, 1), rowThreadsPacked(H, P), 0,
               asStream(stream)>>>(tokens, asDevice(wte), asDevice(wpe),
                                   asDevice(out), B * T, T, H, V, indexError);
        return checkLaunch(name);
      });
}

template <typename A>
bp_status_t embeddingBwd(const int32_t *tokens, const A *dout, float *dwte,
                         float *dwpe, int64_t B, int64_t T, int64_t H,
                         int64_t V, void *stream, const char *name) {
  if (!BP_KERNEL_ARGS_VALID(embedding_bwd))
    return BP_ERR_INVALID_ARGUMENT;
  int32_t *indexError = indexErrorWord();
  if (!indexError)
    return BP_ERR_DEVICE;
  constexpr int kPack = kPack16<A>;
  return withPackWidth<kPack>(
      rowsPackable(H, kPack, {dout, dwte, dwpe}), [&](auto w) -> bp_status_t {
        constexpr int P = decltype(w)::value;
        embeddingBwdKernel<P>
            <<<gridBlocks(T, 1), rowThreadsPacked(H, P), 0, asStream(stream)>>>(
                tokens, asDevice(dout), dwte, dwpe, B, T, H, V, indexError);
        return checkLaunch(name);
      });
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(embeddingFwdKernel<1, float>);

extern "C" bp_status_t bp_cuda_embedding_fwd(const int32_t *tokens,
                                             const bp_bf16_t *wte,
                                             const bp_bf16_t *wpe,
                                             bp_bf16_t *out, int64_t B,
                                             int64_t T, int64_t H, int64_t V,
                                             void *stream) {
  return embeddingFwd(tokens, wte, wpe, out, B, T, H, V, stream,
                      "bp_cuda_embedding_fwd");
}

extern "C" bp_status_t bp_cuda_embedding_bwd(const int32_t *tokens,
                                             const bp_bf16_t *dout,
                                             float *dwte, float *dwpe,
                                             int64_t B, int64_t T, int64_t H,
                                             int64_t V, void *stream) {
  return embeddingBwd(tokens, dout, dwte, dwpe, B, T, H, V, stream,
                      "bp_cuda_embedding_bwd");
}

extern "C" bp_status_t bp_cuda_embedding_fwd_f32(const int32_t *tokens,
                                                 const float *wte,
                                                 const float *wpe, float *out,
                                                 int64_t B, int64_t T,
                                                 int64_t H, int64_t V,
                                                 void *stream) {
  return embeddingFwd(tokens, wte, wpe, out, B, T, H, V, stream,
                      "bp_cuda_embedding_fwd_f32");
}

extern "C" bp_status_t bp_cuda_embedding_bwd_f32(const int32_t *tokens,
                                                 const float *dout,
                                                 float *dwte, float *dwpe,
                                                 int64_t B, int64_t T,
                                                 int64_t H, int64_t V,
                                                 void *stream) {
  return embeddingBwd(tokens, dout, dwte, dwpe, B, T, H, V, stream,
                      "bp_cuda_embedding_bwd_f32");
}
