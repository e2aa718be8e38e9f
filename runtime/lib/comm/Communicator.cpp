//===- Communicator.cpp - Defaults shared by every transport ----*- C++ -*-===//

#include "Communicator.h"

#include <cstdlib>

namespace bitpipe::runtime {

double defaultCommTimeoutSeconds() {
  if (const char *env = std::getenv("BITPIPE_COMM_TIMEOUT")) {
    char *end = nullptr;
    double v = std::strtod(env, &end);
    if (end != env && v > 0)
      return v;
  }
  return 300.0;
}

Communicator::Communicator() : timeoutSeconds_(defaultCommTimeoutSeconds()) {}
Communicator::~Communicator() = default;

} // namespace bitpipe::runtime
