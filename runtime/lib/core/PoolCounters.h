//===- PoolCounters.h - Byte counts of a caching allocator ------*- C++ -*-===//
//
// What the host pool (cpu/HostMemory.cpp) and the device pool
// (cuda/DeviceMemory.cpp) report through bp_memory_stats and
// bp_cuda_memory_stats: bytes handed out now, the most ever at once, and
// bytes held from the system (handed out + cached). Not thread-safe: the
// pools call it under their own lock.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_POOLCOUNTERS_H
#define BITPIPE_RUNTIME_CORE_POOLCOUNTERS_H

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace bitpipe::runtime {

class PoolCounters {
public:
  /// A block was obtained from the system (then handed out: call
  /// handedOut too).
  void reserved(size_t bytes) { reserved_ += static_cast<int64_t>(bytes); }
  /// A cached block went back to the system.
  void returned(size_t bytes) { reserved_ -= static_cast<int64_t>(bytes); }
  void handedOut(size_t bytes) {
    inUse_ += static_cast<int64_t>(bytes);
    peak_ = std::max(peak_, inUse_);
  }
  void takenBack(size_t bytes) { inUse_ -= static_cast<int64_t>(bytes); }

  /// Any pointer may be null.
  void read(int64_t *inUse, int64_t *peak, int64_t *reserved) const {
    if (inUse)
      *inUse = inUse_;
    if (peak)
      *peak = peak_;
    if (reserved)
      *reserved = reserved_;
  }

private:
  int64_t inUse_ = 0, peak_ = 0, reserved_ = 0;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_POOLCOUNTERS_H
