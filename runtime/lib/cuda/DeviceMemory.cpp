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
// Below it, the driver's stream-ordered pool (cudaMallocAsync) where the
// device has one: it serves the sizes this pool has not cached, and it is
// what lets an out-of-memory give the cache back without waiting on the
// host for the whole device (Backing, below).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "core/PoolCounters.h"

#include <cstddef>
#include <cstdint>
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

/// Where the pool's blocks come from. Stream-ordered allocation
/// (cudaMallocAsync from the device's default memory pool, told to keep
/// what is freed) where the device has memory pools, because its blocks go
/// back with cudaFreeAsync, which waits for nothing on the host; plain
/// cudaMalloc otherwise, whose memory goes back only with cudaFree, which
/// waits for the whole device (docs/runtime-abi.md, "Device memory").
class Backing {
public:
  /// Chooses on the current device, once.
  void init() {
    std::call_once(once_, [this] {
      int device = 0, pools = 0;
      if (cudaGetDevice(&device) != cudaSuccess ||
          cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported,
                                 device) != cudaSuccess) {
        cudaGetLastError();
        return;
      }
      cudaMemPool_t pool = nullptr;
      if (!pools || cudaDeviceGetDefaultMemPool(&pool, device) != cudaSuccess) {
        cudaGetLastError();
        return;
      }
      // Keep freed memory in the driver's pool rather than giving it back
      // at every synchronisation (the default threshold is 0): the pool
      // above caches by size, this one serves the other sizes.
      uint64_t keepAll = UINT64_MAX;
      if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold,
                                  &keepAll) != cudaSuccess) {
        cudaGetLastError();
        return;
      }
      // A device may say it has memory pools and a sandbox's driver still
      // refuse them: one small block tried here, at start-up (the pool's
      // first user is bp_cuda_prepare), decides.
      void *probe = nullptr;
      cudaError_t err = cudaMallocAsync(&probe, 512, nullptr);
      if (err == cudaSuccess)
        err = cudaFreeAsync(probe, nullptr);
      if (err != cudaSuccess) {
        cudaGetLastError();
        std::fprintf(stderr,
                     "bitpipe: cuda: stream-ordered allocation is refused "
                     "here (%s); the device pool uses cudaMalloc, and an "
                     "out-of-memory cannot give its cache back\n",
                     cudaGetErrorName(err));
        std::fflush(stderr);
        return;
      }
      streamOrdered_ = true;
    });
  }

  bool streamOrdered() const { return streamOrdered_; }

  cudaError_t allocate(void **block, size_t size, cudaStream_t stream) {
    if (streamOrdered_)
      return cudaMallocAsync(block, size, stream);
    // Host-waiting call: without memory pools.
    return cudaMalloc(block, size);
  }

  /// Gives \p block back in \p stream's order; only when streamOrdered().
  cudaError_t giveBack(void *block, cudaStream_t stream) {
    return cudaFreeAsync(block, stream);
  }

private:
  std::once_flag once_;
  bool streamOrdered_ = false;
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
    backing_.init();
    void *block = nullptr;
    cudaError_t err = backing_.allocate(&block, size, stream);
    if (err == cudaErrorMemoryAllocation && giveBackCached()) {
      // The cached blocks of other sizes and streams were what was missing;
      // given back in their streams' order, the driver's pool hands their
      // memory out again once their streams' work allows.
      cudaGetLastError(); // Not sticky: clear it before trying again.
      err = backing_.allocate(&block, size, stream);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      reportFailure(err, size);
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
  /// Gives every cached block back to CUDA in the order of the stream that
  /// freed it, so that nothing waits on the host: a peer's NCCL kernel may
  /// be spinning on this device, and a host wait for the whole device
  /// (cudaDeviceSynchronize, cudaFree) would then never return and no
  /// --timeout could fire. Without stream-ordered allocation nothing can be
  /// given back that way: false, and the allocation fails.
  bool giveBackCached() {
    if (!backing_.streamOrdered())
      return false;
    std::lock_guard<std::mutex> lock(mutex_);
    bool any = false;
    for (auto &[key, blocks] : free_) {
      for (void *block : blocks) {
        checkCuda(backing_.giveBack(block, key.stream),
                  "bp_cuda_alloc (giving the cache back)");
        blocks_.erase(block);
        counters_.returned(key.size);
        any = true;
      }
    }
    free_.clear();
    return any;
  }

  /// One message with what the pool holds, so that an out-of-memory says
  /// how close the run was.
  void reportFailure(cudaError_t err, size_t size) {
    int64_t inUse = 0, peak = 0, reserved = 0;
    stats(&inUse, &peak, &reserved);
    char what[256];
    std::snprintf(what, sizeof what,
                  "bp_cuda_alloc(%zu bytes; the pool hands out %.1f MiB, "
                  "holds %.1f MiB from CUDA, %s)",
                  size, inUse / 1048576.0, reserved / 1048576.0,
                  backing_.streamOrdered()
                      ? "its cache given back"
                      : "its cache kept: without memory pools on this "
                        "device, giving it back would wait for the whole "
                        "device");
    checkCuda(err, what);
  }

  Backing backing_;
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
