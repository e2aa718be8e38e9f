//===- ArgChecks.h - Argument checks shared by every kernel -----*- C++ -*-===//
//
// runtime.h and cuda.h promise BP_ERR_INVALID_ARGUMENT for null pointers and
// non-positive sizes, checked before anything is written or enqueued. The
// CPU and the CUDA kernels check the same way, so the checks live here, in
// the device-agnostic core, rather than in either backend's folder. Header
// only and free of host-library calls: nvcc compiles it into the .cu files.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_ARGCHECKS_H
#define BITPIPE_RUNTIME_CORE_ARGCHECKS_H

#include <cstdint>
#include <initializer_list>

namespace bitpipe::runtime {

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

/// True if the product of \p sizes, each positive, is at most \p limit,
/// without forming a product that could overflow: floor(floor(limit / a) /
/// b) is floor(limit / (a b)), which is >= 1 exactly when a b <= limit.
inline bool productAtMost(std::initializer_list<int64_t> sizes, int64_t limit) {
  for (int64_t s : sizes)
    limit /= s;
  return limit >= 1;
}

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_ARGCHECKS_H
