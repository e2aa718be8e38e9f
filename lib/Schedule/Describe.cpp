//===- Describe.cpp - Actions in words ------------------------------------===//

#include "bitpipe/Schedule/Describe.h"

namespace bitpipe::sched {

std::string describe(const Action &action) {
  auto of = [&](const char *what) {
    return std::string(what) + " of stage " + std::to_string(action.stage) +
           " for micro-batch " + std::to_string(action.microbatch);
  };
  switch (action.kind) {
  case ActionKind::Forward:
    return of("forward");
  case ActionKind::Backward:
    return of("backward");
  case ActionKind::WeightGrad:
    return of("weight gradient");
  case ActionKind::AllReduce: {
    std::string s = "all-reduce of stage";
    if (action.stages.size() != 1)
      s += "s";
    s += " ";
    for (size_t i = 0; i < action.stages.size(); ++i)
      s += (i ? "," : "") + std::to_string(action.stages[i]);
    return s;
  }
  }
  return "unknown action";
}

std::string ordinal(int k) {
  const char *suffix = "th";
  int lastTwo = k % 100;
  if (lastTwo < 11 || lastTwo > 13) {
    if (k % 10 == 1)
      suffix = "st";
    else if (k % 10 == 2)
      suffix = "nd";
    else if (k % 10 == 3)
      suffix = "rd";
  }
  return std::to_string(k) + suffix;
}

std::string quantity(int n, const std::string &singular,
                     const std::string &plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : plural);
}

std::string formatSet(const std::vector<int> &values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i)
    s += (i ? "," : "") + std::to_string(values[i]);
  return s + "}";
}

} // namespace bitpipe::sched
