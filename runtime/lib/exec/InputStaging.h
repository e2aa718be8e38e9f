//===- InputStaging.h - Where a device target stages a step's inputs -*- C++
//-*-===//
//
// A device target copies a step's token and label ids and dropout keys to
// the device from pinned host memory. Allocating pinned memory (and freeing
// it, which waits for the whole device) inside a step can stall the host
// while a peer's NCCL kernel spins, and then no --timeout fires. So the
// staging is one block, sized at start-up for every input the rank can load
// in a step (capacityFor), handed out in order and reset at each step's
// start. A step that needs more (it cannot, by the manifest's sizes) is an
// error, not a bigger block: growing would free pinned memory in a step.
//
// Plain C++: the CUDA backend and the fake device of the tests use it
// alike, each with its own memory.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_INPUTSTAGING_H
#define BITPIPE_RUNTIME_EXEC_INPUTSTAGING_H

#include "Manifest.h"
#include "core/Status.h"

#include <cstddef>
#include <cstdint>

namespace bitpipe::runtime {

class InputStaging {
public:
  /// Alignment of every slice: a cache line, so that two copies never
  /// share one.
  static constexpr size_t kAlignment = 64;

  /// Bytes for the most a rank loads in one step: each of its copy's
  /// micro-batches may load both id inputs (tokens and labels: BitPipe's
  /// V-shaped ranks hold a first and a last stage), microbatchSize x seqLen
  /// int32 each, and a dropout key (4 int32) for each dropout_key argument
  /// of each forward function.
  static size_t capacityFor(const Manifest &manifest);

  explicit InputStaging(size_t capacity = 0) : capacity_(capacity) {}

  size_t capacity() const { return capacity_; }

  /// The offset of \p bytes for the next input of this step; an error
  /// when the block is full (the program loads more than its manifest
  /// allows).
  Expected<size_t> take(size_t bytes);
  /// At a step's start (and after the warm-up, whose copies are complete).
  void reset() { used_ = 0; }

private:
  size_t capacity_ = 0, used_ = 0;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_INPUTSTAGING_H
