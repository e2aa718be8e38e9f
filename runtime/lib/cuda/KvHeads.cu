//===- KvHeads.cu - Grouped-query q/k/v to and from multi-head layout ---===//
//
// Grouped-query attention on the CUDA target runs the multi-head attention
// kernels (abi/Attention.cpp) on an expanded copy: each key/value head is
// repeated for the nh / nkv query heads that read it (Hugging Face's
// repeat_kv), and the multi-head gradient is folded back by summing, per
// key/value head, over those query heads (in a fixed order, in fp32,
// rounded once). Memory: one [B, T, 3H] buffer per direction, which a
// grouped kernel would not need; the attention arithmetic is that of the
// tested multi-head kernels.
//
//===----------------------------------------------------------------------===//

#include "DeviceMath.cuh"
#include "EagerModules.h"
#include "Launch.h"
#include "core/ArgChecks.h"

using namespace bitpipe::runtime::cuda;
using bitpipe::runtime::allNonNull;
using bitpipe::runtime::allPositive;

namespace {

constexpr int kThreads = 256;

/// mha [rows, 3H] from gqa [rows, (nh + 2 nkv) d].
template <typename T>
__global__ void expandKernel(const T *gqa, T *mha, int64_t rows, int64_t H,
                             int64_t d, int64_t nkv, int64_t group) {
  const int64_t n = rows * 3 * H, width = H + 2 * nkv * d;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       k < n; k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = k / (3 * H), col = k % (3 * H);
    const int64_t part = col / H, within = col % H;
    const int64_t src =
        part == 0 ? within
                  : H + (part - 1) * nkv * d + (within / d / group) * d +
                        within % d;
    mha[k] = gqa[row * width + src];
  }
}

/// dgqa [rows, (nh + 2 nkv) d] from dmha [rows, 3H]: q copied, each k/v
/// head the sum over its group's query heads, in order.
template <typename T>
__global__ void foldKernel(const T *dmha, T *dgqa, int64_t rows, int64_t H,
                           int64_t d, int64_t nkv, int64_t group) {
  const int64_t width = H + 2 * nkv * d, n = rows * width;
  for (int64_t k = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
       k < n; k += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = k / width, col = k % width;
    const T *src = dmha + row * 3 * H;
    if (col < H) {
      dgqa[k] = src[col];
      continue;
    }
    const int64_t part = 1 + (col - H) / (nkv * d);
    const int64_t kvHead = ((col - H) % (nkv * d)) / d, c = col % d;
    float sum = 0.0f;
    for (int64_t r = 0; r < group; ++r)
      sum += load(src, part * H + (kvHead * group + r) * d + c);
    store(dgqa, k, sum);
  }
}

bool validHeads(int64_t rows, int64_t H, int64_t nh, int64_t nkv) {
  return allPositive({rows, H, nh, nkv}) && H % nh == 0 && nh % nkv == 0;
}

template <typename A>
bp_status_t expand(const A *gqa, A *mha, int64_t rows, int64_t H, int64_t nh,
                   int64_t nkv, void *stream, const char *name) {
  if (!allNonNull({gqa, mha}) || !validHeads(rows, H, nh, nkv))
    return BP_ERR_INVALID_ARGUMENT;
  expandKernel<<<gridBlocks(rows * 3 * H, kThreads), kThreads, 0,
                 asStream(stream)>>>(asDevice(gqa), asDevice(mha), rows, H,
                                     H / nh, nkv, nh / nkv);
  return checkLaunch(name);
}

template <typename A>
bp_status_t fold(const A *dmha, A *dgqa, int64_t rows, int64_t H, int64_t nh,
                 int64_t nkv, void *stream, const char *name) {
  if (!allNonNull({dmha, dgqa}) || !validHeads(rows, H, nh, nkv))
    return BP_ERR_INVALID_ARGUMENT;
  const int64_t d = H / nh;
  foldKernel<<<gridBlocks(rows * (H + 2 * nkv * d), kThreads), kThreads, 0,
               asStream(stream)>>>(asDevice(dmha), asDevice(dgqa), rows, H, d,
                                   nkv, nh / nkv);
  return checkLaunch(name);
}

} // namespace

BITPIPE_CUDA_LOAD_AT_START_UP(expandKernel<float>);

extern "C" bp_status_t bp_cuda_kv_heads_expand(const bp_bf16_t *gqa,
                                               bp_bf16_t *mha, int64_t rows,
                                               int64_t H, int64_t nh,
                                               int64_t nkv, void *stream) {
  return expand(gqa, mha, rows, H, nh, nkv, stream, "bp_cuda_kv_heads_expand");
}

extern "C" bp_status_t bp_cuda_kv_heads_fold(const bp_bf16_t *dmha,
                                             bp_bf16_t *dgqa, int64_t rows,
                                             int64_t H, int64_t nh,
                                             int64_t nkv, void *stream) {
  return fold(dmha, dgqa, rows, H, nh, nkv, stream, "bp_cuda_kv_heads_fold");
}

extern "C" bp_status_t bp_cuda_kv_heads_expand_f32(const float *gqa,
                                                   float *mha, int64_t rows,
                                                   int64_t H, int64_t nh,
                                                   int64_t nkv, void *stream) {
  return expand(gqa, mha, rows, H, nh, nkv, stream,
                "bp_cuda_kv_heads_expand_f32");
}

extern "C" bp_status_t bp_cuda_kv_heads_fold_f32(const float *dmha,
                                                 float *dgqa, int64_t rows,
                                                 int64_t H, int64_t nh,
                                                 int64_t nkv, void *stream) {
  return fold(dmha, dgqa, rows, H, nh, nkv, stream,
              "bp_cuda_kv_heads_fold_f32");
}
