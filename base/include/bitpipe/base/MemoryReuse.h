//===- MemoryReuse.h - Keep freed memory for the next use -------*- C++ -*-===//
//
// glibc's malloc hands every block over its mmap threshold back to the
// kernel when it is freed, and its threshold moves with the blocks it has
// seen, so the next allocation of that size faults its pages in again, one
// at a time. Two kinds of process here allocate such blocks over and over:
// - the compiler tools build and drop large per-pass structures (a rank's
//   unrolled steps, the simulator's tables): at D=64, N=512 that was some
//   20,000 page faults, a fifth of bitpipe-opt's run (bench/results-log.md,
//   "Compiler cost at scale, fifth slice");
// - a training executable's MPI all-reduce allocates a temporary the size
//   of its bucket on every call: the first two steps' posts took 80-140 ms
//   each instead of 2-4 ms (bench/results-log.md, "Per-rank speed, and the
//   all-reduce's temporaries").
// In the base library: the compiler's tools and the runtime's main() call
// this one function.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_MEMORYREUSE_H
#define BITPIPE_BASE_MEMORYREUSE_H

namespace bitpipe {

/// Lets the allocator keep what the process frees for its own later
/// allocations (glibc: blocks up to its largest mmap threshold come from the
/// heap, whose top is not trimmed). A short-lived batch tool's peak memory
/// stays what it was; only the returns to the kernel between passes (or
/// training steps) stop.
/// Does nothing with another C library.
void keepFreedMemoryForReuse();

} // namespace bitpipe

#endif // BITPIPE_BASE_MEMORYREUSE_H
