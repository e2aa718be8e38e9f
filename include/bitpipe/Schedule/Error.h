//===- Error.h - A value or an error message --------------------*- C++ -*-===//
//
// The build has exceptions off, so fallible functions of the schedule library
// return a Result: either a value, or a human-readable error string.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_ERROR_H
#define BITPIPE_SCHEDULE_ERROR_H

#include <optional>
#include <string>

namespace bitpipe::sched {

template <class T> struct Result {
  std::optional<T> value;
  std::string error;

  explicit operator bool() const { return value.has_value(); }
};

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_ERROR_H
