//===- GradChunk.cpp - The kernel threads' gradient scratch ---------------===//

#include "GradChunk.h"
#include "core/CpuClones.h"

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

// Memory-bound; its AVX2 copy widens and adds 4 floats an instruction.
// A widening add has one rounding in either copy: the same bits.
BP_CPU_CLONES void addIntoFloat64(double *acc, const float *g, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    acc[i] += static_cast<double>(g[i]);
}

float *threadScratch(int slot, int64_t count, bool zeroed) {
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
  if (zeroed)
    std::memset(s.data, 0, static_cast<size_t>(count) * sizeof(float));
  return s.data;
}

} // namespace bitpipe::runtime::cpu
