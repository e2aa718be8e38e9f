//===- InputStaging.h - Where a device target stages a step's inputs -*- C++
//-*-===//
//
// A device target copies a step's token and label ids to the device from
// pinned host memory. Allocating pinned memory (and freeing it, which
// waits for the whole device) inside a step can stall the host while a
// peer's NCCL kernel spins, and then no --timeout fires. So the staging is
// one block, sized at start-up for every input the rank can load in a step
// (capacityFor), handed out in order and reset at each step's start. A step
// that needs more (it cannot, by the manifest's sizes) grows the block,
// after waiting for the copies in flight, and counts it: the fake device's
// log shows that no step of the end-to-end tests grows it.
//
// Plain C++: the CUDA backend and the fake device of the tests use it
// alike, each with its own memory.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_INPUTSTAGING_H
#define BITPIPE_RUNTIME_EXEC_INPUTSTAGING_H

#include "Manifest.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace bitpipe::runtime {

class InputStaging {
public:
  /// Alignment of every slice: a cache line, so that two copies never
  /// share one.
  static constexpr size_t kAlignment = 64;

  /// Bytes for the most a rank loads in one step: each of its copy's
  /// micro-batches may load both inputs (tokens and labels: BitPipe's
  /// V-shaped ranks hold a first and a last stage), microbatchSize x seqLen
  /// int32 ids each.
  static size_t capacityFor(const Manifest &manifest);

  explicit InputStaging(size_t capacity = 0) : capacity_(capacity) {}

  size_t capacity() const { return capacity_; }
  /// Times the block grew within a step since the start (0 when sized
  /// right).
  int64_t growths() const { return growths_; }

  /// The offset of \p bytes for the next input of this step, or none when
  /// the block is full (then: wait for the copies, grow(), take again).
  std::optional<size_t> take(size_t bytes);
  /// The capacity after growing to hold \p bytes more than what this step
  /// took: the block is replaced, and the step's slices start again at 0
  /// (their copies must be complete).
  size_t grow(size_t bytes);
  /// At a step's start.
  void reset() { used_ = 0; }

private:
  size_t capacity_ = 0, used_ = 0;
  int64_t growths_ = 0;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_INPUTSTAGING_H
