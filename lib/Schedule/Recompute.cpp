//===- Recompute.cpp - Recomputation modes by name ------------------------===//

#include "bitpipe/Schedule/Recompute.h"

namespace bitpipe::sched {

const char *recomputeName(Recompute recompute) {
  switch (recompute) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "none";
}

std::optional<Recompute> parseRecompute(std::string_view name) {
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    if (name == recomputeName(r))
      return r;
  return std::nullopt;
}

std::string recomputeChoices() { return "'none', 'selective' or 'full'"; }

RecomputedStage recomputedStage(Recompute recompute,
                                const StageKeeping &stage) {
  switch (recompute) {
  case Recompute::None:
    break;
  case Recompute::Selective:
    return {stage.backwardFlops + stage.statisticFlops,
            stage.keptBytes - stage.statisticBytes};
  case Recompute::Full:
    return {stage.backwardFlops + stage.forwardFlops, stage.inputBytes};
  }
  return {stage.backwardFlops, stage.keptBytes};
}

} // namespace bitpipe::sched
