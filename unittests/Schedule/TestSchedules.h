//===- TestSchedules.h - Schedules for the simulator and verifier tests -*- C++ -*-===//
//
// Test fixtures: schedules from the library's generators and the reference
// BitPipe grid of the design notes, pasted verbatim and parsed with the
// library's grid parser.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_UNITTESTS_SCHEDULE_TESTSCHEDULES_H
#define BITPIPE_UNITTESTS_SCHEDULE_TESTSCHEDULES_H

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Schedule.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace bitpipe::sched::test {

/// Stage s on device s: one pipeline.
inline Placement loop(int numDevices) {
  return *sched::loopPlacement(numDevices, 1);
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
  return *generateGPipe(numDevices, numMicrobatches);
}

/// 1F1B: rank r warms up with D-1-r forwards, alternates, then drains.
inline Schedule oneFOneB(int numDevices, int numMicrobatches) {
  return *generateOneFOneB(numDevices, numMicrobatches);
}

/// BitPipe's placement for D devices, 2D stages.
inline Placement bitpipePlacement(int numDevices) {
  return *bidirectionalVPlacement(numDevices);
}

/// Parses "P<r>: tok tok ..." lines, failing the test on bad input.
inline std::vector<std::vector<Action>> gridRanks(const std::string &text) {
  Result<RankPrograms> ranks = sched::parseGrid(text);
  EXPECT_TRUE(ranks.ok()) << ranks.error;
  return ranks.ok() ? *ranks : RankPrograms{};
}

/// The reference BitPipe order for D=4, N=4 (docs/bitpipe-order.md).
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
  s.ranks = gridRanks(kBitPipeD4N4);
  return s;
}

/// Two pipelines in opposite directions; each rank first runs the stage
/// that needs the other rank's output: nobody can start (a deadlock).
inline Schedule crossedReceives() {
  Placement p;
  p.kind = PlacementKind::Bidirectional;
  p.numDevices = 2;
  p.numStages = 2;
  p.pipelines = {Pipeline{{0, 1}}, Pipeline{{1, 0}}};
  Schedule s = emptySchedule("crossed", p, 2);
  s.microbatchPipeline = {0, 1};
  s.ranks = gridRanks("P0: F1.s1 F0.s0 B1.s1 B0.s0\n"
                      "P1: F0.s1 F1.s0 B0.s1 B1.s0\n");
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
