//===- DeviceMemory.cpp - The caching pool of device memory --------------===//
//
// bp_cuda_alloc / bp_cuda_free (bitpipe/cuda.h): blocks split from segments
// of device memory that the pool keeps (core/BlockPool.h: best fit, freed
// neighbours merged, a freed block handed out again only on the stream it
// was freed on), so that a training step stops asking CUDA for memory after
// its first step, and what the pool holds stays close to its peak in use
// whatever mix of sizes the schedule's phases allocate. What this file adds
// is the source of the segments (Backing, below) and the messages:
//  - a block's size cannot live in a header in front of it (the host cannot
//    touch device memory), so BlockPool keeps its blocks in a map, which
//    also catches a block freed twice;
//  - segments come from the driver's stream-ordered pool (cudaMallocAsync)
//    where the device has one, which is what lets an out-of-memory give the
//    free segments back without waiting on the host for the whole device.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "core/BlockPool.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>

namespace {

using bitpipe::runtime::cuda::checkCuda;

/// Where the pool's segments come from. Stream-ordered allocation
/// (cudaMallocAsync from the device's default memory pool, told to keep
/// what is freed) where the device has memory pools, because its segments
/// go back with cudaFreeAsync, which waits for nothing on the host; plain
/// cudaMalloc otherwise, whose memory goes back only with cudaFree, which
/// waits for the whole device (docs/runtime-abi.md, "Device memory").
class Backing : public bitpipe::runtime::SegmentSource {
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
      // at every synchronisation (the default threshold is 0): segments go
      // back only when a request failed, to be handed out again at once
      // for the request that needs them.
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
                     "out-of-memory cannot give its free segments back\n",
                     cudaGetErrorName(err));
        std::fflush(stderr);
        return;
      }
      streamOrdered_ = true;
    });
  }

  bool streamOrdered() const { return streamOrdered_; }

  void *obtain(size_t bytes, const void *stream) override {
    init();
    void *segment = nullptr;
    cudaError_t err = streamOrdered_
                          ? cudaMallocAsync(&segment, bytes,
                                            static_cast<cudaStream_t>(
                                                const_cast<void *>(stream)))
                          // Host-waiting call: without memory pools.
                          : cudaMalloc(&segment, bytes);
    if (err != cudaSuccess) {
      // Not sticky: cleared for later checks. Anything but a lack of
      // memory is said here; the pool reports the failed request.
      cudaGetLastError();
      if (err != cudaErrorMemoryAllocation)
        checkCuda(err, "bp_cuda_alloc (a new segment)");
      lastError_ = err;
      return nullptr;
    }
    return segment;
  }

  bool canGiveBack() const override { return streamOrdered_; }

  void giveBack(void *segment, size_t, const void *stream) override {
    checkCuda(cudaFreeAsync(segment, static_cast<cudaStream_t>(
                                         const_cast<void *>(stream))),
              "bp_cuda_alloc (giving a free segment back)");
  }

  /// The error of the last obtain that failed.
  cudaError_t lastError() const { return lastError_; }

private:
  std::once_flag once_;
  bool streamOrdered_ = false;
  cudaError_t lastError_ = cudaSuccess;
};

class DevicePool {
public:
  void *allocate(size_t bytes, cudaStream_t stream) {
    std::lock_guard<std::mutex> lock(mutex_);
    void *block = blocks_.allocate(bytes, stream);
    if (!block)
      reportFailure(bytes);
    return block;
  }

  void release(void *ptr, cudaStream_t stream) {
    if (!ptr)
      return;
    std::lock_guard<std::mutex> lock(mutex_);
    // Caching a block that is not ours, or one already free, would hand
    // the same memory out twice.
    using Release = bitpipe::runtime::BlockPool::Release;
    Release r = blocks_.release(ptr, stream);
    if (r != Release::Done) {
      std::fprintf(stderr, "bitpipe: cuda: bp_cuda_free(%p): %s; ignored\n",
                   ptr,
                   r == Release::AlreadyFree
                       ? "already freed"
                       : "not a block of bp_cuda_alloc (or freed already)");
      std::fflush(stderr);
    }
  }

  void stats(int64_t *inUse, int64_t *peak, int64_t *reserved) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.counters().read(inUse, peak, reserved);
  }

private:
  /// One message with what the pool holds, so that an out-of-memory says
  /// how close the run was. Under the lock.
  void reportFailure(size_t bytes) {
    int64_t inUse = 0, reserved = 0;
    blocks_.counters().read(&inUse, nullptr, &reserved);
    char what[256];
    std::snprintf(what, sizeof what,
                  "bp_cuda_alloc(%zu bytes; the pool hands out %.1f MiB, "
                  "holds %.1f MiB from CUDA, %s)",
                  bytes, inUse / 1048576.0, reserved / 1048576.0,
                  backing_.streamOrdered()
                      ? "its free segments given back"
                      : "its free segments kept: without memory pools on "
                        "this device, giving them back would wait for the "
                        "whole device");
    checkCuda(backing_.lastError() == cudaSuccess ? cudaErrorMemoryAllocation
                                                  : backing_.lastError(),
              what);
  }

  std::mutex mutex_;
  Backing backing_;
  bitpipe::runtime::BlockPool blocks_{backing_};
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
