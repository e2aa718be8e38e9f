//===- MemoryReuse.h - Keep freed memory for the next pass ------*- C++ -*-===//
//
// The compiler tools build and drop large per-pass structures (a rank's
// unrolled steps, the simulator's tables, rebuilt programs). glibc's malloc
// hands every block over its mmap threshold back to the kernel when it is
// freed, and the next pass faults the same amount in again, a page at a
// time: at D=64, N=512 that was some 20,000 page faults, a fifth of
// bitpipe-opt's run on the development VMs (bench/RESULTS.md, issue 15).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TOOLS_COMMON_MEMORYREUSE_H
#define BITPIPE_TOOLS_COMMON_MEMORYREUSE_H

namespace bitpipe {

/// Lets the allocator keep what the process frees for its own later
/// allocations (glibc: blocks up to its largest mmap threshold come from the
/// heap, whose top is not trimmed). A short-lived batch tool's peak memory
/// stays what it was; only the returns to the kernel between passes stop.
/// Does nothing with another C library.
void keepFreedMemoryForReuse();

} // namespace bitpipe

#endif // BITPIPE_TOOLS_COMMON_MEMORYREUSE_H
