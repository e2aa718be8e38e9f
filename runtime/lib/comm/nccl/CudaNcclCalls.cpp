//===- CudaNcclCalls.cpp - NcclDeviceCalls with NCCL and CUDA -------------===//

#include "CudaNcclCalls.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

namespace bitpipe::runtime {

namespace {

ncclDataType_t ncclTypeOf(NcclElement type) {
  switch (type) {
  case NcclElement::Float32:
    return ncclFloat32;
  case NcclElement::BFloat16:
    return ncclBfloat16;
  case NcclElement::Float64:
    return ncclFloat64;
  case NcclElement::Int32:
    return ncclInt32;
  }
  return ncclFloat32;
}

Status ncclStatus(ncclResult_t r, const char *what) {
  if (r == ncclSuccess)
    return Status::ok();
  return Status::error(ErrorCode::CommFailure,
                       formatString("%s failed: %s (%s)", what,
                                    ncclGetErrorString(r),
                                    ncclGetLastError(nullptr)));
}

Status cudaCall(cudaError_t e, const char *what) {
  if (e == cudaSuccess)
    return Status::ok();
  return Status::error(ErrorCode::DeviceFailure,
                       formatString("%s failed: %s (%s)", what,
                                    cudaGetErrorString(e),
                                    cudaGetErrorName(e)));
}

class CudaNcclCalls final : public NcclDeviceCalls {
public:
  explicit CudaNcclCalls(cudaStream_t compute) : compute_(compute) {}
  ~CudaNcclCalls() override;

