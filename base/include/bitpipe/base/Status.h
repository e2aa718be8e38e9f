//===- Status.h - Error codes, Expected<T>, no exceptions -------*- C++ -*-===//
//
// Everything is built with -fno-exceptions (LLVM's HandleLLVMOptions), so
// every fallible call of the base library and the runtime returns a Status,
// or an Expected<T> holding either a value or the Status that explains why
// there is none. Messages are complete sentences meant for the user (they
// name the file, tensor, rank...), so a caller can print them as they are.
// The runtime names these as its own (runtime/lib/core/Status.h); the
// compiler's tools turn them into llvm::Error where they call the library.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_STATUS_H
#define BITPIPE_BASE_STATUS_H

#include <cassert>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

namespace bitpipe::base {

/// Error categories. The numeric values are stable: the C ABI returns them.
enum class ErrorCode : int32_t {
  Ok = 0,
  InvalidArgument = 1,
  OutOfMemory = 2,
  NotFound = 3,
  IoError = 4,
  FormatError = 5,
  Timeout = 6,
  CommFailure = 7,
  DeviceFailure = 8, // A CUDA call failed (BP_ERR_DEVICE in bitpipe/cuda.h).
};

const char *errorCodeName(ErrorCode code);

class [[nodiscard]] Status {
public:
  static Status ok() { return Status(); }
  static Status error(ErrorCode code, std::string message) {
    assert(code != ErrorCode::Ok && "an error needs a non-Ok code");
    return Status(code, std::move(message));
  }

  bool isOk() const { return code_ == ErrorCode::Ok; }
  ErrorCode code() const { return code_; }
  const std::string &message() const { return message_; }

private:
  Status() = default;
  Status(ErrorCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  ErrorCode code_ = ErrorCode::Ok;
  std::string message_;
};

/// Either a T or the Status saying why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value_(std::move(value)), status_(Status::ok()) {}
  Expected(Status status) : status_(std::move(status)) {
    assert(!status_.isOk() && "an Expected without a value needs an error");
  }

  bool isOk() const { return value_.has_value(); }
  const Status &status() const { return status_; }

  T &operator*() {
    assert(isOk());
    return *value_;
  }
  const T &operator*() const {
    assert(isOk());
    return *value_;
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }
  T take() { return std::move(**this); }

private:
  std::optional<T> value_;
  Status status_;
};

/// printf-style formatting into a std::string, for error messages.
std::string formatString(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));

} // namespace bitpipe::base

/// Returns the Status of \p expr from the enclosing function when it is an
/// error.
#define BP_TRY(expr)                                                           \
  do {                                                                         \
    ::bitpipe::base::Status bpTryStatus_ = (expr);                             \
    if (!bpTryStatus_.isOk())                                                  \
      return bpTryStatus_;                                                     \
  } while (0)

/// Binds `var` to the value of an Expected, or returns its error.
#define BP_ASSIGN(var, expr)                                                   \
  auto var##Or_ = (expr);                                                      \
  if (!var##Or_.isOk())                                                        \
    return var##Or_.status();                                                  \
  auto var = var##Or_.take()

#endif // BITPIPE_BASE_STATUS_H
