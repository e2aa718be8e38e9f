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
// CUDA graphs of a step (cuda.h, "The pool's blocks"): every hand-out has a
// serial number, and the pool can record what it hands out and say where a
// block is, so that the backend checks a graph's addresses before each
// replay. A block missing from the cache while the requesting stream is
// being captured cannot come from cudaMallocAsync on that stream (the
// allocation would be a node of the graph, its memory valid only inside
// the graph): it comes from cudaMalloc, which the capture does not record,
// under the relaxed capture mode of this thread, and it is never given back
// (cudaFreeAsync is for stream-ordered blocks).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "core/PoolCounters.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
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
        Block &b = blocks_[block];
        b.cached = false;
        handOut(block, b);
        return block;
      }
    }
    // The backing's one-time probe is stream work: not inside a capture
    // (bp_cuda_prepare has made it long before one).
    const bool capturing = isCapturing(stream);
    if (!capturing)
      backing_.init();
    void *block = nullptr;
    cudaError_t err = capturing ? allocateOutsideCapture(&block, size)
                                : backing_.allocate(&block, size, stream);
    // Giving the cache back is stream-ordered work, which a capture would
    // record instead of doing.
    if (err == cudaErrorMemoryAllocation && !capturing && giveBackCached()) {
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
    Block &b = blocks_[block];
    b = {size, false, capturing};
    counters_.reserved(size);
    handOut(block, b);
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

  void record(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    recording_ = on;
    if (on)
      recorded_.clear();
  }

  int64_t recorded(bp_cuda_pool_block *out, int64_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    copyOut(recorded_, out, capacity);
    return static_cast<int64_t>(recorded_.size());
  }

  int64_t held(bp_cuda_pool_block *out, int64_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<bp_cuda_pool_block> all;
    for (const auto &[ptr, b] : blocks_)
      if (!b.cached)
        all.push_back({ptr, static_cast<int64_t>(b.size), b.serial});
    std::sort(all.begin(), all.end(),
              [](const bp_cuda_pool_block &x, const bp_cuda_pool_block &y) {
                return std::less<const void *>()(x.ptr, y.ptr);
              });
    copyOut(all, out, capacity);
    return static_cast<int64_t>(all.size());
  }

  int32_t state(const void *ptr, uint64_t *serial) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(const_cast<void *>(ptr));
    if (it == blocks_.end())
      return BP_CUDA_BLOCK_ABSENT;
    if (it->second.cached)
      return BP_CUDA_BLOCK_CACHED;
    if (serial)
      *serial = it->second.serial;
    return BP_CUDA_BLOCK_HELD;
  }

private:
  struct Block {
    size_t size = 0;
    bool cached = false; // In a free list, not handed out.
    /// From cudaMalloc during a capture (allocateOutsideCapture): kept
    /// cached for good, never given back with cudaFreeAsync.
    bool outsideStreamOrder = false;
    uint64_t serial = 0; // the hand-out that holds it, while not cached
  };

  /// Under the lock: \p block (of \p b) leaves the pool.
  void handOut(void *block, Block &b) {
    b.serial = ++lastSerial_;
    counters_.handedOut(b.size);
    if (recording_)
      recorded_.push_back({block, static_cast<int64_t>(b.size), b.serial});
  }

  static void copyOut(const std::vector<bp_cuda_pool_block> &from,
                      bp_cuda_pool_block *out, int64_t capacity) {
    if (!out)
      return;
    const size_t n = std::min(
        from.size(), static_cast<size_t>(std::max<int64_t>(0, capacity)));
    std::copy(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(n), out);
  }

  /// Whether \p stream is being captured into a graph. A stream the query
  /// refuses is taken as not captured (the allocation then reports what
  /// is wrong with it).
  static bool isCapturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return status == cudaStreamCaptureStatusActive;
  }

  /// A block for a capture: cudaMalloc is not stream work, so no node of
  /// the graph; the capture's mode (thread-local, which forbids calls that
  /// may synchronize) is relaxed around it for this thread.
  static cudaError_t allocateOutsideCapture(void **block, size_t size) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaError_t err = cudaThreadExchangeStreamCaptureMode(&mode);
    if (err != cudaSuccess)
      return err;
    // Host-waiting call: only for a block the cache lacks inside a
    // capture, which the steady steps before it make rare.
    err = cudaMalloc(block, size);
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return err;
  }

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
      std::vector<void *> kept;
      for (void *block : blocks) {
        if (blocks_[block].outsideStreamOrder) {
          kept.push_back(block);
          continue;
        }
        checkCuda(backing_.giveBack(block, key.stream),
                  "bp_cuda_alloc (giving the cache back)");
        blocks_.erase(block);
        counters_.returned(key.size);
        any = true;
      }
      blocks = std::move(kept);
    }
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
  std::unordered_map<void *, Block> blocks_;
  bitpipe::runtime::PoolCounters counters_;
  uint64_t lastSerial_ = 0;
  bool recording_ = false;
  std::vector<bp_cuda_pool_block> recorded_;
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

void bp_cuda_pool_record(int32_t on) { pool().record(on != 0); }

int64_t bp_cuda_pool_recorded(bp_cuda_pool_block *out, int64_t capacity) {
  return pool().recorded(out, capacity);
}

int64_t bp_cuda_pool_held(bp_cuda_pool_block *out, int64_t capacity) {
  return pool().held(out, capacity);
}

int32_t bp_cuda_pool_block_state(const void *ptr, uint64_t *serial) {
  return pool().state(ptr, serial);
}

} // extern "C"