  Expected<std::string> uniqueId() override {
    ncclUniqueId id;
    BP_TRY(ncclStatus(ncclGetUniqueId(&id), "ncclGetUniqueId"));
    return std::string(id.internal, sizeof id.internal);
  }
  Status initWorld(const std::string &uniqueId, int nranks,
                   int rank) override {
    ncclUniqueId id;
    if (uniqueId.size() != sizeof id.internal)
      return Status::error(ErrorCode::CommFailure,
                           formatString("the NCCL unique id has %zu bytes, "
                                        "expected %zu",
                                        uniqueId.size(), sizeof id.internal));
    std::copy(uniqueId.begin(), uniqueId.end(), id.internal);
    ncclComm_t comm = nullptr;
    BP_TRY(ncclStatus(ncclCommInitRank(&comm, nranks, id, rank),
                      "ncclCommInitRank"));
    return adopt(comm);
  }
  Expected<int> split(int color, int key) override {
    // Resources of its own, not the parent's (splitShare 0): communicators
    // that share them serialise each other, which the channels' must not.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.splitShare = 0;
    ncclComm_t comm = nullptr;
    BP_TRY(ncclStatus(ncclCommSplit(comms_[0],
                                    color < 0 ? NCCL_SPLIT_NOCOLOR : color,
                                    key, &comm, &config),
                      "ncclCommSplit"));
    if (color < 0)
      return -1;
    BP_TRY(adopt(comm));
    return static_cast<int>(comms_.size() - 1);
  }
  Expected<void *> scratch(int64_t count) override {
    // Lives as long as the calls: freeing it would wait for the device.
    if (!scratch_) {
      const size_t bytes = static_cast<size_t>(count) * sizeof(int32_t);
      // Host-waiting call: start-up (the communicators' warm-ups).
      BP_TRY(cudaCall(cudaMalloc(&scratch_, bytes),
                      "allocating the warm-ups' scratch"));
      // Cleared before any communicator's stream reads it: those streams
      // do not wait for the default one.
      BP_TRY(cudaCall(cudaMemsetAsync(scratch_, 0, bytes, streams_[0]),
                      "clearing the warm-ups' scratch"));
      BP_TRY(cudaCall(cudaStreamSynchronize(streams_[0]),
                      "clearing the warm-ups' scratch"));
    }
    return scratch_;
  }
  Status groupStart() override {
    return ncclStatus(ncclGroupStart(), "ncclGroupStart");
  }
  Status groupEnd() override {
    return ncclStatus(ncclGroupEnd(), "ncclGroupEnd");
  }
  Status send(int comm, const void *buf, int64_t count, NcclElement type,
              int peer) override {
    return ncclStatus(ncclSend(buf, static_cast<size_t>(count),
                               ncclTypeOf(type), peer, comms_[comm],
                               streams_[comm]),
                      "ncclSend");
  }
  Status recv(int comm, void *buf, int64_t count, NcclElement type,
              int peer) override {
    return ncclStatus(ncclRecv(buf, static_cast<size_t>(count),
                               ncclTypeOf(type), peer, comms_[comm],
                               streams_[comm]),
                      "ncclRecv");
  }
  Status allReduce(int comm, void *buf, int64_t count,
                   NcclElement type) override {
    return ncclStatus(ncclAllReduce(buf, buf, static_cast<size_t>(count),
                                    ncclTypeOf(type), ncclSum, comms_[comm],
                                    streams_[comm]),
                      "ncclAllReduce");
  }
  Status reduceScatter(int comm, void *buf, int64_t shardCount,
                       NcclElement type) override {
    BP_ASSIGN(rank, rankIn(comm));
    char *mine = static_cast<char *>(buf) +
                 static_cast<size_t>(rank) * static_cast<size_t>(shardCount) *
                     ncclElementSize(type);
    return ncclStatus(ncclReduceScatter(buf, mine,
                                        static_cast<size_t>(shardCount),
                                        ncclTypeOf(type), ncclSum, comms_[comm],
                                        streams_[comm]),
                      "ncclReduceScatter");
  }
  Status allGather(int comm, void *buf, int64_t shardCount,
                   NcclElement type) override {
    BP_ASSIGN(rank, rankIn(comm));
    const char *mine =
        static_cast<const char *>(buf) + static_cast<size_t>(rank) *
                                             static_cast<size_t>(shardCount) *
                                             ncclElementSize(type);
    return ncclStatus(ncclAllGather(mine, buf, static_cast<size_t>(shardCount),
                                    ncclTypeOf(type), comms_[comm],
                                    streams_[comm]),
                      "ncclAllGather");
  }
  Status streamWaitsForEvent(int comm, int event) override {
    BP_TRY(checkSlot(event));
    return cudaCall(cudaStreamWaitEvent(streams_[comm], events_[event], 0),
                    "cudaStreamWaitEvent (a step after another "
                    "communicator's)");
  }
  Status streamWaitsForCompute(int comm) override {
    BP_ASSIGN(slot, recordOn(compute_));
    Status s = cudaCall(cudaStreamWaitEvent(streams_[comm], events_[slot], 0),
                        "cudaStreamWaitEvent (transfer after compute)");
    // The wait has captured the event's work: the slot can be reused.
    releaseEvent(slot);
    return s;
  }
  Expected<int> recordEvent(int comm) override {
    return recordOn(streams_[comm]);
  }
  Expected<bool> eventDone(int event) override {
    BP_TRY(checkSlot(event));
    cudaError_t e = cudaEventQuery(events_[event]);
    if (e == cudaSuccess)
      return true;
    if (e == cudaErrorNotReady)
      return false;
    return cudaCall(e, "cudaEventQuery");
  }
  Status computeWaitsFor(int event) override {
    BP_TRY(checkSlot(event));
    return cudaCall(cudaStreamWaitEvent(compute_, events_[event], 0),
                    "cudaStreamWaitEvent (compute after transfer)");
  }
  Expected<int> recordComputeEvent() override { return recordOn(compute_); }
  void releaseEvent(int event) override { free_.push_back(event); }
  Expected<int> recordTimingEvent(int comm) override {
    int slot;
    if (!timingFree_.empty()) {
      slot = timingFree_.back();
      timingFree_.pop_back();
    } else {
      cudaEvent_t e = nullptr;
      BP_TRY(cudaCall(cudaEventCreateWithFlags(&e, cudaEventDefault),
                      "cudaEventCreateWithFlags (timing)"));
      timing_.push_back(e);
      slot = static_cast<int>(timing_.size() - 1);
    }
    cudaError_t e = cudaEventRecord(timing_[slot], streams_[comm]);
    if (e != cudaSuccess) {
      (void)cudaGetLastError(); // the next real call reports a lasting fault
      timingFree_.push_back(slot);
      return cudaCall(e, "cudaEventRecord (timing)");
    }
    return slot;
  }
  Expected<float> timingEventMs(void *reference, int slot) override {
    if (slot < 0 || static_cast<size_t>(slot) >= timing_.size())
      return Status::error(ErrorCode::InvalidArgument,
                           formatString("timing event slot %d of %zu", slot,
                                        timing_.size()));
    float ms = 0;
    cudaError_t e = cudaEventElapsedTime(
        &ms, static_cast<cudaEvent_t>(reference), timing_[slot]);
    if (e != cudaSuccess) {
      // Not complete, or the reference not recorded: the span is dropped,
      // and the error must not linger for a later launch check.
      (void)cudaGetLastError();
      return cudaCall(e, "cudaEventElapsedTime");
    }
    return ms;
  }
  void releaseTimingEvent(int slot) override { timingFree_.push_back(slot); }
  Status asyncError(int comm) override {
    if (comm < 0 || static_cast<size_t>(comm) >= comms_.size() ||
        !comms_[comm])
      return Status::ok();
    ncclResult_t async = ncclSuccess;
    BP_TRY(ncclStatus(ncclCommGetAsyncError(comms_[comm], &async),
                      "ncclCommGetAsyncError"));
    if (async == ncclSuccess || async == ncclInProgress)
      return Status::ok();
    return ncclStatus(async, "an NCCL operation");
  }
  void abortAll() override {
    // Splits first, the world last (they were made from it).
    for (size_t i = comms_.size(); i-- > 0;)
      if (comms_[i]) {
        (void)ncclCommAbort(comms_[i]);
        comms_[i] = nullptr;
      }
    aborted_ = true;
  }

private:
  Status checkSlot(int event) const {
    if (event < 0 || static_cast<size_t>(event) >= events_.size())
      return Status::error(ErrorCode::InvalidArgument,
                           formatString("event slot %d of %zu", event,
                                        events_.size()));
    return Status::ok();
  }
  /// This rank's rank in \p comm: where its shard is in a reduce-scatter's
  /// or an all-gather's buffer.
  Expected<int> rankIn(int comm) const {
    int rank = 0;
    BP_TRY(
        ncclStatus(ncclCommUserRank(comms_[comm], &rank), "ncclCommUserRank"));
    return rank;
  }
  /// Keeps \p comm, with a stream of its own (NcclDeviceCalls.h), as the
  /// next index.
  Status adopt(ncclComm_t comm) {
    cudaStream_t stream = nullptr;
    Status made = cudaCall(cudaStreamCreateWithFlags(&stream,
                                                     cudaStreamNonBlocking),
                           "creating a communicator's stream");
    if (!made.isOk()) {
      (void)ncclCommDestroy(comm); // nothing ran on it yet
      return made;
    }
    comms_.push_back(comm);
    streams_.push_back(stream);
    return Status::ok();
  }
  Expected<int> recordOn(cudaStream_t stream) {
    int slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      cudaEvent_t e = nullptr;
      // No timing: cheaper to record and to wait for.
      BP_TRY(cudaCall(cudaEventCreateWithFlags(&e, cudaEventDisableTiming),
                      "cudaEventCreateWithFlags"));
      events_.push_back(e);
      slot = static_cast<int>(events_.size() - 1);
    }
    Status s = cudaCall(cudaEventRecord(events_[slot], stream),
                        "cudaEventRecord");
    if (!s.isOk()) {
      free_.push_back(slot);
      return s;
    }
    return slot;
  }

