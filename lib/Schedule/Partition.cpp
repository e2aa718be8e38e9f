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
//  2. The cut, among all cuts whose chunks all cost at most T: the one whose
//     chunk costs, sorted from largest to smallest, are lexicographically
//     smallest ("leximax"): the largest is T, then the second largest is as
//     small as it can be, and so on. Many cuts reach T, and taking the
//     earliest boundaries (what this step did before) piles the slack on
//     the first chunks: GPT-96 in 16 chunks got the embedding alone, one
//     layer alone, then six and seven layers per chunk. Leximax spreads it.
//     Leximax rather than the sum of squared costs because it only compares
//     chunk costs, each an exact difference of prefix sums, and never adds
//     squares (which round for FLOP counts of 1e12): equal cuts compare
//     exactly equal, so the remaining ties really go to the earliest starts.
//
//     It decomposes: adding the same chunk to two cuts keeps their leximax
//     order, so the best cut of layers [j, L) into k chunks is a first chunk
//     [j, e) plus the best cut of [e, L) into k-1. best[k][j] (a sorted
//     cost list) follows row by row, trying e in increasing order and
//     keeping the first of equal candidates, which makes the boundaries
//     read off from (K, 0) the earliest among the optimal cuts. Only chunks
//     within T are tried; each try compares two lists of at most K costs,
//     usually ending early: O(K^2 * L * w) time for chunks of at most w
//     layers, O(K * L) memory.
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

const char *bitpipe::sched::partitionUnitsName(PartitionUnits units) {
  return units == PartitionUnits::Halves ? "halves" : "layers";
}

std::optional<PartitionUnits>
bitpipe::sched::parsePartitionUnits(std::string_view name) {
  for (PartitionUnits units : {PartitionUnits::Layers, PartitionUnits::Halves})
    if (name == partitionUnitsName(units))
      return units;
  return std::nullopt;
}

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

/// `costs` (sorted largest first) with `c` inserted in order, into `out`.
void insertSorted(const std::vector<double> &costs, double c,
                  std::vector<double> &out) {
  out.clear();
  auto pos = std::upper_bound(costs.begin(), costs.end(), c,
                              [](double x, double y) { return x > y; });
  out.insert(out.end(), costs.begin(), pos);
  out.push_back(c);
  out.insert(out.end(), pos, costs.end());
}

/// Leximax order of two cost lists of the same length, each sorted largest
/// first: the first difference decides.
bool leximaxLess(const std::vector<double> &x, const std::vector<double> &y) {
  return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
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

  // Step 2: the leximax cut within the optimum, earliest on ties.
  // best[j] for the current k: the costs of the best cut of [j, L) into k
  // chunks within the optimum, largest first; empty when there is none.
  // next[k][j]: where its first chunk ends.
  std::vector<std::vector<double>> best(L + 1), prevBest(L + 1);
  std::vector<std::vector<int64_t>> next(K + 1,
                                         std::vector<int64_t>(L + 1, -1));
  for (int64_t j = 0; j < L; ++j)
    if (cost(j, L) <= optimum) {
      prevBest[j] = {cost(j, L)};
      next[1][j] = L;
    }
  std::vector<double> candidate;
  for (int64_t k = 2; k <= K; ++k) {
    for (int64_t j = 0; j <= L; ++j) {
      best[j].clear();
      // k chunks need k layers; a chunk only grows costlier with e.
      for (int64_t e = j + 1; e <= L - (k - 1) && cost(j, e) <= optimum;
           ++e) {
        if (prevBest[e].empty())
          continue;
        insertSorted(prevBest[e], cost(j, e), candidate);
        if (best[j].empty() || leximaxLess(candidate, best[j])) {
          best[j].swap(candidate);
          next[k][j] = e;
        }
      }
    }
    std::swap(best, prevBest);
  }
  assert(!prevBest[0].empty() && prevBest[0].front() == optimum);
  std::vector<int64_t> starts = {0};
  for (int64_t k = K, start = 0; k > 1; --k) {
    start = next[k][start];
    starts.push_back(start);
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
