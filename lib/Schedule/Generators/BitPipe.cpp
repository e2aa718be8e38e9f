//===- BitPipe.cpp - The BitPipe schedule (reference per-rank order) ------===//
//
// Reproduces, action for action, the per-rank order of the authors'
// reference implementation as written down in shared/bitpipe-order.md: two
// lists per rank (forwards f, backwards b, built from four chunk cursors),
// played in warm-up / steady / cool-down phases with units of D micro-batches
// concatenated without a flush. Variable names follow that document.
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"

#include "bitpipe/Schedule/Describe.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

#include <algorithm>
#include <array>

namespace bitpipe::sched {

namespace {

/// The per-rank order of bitpipe-order.md for `numUnits` full units.
std::vector<Action> referenceOrder(int D, int numUnits, int r) {
  const int h = D / 2;
  const int N = numUnits * D;
  const int o = r < h ? 0 : 1;
  const int a = r < h ? h - r : r - h + 1;
  // Chunk c of rank r holds stage chunkStage[c]; chunk c travels direction
  // c mod 2 (0 down, 1 up).
  const std::array<int, 4> chunkStage = {r, D - 1 - r, 2 * D - 1 - r, D + r};
  // The k-th micro-batch of a direction: unit k div h, position k mod h.
  // f and b read the chunk lists with separate cursors.
  std::array<int, 4> fCursor = {0, 0, 0, 0}, bCursor = {0, 0, 0, 0};
  auto take = [&](std::array<int, 4> &cursor, int c, bool forward) {
    int k = cursor[c]++;
    int mb = (k / h) * D + (c % 2 ? h : 0) + k % h;
    return forward ? Action::forward(mb, chunkStage[c])
                   : Action::backward(mb, chunkStage[c]);
  };

  std::vector<Action> f, b;
  auto pushF = [&](int c) { f.push_back(take(fCursor, c, /*forward=*/true)); };
  auto pushB = [&](int c) { b.push_back(take(bCursor, c, /*forward=*/false)); };
  for (int j = 0; j < numUnits; ++j) {
    for (int i = 0; i < a; ++i)
      pushF(o);
    for (int i = 0; i < h - a; ++i)
      pushF(1 - o), pushF(o);
    for (int i = 0; i < a; ++i)
      pushF(1 - o), pushF(3 - o);
    for (int i = 0; i < h - a; ++i)
      pushF(2 + o), pushF(3 - o);
    for (int i = 0; i < a; ++i)
      pushF(2 + o);

    for (int i = 0; i < a; ++i)
      pushB(2 + o);
    for (int i = 0; i < h - a; ++i)
      pushB(3 - o), pushB(2 + o);
    for (int i = 0; i < a; ++i)
      pushB(3 - o), pushB(1 - o);
    for (int i = 0; i < h - a; ++i)
      pushB(o), pushB(1 - o);
    for (int i = 0; i < a; ++i)
      pushB(o);
  }

  // Gradient-sync markers: first chunks 2 and 3 (the second halves finish
  // their backwards first), then chunks 0 and 1. On the two middle ranks
  // both come at the end; elsewhere the first one precedes the last
  // backward (the last backwards of chunks 2/3 are already done there).
  auto sorted = [](int x, int y) { return std::vector<int>{std::min(x, y), std::max(x, y)}; };
  Action arSecond = Action::allReduce(sorted(chunkStage[2], chunkStage[3]));
  Action arFirst = Action::allReduce(sorted(chunkStage[0], chunkStage[1]));
  if (r == h - 1 || r == h) {
    b.push_back(arSecond);
  } else {
    b.insert(b.end() - 1, arSecond);
  }
  b.push_back(arFirst);

  const int W = D + h + std::min(r, D - 1 - r);
  const int U = 2 * D - W;
  const int loops = N / D - 1;
  const int mid = loops * 2 * D;
  std::vector<Action> out;
  for (int k = 0; k < W; ++k)
    out.push_back(f[k]);
  for (int j = 0; j < loops; ++j) {
    const int off = j * 2 * D;
    for (int k = 0; k < U; ++k) {
      out.push_back(f[W + off + k]);
      out.push_back(b[off + k]);
    }
    for (int k = 0; k <= W - U; ++k)
      out.push_back(b[off + U + k]);
    for (int k = 0; k <= U - 2; ++k) {
      out.push_back(f[2 * D + off + k]);
      out.push_back(b[W + 1 + off + k]);
    }
    for (int k = 0; k <= W - U; ++k)
      out.push_back(f[2 * D + off + U - 1 + k]);
  }
  for (int k = 0; k < U; ++k) {
    out.push_back(f[W + mid + k]);
    out.push_back(b[mid + k]);
  }
  for (int k = 0; k <= 2 * D - U + 1; ++k)
    out.push_back(b[mid + U + k]);
  return out;
}

} // namespace

Result<Schedule> generateBitPipe(int devices, int microbatches) {
  const std::string name = "bitpipe";
  std::string err = detail::checkArguments(name, devices, microbatches, 0);
  if (!err.empty())
    return Result<Schedule>::failure(err);
  Result<Placement> placement = bidirectionalVPlacement(devices);
  if (!placement)
    return Result<Schedule>::failure(placement.error);

  Schedule s;
  s.name = name;
  s.placement = std::move(*placement);
  s.numMicrobatches = microbatches;
  s.microbatchPipeline =
      detail::bidirectionalMicrobatchPipelines(devices, microbatches);
  s.ranks.resize(devices);

  const int D = devices;
  const int fullUnits = microbatches / D;
  const int rest = microbatches % D;
  if (rest == 0) {
    for (int r = 0; r < D; ++r)
      s.ranks[r] = referenceOrder(D, fullUnits, r);
    return Result<Schedule>::success(std::move(s));
  }

  // N is not a multiple of D. The reference order needs whole units, so the
  // full units keep it (without its markers) and the final partial unit is
  // appended, list-scheduled greedily on the same placement. Its rank lists
  // start after the full units' lists end, which is valid because the two
  // parts share no micro-batch; AR markers then follow each rank's last
  // backward of its second-half and first-half chunks, as in the reference.
  for (int r = 0; r < D && fullUnits > 0; ++r)
    for (const Action &a : referenceOrder(D, fullUnits, r))
      if (a.kind != ActionKind::AllReduce)
        s.ranks[r].push_back(a);
  std::vector<int> tail;
  for (int m = fullUnits * D; m < microbatches; ++m)
    tail.push_back(m);
  detail::appendListSchedule(s, tail, s.ranks);
  detail::insertAllReducesAfterLastBackward(s, [D](int r) {
    std::vector<int> second = {std::min(2 * D - 1 - r, D + r),
                               std::max(2 * D - 1 - r, D + r)};
    std::vector<int> first = {std::min(r, D - 1 - r), std::max(r, D - 1 - r)};
    return std::vector<std::vector<int>>{second, first};
  });
  std::string tailDesc = quantity(rest, "micro-batch", "micro-batches") + " (" +
                         std::to_string((rest + 1) / 2) + " down, " +
                         std::to_string(rest / 2) + " up)";
  std::string how = "greedy list scheduling (backward first) on the "
                    "bidirectional-v placement";
  s.note = "N=" + std::to_string(microbatches) +
           " is not a multiple of D=" + std::to_string(D) + ": " +
           (fullUnits > 0
                ? "the first " + std::to_string(fullUnits * D) +
                      " micro-batches follow the reference order, then a "
                      "partial unit of " +
                      tailDesc + " is appended, built by " + how
                : "the reference order needs whole units, so the order of " +
                      tailDesc + " is built by " + how);
  return Result<Schedule>::success(std::move(s));
}

} // namespace bitpipe::sched
