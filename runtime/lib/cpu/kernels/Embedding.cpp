//===- Embedding.cpp - Token + position embedding ---------------*- C++ -*-===//
//
// Forward gathers a token row and adds the position row (none without a
// position table: rotary models); backward scatters the gradient back,
// adding when a token repeats.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"

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

extern "C" BP_CPU_CLONES bp_status_t bp_embedding_bwd(const int32_t *tokens,
                                                      const float *dout,
                                                      float *dwte, float *dwpe,
                                                      int64_t B, int64_t T,
                                                      int64_t H, int64_t V) {
  BP_PROFILE_KERNEL(embedding_bwd);
  if (!BP_KERNEL_ARGS_VALID(embedding_bwd) || !validTokens(tokens, B, T, V))
    return BP_ERR_INVALID_ARGUMENT;
  // Sequential scatter-add: repeated tokens are summed without races because
  // the loop is single-threaded. A parallel version would partition by token.
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < T; ++t) {
      const float *g = dout + (b * T + t) * H;
      float *tokRow = dwte + static_cast<int64_t>(tokens[b * T + t]) * H;
      for (int64_t c = 0; c < H; ++c)
        tokRow[c] += g[c];
      if (!dwpe)
        continue;
      float *posRow = dwpe + t * H;
      for (int64_t c = 0; c < H; ++c)
        posRow[c] += g[c];
    }
  }
  return BP_OK;
}
