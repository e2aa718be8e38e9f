//===- HostMemory.cpp - The caching pool of tensor memory -----------------===//
//
// bp_alloc / bp_free (runtime.h) and the generic allocation functions of
// MLIR's memref-to-LLVM lowering, which generated code calls. Freed blocks
// are cached by their exact (rounded) size: a training step allocates the
// same few sizes over and over, so exact-size free lists hit every time
// after the first step and never split or coalesce.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/runtime.h"
#include "core/KernelProfile.h"
#include "core/PoolCounters.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kAlignment = 64;
// The block's size lives in a header just before the block; a whole
// alignment unit keeps the block aligned.
constexpr size_t kHeader = kAlignment;

/// The largest request served: rounding and the header must not wrap a
/// size_t (a request for SIZE_MAX bytes would otherwise get a tiny block).
constexpr size_t kMaxRequest = SIZE_MAX / 2;

/// Sizes rounded so that near-equal requests share a free list: to 64 bytes
/// below 64 KiB, to 4 KiB above. \p bytes <= kMaxRequest.
size_t roundSize(size_t bytes) {
  size_t unit = bytes < (64u << 10) ? kAlignment : 4096;
  return (std::max<size_t>(bytes, 1) + unit - 1) / unit * unit;
}

class Pool {
public:
  void *allocate(size_t bytes) {
    if (bytes > kMaxRequest)
      return nullptr;
    size_t size = roundSize(bytes);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      std::vector<char *> &cached = free_[size];
      if (!cached.empty()) {
        char *block = cached.back();
        cached.pop_back();
        counters_.handedOut(size);
        return block;
      }
    }
    char *raw = static_cast<char *>(std::aligned_alloc(kAlignment, kHeader + size));
    if (!raw)
      return nullptr;
    *reinterpret_cast<size_t *>(raw) = size;
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.reserved(size);
    counters_.handedOut(size);
    return raw + kHeader;
  }

  void release(void *ptr) {
    if (!ptr)
      return;
    char *block = static_cast<char *>(ptr);
    size_t size = *reinterpret_cast<size_t *>(block - kHeader);
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.takenBack(size);
    free_[size].push_back(block);
  }

  void stats(int64_t *inUse, int64_t *peak, int64_t *reserved) {
    std::lock_guard<std::mutex> lock(mutex_);
    counters_.read(inUse, peak, reserved);
  }

private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<char *>> free_;
  bitpipe::runtime::PoolCounters counters_;
};

/// Never destroyed: blocks may be released during static destruction.
Pool &pool() {
  static Pool *p = new Pool;
  return *p;
}

// MLIR's generic allocation functions (memref-to-LLVM with
// use-generic-functions): what memref.alloc and memref.dealloc become.
// Generated code does not check their result, so a failure here would be
// a segfault somewhere in a stage function: it stops the process instead,
// saying how much was asked for (mpirun then stops the other ranks).
void *allocateForGeneratedCode(size_t bytes) {
  void *p = pool().allocate(bytes);
  if (p)
    return p;
  int64_t inUse = 0, peak = 0, reserved = 0;
  pool().stats(&inUse, &peak, &reserved);
  std::fflush(stdout);
  std::fprintf(stderr,
               "bitpipe: error: out of host memory: a stage function's "
               "tensor of %zu bytes (%.1f MiB) could not be allocated (the "
               "tensor pool holds %lld bytes in use, %lld reserved)\n",
               bytes, static_cast<double>(bytes) / (1 << 20),
               static_cast<long long>(inUse), static_cast<long long>(reserved));
  std::fflush(stderr);
  std::_Exit(1);
}

} // namespace

extern "C" {

void *bp_alloc(int64_t bytes) {
  BP_PROFILE_KERNEL(alloc);
  if (bytes < 0)
    return nullptr;
  return pool().allocate(static_cast<size_t>(bytes));
}

void bp_free(void *ptr) {
  BP_PROFILE_KERNEL(free);
  pool().release(ptr);
}

void bp_memory_stats(int64_t *inUse, int64_t *peakInUse, int64_t *reserved) {
  pool().stats(inUse, peakInUse, reserved);
}

void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  return allocateForGeneratedCode(bytes);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  // Every block is 64-byte aligned; larger alignments are never requested
  // by the lowering (memref.alloc without an alignment attribute).
  if (alignment > kAlignment)
    return nullptr;
  return allocateForGeneratedCode(bytes);
}

void _mlir_memref_to_llvm_free(void *ptr) { pool().release(ptr); }

} // extern "C"
