//===- Placement.h - Factories for stage-to-device placements ---*- C++ -*-===//
//
// The placements the generators use, built in one place so that a pass
// (bitpipe-place) and a generator agree on which device runs which stage.
// Each factory checks its arguments and returns an error message instead of
// asserting: the arguments come from users (pass options, command lines).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_PLACEMENT_H
#define BITPIPE_SCHEDULE_PLACEMENT_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <string>

namespace bitpipe::sched {

/// One pipeline of S = D * chunksPerDevice stages, stage s on device s mod D.
/// chunksPerDevice = 1 is plain 1F1B/GPipe, > 1 interleaved 1F1B.
Result<Placement> loopPlacement(int numDevices, int chunksPerDevice = 1);

/// One pipeline of S = 2D stages: s0..s(D-1) on devices 0..D-1, then
/// s(D)..s(2D-1) on devices D-1..0, so the two middle stages share device D-1.
Result<Placement> vPlacement(int numDevices);

/// Chimera (D even): two pipelines of S = D stages. Pipeline 0 ("down") runs
/// stage s on device s, pipeline 1 ("up") on device D-1-s.
Result<Placement> bidirectionalPlacement(int numDevices);

/// BitPipe (D even): two pipelines of S = 2D stages. Pipeline 0 ("down") is
/// vPlacement(D); pipeline 1 ("up") is its mirror, stage s on device
/// D-1-down(s). Device r then holds s(r), s(2D-1-r) down and s(D-1-r), s(D+r)
/// up.
Result<Placement> bidirectionalVPlacement(int numDevices);

/// Builds the placement of `kind`; chunksPerDevice only matters for Loop.
Result<Placement> makePlacement(PlacementKind kind, int numDevices,
                                int chunksPerDevice = 1);

/// "loop", "v", "bidirectional", "bidirectional-v": the spelling of every
/// kind, in pass options and in #bitpipe.placement.
Result<PlacementKind> parsePlacementKind(const std::string &name);
const char *placementKindName(PlacementKind kind);
/// "loop, v, bidirectional or bidirectional-v", for messages.
const std::string &placementKindList();

/// The number of pipelines of every placement of `kind`: 1 for loop and v,
/// 2 (down and up) for the bidirectional kinds.
int pipelineCount(PlacementKind kind);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_PLACEMENT_H
