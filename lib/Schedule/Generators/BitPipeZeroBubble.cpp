//===- BitPipeZeroBubble.cpp - BitPipe with the weight gradient deferred --===//
//
// bitpipe-zb: BitPipe's bidirectional-V placement and per-rank order
// (docs/bitpipe-order.md), with every backward split into its input-gradient
// half B, which keeps BitPipe's place, and its weight-gradient half W, which
// fills the slots where BitPipe's rank would wait (docs/zero-bubble.md). A
// rank never holds more stashes (from F to W, since W reads them) than
// BitPipe's rank holds from F to B: where the cap binds, a waiting W runs
// before the next F. The all-reduces stay eager: each follows the rank's
// last W of the stages it carries, since gradients are final only then.
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"
#include "ZeroBubbleFill.h"

#include "bitpipe/Schedule/Generators.h"

namespace bitpipe::sched {

Result<Schedule> generateBitPipeZeroBubble(int devices, int microbatches) {
  const std::string name = "bitpipe-zb";
  std::string err = detail::checkArguments(name, devices, microbatches, 0);
  if (!err.empty())
    return Result<Schedule>::failure(err);
  Result<Schedule> bitpipe = generateBitPipe(devices, microbatches);
  if (!bitpipe)
    return bitpipe;

  Schedule s = *bitpipe;
  s.name = name;
  s.splitBackward = true;
  std::vector<int> cap(devices);
  for (int r = 0; r < devices; ++r)
    cap[r] = peakStashes(bitpipe->ranks[r], /*splitBackward=*/false);
  s.ranks = detail::splitAndFillWeightGrads(*bitpipe, cap);

  // BitPipe's two all-reduces per rank: the stages of the second halves of
  // the two pipelines (nearest the losses, final first), then the first
  // halves'. Each rank holds one stage of each half of each pipeline.
  const int half = s.placement.numStages / 2;
  const Placement &pl = s.placement;
  detail::insertAllReducesAfterLastBackward(s, [&pl, half](int r) {
    std::vector<int> first, second;
    for (int stage = 0; stage < pl.numStages; ++stage)
      for (const Pipeline &p : pl.pipelines)
        if (p.stageDevice[stage] == r)
          (stage < half ? first : second).push_back(stage);
    return std::vector<std::vector<int>>{second, first};
  });
  if (!s.note.empty())
    s.note += "; then every backward is split and its W placed as for "
              "whole units (docs/zero-bubble.md)";
  return Result<Schedule>::success(std::move(s));
}

} // namespace bitpipe::sched
