//===- Interleaved1F1B.cpp - Megatron-LM's interleaved 1F1B ---------------===//
//
// Each rank holds v chunks (stage c*D + r for chunk c). Micro-batches go
// through the chunks in groups of D: the forward order of a rank is, per
// group, chunk 0 for the group's micro-batches, then chunk 1, and so on; the
// backward order is the same with the chunks reversed. A rank runs
// 2(D-1-r) + (v-1)D forwards before its first backward, then alternates.
// This is Megatron-LM's order (schedules.py, forward_backward_pipelining_
// with_interleaving, microbatch_group_size_per_vp_stage = D); when N is not
// a multiple of D its last group is smaller, as Megatron's schedule table
// does.
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Verifier.h"

#include <algorithm>
#include <utility>

namespace bitpipe::sched {

Result<Schedule> generateInterleaved1F1B(int devices, int microbatches,
                                         int chunksPerDevice) {
  const std::string name = "interleaved-1f1b";
  Result<Schedule> made =
      detail::emptySchedule(name, devices, microbatches, chunksPerDevice);
  if (!made)
    return made;
  Schedule &s = *made;
  const int D = devices, N = microbatches, v = chunksPerDevice;

  // (micro-batch, chunk) in forward order, the same for every rank.
  std::vector<std::pair<int, int>> table;
  for (int first = 0; first < N; first += D) {
    int last = std::min(first + D, N);
    for (int c = 0; c < v; ++c)
      for (int m = first; m < last; ++m)
        table.emplace_back(m, c);
  }
  const int total = N * v;
  for (int r = 0; r < D; ++r) {
    auto fwd = [&](int k) {
      return Action::forward(table[k].first, table[k].second * D + r);
    };
    auto bwd = [&](int k) {
      return Action::backward(table[k].first,
                              (v - 1 - table[k].second) * D + r);
    };
    int warmup = std::min(2 * (D - 1 - r) + (v - 1) * D, total);
    std::vector<Action> &out = s.ranks[r];
    for (int k = 0; k < warmup; ++k)
      out.push_back(fwd(k));
    for (int i = 0; i < total - warmup; ++i) {
      out.push_back(fwd(warmup + i));
      out.push_back(bwd(i));
    }
    for (int k = total - warmup; k < total; ++k)
      out.push_back(bwd(k));
  }

  if (N % D != 0) {
    // Outside the textbook form the order is not guaranteed to run; accept
    // it only when the verifier does. Running to the end is not enough: the
    // two ends of a channel must also agree on the order of its transfers,
    // as NCCL and MPI match them in order.
    std::vector<Diagnostic> diags = verify(s);
    if (!diags.empty())
      return Result<Schedule>::failure(
          name + " needs N to be a multiple of D=" + std::to_string(D) +
          " here: with N=" + std::to_string(N) +
          " the order with a smaller last group cannot run (" +
          diags.front().message + ")");
    s.note = "N=" + std::to_string(N) + " is not a multiple of D=" +
             std::to_string(D) + ": the last group of micro-batches has " +
             std::to_string(N % D) + " instead of " + std::to_string(D) +
             " (Megatron-LM's schedule table)";
  }
  return Result<Schedule>::success(std::move(s));
}

} // namespace bitpipe::sched
