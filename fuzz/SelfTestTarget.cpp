//===- SelfTestTarget.cpp - A target that fails on purpose ----------------===//
//
// What the mutation driver must catch, on demand, for its own test
// (driver-selftest.sh): an input starting with "abort" aborts, "segv"
// writes through a null pointer, "deep" overflows the stack, "hang" spins
// past the driver's --timeout, "finding" reports a broken promise; any
// other input is refused quietly.
//
//===----------------------------------------------------------------------===//

#include "FuzzTarget.h"

#include <cstdlib>
#include <cstring>

static bool startsWith(const uint8_t *data, size_t size, const char *word) {
  size_t n = std::strlen(word);
  return size >= n && std::memcmp(data, word, n) == 0;
}

// Not tail-recursive, and the buffer keeps each frame large; the depth
// never goes negative, but the compiler cannot know that.
static int recurse(volatile int depth) {
  volatile char frame[256];
  frame[0] = static_cast<char>(depth);
  if (depth < 0)
    return 0;
  return recurse(depth + 1) + frame[0];
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (startsWith(data, size, "abort"))
    std::abort();
  if (startsWith(data, size, "segv"))
    *static_cast<volatile int *>(nullptr) = 1;
  if (startsWith(data, size, "deep"))
    return recurse(0);
  if (startsWith(data, size, "hang"))
    for (volatile unsigned long i = 0;; ++i) {
    }
  if (startsWith(data, size, "finding"))
    bitpipe::fuzz::reportFuzzFinding("the self-test's promise");
  return 0;
}
