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

  Status createStreams();

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
    comms_.push_back(comm);
    return Status::ok();
  }
  Status connectPeers(int nranks, int rank) override {
    // One int to and from each peer; the scratch lives as long as the
    // calls (freeing it would wait for the device).
    BP_TRY(cudaCall(cudaMalloc(reinterpret_cast<void **>(&scratch_),
                               2 * static_cast<size_t>(nranks) *
                                   sizeof(int32_t)),
                    "allocating the connection scratch"));
    BP_TRY(cudaCall(cudaMemsetAsync(scratch_, 0,
                                    2 * static_cast<size_t>(nranks) *
                                        sizeof(int32_t),
                                    p2p_),
                    "clearing the connection scratch"));
    BP_TRY(groupStart());
    for (int peer = 0; peer < nranks; ++peer) {
      if (peer == rank)
        continue;
      BP_TRY(ncclStatus(ncclSend(scratch_ + peer, 1, ncclInt32, peer,
                                 comms_[0], p2p_),
                        "ncclSend (connecting)"));
      BP_TRY(ncclStatus(ncclRecv(scratch_ + nranks + peer, 1, ncclInt32,
                                 peer, comms_[0], p2p_),
                        "ncclRecv (connecting)"));
    }
    return groupEnd();
  }
  Expected<int> split(bool member, int key) override {
    ncclComm_t comm = nullptr;
    BP_TRY(ncclStatus(ncclCommSplit(comms_[0],
                                    member ? 0 : NCCL_SPLIT_NOCOLOR, key,
                                    &comm, nullptr),
                      "ncclCommSplit"));
    if (!member)
      return -1;
    comms_.push_back(comm);
    return static_cast<int>(comms_.size() - 1);
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
                               ncclTypeOf(type), peer, comms_[comm], p2p_),
                      "ncclSend");
  }
  Status recv(int comm, void *buf, int64_t count, NcclElement type,
              int peer) override {
    return ncclStatus(ncclRecv(buf, static_cast<size_t>(count),
                               ncclTypeOf(type), peer, comms_[comm], p2p_),
                      "ncclRecv");
  }
  Status allReduce(int comm, void *buf, int64_t count,
                   NcclElement type) override {
    return ncclStatus(ncclAllReduce(buf, buf, static_cast<size_t>(count),
                                    ncclTypeOf(type), ncclSum, comms_[comm],
                                    allReduce_),
                      "ncclAllReduce");
  }
  Status laneWaitsForCompute(Lane lane) override {
    BP_ASSIGN(slot, recordOn(compute_));
    Status s = cudaCall(cudaStreamWaitEvent(streamOf(lane), events_[slot], 0),
                        "cudaStreamWaitEvent (transfer after compute)");
    // The wait has captured the event's work: the slot can be reused.
    releaseEvent(slot);
    return s;
  }
  Expected<int> recordEvent(Lane lane) override {
    return recordOn(streamOf(lane));
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
  void releaseEvent(int event) override { free_.push_back(event); }
  Expected<int> recordTimingEvent(Lane lane) override {
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
    cudaError_t e = cudaEventRecord(timing_[slot], streamOf(lane));
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
  cudaStream_t streamOf(Lane lane) const {
    return lane == Lane::PointToPoint ? p2p_ : allReduce_;
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
  cudaStream_t p2p_ = nullptr, allReduce_ = nullptr;
  std::vector<ncclComm_t> comms_; // [0]: the world; nullptr once aborted
  std::vector<cudaEvent_t> events_;
  std::vector<int> free_;
  std::vector<cudaEvent_t> timing_; // with timing; their own pool
  std::vector<int> timingFree_;
  int32_t *scratch_ = nullptr;
  bool aborted_ = false;
};

Status CudaNcclCalls::createStreams() {
  BP_TRY(cudaCall(cudaStreamCreateWithFlags(&p2p_, cudaStreamNonBlocking),
                  "creating the point-to-point stream"));
  return cudaCall(cudaStreamCreateWithFlags(&allReduce_,
                                            cudaStreamNonBlocking),
                  "creating the all-reduce stream");
}

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
  if (scratch_ && !aborted_)
    (void)cudaFree(scratch_); // an aborted transfer may still hold it
  if (p2p_)
    (void)cudaStreamDestroy(p2p_);
  if (allReduce_)
    (void)cudaStreamDestroy(allReduce_);
}

} // namespace

Expected<std::unique_ptr<NcclDeviceCalls>>
createCudaNcclCalls(void *computeStream) {
  auto calls = std::make_unique<CudaNcclCalls>(
      static_cast<cudaStream_t>(computeStream));
  BP_TRY(calls->createStreams());
  return std::unique_ptr<NcclDeviceCalls>(std::move(calls));
}

} // namespace bitpipe::runtime
