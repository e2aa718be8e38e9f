//===- ScheduleFlags.h - `--flag value` command lines -----------*- C++ -*-===//
//
// The one command-line parser of the small drivers that have no LLVM
// command line (bench/): each declares its own flags, and scheduleFlags()
// declares the schedule request's (--schedule, --devices, --microbatches,
// --chunks-per-device) over a ScheduleOptions, so that every driver spells
// them alike and leaves their defaults and checks to validate().
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_SCHEDULEFLAGS_H
#define BITPIPE_SCHEDULE_SCHEDULEFLAGS_H

#include "bitpipe/Schedule/Registry.h"

#include <climits>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bitpipe::sched {

/// "--devices" for option::kDevices.
inline std::string flagName(const char *option) {
  return std::string("--") + option;
}

class FlagParser {
public:
  /// `program` prefixes messages; `usage` follows "usage: " on errors.
  FlagParser(std::string program, std::string usage);

  /// `--name VALUE` flags. An integer flag takes a whole decimal number of
  /// at least `min`.
  FlagParser &flag(const std::string &name, std::string *into);
  FlagParser &flag(const std::string &name, int *into, int min = INT_MIN);
  FlagParser &flag(const std::string &name, std::optional<int> *into,
                   int min = INT_MIN);
  FlagParser &flag(const std::string &name, double *into);
  /// Arguments that do not start with "--", in order.
  FlagParser &positional(std::vector<std::string> *into);

  /// --schedule, --devices, --microbatches, --chunks-per-device: the
  /// request, unchecked (validate() checks it, with "--" as the prefix).
  FlagParser &scheduleFlags(ScheduleOptions *options);

  /// Parses argv[1..argc). On an unknown flag, a flag without its value or
  /// a malformed value, prints "<program>: <what>" and the usage to stderr
  /// and returns false.
  bool parse(int argc, char **argv);

  /// Prints "<program>: <message>" to stderr; returns 1 (an exit code).
  int fail(const std::string &message) const;

private:
  /// Stores the value text; returns an error message, empty on success.
  using Setter = std::function<std::string(const std::string &)>;
  FlagParser &add(const std::string &name, Setter set);

  std::string program, usage;
  std::vector<std::pair<std::string, Setter>> flags;
  std::vector<std::string> *rest = nullptr;
};

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_SCHEDULEFLAGS_H
