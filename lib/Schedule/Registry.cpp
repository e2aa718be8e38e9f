//===- Registry.cpp - Every schedule, in one table ------------------------===//

#include "bitpipe/Schedule/Registry.h"

#include "bitpipe/base/Spelling.h"

#include "Generators/GeneratorUtil.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace bitpipe::sched {

namespace {

// Each entry's generator, on a completed request (every field it reads is
// set); those that take no chunk count or cap ignore them.
int devicesOf(const ScheduleOptions &o) { return o.devices; }
int microbatchesOf(const ScheduleOptions &o) { return *o.microbatches; }

Result<Schedule> gpipe(const ScheduleOptions &o) {
  return generateGPipe(devicesOf(o), microbatchesOf(o));
}
Result<Schedule> oneFOneB(const ScheduleOptions &o) {
  return generateOneFOneB(devicesOf(o), microbatchesOf(o), *o.maxInFlight);
}
Result<Schedule> interleaved(const ScheduleOptions &o) {
  return generateInterleaved1F1B(devicesOf(o), microbatchesOf(o),
                                 *o.chunksPerDevice);
}
Result<Schedule> chimera(const ScheduleOptions &o) {
  return generateChimera(devicesOf(o), microbatchesOf(o));
}
Result<Schedule> bitPipe(const ScheduleOptions &o) {
  return generateBitPipe(devicesOf(o), microbatchesOf(o));
}
Result<Schedule> zbH1(const ScheduleOptions &o) {
  return generateZeroBubbleH1(devicesOf(o), microbatchesOf(o));
}
Result<Schedule> bitPipeZb(const ScheduleOptions &o) {
  return generateBitPipeZeroBubble(devicesOf(o), microbatchesOf(o));
}
Result<Schedule> bitPipePeriodic(const ScheduleOptions &o) {
  return generateBitPipePeriodic(devicesOf(o), microbatchesOf(o));
}
Result<Schedule> bitPipePeriodicZb(const ScheduleOptions &o) {
  return generateBitPipePeriodicZeroBubble(devicesOf(o), microbatchesOf(o));
}
Result<Schedule> zbV(const ScheduleOptions &o) {
  return generateZeroBubbleV(devicesOf(o), microbatchesOf(o));
}

} // namespace

const std::vector<ScheduleInfo> &schedules() {
  // clang-format off
  static const std::vector<ScheduleInfo> table = {
    // name, summary,
    //   placement, splits backward, even D, chunks min/max/default,
    //   min N, default N per device, caps in-flight, generator
    {"gpipe", "all forwards, then all backwards (GPipe)",
     PlacementKind::Loop, false, false, 1, 1, 1, 1, 2, false, gpipe},
    {"1f1b", "one forward, one backward (PipeDream-flush, DAPPLE)",
     PlacementKind::Loop, false, false, 1, 1, 1, 1, 2, true, oneFOneB},
    {"interleaved-1f1b", "1F1B over v chunks per device (Megatron-LM)",
     PlacementKind::Loop, false, false, 2, INT_MAX, 2, 1, 2, false, interleaved},
    {"chimera", "two mirrored pipelines (Chimera)",
     PlacementKind::Bidirectional, false, true, 0, 0, 0, 1, 2, false, chimera},
    {"bitpipe", "two mirrored V-shaped pipelines, eager all-reduce (BitPipe)",
     PlacementKind::BidirectionalV, false, true, 0, 0, 0, 1, 2, false, bitPipe},
    {"bitpipe-periodic", "BitPipe's placement in one steady state: its bubble falls with N",
     PlacementKind::BidirectionalV, false, true, 0, 0, 0, 1, 8, false, bitPipePeriodic},
    {"zb-h1", "1F1B with the weight gradient split off and deferred (ZB-H1)",
     PlacementKind::Loop, true, false, 1, 1, 1, 1, 2, false, zbH1},
    {"bitpipe-zb", "BitPipe with the weight gradient split off into its idle slots",
     PlacementKind::BidirectionalV, true, true, 0, 0, 0, 1, 2, false, bitPipeZb},
    {"bitpipe-periodic-zb", "bitpipe-periodic with the weight gradient split off into its idle slots",
     PlacementKind::BidirectionalV, true, true, 0, 0, 0, 1, 8, false, bitPipePeriodicZb},
    {"zbv", "V-shaped pipeline, weight gradient split off and deferred (ZB-V)",
     PlacementKind::V, true, false, 0, 0, 0, 1, 2, false, zbV},
  };
  // clang-format on
  return table;
}

const ScheduleInfo *findSchedule(const std::string &name) {
  for (const ScheduleInfo &info : schedules())
    if (name == info.name)
      return &info;
  return nullptr;
}

