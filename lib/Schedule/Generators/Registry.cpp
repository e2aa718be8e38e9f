//===- Registry.cpp - Schedule generators by name -------------------------===//

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

namespace bitpipe::sched {

const std::vector<std::string> &scheduleNames() {
  static const std::vector<std::string> names = {
      "gpipe", "1f1b", "interleaved-1f1b", "chimera", "bitpipe", "zb-h1"};
  return names;
}

namespace {
std::string unknownSchedule(const std::string &name) {
  std::string known;
  for (const std::string &n : scheduleNames())
    known += (known.empty() ? "" : ", ") + n;
  return "unknown schedule '" + name + "' (expected one of " + known + ")";
}
} // namespace

Result<Placement> schedulePlacement(const ScheduleOptions &o) {
  if (o.schedule == "gpipe" || o.schedule == "1f1b" || o.schedule == "zb-h1")
    return loopPlacement(o.devices, 1);
  if (o.schedule == "interleaved-1f1b")
    return loopPlacement(o.devices, o.chunksPerDevice);
  if (o.schedule == "chimera")
    return bidirectionalPlacement(o.devices);
  if (o.schedule == "bitpipe")
    return bidirectionalVPlacement(o.devices);
  return Result<Placement>::failure(unknownSchedule(o.schedule));
}

Result<Schedule> generateSchedule(const ScheduleOptions &o) {
  if (o.schedule == "gpipe")
    return generateGPipe(o.devices, o.microbatches);
  if (o.schedule == "1f1b")
    return generateOneFOneB(o.devices, o.microbatches);
  if (o.schedule == "interleaved-1f1b")
    return generateInterleaved1F1B(o.devices, o.microbatches,
                                   o.chunksPerDevice);
  if (o.schedule == "chimera")
    return generateChimera(o.devices, o.microbatches);
  if (o.schedule == "bitpipe")
    return generateBitPipe(o.devices, o.microbatches);
  if (o.schedule == "zb-h1")
    return generateZeroBubbleH1(o.devices, o.microbatches);
  return Result<Schedule>::failure(unknownSchedule(o.schedule));
}

} // namespace bitpipe::sched
