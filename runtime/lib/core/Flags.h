//===- Flags.h - Command-line flags, declared once --------------*- C++ -*-===//
//
// One way for the runtime's programs (the training executables, the tools,
// the benchmarks that do not link LLVM) to read their command line: each
// flag is declared once, with its name, the placeholder of its value, its
// help line and where its value goes, and the same table parses argv and
// writes the usage text. Generic on purpose: it turns flags into values
// and knows nothing of what the values mean (a caller checks ranges across
// flags, required flags and the like after parse()).
//
// Syntax: "--flag value" and "--flag=value" (and "-o value" for a short
// name); a switch takes no value. An argument that does not start with '-'
// is positional. A value is the next argument whatever it looks like, so
// "--steps -1" reads -1 (and rejects it if the flag wants a count).
//
// Pure: no I/O, so every rank given the same argv gets the same answer, and
// tests call it directly. Errors are InvalidArgument naming the flag.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_FLAGS_H
#define BITPIPE_RUNTIME_CORE_FLAGS_H

#include "core/Status.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace bitpipe::runtime {

class FlagSet {
public:
  /// Receives the flag as written (its name) and its value ("" for a switch).
  using Apply =
      std::function<Status(const std::string &flag, const std::string &value)>;

  /// A flag with a value (\p arg, its placeholder in the help, e.g. "PATH")
  /// or, with \p arg null, a switch.
  FlagSet &add(const char *name, const char *arg, const char *help,
               Apply apply);

  // The common kinds of value, stored into \p out when the flag is given.
  FlagSet &text(const char *name, const char *arg, const char *help,
                std::string *out);
  /// An integer >= \p min.
  FlagSet &integer(const char *name, const char *arg, const char *help,
                   int64_t *out, int64_t min);
  /// A finite number >= \p min, or > \p min when \p strict, and at most
  /// \p max (a flag's physical range: an infinite \p max is none).
  FlagSet &number(const char *name, const char *arg, const char *help,
                  double *out, double min, bool strict, double max = HUGE_VAL);
  /// A switch: sets *out to true.
  FlagSet &toggle(const char *name, const char *help, bool *out);

  /// Applies argv[1 .. argc-1] in order. Positional arguments go to
  /// \p positional, or are an error when it is null. Stops at the first
  /// error: "unknown flag '--x' (see --help)", "flag --x needs a value
  /// (ARG)", "flag --x takes no value" or the flag's own. \p given, when
  /// not null, receives the name of every flag applied.
  Status parse(int argc, char **argv,
               std::vector<std::string> *positional = nullptr,
               std::set<std::string> *given = nullptr) const;

  /// One line per flag, "  --name ARG" padded to a column, then its help.
  std::string help() const;

private:
  struct Flag {
    const char *name;
    const char *arg; // null: a switch
    const char *help;
    Apply apply;
  };
  const Flag *find(const std::string &name) const;

  std::vector<Flag> flags_;
};

/// The error of a malformed value: "flag --x: 'v' is not <want>".
Status badFlagValue(const std::string &flag, const std::string &value,
                    const char *want);
/// \p value as an integer >= \p min, or badFlagValue.
Status parseIntFlag(const std::string &flag, const std::string &value,
                    int64_t min, int64_t *out);
/// \p value as a finite number >= \p min (> \p min when \p strict) and
/// <= \p max; otherwise nothing, and \p want says what was expected ("a
/// number above 0, at most 1e+06").
std::optional<double> parseBoundedNumber(const std::string &value, double min,
                                         bool strict, double max,
                                         std::string *want);
/// parseBoundedNumber's number, or badFlagValue naming the range.
Status parseNumberFlag(const std::string &flag, const std::string &value,
                       double min, bool strict, double *out,
                       double max = HUGE_VAL);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_FLAGS_H