const std::vector<std::string> &scheduleNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ScheduleInfo &info : schedules())
      out.push_back(info.name);
    return out;
  }();
  return names;
}

const std::string &scheduleNameList() {
  static const std::string list = [] {
    std::string out;
    for (const std::string &name : scheduleNames())
      out += (out.empty() ? "" : ", ") + name;
    return out;
  }();
  return list;
}

const std::string &scheduleOptionHelp() {
  static const std::string help =
      "The schedule (required): one of " + scheduleNameList();
  return help;
}

namespace {

std::string fieldName(const char *prefix, const char *name) {
  return std::string(prefix) + name;
}

/// "<option> must be at least <min>/at most <max>, got <value>", or empty.
std::string checkRange(const char *prefix, const char *option, int64_t value,
                       int64_t min, int64_t max) {
  if (value < min)
    return fieldName(prefix, option) + " must be at least " +
           std::to_string(min) + ", got " + std::to_string(value);
  if (value > max)
    return fieldName(prefix, option) + " must be at most " +
           std::to_string(max) + ", got " + std::to_string(value);
  return {};
}

/// "1f1b": the entries that take a cap on micro-batches in flight.
std::string cappingScheduleList() {
  std::string out;
  for (const ScheduleInfo &info : schedules())
    if (info.capsInFlight)
      out += (out.empty() ? "" : ", ") + std::string(info.name);
  return out;
}

/// A cap on the micro-batches in flight: only for an entry that takes one,
/// and in 1..D (D: the uncapped order; more would not cap anything).
std::string checkInFlightCap(const ScheduleInfo &info, int devices,
                             std::optional<int> cap, const char *prefix) {
  if (!cap)
    return {};
  const std::string field = fieldName(prefix, option::kMaxInFlight);
  if (!info.capsInFlight)
    return field + "=" + std::to_string(*cap) +
           " does not apply to schedule '" + info.name +
           "' (only these take a cap on the micro-batches in flight: " +
           cappingScheduleList() + ")";
  if (*cap < 1)
    return field + " must be at least 1, got " + std::to_string(*cap);
  if (*cap > devices)
    return field + " must be at most " + std::to_string(devices) +
           " (devices: " + info.name +
           " without a cap holds at most D micro-batches in flight), got " +
           std::to_string(*cap);
  return {};
}

/// The checks of a complete request (no defaults left to fill), against
/// its entry; empty when it passes.
std::string checkComplete(const ScheduleInfo &info, int devices,
                          int microbatches, int chunksPerDevice,
                          std::optional<int> maxInFlight, const char *prefix) {
  const std::string name = info.name;
  // Counts first, then what the schedule asks of them.
  std::string error =
      checkRange(prefix, option::kDevices, devices, 1, limit::kMaxDevices);
  if (error.empty())
    error = checkRange(prefix, option::kMicrobatches, microbatches,
                       info.minMicrobatches, limit::kMaxMicrobatches);
  if (!error.empty())
    return error;
  int64_t pairs = int64_t(microbatches) * devices *
                  (info.takesChunks() ? std::max(chunksPerDevice, 1) : 2);
  if (pairs > limit::kMaxMicrobatchStages)
    return fieldName(prefix, option::kMicrobatches) + " * " +
           fieldName(prefix, option::kDevices) +
           " * chunks per device must be at most " +
           std::to_string(limit::kMaxMicrobatchStages) +
           " (the actions of one pipeline copy; docs/models.md, "
           "\"Limits\"), got " +
           std::to_string(microbatches) + " * " + std::to_string(devices) +
           " * " +
           std::to_string(info.takesChunks() ? std::max(chunksPerDevice, 1)
                                             : 2) +
           " = " + std::to_string(pairs);
  if (info.evenDevices && devices % 2 != 0)
    return fieldName(prefix, option::kDevices) + " must be even: " + name +
           " needs an even number of devices (its two pipelines pair device "
           "r with device D-1-r), got " +
           std::to_string(devices);
  if (std::string cap = checkInFlightCap(info, devices, maxInFlight, prefix);
      !cap.empty())
    return cap;
  if (!info.takesChunks()) {
    if (chunksPerDevice != 0)
      return fieldName(prefix, option::kChunksPerDevice) + "=" +
             std::to_string(chunksPerDevice) + " does not apply to schedule '" +
             name + "', whose " + placementKindName(info.placement) +
             " placement fixes the chunks per device";
    return {};
  }
  if (info.minChunks == info.maxChunks && chunksPerDevice != info.minChunks)
    return fieldName(prefix, option::kChunksPerDevice) + "=" +
           std::to_string(chunksPerDevice) + " does not apply to schedule '" +
           name + "', which runs " + std::to_string(info.minChunks) +
           " chunk per device (interleaved-1f1b runs several)";
  if (chunksPerDevice < info.minChunks)
    return fieldName(prefix, option::kChunksPerDevice) + " must be at least " +
           std::to_string(info.minChunks) + " for " + name +
           " (use 1f1b for 1), got " + std::to_string(chunksPerDevice);
  int maxChunks = std::min(info.maxChunks, limit::kMaxChunksPerDevice);
  if (chunksPerDevice > maxChunks)
    return fieldName(prefix, option::kChunksPerDevice) + " must be at most " +
           std::to_string(maxChunks) + " for " + name + ", got " +
           std::to_string(chunksPerDevice);
  return {};
}

/// D and dp each within their limits, and the ranks D * dp within theirs.
std::string checkWorld(int devices, int dataParallel, const char *prefix) {
  std::string error =
      checkRange(prefix, option::kDevices, devices, 1, limit::kMaxDevices);
  if (error.empty())
    error = checkRange(prefix, option::kDataParallel, dataParallel, 1,
                       limit::kMaxDataParallel);
  if (error.empty() && int64_t(devices) * dataParallel > limit::kMaxRanks)
    error = fieldName(prefix, option::kDevices) + " * " +
            fieldName(prefix, option::kDataParallel) +
            " (the ranks) must be at most " + std::to_string(limit::kMaxRanks) +
            ", got " + std::to_string(devices) + " * " +
            std::to_string(dataParallel);
  return error;
}

std::string unknownSchedule(const std::string &name, const char *prefix) {
  if (name.empty())
    return fieldName(prefix, option::kSchedule) + " is required (one of " +
           scheduleNameList() + ")";
  return "unknown " + fieldName(prefix, option::kSchedule) + " '" + name + "'" +
         base::didYouMean(name, scheduleNames()) + " (expected one of " +
         scheduleNameList() + ")";
}

} // namespace

