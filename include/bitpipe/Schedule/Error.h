//===- Error.h - A value or an error message, without exceptions -*- C++ -*-===//
//
// The schedule library is built with -fno-exceptions (LLVM's flags), so the
// factories that can reject their arguments return a Result: either a value
// or a message that says what was required. Plain C++, no LLVM dependency.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_ERROR_H
#define BITPIPE_SCHEDULE_ERROR_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>

namespace bitpipe::sched {

/// Either a value, or (when `value` is empty) an error message.
template <class T> struct Result {
  std::optional<T> value;
  std::string error;

  static Result success(T v) { return Result{std::move(v), {}}; }
  static Result failure(std::string message) {
    return Result{std::nullopt, std::move(message)};
  }

  bool ok() const { return value.has_value(); }
  explicit operator bool() const { return ok(); }
  T &operator*() {
    assert(ok() && "dereferencing a failed Result");
    return *value;
  }
  const T &operator*() const {
    assert(ok() && "dereferencing a failed Result");
    return *value;
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }
};

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_ERROR_H
