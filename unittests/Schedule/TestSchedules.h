//===- TestSchedules.h - Hand-built schedules for the tests -----*- C++ -*-===//
//
// Test fixtures only: the real generators live elsewhere. These build the
// textbook GPipe and 1F1B orders on a loop placement and parse the per-rank
// grid text ("P0: F0.s0 B0.s0 AR(0,3)") so that schedules from the design
// notes can be pasted verbatim.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_UNITTESTS_SCHEDULE_TESTSCHEDULES_H
#define BITPIPE_UNITTESTS_SCHEDULE_TESTSCHEDULES_H

#include "bitpipe/Schedule/Schedule.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace bitpipe::sched::test {

/// Stage s on device s: one pipeline.
inline Placement loopPlacement(int numDevices) {
  Placement p;
  p.kind = "loop";
  p.numDevices = numDevices;
  p.numStages = numDevices;
  Pipeline pipe;
  for (int s = 0; s < numDevices; ++s)
    pipe.stageDevice.push_back(s);
  p.pipelines = {pipe};
  return p;
}

inline Schedule emptySchedule(const std::string &name, Placement placement,
                              int numMicrobatches) {
  Schedule s;
  s.name = name;
  s.numMicrobatches = numMicrobatches;
  s.microbatchPipeline.assign(numMicrobatches, 0);
  s.ranks.assign(placement.numDevices, {});
  s.placement = std::move(placement);
  return s;
}

/// All forwards, then all backwards.
inline Schedule gpipe(int numDevices, int numMicrobatches) {
  Schedule s =
      emptySchedule("gpipe", loopPlacement(numDevices), numMicrobatches);
  for (int r = 0; r < numDevices; ++r) {
    for (int m = 0; m < numMicrobatches; ++m)
      s.ranks[r].push_back(Action::forward(m, r));
    for (int m = 0; m < numMicrobatches; ++m)
      s.ranks[r].push_back(Action::backward(m, r));
  }
  return s;
}

/// 1F1B: rank r warms up with D-1-r forwards, alternates, then drains.
inline Schedule oneFOneB(int numDevices, int numMicrobatches) {
  Schedule s =
      emptySchedule("1f1b", loopPlacement(numDevices), numMicrobatches);
  for (int r = 0; r < numDevices; ++r) {
    int warmup = std::min(numDevices - 1 - r, numMicrobatches);
    std::vector<Action> &a = s.ranks[r];
    for (int m = 0; m < warmup; ++m)
      a.push_back(Action::forward(m, r));
    for (int i = 0; i < numMicrobatches - warmup; ++i) {
      a.push_back(Action::forward(warmup + i, r));
      a.push_back(Action::backward(i, r));
    }
    for (int m = numMicrobatches - warmup; m < numMicrobatches; ++m)
      a.push_back(Action::backward(m, r));
  }
  return s;
}

/// BitPipe's placement for D devices, 2D stages: "down" is a V from device
/// 0 to D-1 and back, "up" its mirror image.
inline Placement bitpipePlacement(int numDevices) {
  Placement p;
  p.kind = "bidirectional-v";
  p.numDevices = numDevices;
  p.numStages = 2 * numDevices;
  Pipeline down, up;
  for (int s = 0; s < 2 * numDevices; ++s) {
    int d = s < numDevices ? s : 2 * numDevices - 1 - s;
    down.stageDevice.push_back(d);
    up.stageDevice.push_back(numDevices - 1 - d);
  }
  p.pipelines = {down, up};
  return p;
}

/// Parses one grid token: F3.s1, B0.s7, W2.s4, AR(4,7).
inline Action parseAction(const std::string &tok) {
  if (tok.rfind("AR(", 0) == 0) {
    std::vector<int> stages;
    std::stringstream in(tok.substr(3, tok.size() - 4));
    std::string part;
    while (std::getline(in, part, ','))
      stages.push_back(std::atoi(part.c_str()));
    return Action::allReduce(stages);
  }
  size_t dot = tok.find(".s");
  EXPECT_NE(dot, std::string::npos) << "bad token " << tok;
  int mb = std::atoi(tok.substr(1, dot - 1).c_str());
  int stage = std::atoi(tok.substr(dot + 2).c_str());
  switch (tok[0]) {
  case 'F':
    return Action::forward(mb, stage);
  case 'B':
    return Action::backward(mb, stage);
  case 'W':
    return Action::weightGrad(mb, stage);
  }
  ADD_FAILURE() << "bad token " << tok;
  return Action::forward(-1, -1);
}

/// Parses "P<r>: tok tok ..." lines; rank numbers must be 0, 1, 2, ...
inline std::vector<std::vector<Action>> parseGrid(const std::string &text) {
  std::vector<std::vector<Action>> ranks;
  std::stringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find_first_not_of(" \t") == std::string::npos)
      continue;
    std::stringstream words(line);
    std::string head, tok;
    words >> head;
    EXPECT_EQ(head, "P" + std::to_string(ranks.size()) + ":");
    ranks.emplace_back();
    while (words >> tok)
      ranks.back().push_back(parseAction(tok));
  }
  return ranks;
}

/// The reference BitPipe order for D=4, N=4 (docs: bitpipe-order.md).
inline const char *kBitPipeD4N4 =
    "P0: F0.s0 F1.s0 F2.s3 F2.s4 F3.s3 F3.s4 F0.s7 B0.s7 F1.s7 B1.s7 B2.s4 "
    "B2.s3 B3.s4 B3.s3 B0.s0 AR(4,7) B1.s0 AR(0,3)\n"
    "P1: F0.s1 F2.s2 F1.s1 F3.s2 F2.s5 F0.s6 F3.s5 F1.s6 B0.s6 B2.s5 B1.s6 "
    "B3.s5 B2.s2 B0.s1 B3.s2 B1.s1 AR(5,6) AR(1,2)\n"
    "P2: F2.s1 F0.s2 F3.s1 F1.s2 F0.s5 F2.s6 F1.s5 F3.s6 B2.s6 B0.s5 B3.s6 "
    "B1.s5 B0.s2 B2.s1 B1.s2 B3.s1 AR(5,6) AR(1,2)\n"
    "P3: F2.s0 F3.s0 F0.s3 F0.s4 F1.s3 F1.s4 F2.s7 B2.s7 F3.s7 B3.s7 B0.s4 "
    "B0.s3 B1.s4 B1.s3 B2.s0 AR(4,7) B3.s0 AR(0,3)\n";

inline Schedule bitpipeD4N4() {
  Schedule s = emptySchedule("bitpipe", bitpipePlacement(4), 4);
  // Units of D micro-batches: the first D/2 go down, the next D/2 up.
  s.microbatchPipeline = {0, 0, 1, 1};
  s.ranks = parseGrid(kBitPipeD4N4);
  return s;
}

/// Index of `action` in rank `r`'s list, or -1.
inline int indexOf(const Schedule &s, int r, const Action &action) {
  for (size_t i = 0; i < s.ranks[r].size(); ++i)
    if (s.ranks[r][i] == action)
      return static_cast<int>(i);
  return -1;
}

} // namespace bitpipe::sched::test

#endif // BITPIPE_UNITTESTS_SCHEDULE_TESTSCHEDULES_H
