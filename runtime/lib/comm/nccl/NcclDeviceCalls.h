//===- NcclDeviceCalls.h - The NCCL and CUDA calls of the communicator -*- C++ -*-===//
//
// NcclCommunicator's bookkeeping (requests, batches, groups, deadlines)
// is plain C++ over this interface; CudaNcclCalls implements it with NCCL
// and the CUDA runtime, and the CPU tests with a recording fake
// (runtime/unittests/exec/NcclCommunicatorLogicTest.cpp), so that the
// logic is tested on machines without a GPU. docs/runtime-abi.md,
// "Communication on each target", says what runs on which stream.
//
// Communicators are small indices: 0 is the world's, each split adds
// one. Every communicator has a stream of its own, made with it: its
// operations, the events recorded on it and its waits for compute are on
// that stream (NCCL runs one communicator's operations in issue order
// anyway, so a stream per communicator is what lets communicators
// overlap). Events are slots that the implementation recycles after
// releaseEvent. Timing events (the trace's device spans of the operations)
// are slots of a pool of their own, recycled after releaseTimingEvent:
// timing makes an event dearer to record and to wait for, so the ordering
// events go without it.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_NCCL_NCCLDEVICECALLS_H
#define BITPIPE_RUNTIME_COMM_NCCL_NCCLDEVICECALLS_H

#include "core/DType.h"
#include "core/Status.h"

#include <cstdint>
#include <string>

namespace bitpipe::runtime {

/// The element types NCCL moves for us (a subset of NCCL's).
enum class NcclElement { Float32, BFloat16, Float64, Int32 };

/// The NCCL element type of \p dtype; an error naming the dtype for the
/// ones the runtime never transfers.
Expected<NcclElement> ncclElementOf(DType dtype);

/// The bytes of one element of \p type.
inline size_t ncclElementSize(NcclElement type) {
  switch (type) {
  case NcclElement::BFloat16:
    return 2;
  case NcclElement::Float64:
    return 8;
  case NcclElement::Float32:
  case NcclElement::Int32:
    return 4;
  }
  return 4;
}

class NcclDeviceCalls {
public:
  virtual ~NcclDeviceCalls();

  /// ncclGetUniqueId, as bytes (rank 0 only).
  virtual Expected<std::string> uniqueId() = 0;
  /// ncclCommInitRank of the world: communicator 0, and its stream.
  virtual Status initWorld(const std::string &uniqueId, int nranks,
                           int rank) = 0;
  /// ncclCommSplit of the world (collective over it), and a stream for the
  /// new communicator: its index, or -1 on a rank that passed a negative
  /// \p color (NCCL_SPLIT_NOCOLOR). The ranks of one colour share a
  /// communicator, ranked by \p key, so one call makes as many disjoint
  /// communicators as there are colours.
  virtual Expected<int> split(int color, int key) = 0;
  /// Device memory for \p count int32, zeroed, owned by the calls: what
  /// the start-up warm-ups move (NcclCommunicator.h).
  virtual Expected<void *> scratch(int64_t count) = 0;

  virtual Status groupStart() = 0;
  virtual Status groupEnd() = 0;
  /// ncclSend / ncclRecv, and ncclAllReduce (sum, in place), on \p comm's
  /// stream; \p peer is a rank of \p comm.
  virtual Status send(int comm, const void *buf, int64_t count,
                      NcclElement type, int peer) = 0;
  virtual Status recv(int comm, void *buf, int64_t count, NcclElement type,
                      int peer) = 0;
  virtual Status allReduce(int comm, void *buf, int64_t count,
                           NcclElement type) = 0;
  /// ncclReduceScatter (sum) in place on \p comm's stream: \p buf holds
  /// one shard of \p shardCount elements per rank of \p comm, and rank r
  /// ends up with the sum of everyone's shard r in its own shard r (NCCL's
  /// in-place form: recvbuff = sendbuff + r * recvcount); its other shards
  /// are left as they were.
  virtual Status reduceScatter(int comm, void *buf, int64_t shardCount,
                               NcclElement type) = 0;
  /// ncclAllGather in place on \p comm's stream: rank r's shard of
  /// \p shardCount elements at buf + r * shardCount goes to every rank's
  /// same place (sendbuff = recvbuff + r * sendcount).
  virtual Status allGather(int comm, void *buf, int64_t shardCount,
                           NcclElement type) = 0;

  /// \p comm's stream waits (on the device) for the compute stream's work
  /// so far.
  virtual Status streamWaitsForCompute(int comm) = 0;
  /// \p comm's stream waits (on the device) for \p event, recorded on
  /// another communicator's stream: how one step of a two-level all-reduce
  /// follows the step before on another communicator. The event's slot
  /// may be released right after.
  virtual Status streamWaitsForEvent(int comm, int event) = 0;
  /// An event recorded on \p comm's stream now: its slot.
  virtual Expected<int> recordEvent(int comm) = 0;
  /// Whether the event's work is done (cudaEventQuery); never blocks.
  virtual Expected<bool> eventDone(int event) = 0;
  /// The compute stream waits (on the device) for the event.
  virtual Status computeWaitsFor(int event) = 0;
  /// An event recorded on the compute stream now: its slot (the end of a
  /// CUDA graph launched there, NcclCommunicator::graphLaunched). A device
  /// layer whose compute is not on a stream has none.
  virtual Expected<int> recordComputeEvent() {
    return Status::error(ErrorCode::InvalidArgument,
                         "this device layer has no compute stream to record "
                         "on");
  }
  virtual void releaseEvent(int event) = 0;

  /// A timing event recorded on \p comm's stream now: its slot.
  virtual Expected<int> recordTimingEvent(int comm) = 0;
  /// Milliseconds from \p reference (a timing cudaEvent_t on the same
  /// device: the backend's step start) to timing event \p slot; an error
  /// when either is not complete.
  virtual Expected<float> timingEventMs(void *reference, int slot) = 0;
  virtual void releaseTimingEvent(int slot) = 0;

  /// ncclCommGetAsyncError of \p comm: ok, or the error.
  virtual Status asyncError(int comm) = 0;
  /// ncclCommAbort of every communicator (they are unusable afterwards).
  virtual void abortAll() = 0;

  /// Whether compute runs synchronously on the host (a stand-in for the
  /// device, as the CPU tests' MPI one): computeWaitsFor is then a host
  /// wait, with no deadline of its own, which the communicator bounds first
  /// by polling the event with its deadline.
  virtual bool hostComputes() const { return false; }
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_NCCL_NCCLDEVICECALLS_H
