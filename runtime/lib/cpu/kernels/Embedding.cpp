//===- Embedding.cpp - Token + position embedding ---------------*- C++ -*-===//
//
// Forward gathers a token row and adds the position row (none without a
// position table: rotary models); backward scatters the gradient back,
// adding when a token repeats (grouped by token, so that the rows go to
// the kernel threads and each row's sum keeps the positions' order).
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "GradChunk.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

#include <algorithm>
#include <atomic>
#include <cstdint>

using namespace bitpipe::runtime::cpu;

/// Whether every token id is in [0, V): an out-of-range id would read or
/// write outside wte.
static bool validTokens(const int32_t *tokens, int64_t B, int64_t T,
                        int64_t V) {
  for (int64_t i = 0; i < B * T; ++i)
    if (tokens[i] < 0 || tokens[i] >= V)
      return false;
  return true;
}

extern "C" BP_CPU_CLONES bp_status_t
bp_embedding_fwd(const int32_t *tokens, const float *wte, const float *wpe,
                 float *out, int64_t B, int64_t T, int64_t H, int64_t V) {
  BP_PROFILE_KERNEL(embedding_fwd);
  if (!BP_KERNEL_ARGS_VALID(embedding_fwd) || !validTokens(tokens, B, T, V))
    return BP_ERR_INVALID_ARGUMENT;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const float *tokRow = wte + static_cast<int64_t>(tokens[b * T + t]) * H;
      float *outRow = out + (b * T + t) * H;
      if (!wpe) {
        for (int64_t c = 0; c < H; ++c)
          outRow[c] = tokRow[c];
        continue;
      }
      const float *posRow = wpe + t * H;
      for (int64_t c = 0; c < H; ++c)
        outRow[c] = tokRow[c] + posRow[c];
    }
  }
  return BP_OK;
}

/// to[0, H) += from[0, H).
BP_CPU_CLONES static void addRow(float *to, const float *from, int64_t H) {
  for (int64_t c = 0; c < H; ++c)
    to[c] += from[c];
}

/// bp_embedding_bwd into accumulators of type Acc (GradChunk.h).
template <typename Acc>
static bp_status_t embeddingGrad(const int32_t *tokens, const float *dout,
                                 Acc *dwte, Acc *dwpe, int64_t B, int64_t T,
                                 int64_t H) {
  const int64_t n = B * T;
  if (n > int64_t(UINT32_MAX))
    return BP_ERR_INVALID_ARGUMENT; // positions are packed into 32 bits
  // The positions sorted by token, then by position: each token's row of
  // dwte sums its positions in order, as a sequential scatter-add would,
  // and distinct rows can go to different threads.
  Scratch<uint64_t> order(n);
  Scratch<int64_t> starts(n + 1);
  if (!order.ok() || !starts.ok())
    return BP_ERR_OUT_OF_MEMORY;
  uint64_t *byToken = order.get();
  for (int64_t i = 0; i < n; ++i)
    byToken[i] =
        (static_cast<uint64_t>(tokens[i]) << 32) | static_cast<uint64_t>(i);
  std::sort(byToken, byToken + n);
  int64_t groups = 0;
  for (int64_t i = 0; i < n; ++i)
    if (i == 0 || (byToken[i] >> 32) != (byToken[i - 1] >> 32))
      starts.get()[groups++] = i;
  starts.get()[groups] = n;

  std::atomic<bool> outOfMemory{false};
  parallelFor(groups, rowGrain(H), [&](int64_t first, int64_t last) {
    for (int64_t g = first; g < last; ++g) {
      const int64_t begin = starts.get()[g], end = starts.get()[g + 1];
      const int64_t token = static_cast<int64_t>(byToken[begin] >> 32);
      GradChunk<Acc> row(dwte + token * H, H);
      if (!row.ok()) {
        outOfMemory = true;
        return;
      }
      for (int64_t k = begin; k < end; ++k)
        addRow(row.data(),
               dout + static_cast<int64_t>(byToken[k] & 0xffffffffu) * H, H);
      row.finish();
    }
  });
  if (!dwpe || outOfMemory)
    return outOfMemory ? BP_ERR_OUT_OF_MEMORY : BP_OK;
  // dwpe[t] sums its batch rows in order.
  parallelFor(T, rowGrain(B * H), [&](int64_t first, int64_t last) {
    for (int64_t t = first; t < last; ++t) {
      GradChunk<Acc> row(dwpe + t * H, H);
      if (!row.ok()) {
        outOfMemory = true;
        return;
      }
      for (int64_t b = 0; b < B; ++b)
        addRow(row.data(), dout + (b * T + t) * H, H);
      row.finish();
    }
  });
  return outOfMemory ? BP_ERR_OUT_OF_MEMORY : BP_OK;
}

extern "C" bp_status_t bp_embedding_bwd(const int32_t *tokens,
                                        const float *dout, float *dwte,
                                        float *dwpe, int64_t B, int64_t T,
                                        int64_t H, int64_t V) {
  BP_PROFILE_KERNEL(embedding_bwd);
  if (!BP_KERNEL_ARGS_VALID(embedding_bwd) || !validTokens(tokens, B, T, V))
    return BP_ERR_INVALID_ARGUMENT;
  return embeddingGrad(tokens, dout, dwte, dwpe, B, T, H);
}

extern "C" bp_status_t bp_embedding_bwd_g64(const int32_t *tokens,
                                            const float *dout, double *dwte,
                                            double *dwpe, int64_t B, int64_t T,
                                            int64_t H, int64_t V) {
  BP_PROFILE_KERNEL(embedding_bwd);
  if (!BP_KERNEL_ARGS_VALID(embedding_bwd) || !validTokens(tokens, B, T, V))
    return BP_ERR_INVALID_ARGUMENT;
  return embeddingGrad(tokens, dout, dwte, dwpe, B, T, H);
}
