//===- CrossEntropy.cpp - Softmax cross-entropy with ignore index -*- C++ -*-=//
//
// Mean over the rows whose label is not the ignore index (BERT's masked LM
// labels only the masked positions). A micro-batch with no labelled row has
// loss 0 and zero gradients rather than 0/0. The forward writes each row's
// softmax normaliser (RowLogSumExp) for the backward, which reads it instead
// of another pass over the row.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "VectorExp.h"
#include "core/CpuClones.h"
#include "core/KernelProfile.h"
#include "cpu/Parallel.h"

#include <cmath>
#include <cstdlib>

using namespace bitpipe::runtime::cpu;

namespace {
/// A row's log-sum-exp kept in two parts, lse = max + logSum, with
/// logSum = log(sum_j exp(row[j] - max)). Subtracting the max means no exp
/// overflows (the largest term is exp(0) = 1) and the sum is >= 1, so the log
/// never sees 0. The parts are kept apart because max + logSum, rounded to
/// float, loses the low bits of logSum when the logits are large (at 1e4 the
/// float spacing is ~1e-3); callers use (row[j] - max) - logSum instead,
/// where row[j] - max is exact for nearby values.
struct RowLogSumExp {
  float max;
  float logSum;
};
} // namespace

BP_CPU_CLONES static RowLogSumExp rowLogSumExp(const float *row, int64_t V) {
  float mx = row[0];
  for (int64_t j = 1; j < V; ++j)
    mx = row[j] > mx ? row[j] : mx;
  float sum = 0.0f;
  for (int64_t j = 0; j < V; ++j)
    sum += softmaxWeight(row[j] - mx);
  return {mx, std::log(sum)};
}

/// Checks the labels and counts the rows that are not ignored.
static bool countLabelled(const int32_t *labels, int64_t N, int64_t V,
                          int32_t ignoreIndex, int64_t &count) {
  count = 0;
  for (int64_t i = 0; i < N; ++i) {
    if (labels[i] == ignoreIndex)
      continue;
    if (labels[i] < 0 || labels[i] >= V)
      return false;
    ++count;
  }
  return true;
}

/// -log softmax(row)[label] of rows [first, last), 0 for ignored rows, and
/// the rows' normalisers (0 for ignored rows).
BP_CPU_CLONES static void rowLosses(const float *logits, const int32_t *labels,
                                    int64_t V, int32_t ignoreIndex,
                                    double *losses, float *rowMax,
                                    float *logSum, int64_t first,
                                    int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    if (labels[i] == ignoreIndex) {
      losses[i] = 0.0;
      rowMax[i] = logSum[i] = 0.0f;
      continue;
    }
    const float *row = logits + i * V;
    RowLogSumExp lse = rowLogSumExp(row, V);
    rowMax[i] = lse.max;
    logSum[i] = lse.logSum;
    // -log softmax(row)[label] = logSum - (row[label] - max).
    losses[i] = static_cast<double>(lse.logSum) - (row[labels[i]] - lse.max);
  }
}

extern "C" bp_status_t bp_cross_entropy_fwd(const float *logits,
                                            const int32_t *labels, float *loss,
                                            float *row_max, float *log_sum,
                                            int64_t N, int64_t V,
                                            int32_t ignore_index) {
  BP_PROFILE_KERNEL(cross_entropy_fwd);
  int64_t count;
  if (!BP_KERNEL_ARGS_VALID(cross_entropy_fwd) ||
      !countLabelled(labels, N, V, ignore_index, count))
    return BP_ERR_INVALID_ARGUMENT;
  // Rows on the kernel's threads, their losses summed in row order (and in
  // double: N can be B * T = tens of thousands, and the mean should not
  // depend on summation order much).
  double *losses = static_cast<double *>(
      std::malloc(static_cast<size_t>(N) * sizeof(double)));
  if (!losses)
    return BP_ERR_OUT_OF_MEMORY;
  parallelFor(N, rowGrain(V), [&](int64_t first, int64_t last) {
    rowLosses(logits, labels, V, ignore_index, losses, row_max, log_sum, first,
              last);
  });
  double total = 0.0;
  for (int64_t i = 0; i < N; ++i)
    if (labels[i] != ignore_index)
      total += losses[i];
  std::free(losses);
  *loss = count ? static_cast<float>(total / static_cast<double>(count)) : 0.0f;
  return BP_OK;
}

/// Rows [first, last) of dlogits, from the forward's normalisers.
BP_CPU_CLONES static void gradRows(const float *logits, const int32_t *labels,
                                   const float *rowMax, const float *logSum,
                                   float scale, float *dlogits, int64_t V,
                                   int32_t ignoreIndex, int64_t first,
                                   int64_t last) {
  for (int64_t i = first; i < last; ++i) {
    const float *row = logits + i * V;
    float *drow = dlogits + i * V;
    if (labels[i] == ignoreIndex) {
      for (int64_t j = 0; j < V; ++j)
        drow[j] = 0.0f;
      continue;
    }
    // Each element is read before the same element is written, so dlogits
    // may alias logits.
    const float max = rowMax[i], sum = logSum[i];
    for (int64_t j = 0; j < V; ++j)
      drow[j] = softmaxWeight((row[j] - max) - sum) * scale;
    drow[labels[i]] -= scale;
  }
}

extern "C" bp_status_t
bp_cross_entropy_bwd(const float *logits, const int32_t *labels,
                     const float *dloss, const float *row_max,
                     const float *log_sum, float *dlogits, int64_t N, int64_t V,
                     int32_t ignore_index) {
  BP_PROFILE_KERNEL(cross_entropy_bwd);
  int64_t count;
  if (!BP_KERNEL_ARGS_VALID(cross_entropy_bwd) ||
      !countLabelled(labels, N, V, ignore_index, count))
    return BP_ERR_INVALID_ARGUMENT;
  const float scale = count ? *dloss / static_cast<float>(count) : 0.0f;
  parallelFor(N, rowGrain(V), [&](int64_t first, int64_t last) {
    gradRows(logits, labels, row_max, log_sum, scale, dlogits, V, ignore_index,
             first, last);
  });
  return BP_OK;
}
