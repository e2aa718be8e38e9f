//===- Common.h - Helpers shared by the CPU kernels -------------*- C++ -*-===//
//
// Argument checks and scratch memory. The runtime is built without
// exceptions, so failures are reported as bp_status_t, never thrown.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CPU_KERNELS_COMMON_H
#define BITPIPE_RUNTIME_CPU_KERNELS_COMMON_H

#include "bitpipe/runtime.h"

#include <cstdint>
#include <cstdlib>
#include <initializer_list>

namespace bitpipe::runtime::cpu {

/// True if no pointer in \p ptrs is null.
inline bool allNonNull(std::initializer_list<const void *> ptrs) {
  for (const void *p : ptrs)
    if (!p)
      return false;
  return true;
}

/// True if every size in \p sizes is positive.
inline bool allPositive(std::initializer_list<int64_t> sizes) {
  for (int64_t s : sizes)
    if (s <= 0)
      return false;
  return true;
}

/// A float buffer from malloc. operator new would abort on failure without
/// exceptions; malloc lets the kernel return BP_ERR_OUT_OF_MEMORY instead.
class ScratchBuffer {
public:
  explicit ScratchBuffer(int64_t count)
      : data(static_cast<float *>(
            std::malloc(static_cast<size_t>(count) * sizeof(float)))) {}
  ~ScratchBuffer() { std::free(data); }
  ScratchBuffer(const ScratchBuffer &) = delete;
  ScratchBuffer &operator=(const ScratchBuffer &) = delete;

  bool ok() const { return data != nullptr; }
  float *get() const { return data; }

private:
  float *data;
};

} // namespace bitpipe::runtime::cpu

#endif // BITPIPE_RUNTIME_CPU_KERNELS_COMMON_H
