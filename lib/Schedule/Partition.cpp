//===- Partition.cpp - Contiguous, balanced cuts of a layer list ----------===//
//
// balancePartition works in two steps:
//
//  1. The optimum T. D[k][i], the best maximum cost of the first i layers in
//     k chunks, is min over j of max(D[k-1][j], cost(j, i)): the first k-1
//     chunks take layers [0, j), the last one [j, i). D[k-1][j] does not
//     decrease with j and cost(j, i) does not increase with j, so the
//     minimum sits where the two cross: at the smallest j with
//     D[k-1][j] >= cost(j, i), or just before it. That crossing moves right
//     as i grows (cost(j, i) only grows with i), so one pointer sweeps each
//     row: O(L) per k, O(K * L) in all.
//
//  2. The cut. From the front, each chunk ends at the earliest layer that
//     keeps it within T and still lets the remaining layers be cut into the
//     remaining chunks within T. "Still lets" is a table: the fewest chunks
//     of cost <= T that cover layers [e, L), found by making every chunk as
//     long as T allows (greedy is optimal for that count), and at least as
//     many layers as chunks left (a chunk can always be split further
//     without exceeding T: costs are non-negative).
//
// Every chunk cost, in both steps and in the result, is a difference of the
// same prefix sums, so the optimum of step 1 is exactly reachable in step 2
// and Partition::maxCost equals it bit for bit.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Partition.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <string>

using namespace bitpipe::sched;

namespace {

/// Why `costs` cannot be partitioned, or "" when they can.
std::string checkCosts(const std::vector<double> &costs) {
  if (costs.empty())
    return "cannot partition a model with no layers";
  for (size_t i = 0; i < costs.size(); ++i)
    if (!std::isfinite(costs[i]) || costs[i] < 0)
      return "layer " + std::to_string(i) + " has cost " +
             std::to_string(costs[i]) +
             ": layer costs must be finite and non-negative";
  return "";
}

/// S[i] = cost of layers [0, i); cost of [j, i) is S[i] - S[j].
std::vector<double> prefixSums(const std::vector<double> &costs) {
  std::vector<double> sums(costs.size() + 1, 0.0);
  for (size_t i = 0; i < costs.size(); ++i)
    sums[i + 1] = sums[i] + costs[i];
  return sums;
}

Partition makePartition(std::vector<int64_t> starts,
                        const std::vector<double> &sums) {
  Partition p;
  p.starts = std::move(starts);
  p.numLayers = static_cast<int64_t>(sums.size()) - 1;
  for (int64_t k = 0; k < p.numChunks(); ++k) {
    double cost = sums[p.lastLayer(k) + 1] - sums[p.firstLayer(k)];
    p.chunkCosts.push_back(cost);
    p.maxCost = std::max(p.maxCost, cost);
  }
  return p;
}

} // namespace

int64_t Partition::chunkOf(int64_t layer) const {
  auto it = std::upper_bound(starts.begin(), starts.end(), layer);
  return static_cast<int64_t>(it - starts.begin()) - 1;
}

double Partition::imbalance() const {
  double total = 0;
  for (double c : chunkCosts)
    total += c;
  if (total <= 0)
    return 1.0;
  return maxCost / (total / static_cast<double>(numChunks()));
}

Result<Partition> bitpipe::sched::balancePartition(
    const std::vector<double> &layerCosts, int64_t numChunks) {
  if (std::string error = checkCosts(layerCosts); !error.empty())
    return Result<Partition>::failure(error);
  const int64_t L = static_cast<int64_t>(layerCosts.size());
  const int64_t K = numChunks;
  if (K < 1)
    return Result<Partition>::failure(
        "the number of chunks must be at least 1, got " + std::to_string(K));
  if (K > L)
    return Result<Partition>::failure(
        "cannot cut " + std::to_string(L) + " layers into " +
        std::to_string(K) +
        " chunks: every chunk needs at least one layer");

  const std::vector<double> S = prefixSums(layerCosts);
  auto cost = [&](int64_t from, int64_t to) { return S[to] - S[from]; };

  // Step 1: the optimum. prev[i] = D[k-1][i], defined for i >= k-1.
  std::vector<double> prev(S), cur(L + 1, 0.0); // D[1][i] = S[i].
  for (int64_t k = 2; k <= K; ++k) {
    int64_t cross = k - 1;
    for (int64_t i = k; i <= L; ++i) {
      // The smallest j in [k-1, i-1] with prev[j] >= cost(j, i), or i.
      while (cross <= i - 1 && prev[cross] < cost(cross, i))
        ++cross;
      double best = std::numeric_limits<double>::infinity();
      if (cross <= i - 1)
        best = prev[cross]; // max(prev, cost) is prev there
      if (cross - 1 >= k - 1)
        best = std::min(best, cost(cross - 1, i)); // and cost just before
      cur[i] = best;
    }
    std::swap(prev, cur);
  }
  const double optimum = prev[L];

  // Step 2: the earliest cut that reaches the optimum.
  // fewest[e]: fewest chunks of cost <= optimum covering layers [e, L).
  std::vector<int64_t> fewest(L + 1, 0);
  for (int64_t e = L - 1, end = L; e >= 0; --e) {
    // The longest chunk from e within the optimum ends at `end`; it can only
    // move left as e does. A single layer always fits: the optimum is at
    // least the cost of the chunk holding it.
    while (end > e + 1 && cost(e, end) > optimum)
      --end;
    fewest[e] = 1 + fewest[end];
  }
  std::vector<int64_t> starts = {0};
  for (int64_t k = 0, start = 0; k + 1 < K; ++k) {
    const int64_t chunksLeft = K - 1 - k;
    int64_t end = start + 1;
    while (fewest[end] > chunksLeft)
      ++end;
    // By induction a valid end exists from `start`; the earliest one with
    // few enough chunks after it is within the optimum and leaves enough
    // layers, because fewest[] only falls as `end` grows.
    assert(cost(start, end) <= optimum && L - end >= chunksLeft);
    starts.push_back(end);
    start = end;
  }
  return Result<Partition>::success(makePartition(std::move(starts), S));
}

Result<Partition>
bitpipe::sched::partitionAt(const std::vector<double> &layerCosts,
                            const std::vector<int64_t> &boundaries) {
  if (std::string error = checkCosts(layerCosts); !error.empty())
    return Result<Partition>::failure(error);
  const int64_t L = static_cast<int64_t>(layerCosts.size());
  std::vector<int64_t> starts = {0};
  for (int64_t b : boundaries) {
    if (b < 1 || b > L - 1)
      return Result<Partition>::failure(
          "boundary " + std::to_string(b) + " is out of range: " +
          (L == 1 ? std::string("a model of one layer cannot be cut")
                  : "a chunk can start only at layers 1.." +
                        std::to_string(L - 1) +
                        " (layer 0 always starts the first chunk)"));
    if (b <= starts.back() && starts.size() > 1)
      return Result<Partition>::failure(
          "boundaries must be strictly increasing: " + std::to_string(b) +
          " follows " + std::to_string(starts.back()));
    starts.push_back(b);
  }
  return Result<Partition>::success(
      makePartition(std::move(starts), prefixSums(layerCosts)));
}
