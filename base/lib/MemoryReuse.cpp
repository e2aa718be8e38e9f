//===- MemoryReuse.cpp - Keep freed memory for the next use ---------------===//

#include "bitpipe/base/MemoryReuse.h"

#include <cstdlib> // Defines __GLIBC__ with glibc.

#if defined(__GLIBC__)
#include <malloc.h>
#endif

void bitpipe::keepFreedMemoryForReuse() {
#if defined(__GLIBC__)
  // The largest threshold glibc accepts on 64-bit targets (32 MiB); a fixed
  // value also stops its dynamic threshold from being relearned per block.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  // Freed memory at the top of the heap stays mapped.
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}
