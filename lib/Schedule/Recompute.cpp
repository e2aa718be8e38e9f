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

} // namespace bitpipe::sched