  cudaStream_t compute_;
  std::vector<ncclComm_t> comms_; // [0]: the world; nullptr once aborted
  std::vector<cudaStream_t> streams_; // streams_[i] is comms_[i]'s
  std::vector<cudaEvent_t> events_;
  std::vector<int> free_;
  std::vector<cudaEvent_t> timing_; // with timing; their own pool
  std::vector<int> timingFree_;
  void *scratch_ = nullptr;
  bool aborted_ = false;
};

CudaNcclCalls::~CudaNcclCalls() {
  if (!aborted_) {
    // A clean end: nothing is in flight (the executor drained every
    // request), so finalising cannot wait on a peer.
    for (size_t i = comms_.size(); i-- > 0;)
      if (comms_[i]) {
        (void)ncclCommFinalize(comms_[i]);
        (void)ncclCommDestroy(comms_[i]);
      }
  }
  for (cudaEvent_t e : events_)
    (void)cudaEventDestroy(e);
  for (cudaEvent_t e : timing_)
    (void)cudaEventDestroy(e);
  // Not after an abort: an aborted transfer may still hold it.
  if (scratch_ && !aborted_)
    (void)cudaFree(scratch_); // Host-waiting call: teardown.
  for (cudaStream_t stream : streams_)
    (void)cudaStreamDestroy(stream);
}

} // namespace

Expected<std::unique_ptr<NcclDeviceCalls>>
createCudaNcclCalls(void *computeStream) {
  return std::unique_ptr<NcclDeviceCalls>(
      new CudaNcclCalls(static_cast<cudaStream_t>(computeStream)));
}

} // namespace bitpipe::runtime
