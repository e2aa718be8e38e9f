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
//    free segments back without waiting on the host for the whole device;
//  - CUDA graphs of a step (cuda.h, "The pool's blocks"): hand-outs are
//    numbered and can be recorded, and the backend asks who has a range of
//    memory before each replay; a segment missing while the requesting
//    stream is captured comes from cudaMalloc outside the graph and stays.
//
//===----------------------------------------------------------------------===//

#include "Launch.h"
#include "core/BlockPool.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <vector>

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

  Segment obtain(size_t bytes, const void *stream) override {
    const cudaStream_t s = asCudaStream(stream);
    // While the stream is captured: cudaMalloc, which the capture does not
    // record, and a segment kept for good (cudaFreeAsync is for
    // stream-ordered memory). The one-time probe of init() is stream work:
    // never inside a capture (bp_cuda_prepare made it long before one).
    const bool capturing = isCapturing(s);
    void *segment = nullptr;
    cudaError_t err;
    if (capturing) {
      err = allocateOutsideCapture(&segment, bytes);
    } else {
      init();
      err = streamOrdered_ ? cudaMallocAsync(&segment, bytes, s)
                           // Host-waiting call: without memory pools.
                           : cudaMalloc(&segment, bytes);
    }
    if (err != cudaSuccess) {
      // Not sticky: cleared for later checks. Anything but a lack of
      // memory is said here; the pool reports the failed request.
      cudaGetLastError();
      if (err != cudaErrorMemoryAllocation)
        checkCuda(err, "bp_cuda_alloc (a new segment)");
      lastError_ = err;
      return {};
    }
    return {segment, !capturing && streamOrdered_};
  }

  /// Giving back is stream-ordered work (cudaFreeAsync): only with memory
  /// pools, and never for a captured stream's request, whose capture would
  /// record it instead of doing it.
  bool canGiveBack(const void *stream) const override {
    return streamOrdered_ && !isCapturing(asCudaStream(stream));
  }

  void giveBack(void *segment, size_t, const void *stream) override {
    checkCuda(cudaFreeAsync(segment, asCudaStream(stream)),
              "bp_cuda_alloc (giving a free segment back)");
  }

  /// The error of the last obtain that failed.
  cudaError_t lastError() const { return lastError_; }

private:
  static cudaStream_t asCudaStream(const void *stream) {
    return static_cast<cudaStream_t>(const_cast<void *>(stream));
  }

  /// Whether \p stream is being captured into a graph. A stream the query
  /// refuses is taken as not captured (the allocation then says what is
  /// wrong with it).
  static bool isCapturing(cudaStream_t stream) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream, &status) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return status == cudaStreamCaptureStatusActive;
  }

  /// A segment for a capture: cudaMalloc is not stream work, so no node of
  /// the graph; the capture's mode (thread-local, which forbids calls that
  /// may synchronize) is relaxed around it for this thread.
  static cudaError_t allocateOutsideCapture(void **segment, size_t bytes) {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    cudaError_t err = cudaThreadExchangeStreamCaptureMode(&mode);
    if (err != cudaSuccess)
      return err;
    // Host-waiting call: inside a capture, for a segment the pool lacks
    // (the steady steps before it make that rare); nothing of this process
    // runs on the device meanwhile.
    err = cudaMalloc(segment, bytes);
    (void)cudaThreadExchangeStreamCaptureMode(&mode);
    return err;
  }

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

  void record(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    blocks_.record(on);
  }

  int64_t recorded(bp_cuda_pool_block *out, int64_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    return copyOut(blocks_.recorded(), out, capacity);
  }

  int64_t held(bp_cuda_pool_block *out, int64_t capacity) {
    std::lock_guard<std::mutex> lock(mutex_);
    return copyOut(blocks_.held(), out, capacity);
  }

  int32_t rangeState(const void *ptr, int64_t bytes, uint64_t *serial) {
    std::lock_guard<std::mutex> lock(mutex_);
    using State = bitpipe::runtime::BlockPool::RangeState;
    switch (blocks_.rangeState(ptr, static_cast<size_t>(bytes), serial)) {
    case State::Free:
      return BP_CUDA_RANGE_FREE;
    case State::Held:
      return BP_CUDA_RANGE_HELD;
    case State::Absent:
      break;
    }
    return BP_CUDA_RANGE_ABSENT;
  }

private:
  /// Writes at most \p capacity of \p from to \p out (null for none);
  /// returns how many there are.
  static int64_t
  copyOut(const std::vector<bitpipe::runtime::BlockPool::HandOut> &from,
          bp_cuda_pool_block *out, int64_t capacity) {
    const size_t n =
        out ? std::min(from.size(),
                       static_cast<size_t>(std::max<int64_t>(0, capacity)))
            : 0;
    for (size_t i = 0; i < n; ++i)
      out[i] = {from[i].address, static_cast<int64_t>(from[i].bytes),
                from[i].serial};
    return static_cast<int64_t>(from.size());
  }

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

void bp_cuda_pool_record(int32_t on) { pool().record(on != 0); }

int64_t bp_cuda_pool_recorded(bp_cuda_pool_block *out, int64_t capacity) {
  return pool().recorded(out, capacity);
}

int64_t bp_cuda_pool_held(bp_cuda_pool_block *out, int64_t capacity) {
  return pool().held(out, capacity);
}

int32_t bp_cuda_pool_range_state(const void *ptr, int64_t bytes,
                                 uint64_t *serial) {
  return pool().rangeState(ptr, bytes < 0 ? 0 : bytes, serial);
}

} // extern "C"
