//===- Memory.cpp - runtime.h's tensor memory on CUDA ---------------------===//
//
// bp_alloc / bp_free / bp_memory_stats, and MLIR's generic allocation
// functions that memref.alloc / memref.dealloc of generated code become (as
// runtime/lib/cpu/HostMemory.cpp defines them for the CPU target), on the
// device pool (DeviceMemory.cpp) in the execution context's stream order:
// a stage function's buffers are device memory, freed in the order of the
// stream its kernels run on, so a block comes back to the next allocation
// only after the work that used it.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/cuda.h"

#include <cstddef>

namespace {
/// Every block of bp_cuda_alloc is this aligned (cuda.h), more than
/// runtime.h's 64 bytes.
constexpr size_t kDeviceAlignment = 256;
} // namespace

extern "C" {

void *bp_alloc(int64_t bytes) { return bp_cuda_alloc(bytes, bp_cuda_stream()); }

void bp_free(void *ptr) { bp_cuda_free(ptr, bp_cuda_stream()); }

void bp_memory_stats(int64_t *in_use, int64_t *peak_in_use,
                     int64_t *reserved) {
  bp_cuda_memory_stats(in_use, peak_in_use, reserved);
}

void *_mlir_memref_to_llvm_alloc(size_t bytes) {
  return bp_cuda_alloc(static_cast<int64_t>(bytes), bp_cuda_stream());
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t bytes) {
  // The lowering asks for no more than the pool's alignment (memref.alloc
  // without an alignment attribute); a larger one cannot be honoured.
  if (alignment > kDeviceAlignment)
    return nullptr;
  return bp_cuda_alloc(static_cast<int64_t>(bytes), bp_cuda_stream());
}

void _mlir_memref_to_llvm_free(void *ptr) {
  bp_cuda_free(ptr, bp_cuda_stream());
}

} // extern "C"
