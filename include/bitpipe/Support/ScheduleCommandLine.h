//===- ScheduleCommandLine.h - A schedule request as flags -*- C++ -*-===//
//
// The command-line flags of a schedule request, for the programs that parse
// their command line with llvm::cl (bitpipe-compile, bench-pipeline,
// bench-bubble): --schedule, --devices, --microbatches, --chunks-per-device,
// --max-in-flight and --dp, named by sched::option as bitpipe-pipeline's
// textual options are, read into the one request struct
// (sched::ScheduleOptions) that the schedule registry checks and completes
// (sched::validate). Declare one ScheduleCommandLine in main() before
// cl::ParseCommandLineOptions. The ranges in the help texts are sched::limit's
// (Registry.h).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_SCHEDULECOMMANDLINE_H
#define BITPIPE_SUPPORT_SCHEDULECOMMANDLINE_H

#include "bitpipe/Schedule/Registry.h"

#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>

namespace bitpipe {

class ScheduleCommandLine {
public:
  /// Registers the flags in \p category. \p defaults gives the schedule,
  /// devices and copies a flag that is not given takes; micro-batches and
  /// chunks per device not given are left to the registry unless
  /// \p defaults sets them.
  ScheduleCommandLine(llvm::cl::OptionCategory &category,
                      const sched::ScheduleOptions &defaults)
      : defaults(defaults), scheduleHelp(sched::scheduleNameList() +
                                         withDefault(defaults.schedule)),
        devicesHelp("Pipeline devices D, 1..4096" +
                    withDefault(defaults.devices
                                    ? std::to_string(defaults.devices)
                                    : "")),
        schedule(sched::option::kSchedule, llvm::cl::desc(scheduleHelp),
                 llvm::cl::init(defaults.schedule), llvm::cl::cat(category)),
        devices(sched::option::kDevices, llvm::cl::desc(devicesHelp),
                llvm::cl::init(defaults.devices), llvm::cl::cat(category)),
        microbatches(sched::option::kMicrobatches,
                     llvm::cl::desc("Micro-batches per step and copy N, "
                                    "1..65536 (default: the schedule's, 2 D)"),
                     llvm::cl::cat(category)),
        chunksPerDevice(sched::option::kChunksPerDevice,
                        llvm::cl::desc("Chunks per device of "
                                       "interleaved-1f1b, 2..64 (default: "
                                       "the schedule's, 2)"),
                        llvm::cl::cat(category)),
        maxInFlight(sched::option::kMaxInFlight,
                    llvm::cl::desc("Micro-batches a rank may hold in flight, "
                                   "1..D, for 1f1b (default: D, no cap)"),
                    llvm::cl::cat(category)),
        dataParallel(sched::option::kDataParallel,
                     llvm::cl::desc("Data-parallel copies K, 1..65536 "
                                    "(ranks: D * K, at most 2^20)"),
                     llvm::cl::init(defaults.dataParallel),
                     llvm::cl::cat(category)) {}

  /// The request as given (a flag not given: its default), unchecked.
  sched::ScheduleOptions request() const {
    sched::ScheduleOptions r;
    r.schedule = schedule;
    r.devices = devices;
    r.microbatches = given(microbatches, defaults.microbatches);
    r.chunksPerDevice = given(chunksPerDevice, defaults.chunksPerDevice);
    r.maxInFlight = given(maxInFlight, defaults.maxInFlight);
    r.dataParallel = dataParallel;
    return r;
  }

  /// The request checked and completed by the registry, its errors naming
  /// the flags ("--devices must be even: ...").
  sched::Result<sched::ScheduleOptions> validated() const {
    return sched::validate(request(), "--");
  }

private:
  /// " (default: X)" for a flag that has one; "" for one that is required.
  static std::string withDefault(const std::string &value) {
    return value.empty() ? "" : " (default: " + value + ")";
  }

  static std::optional<int> given(const llvm::cl::opt<int> &flag,
                                  std::optional<int> fallback) {
    if (flag.getNumOccurrences())
      return flag.getValue();
    return fallback;
  }

  sched::ScheduleOptions defaults;
  // The help texts, which llvm::cl keeps by reference: before the flags.
  std::string scheduleHelp, devicesHelp;
  llvm::cl::opt<std::string> schedule;
  llvm::cl::opt<int> devices;
  llvm::cl::opt<int> microbatches;
  llvm::cl::opt<int> chunksPerDevice;
  llvm::cl::opt<int> maxInFlight;
  llvm::cl::opt<int> dataParallel;
};

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_SCHEDULECOMMANDLINE_H
