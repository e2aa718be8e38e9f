//===- Launch.h - Launch shapes and error checks ----------------*- C++ -*-===//
//
// Host-side helpers shared by every kernel family: turning the C ABI's void *
// into a stream, choosing block and grid sizes, and turning CUDA errors into
// bp_status_t with a message that names the failing function (a launch
// returns no error of its own: cudaGetLastError must be asked after it).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_LAUNCH_H
#define BITPIPE_RUNTIME_CUDA_LAUNCH_H

#include "bitpipe/cuda.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>

namespace bitpipe::runtime::cuda {

inline cudaStream_t asStream(void *stream) {
  return static_cast<cudaStream_t>(stream);
}

constexpr int kWarp = 32;
constexpr int kMaxThreads = 1024;
/// Grid-stride kernels are launched with at most this many blocks: enough
/// to fill an H200 (132 SMs x 2048 threads) many times over at 256 threads
/// a block; the loops inside the kernels cover whatever is left.
constexpr int64_t kMaxBlocks = 65535;

/// Threads of a block that owns one row of \p cols elements: about
/// \p perThread elements each (enough independent loads in flight per
/// thread), a whole number of warps (the reductions work warp by warp), from
/// one warp (H = 64) to 1024 threads (H = 8192, V = 50304).
inline int rowThreads(int64_t cols, int64_t perThread) {
  int64_t threads = (cols + perThread - 1) / perThread;
  threads = (threads + kWarp - 1) / kWarp * kWarp;
  return static_cast<int>(std::clamp<int64_t>(threads, kWarp, kMaxThreads));
}

/// Blocks of a grid-stride launch over \p items units, \p perBlock a block.
inline unsigned gridBlocks(int64_t items, int64_t perBlock) {
  return static_cast<unsigned>(
      std::clamp<int64_t>((items + perBlock - 1) / perBlock, 1, kMaxBlocks));
}

/// Whether every non-null pointer of \p ptrs is a multiple of \p bytes:
/// the condition for DeviceMath.cuh's Pack accesses.
inline bool isAligned(std::initializer_list<const void *> ptrs, size_t bytes) {
  for (const void *p : ptrs)
    if (reinterpret_cast<uintptr_t>(p) % bytes != 0)
      return false;
  return true;
}

/// BP_OK for cudaSuccess; otherwise prints "bitpipe: cuda: <what>: <error>"
/// and returns BP_ERR_DEVICE.
bp_status_t checkCuda(cudaError_t err, const char *what);

/// After a launch: its configuration error, or an earlier asynchronous fault
/// that this is the first call to see (the message says it may be earlier).
bp_status_t checkLaunch(const char *what);

/// Whether a kernel that walks rows of \p cols elements may move \p pack
/// elements an access (DeviceMath.cuh's forEachInRow): every row of every
/// operand then starts on a 16-byte boundary. A pack of 1 always may.
inline bool rowsPackable(int64_t cols, int pack,
                         std::initializer_list<const void *> ptrs) {
  return pack == 1 || (cols % pack == 0 && isAligned(ptrs, 16));
}

/// Threads of a block that owns one row of \p cols elements moved \p pack
/// at a time (rowThreads in packs; 4 elements a thread without packs).
inline int rowThreadsPacked(int64_t cols, int pack) {
  return pack == 1 ? rowThreads(cols, 4) : rowThreads(cols, pack);
}

/// Who recorded an out-of-range id (or, for the optimizer's multi-tensor
/// kernels, a malformed segment: the segment table lives on the device too)
/// in the device's index-error word (see bp_cuda_synchronize); 0 is
/// "nobody".
enum IndexReporter : int32_t {
  kNoIndexError = 0,
  kEmbeddingFwdReporter = 1,
  kEmbeddingBwdReporter = 2,
  kCrossEntropyFwdReporter = 3,
  kCrossEntropyBwdReporter = 4,
  kSumSquaresSegmentReporter = 5,
  kAdamWSegmentReporter = 6,
};

/// The device word where kernels record the first out-of-range id; created
/// (zeroed) on first use. Null, after a message, if that failed.
int32_t *indexErrorWord();

} // namespace bitpipe::runtime::cuda

#endif // BITPIPE_RUNTIME_CUDA_LAUNCH_H
