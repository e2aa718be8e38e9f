//===- ScheduleFlags.cpp - `--flag value` command lines -------------------===//

#include "bitpipe/Schedule/ScheduleFlags.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace bitpipe::sched {

namespace {

/// A whole decimal integer in [min, INT_MAX], or an error message.
std::string parseInt(const std::string &name, const std::string &text, int min,
                     int &out) {
  char *end = nullptr;
  errno = 0;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end || errno == ERANGE || value < min || value > INT_MAX)
    return name + " expects " +
           (min == INT_MIN ? std::string("an integer")
                           : "an integer of at least " + std::to_string(min)) +
           ", got '" + text + "'";
  out = static_cast<int>(value);
  return {};
}

} // namespace

FlagParser::FlagParser(std::string program, std::string usage)
    : program(std::move(program)), usage(std::move(usage)) {}

FlagParser &FlagParser::add(const std::string &name, Setter set) {
  flags.emplace_back(name, std::move(set));
  return *this;
}

FlagParser &FlagParser::flag(const std::string &name, std::string *into) {
  return add(name, [into](const std::string &text) {
    *into = text;
    return std::string();
  });
}

FlagParser &FlagParser::flag(const std::string &name, int *into, int min) {
  return add(name, [=](const std::string &text) {
    return parseInt(name, text, min, *into);
  });
}

FlagParser &FlagParser::flag(const std::string &name, std::optional<int> *into,
                             int min) {
  return add(name, [=](const std::string &text) {
    int value = 0;
    std::string error = parseInt(name, text, min, value);
    if (error.empty())
      *into = value;
    return error;
  });
}

FlagParser &FlagParser::flag(const std::string &name, double *into) {
  return add(name, [=](const std::string &text) {
    char *end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end)
      return name + " expects a number, got '" + text + "'";
    *into = value;
    return std::string();
  });
}

FlagParser &FlagParser::positional(std::vector<std::string> *into) {
  rest = into;
  return *this;
}

FlagParser &FlagParser::scheduleFlags(ScheduleOptions *options) {
  // Any integer: validate() says what each needs, naming the flag.
  return flag(flagName(option::kSchedule), &options->schedule)
      .flag(flagName(option::kDevices), &options->devices)
      .flag(flagName(option::kMicrobatches), &options->microbatches)
      .flag(flagName(option::kChunksPerDevice), &options->chunksPerDevice);
}

int FlagParser::fail(const std::string &message) const {
  std::fprintf(stderr, "%s: %s\n", program.c_str(), message.c_str());
  return 1;
}

bool FlagParser::parse(int argc, char **argv) {
  auto reject = [&](const std::string &message) {
    fail(message);
    std::fprintf(stderr, "usage: %s %s\n", program.c_str(), usage.c_str());
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0) {
      if (!rest)
        return reject("unexpected argument '" + arg + "'");
      rest->push_back(arg);
      continue;
    }
    const Setter *set = nullptr;
    for (const auto &[name, setter] : flags)
      if (name == arg)
        set = &setter;
    if (!set)
      return reject("unknown flag " + arg);
    if (i + 1 >= argc)
      return reject(arg + " needs a value");
    std::string error = (*set)(argv[++i]);
    if (!error.empty())
      return reject(error);
  }
  return true;
}

} // namespace bitpipe::sched
