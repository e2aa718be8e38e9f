//===- BitPipeZeroBubble.cpp - BitPipe with the weight gradient deferred --===//
//
// bitpipe-zb and bitpipe-periodic-zb: an order on BitPipe's bidirectional-V
// placement (the reference's, docs/bitpipe-order.md, or the periodic one),
// with every backward split into its input-gradient half B, which keeps the
// backward's place, and its weight-gradient half W, which fills the slots
// where the rank would wait (docs/zero-bubble.md). A rank never holds more
// stashes (from F to W, since W reads them) than the unsplit order holds on
// that rank from F to B: where the cap binds, a waiting W runs before the
// next F. The all-reduces stay eager: each follows the rank's
// last W of the stages it carries, since gradients are final only then.
//
//===----------------------------------------------------------------------===//

#include "GeneratorUtil.h"
#include "ZeroBubbleFill.h"

#include "bitpipe/Schedule/Generators.h"

namespace bitpipe::sched {

namespace {

/// The order of `generate` with its backwards split and W filled in under
/// that order's own per-rank peak, renamed `name`.
Result<Schedule>
splitBitPipeOrder(const std::string &name, int devices, int microbatches,
                  Result<Schedule> (*generate)(int devices, int microbatches)) {
  std::string err = detail::checkArguments(name, devices, microbatches, 0);
  if (!err.empty())
    return Result<Schedule>::failure(err);
  Result<Schedule> unsplit = generate(devices, microbatches);
  if (!unsplit)
    return unsplit;

  Schedule s = *unsplit;
  s.name = name;
  s.splitBackward = true;
  std::vector<int> cap(devices);
  for (int r = 0; r < devices; ++r)
    cap[r] = peakStashes(unsplit->ranks[r], /*splitBackward=*/false);
  s.ranks = detail::splitAndFillWeightGrads(*unsplit, cap);
  detail::insertAllReducesAfterLastBackward(
      s, detail::bitPipeSyncGroups(s.placement));
  if (!s.note.empty())
    s.note += "; then every backward is split and its W placed as for "
              "whole units (docs/zero-bubble.md)";
  return Result<Schedule>::success(std::move(s));
}

} // namespace

Result<Schedule> generateBitPipeZeroBubble(int devices, int microbatches) {
  return splitBitPipeOrder("bitpipe-zb", devices, microbatches,
                           generateBitPipe);
}

Result<Schedule> generateBitPipePeriodicZeroBubble(int devices,
                                                   int microbatches) {
  return splitBitPipeOrder("bitpipe-periodic-zb", devices, microbatches,
                           generateBitPipePeriodic);
}

} // namespace bitpipe::sched
