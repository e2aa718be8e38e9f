//===- Support.cpp - Entry points for generated code ------------*- C++ -*-===//
//
// bp_fill (zeroing of accumulated gradients, splat constants) and bp_check,
// the error reporter that generated code calls with every kernel's status.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "core/KernelProfile.h"

#include <cstdio>
#include <cstdlib>

using namespace bitpipe::runtime::cpu;

extern "C" bp_status_t bp_fill(float *out, float value, int64_t n) {
  BP_PROFILE_KERNEL(fill);
  if (!allNonNull({out}) || !allPositive({n}))
    return BP_ERR_INVALID_ARGUMENT;
  for (int64_t i = 0; i < n; ++i)
    out[i] = value;
  return BP_OK;
}

static const char *describe(bp_status_t status) {
  switch (status) {
  case BP_ERR_INVALID_ARGUMENT:
    return "invalid argument";
  case BP_ERR_OUT_OF_MEMORY:
    return "out of memory";
  default:
    return "unknown status";
  }
}

extern "C" void bp_check(bp_status_t status, const char *what) {
  if (status == BP_OK)
    return;
  std::fprintf(stderr, "bitpipe: %s failed: %s (status %d)\n",
               what ? what : "<kernel>", describe(status),
               static_cast<int>(status));
  std::fflush(stderr);
  std::abort();
}
