//===- GraphFootprint.h - The memory a step's CUDA graph uses ---*- C++ -*-===//
//
// A graph captured from a stream keeps every device address its kernels,
// copies and NCCL operations were given. The step's values come from the
// device pool behind bp_alloc (cuda/DeviceMemory.cpp), which hands blocks
// out and takes them back many times a step; a replay, which runs no
// allocation at all, is correct only while the pool has not given the
// graph's blocks to anyone else. Which blocks a kernel reads cannot be
// seen from the host, so the footprint is every block that may be one:
//  - the blocks held when the capture began (the executor's unit loss
//    gradient, cuBLASLt's workspace, and any other value that outlives a
//    step: the graph may read them);
//  - every block handed out while capturing (the step's values and the
//    kernels' scratch).
// Each is a "kept" block when the same hand-out still holds it at the end
// of the captured step (it lives on with its owner), else "scratch" (the
// step gave it back). Before each replay the footprint holds when every
// kept block is still held by that hand-out (a new hand-out is another
// owner: its bytes are not what the graph left there), and no byte of a
// scratch block is held by anyone (the graph will overwrite it) nor gone
// back to CUDA; the pool splits and merges free blocks, so scratch is
// checked as ranges of memory. Anything else is a mismatch, named in the
// answer, and the step runs eagerly instead (cuda/backend/StepGraph.h).
//
// Plain C++ over PoolView, so that a CPU test checks it against a fake
// pool; StepGraph.cpp looks at the real one (bp_cuda_pool_range_state).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_BACKEND_GRAPHFOOTPRINT_H
#define BITPIPE_RUNTIME_CUDA_BACKEND_GRAPHFOOTPRINT_H

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::runtime {

/// One hand-out of a pool block (bitpipe/cuda.h's bp_cuda_pool_block).
struct PoolBlock {
  uintptr_t address = 0;
  int64_t bytes = 0;
  uint64_t serial = 0;
};

/// Who has a range of the pool's memory now (bitpipe/cuda.h's
/// BP_CUDA_RANGE_*).
enum class PoolRangeState { Absent, Free, Held };

class PoolView {
public:
  virtual ~PoolView();
  /// Who has [\p address, + \p bytes) now; \p serial receives the
  /// serial of the hand-out that holds its first held byte.
  virtual PoolRangeState state(uintptr_t address, int64_t bytes,
                               uint64_t *serial) const = 0;
};

class GraphFootprint {
public:
  GraphFootprint() = default;
  /// \p heldAtStart: the pool's held blocks when the capture began;
  /// \p handedOut: what it handed out while capturing; \p heldAtEnd: its
  /// held blocks once the captured step has given back what it frees.
  GraphFootprint(const std::vector<PoolBlock> &heldAtStart,
                 const std::vector<PoolBlock> &handedOut,
                 const std::vector<PoolBlock> &heldAtEnd);

  /// "" while every block is where the graph needs it; else the first
  /// mismatch, in words ("a scratch block of 512 bytes at 0x... is held by
  /// another owner now").
  std::string check(const PoolView &pool) const;

  size_t numKept() const { return kept_.size(); }
  size_t numScratch() const { return scratch_.size(); }
  bool empty() const { return kept_.empty() && scratch_.empty(); }

private:
  std::vector<PoolBlock> kept_, scratch_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CUDA_BACKEND_GRAPHFOOTPRINT_H
