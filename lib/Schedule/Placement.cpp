//===- Placement.cpp - Factories for stage-to-device placements -----------===//

#include "bitpipe/Schedule/Placement.h"

#include <iterator>

namespace bitpipe::sched {

namespace {

Placement makeEmpty(PlacementKind kind, int numDevices, int numStages) {
  Placement p;
  p.kind = kind;
  p.numDevices = numDevices;
  p.numStages = numStages;
  return p;
}

/// The down V: stage s on device s for the first half, then back.
Pipeline downV(int numDevices) {
  Pipeline pipe;
  for (int s = 0; s < 2 * numDevices; ++s)
    pipe.stageDevice.push_back(s < numDevices ? s : 2 * numDevices - 1 - s);
  return pipe;
}

Pipeline mirrored(const Pipeline &pipe, int numDevices) {
  Pipeline m;
  for (int d : pipe.stageDevice)
    m.stageDevice.push_back(numDevices - 1 - d);
  return m;
}

std::string needPositive(const char *what, int numDevices) {
  return std::string(what) + " placement needs at least 1 device, got " +
         std::to_string(numDevices);
}

std::string needEven(const char *what, int numDevices) {
  return std::string(what) +
         " placement needs an even number of devices (the two pipelines "
         "pair device r with device D-1-r), got " +
         std::to_string(numDevices);
}

} // namespace

Result<Placement> loopPlacement(int numDevices, int chunksPerDevice) {
  if (numDevices < 1)
    return Result<Placement>::failure(needPositive("loop", numDevices));
  if (chunksPerDevice < 1)
    return Result<Placement>::failure(
        "loop placement needs at least 1 chunk per device, got " +
        std::to_string(chunksPerDevice));
  Placement p = makeEmpty(PlacementKind::Loop, numDevices,
                          numDevices * chunksPerDevice);
  Pipeline pipe;
  for (int s = 0; s < p.numStages; ++s)
    pipe.stageDevice.push_back(s % numDevices);
  p.pipelines.push_back(std::move(pipe));
  return Result<Placement>::success(std::move(p));
}

Result<Placement> vPlacement(int numDevices) {
  if (numDevices < 1)
    return Result<Placement>::failure(needPositive("v", numDevices));
  Placement p = makeEmpty(PlacementKind::V, numDevices, 2 * numDevices);
  p.pipelines.push_back(downV(numDevices));
  return Result<Placement>::success(std::move(p));
}

Result<Placement> bidirectionalPlacement(int numDevices) {
  if (numDevices < 1)
    return Result<Placement>::failure(
        needPositive("bidirectional", numDevices));
  if (numDevices % 2 != 0)
    return Result<Placement>::failure(needEven("bidirectional", numDevices));
  Placement p =
      makeEmpty(PlacementKind::Bidirectional, numDevices, numDevices);
  Pipeline down;
  for (int s = 0; s < numDevices; ++s)
    down.stageDevice.push_back(s);
  p.pipelines.push_back(down);
  p.pipelines.push_back(mirrored(down, numDevices));
  return Result<Placement>::success(std::move(p));
}

Result<Placement> bidirectionalVPlacement(int numDevices) {
  if (numDevices < 1)
    return Result<Placement>::failure(
        needPositive("bidirectional-v", numDevices));
  if (numDevices % 2 != 0)
    return Result<Placement>::failure(
        needEven("bidirectional-v", numDevices));
  Placement p =
      makeEmpty(PlacementKind::BidirectionalV, numDevices, 2 * numDevices);
  Pipeline down = downV(numDevices);
  p.pipelines.push_back(down);
  p.pipelines.push_back(mirrored(down, numDevices));
  return Result<Placement>::success(std::move(p));
}

Result<Placement> makePlacement(PlacementKind kind, int numDevices,
                                int chunksPerDevice) {
  switch (kind) {
  case PlacementKind::Loop:
    return loopPlacement(numDevices, chunksPerDevice);
  case PlacementKind::V:
    return vPlacement(numDevices);
  case PlacementKind::Bidirectional:
    return bidirectionalPlacement(numDevices);
  case PlacementKind::BidirectionalV:
    return bidirectionalVPlacement(numDevices);
  }
  return Result<Placement>::failure("unknown placement kind");
}

const char *placementKindName(PlacementKind kind) {
  switch (kind) {
  case PlacementKind::Loop:
    return "loop";
  case PlacementKind::V:
    return "v";
  case PlacementKind::Bidirectional:
    return "bidirectional";
  case PlacementKind::BidirectionalV:
    return "bidirectional-v";
  }
  return "?";
}

namespace {
constexpr PlacementKind kAllKinds[] = {PlacementKind::Loop, PlacementKind::V,
                                       PlacementKind::Bidirectional,
                                       PlacementKind::BidirectionalV};
} // namespace

const std::string &placementKindList() {
  static const std::string list = [] {
    std::string out;
    constexpr size_t n = std::size(kAllKinds);
    for (size_t i = 0; i < n; ++i) {
      if (i > 0)
        out += i + 1 == n ? " or " : ", ";
      out += placementKindName(kAllKinds[i]);
    }
    return out;
  }();
  return list;
}

Result<PlacementKind> parsePlacementKind(const std::string &name) {
  for (PlacementKind k : kAllKinds)
    if (name == placementKindName(k))
      return Result<PlacementKind>::success(k);
  return Result<PlacementKind>::failure("unknown placement '" + name +
                                        "' (expected " + placementKindList() +
                                        ")");
}

int pipelineCount(PlacementKind kind) {
  return kind == PlacementKind::Loop || kind == PlacementKind::V ? 1 : 2;
}

} // namespace bitpipe::sched
