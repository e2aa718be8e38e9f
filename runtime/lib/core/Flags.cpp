//===- Flags.cpp - Command-line flags, declared once ------------*- C++ -*-===//

#include "Flags.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace bitpipe::runtime {

Status badFlagValue(const std::string &flag, const std::string &value,
                    const char *want) {
  return Status::error(ErrorCode::InvalidArgument,
                       "flag " + flag + ": '" + value + "' is not " + want);
}

Status parseIntFlag(const std::string &flag, const std::string &value,
                    int64_t min, int64_t *out) {
  char *end = nullptr;
  errno = 0;
  long long x = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || x < min) {
    std::string want = min == 1   ? "a positive integer"
                       : min == 0 ? "a non-negative integer"
                                  : formatString("an integer >= %lld",
                                                 static_cast<long long>(min));
    return badFlagValue(flag, value, want.c_str());
  }
  *out = x;
  return Status::ok();
}

std::optional<double> parseBoundedNumber(const std::string &value, double min,
                                         bool strict, double max,
                                         std::string *want) {
  char *end = nullptr;
  errno = 0;
  double x = std::strtod(value.c_str(), &end);
  if (!value.empty() && *end == '\0' && errno == 0 && std::isfinite(x) &&
      x >= min && !(strict && x == min) && x <= max)
    return x;
  *want = std::isfinite(max)
              ? formatString(strict ? "a number above %g, at most %g"
                                    : "a number from %g to %g",
                             min, max)
          : min == 0 ? (strict ? "a positive number" : "a non-negative number")
                     : formatString("a number %s %g", strict ? ">" : ">=", min);
  return std::nullopt;
}

Status parseNumberFlag(const std::string &flag, const std::string &value,
                       double min, bool strict, double *out, double max) {
  std::string want;
  std::optional<double> x = parseBoundedNumber(value, min, strict, max, &want);
  if (!x)
    return badFlagValue(flag, value, want.c_str());
  *out = *x;
  return Status::ok();
}

FlagSet &FlagSet::add(const char *name, const char *arg, const char *help,
                      Apply apply) {
  flags_.push_back({name, arg, help, std::move(apply)});
  return *this;
}

FlagSet &FlagSet::text(const char *name, const char *arg, const char *help,
                       std::string *out) {
  return add(name, arg, help,
             [out](const std::string &, const std::string &value) {
               *out = value;
               return Status::ok();
             });
}

FlagSet &FlagSet::integer(const char *name, const char *arg, const char *help,
                          int64_t *out, int64_t min) {
  return add(name, arg, help,
             [out, min](const std::string &flag, const std::string &value) {
               return parseIntFlag(flag, value, min, out);
             });
}

FlagSet &FlagSet::number(const char *name, const char *arg, const char *help,
                         double *out, double min, bool strict, double max) {
  return add(name, arg, help,
             [out, min, strict, max](const std::string &flag,
                                     const std::string &value) {
               return parseNumberFlag(flag, value, min, strict, out, max);
             });
}

FlagSet &FlagSet::toggle(const char *name, const char *help, bool *out) {
  return add(name, nullptr, help,
             [out](const std::string &, const std::string &) {
               *out = true;
               return Status::ok();
             });
}

const FlagSet::Flag *FlagSet::find(const std::string &name) const {
  for (const Flag &f : flags_)
    if (name == f.name)
      return &f;
  return nullptr;
}

Status FlagSet::parse(int argc, char **argv,
                      std::vector<std::string> *positional,
                      std::set<std::string> *given) const {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      if (!positional)
        return Status::error(ErrorCode::InvalidArgument,
                             "unexpected argument '" + arg + "' (see --help)");
      positional->push_back(arg);
      continue;
    }
    std::string name = arg, value;
    bool inlineValue = false;
    if (size_t eq = arg.find('=');
        arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inlineValue = true;
    }
    const Flag *flag = find(name);
    if (!flag)
      return Status::error(ErrorCode::InvalidArgument,
                           "unknown flag '" + arg + "' (see --help)");
    if (!flag->arg) {
      if (inlineValue)
        return Status::error(ErrorCode::InvalidArgument,
                             "flag " + name + " takes no value");
    } else if (!inlineValue) {
      if (i + 1 >= argc)
        return Status::error(ErrorCode::InvalidArgument,
                             "flag " + name + " needs a value (" + flag->arg +
                                 ")");
      value = argv[++i];
    }
    BP_TRY(flag->apply(name, value));
    if (given)
      given->insert(flag->name);
  }
  return Status::ok();
}

std::string FlagSet::help() const {
  constexpr size_t kColumn = 32;
  std::string text;
  for (const Flag &f : flags_) {
    std::string left = std::string("  ") + f.name;
    if (f.arg)
      left += std::string(" ") + f.arg;
    if (left.size() < kColumn)
      left.resize(kColumn, ' ');
    else
      left += "\n" + std::string(kColumn, ' ');
    text += left + f.help + "\n";
  }
  return text;
}

} // namespace bitpipe::runtime