std::string detail::checkArguments(const std::string &name, int devices,
                                   int microbatches, int chunksPerDevice,
                                   std::optional<int> maxInFlight) {
  const ScheduleInfo *info = findSchedule(name);
  if (!info)
    return unknownSchedule(name, "");
  return checkComplete(*info, devices, microbatches, chunksPerDevice,
                       maxInFlight, "");
}

Result<ScheduleOptions> validate(const ScheduleOptions &request,
                                 const char *flagPrefix) {
  const ScheduleInfo *info = findSchedule(request.schedule);
  if (!info)
    return Result<ScheduleOptions>::failure(
        unknownSchedule(request.schedule, flagPrefix));
  // D first: the default N is a multiple of it.
  std::string counts =
      checkWorld(request.devices, request.dataParallel, flagPrefix);
  if (counts.empty() && request.splitBackward && !info->splitsBackward)
    counts = fieldName(flagPrefix, option::kSplitBackward) +
             " does not apply to schedule '" + info->name +
             "': its steps have no weight-gradient (W) step to run the "
             "second half of a split backward (zb-h1 has them, and splits "
             "the backward without the option)";
  if (!counts.empty())
    return Result<ScheduleOptions>::failure(std::move(counts));
  ScheduleOptions done = request;
  if (!done.microbatches)
    done.microbatches = info->defaultMicrobatchesPerDevice * request.devices;
  if (!done.chunksPerDevice)
    done.chunksPerDevice = info->defaultChunks;
  if (!done.maxInFlight && info->capsInFlight)
    done.maxInFlight = request.devices;
  std::string error =
      checkComplete(*info, done.devices, *done.microbatches,
                    *done.chunksPerDevice, done.maxInFlight, flagPrefix);
  if (!error.empty())
    return Result<ScheduleOptions>::failure(std::move(error));
  return Result<ScheduleOptions>::success(std::move(done));
}

std::string checkPlacementCounts(int devices, int chunksPerDevice,
                                 int dataParallel, const char *flagPrefix) {
  std::string error = checkWorld(devices, dataParallel, flagPrefix);
  if (error.empty())
    error = checkRange(flagPrefix, option::kChunksPerDevice, chunksPerDevice, 1,
                       limit::kMaxChunksPerDevice);
  return error;
}

Result<Placement> schedulePlacement(const ScheduleOptions &request) {
  Result<ScheduleOptions> done = validate(request);
  if (!done)
    return Result<Placement>::failure(done.error);
  const ScheduleInfo &info = *findSchedule(done->schedule);
  return makePlacement(info.placement, done->devices,
                       info.takesChunks() ? *done->chunksPerDevice : 1);
}

Result<Schedule> generateSchedule(const ScheduleOptions &request) {
  Result<ScheduleOptions> done = validate(request);
  if (!done)
    return Result<Schedule>::failure(done.error);
  return findSchedule(done->schedule)->generate(*done);
}

} // namespace bitpipe::sched
