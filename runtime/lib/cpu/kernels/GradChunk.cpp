//===- GradChunk.cpp - The kernel threads' gradient scratch ---------------===//

#include "GradChunk.h"

#include <cstdlib>
#include <cstring>

namespace bitpipe::runtime::cpu {

namespace {

/// One thread's scratch: kept for the thread's life and grown when a chunk
/// needs more, so that a training step allocates nothing after its first.
struct ThreadScratch {
  float *data = nullptr;
  int64_t capacity = 0;
  ~ThreadScratch() { std::free(data); }
};

thread_local ThreadScratch scratchSlots[2];

} // namespace

float *zeroedThreadScratch(int slot, int64_t count) {
  if (slot < 0 || slot > 1 || count < 0)
    return nullptr;
  ThreadScratch &s = scratchSlots[slot];
  if (count > s.capacity) {
    void *grown =
        std::realloc(s.data, static_cast<size_t>(count) * sizeof(float));
    if (!grown)
      return nullptr;
    s.data = static_cast<float *>(grown);
    s.capacity = count;
  }
  std::memset(s.data, 0, static_cast<size_t>(count) * sizeof(float));
  return s.data;
}

} // namespace bitpipe::runtime::cpu
