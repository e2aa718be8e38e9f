//===- FuzzFinding.cpp - A target reports a broken promise ------*- C++ -*-===//

#include "FuzzTarget.h"

#include <cstdio>
#include <cstdlib>

[[noreturn]] void bitpipe::fuzz::reportFuzzFinding(const char *what) {
  std::fprintf(stderr, "fuzz finding: %s\n", what);
  std::fflush(stderr);
  std::abort();
}
