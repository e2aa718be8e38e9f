//===- ZeroBubble.cpp - ZB-H1 (Zero Bubble Pipeline Parallelism) ----------===//
//
// ZB-H1 (Qi et al., 2023) splits each backward into B (input gradient, on
// the critical path between ranks) and W (weight gradient, needed only by
// the optimizer). Rank r keeps 1F1B's skeleton (D-1-r warm-up forwards, then
// one F and one B at a time) but lets up to r W passes wait: the later a
// rank, the less its B's are delayed by downstream work, and the waiting W's
// then fill the cool-down bubble, where rank r would otherwise idle. Every
// rank then holds at most D micro-batches between F and W, the peak of
// 1F1B's first rank, so the peak memory is 1F1B's. Under F=B=W=1 the idle
// time per rank is D-1 (the paper's (p-1)(T_F+T_B-T_W)).
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

#include <algorithm>
#include <deque>

namespace bitpipe::sched {

namespace {

/// Rank r's order: W of a micro-batch waits until more than `deferredW` W's
/// are pending in the steady phase; in the cool-down each B releases one W;
/// the rest close the list.
std::vector<Action> zbH1Order(int D, int N, int r, int deferredW) {
  int warmup = std::min(D - 1 - r, N);
  std::vector<Action> out;
  std::deque<int> waitingW;
  for (int m = 0; m < warmup; ++m)
    out.push_back(Action::forward(m, r));
  for (int i = 0; i < N - warmup; ++i) {
    out.push_back(Action::forward(warmup + i, r));
    out.push_back(Action::backward(i, r));
    waitingW.push_back(i);
    if (static_cast<int>(waitingW.size()) > deferredW) {
      out.push_back(Action::weightGrad(waitingW.front(), r));
      waitingW.pop_front();
    }
  }
  for (int m = N - warmup; m < N; ++m) {
    out.push_back(Action::backward(m, r));
    waitingW.push_back(m);
    out.push_back(Action::weightGrad(waitingW.front(), r));
    waitingW.pop_front();
  }
  for (int m : waitingW)
    out.push_back(Action::weightGrad(m, r));
  return out;
}

} // namespace

Result<Schedule> generateZeroBubbleH1(int devices, int microbatches) {
  Result<Schedule> made = detail::emptySchedule("zb-h1", devices, microbatches,
                                                /*chunksPerDevice=*/1);
  if (!made)
    return made;
  Schedule &s = *made;
  s.splitBackward = true;
  for (int r = 0; r < devices; ++r)
    s.ranks[r] = zbH1Order(devices, microbatches, r, /*deferredW=*/r);
  return made;
}

} // namespace bitpipe::sched
