//===- Status.cpp - Error codes and message formatting ----------*- C++ -*-===//

#include "bitpipe/base/Status.h"

#include <cstdarg>
#include <cstdio>

namespace bitpipe::base {

const char *errorCodeName(ErrorCode code) {
  switch (code) {
  case ErrorCode::Ok:
    return "ok";
  case ErrorCode::InvalidArgument:
    return "invalid argument";
  case ErrorCode::OutOfMemory:
    return "out of memory";
  case ErrorCode::NotFound:
    return "not found";
  case ErrorCode::IoError:
    return "I/O error";
  case ErrorCode::FormatError:
    return "format error";
  case ErrorCode::Timeout:
    return "timeout";
  case ErrorCode::CommFailure:
    return "communication failure";
  case ErrorCode::DeviceFailure:
    return "device failure";
  }
  return "unknown error";
}

std::string formatString(const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out;
  if (n > 0) {
    out.resize(static_cast<size_t>(n) + 1);
    std::vsnprintf(out.data(), out.size(), fmt, args);
    out.resize(static_cast<size_t>(n));
  }
  va_end(args);
  return out;
}

} // namespace bitpipe::base
