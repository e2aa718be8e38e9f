//===- DeviceMemory.cpp - The caching pool of device memory --------------===//
//
// bp_cuda_alloc / bp_cuda_free (bitpipe/cuda.h): host memory's pool
// (runtime/lib/cpu/HostMemory.cpp) for the device. Freed blocks are cached
// by exact rounded size, so a training step, which allocates the same few
// sizes every micro-batch, stops calling cudaMalloc (slow, and it may
// synchronize the device) after its first step. Two differences from the
// host pool:
//  - a block's size cannot live in a header in front of it (the host cannot
//    touch device memory), so a map from pointer to block holds it (which
//    also catches a block freed twice);
//  - free lists are per stream: a block freed on stream s may still be in use
//    by work queued on s, and only later work on s is ordered after that
//    (see the stream-order contract in cuda.h).
// cudaMallocAsync's pools would also do this; the explicit pool keeps the
// same accounting and reuse rule as the host pool and plain cudaMalloc
// memory, which NCCL registers without fuss.
//
// None of this has run on a GPU yet.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "core/PoolCounters.h"

#include <cstddef>
#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

using bitpipe::runtime::cuda::checkCuda;

/// Rounded so that near-equal requests share a free list: 512 B units below
/// 1 MiB (cudaMalloc aligns to 256 B anyway), 128 KiB above (at most 1/8
/// wasted).
size_t roundSize(size_t bytes) {
  size_t unit = bytes < (size_t(1) << 20) ? 512 : (size_t(128) << 10);
  return (std::max<size_t>(bytes, 1) + unit - 1) / unit * unit;
}

struct FreeListKey {
  cudaStream_t stream;
  size_t size;
  bool operator==(const FreeListKey &o) const {
    return stream == o.stream && size == o.size;
  }
};
struct FreeListKeyHash {
  size_t operator()(const FreeListKey &k) const {
    return std::hash<const void *>()(k.stream) * 31 + std::hash<size_t>()(k.size);
  }
};

class DevicePool {
public:
  void *allocate(size_t bytes, cudaStream_t stream) {
    const size_t size = roundSize(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find({stream, size});
      if (it != free_.end() && !it->second.empty()) {
        void *block = it->second.back();
        it->second.pop_back();
        blocks_[block].cached = false;
        counters_.handedOut(size);
        return block;
      }
    }
    void *block = nullptr;
    cudaError_t err = cudaMalloc(&block, size);
    if (err == cudaErrorMemoryAllocation) {
      // The cached blocks of other sizes and streams may be what is missing.
      cudaGetLastError(); // Not sticky: clear it before trying again.
      releaseCached();
      err = cudaMalloc(&block, size);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      char what[96];
      std::snprintf(what, sizeof what, "bp_cuda_alloc(%zu bytes)", size);
      checkCuda(err, what);
      return nullptr;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_[block] = {size, false};
    counters_.reserved(size);
    counters_.handedOut(size);
    return block;
  }

  void release(void *ptr, cudaStream_t stream) {
    if (!ptr)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(ptr);
    // Caching a block that is not ours, or one already cached, would hand
    // the same memory out twice.
    if (it == blocks_.end() || it->second.cached) {
      std::fprintf(stderr,
                   "bitpipe: cuda: bp_cuda_free(%p): %s; ignored\n", ptr,
                   it == blocks_.end() ? "not a block of bp_cuda_alloc"
                                       : "already freed");
      return;
    }
    it->second.cached = true;
    counters_.takenBack(it->second.size);
    free_[{stream, it->second.size}].push_back(ptr);
  }

  void stats(int64_t *inUse, int64_t *peak, int64_t *reserved) {
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.read(inUse, peak, reserved);
  }

private:
  /// Returns every cached block to CUDA, after the device is idle: a cached
  /// block may still be read by queued work of the stream that freed it.
  void releaseCached() {
    if (checkCuda(cudaDeviceSynchronize(), "bp_cuda_alloc (releasing cache)") !=
        BP_OK)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto &[key, blocks] : free_) {
      for (void *block : blocks) {
        checkCuda(cudaFree(block), "bp_cuda_alloc (releasing cache)");
        blocks_.erase(block);
        counters_.returned(key.size);
      }
    }
    free_.clear();
  }

  std::mutex mutex_;
  std::unordered_map<FreeListKey, std::vector<void *>, FreeListKeyHash> free_;
  struct Block {
    size_t size;
    bool cached; // In a free list, not handed out.
  };
  std::unordered_map<void *, Block> blocks_;
  bitpipe::runtime::PoolCounters counters_;
};

/// Never destroyed: blocks may be released during static destruction, and
/// the driver reclaims device memory at exit anyway.
DevicePool &pool() {
  static DevicePool *p = new DevicePool;
  return *p;
}

} // namespace

extern "C" {

void *bp_cuda_alloc(int64_t bytes, void *stream) {
  if (bytes < 0)
    return nullptr;
  return pool().allocate(static_cast<size_t>(bytes),
                         bitpipe::runtime::cuda::asStream(stream));
}

void bp_cuda_free(void *ptr, void *stream) {
  pool().release(ptr, bitpipe::runtime::cuda::asStream(stream));
}

void bp_cuda_memory_stats(int64_t *inUse, int64_t *peakInUse,
                          int64_t *reserved) {
  pool().stats(inUse, peakInUse, reserved);
}

} // extern "C"
