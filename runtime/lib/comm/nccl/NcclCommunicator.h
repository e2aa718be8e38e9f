//===- NcclCommunicator.h - Communicator over NCCL on CUDA streams -*- C++ -*-===//
//
// The CUDA target's transport (docs/runtime-abi.md, "Communication on each
// target"). Made from the MPI communicator, which stays the bootstrap: the
// NCCL unique id crosses by an MPI broadcast, and whatever works on host
// memory (broadcast of the initial parameters, barrier, gatherBytes, the
// global norm's all-reduce through hostCommunicator(), abort) is MPI's.
//
// Device work is ordered by events, never by host waits:
//  - send: the point-to-point stream waits for the compute stream's work so
//    far (the buffer's producer), then ncclSend;
//  - recv: the same wait (the buffer comes from the compute stream's pool,
//    whose earlier users may still be reading it), then ncclRecv;
//  - a batch (bp_rt_end_batch) is one ncclGroupStart/End, opened at its
//    first transfer and closed by endBatch() or by anything that must see
//    its operations enqueued (a wait, an all-reduce); its requests share
//    the event recorded after the group's end;
//  - allReduceStart: the all-reduce stream waits for the compute stream
//    (the bucket's last gradient was accumulated there), ncclAllReduce sums
//    in place on the group's communicator, an event follows;
//  - waitOnDevice: the compute stream waits for the operation's event;
//    drainDeviceWaits() then bounds, on the host, what the compute stream
//    was told to wait for, so that a dead peer is a timeout and not a
//    cudaStreamSynchronize that never returns.
// A pair of ranks' transfers match in the order they are posted (NCCL has
// no tags): the compiler's verifier checks that both ends order every
// channel alike (Verify.cpp, "channel order").
//
// Device spans (setDeviceTiming; the CUDA backend turns it on): a timing
// event on the operation's stream right before and right after it, kept
// until takeDeviceSpans measures them from the step's start event. An
// all-reduce's pair brackets its ncclAllReduce. A batch's transfers run
// as one NCCL launch at ncclGroupEnd (nothing of the group is on the
// stream before), so its pair brackets the group's end: every transfer of
// the batch gets that span, from when the stream could start the group
// (its compute waits met, the stream's earlier work done) to when the
// last of its transfers ended. The trace's rows: train/Trace.h, TraceRow.
//
// A wait polls the event and ncclCommGetAsyncError until its deadline; on
// timeout or an asynchronous error every NCCL communicator is aborted
// (ncclCommAbort) and the error names the rank, the operation and the peer.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H
#define BITPIPE_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H

#include "NcclDeviceCalls.h"
#include "comm/Communicator.h"
#include "train/Trace.h"

#include <chrono>
#include <memory>
#include <unordered_map>
#include <vector>

namespace bitpipe::runtime {

class NcclCommunicator final : public Communicator {
public:
  using Clock = std::chrono::steady_clock;

  /// Collective over the world of \p bootstrap (which must outlive the
  /// result): rank 0's unique id is broadcast, then the world's NCCL
  /// communicator is created through \p calls.
  static Expected<std::unique_ptr<NcclCommunicator>>
  create(Communicator &bootstrap, std::unique_ptr<NcclDeviceCalls> calls);
  ~NcclCommunicator() override;

  int rank() const override { return bootstrap_.rank(); }
  int size() const override { return bootstrap_.size(); }

  /// The bootstrap's group (same ids, same checks), then its NCCL
  /// communicator split from the world's.
  Expected<GroupId> createGroup(const std::vector<int> &ranks) override;
  bool isMember(GroupId group) const override;
  const std::vector<int> &groupRanks(GroupId group) const override;

  Expected<RequestHandle> send(const void *buf, int64_t count, DType dtype,
                               int peer, int tag) override;
  Expected<RequestHandle> recv(void *buf, int64_t count, DType dtype, int peer,
                               int tag) override;
  Expected<RequestHandle> allReduceStart(void *buf, int64_t count, DType dtype,
                                         GroupId group) override;
  Status waitOnDevice(RequestHandle h) override {
    return waitOnDeviceFor(h, "");
  }
  Status waitOnDeviceFor(RequestHandle h, const std::string &reader) override;
  Status drainDeviceWaits() override;
  Status endBatch() override;
  Status waitFor(RequestHandle h, double timeoutSeconds) override;
  Expected<bool> test(RequestHandle h) override;

  /// Host memory, over MPI.
  Status broadcast(void *buf, int64_t count, DType dtype,
                   GroupId group) override;
  Status barrier(GroupId group) override;
  Status gatherBytes(const std::string &local, int root,
                     std::vector<std::string> *all) override;
  Communicator &hostCommunicator() override { return bootstrap_; }
  /// Aborts the NCCL communicators (stuck kernels return), then the job.
  [[noreturn]] void abort(int code, const std::string &message) override;

  /// Whether each operation from now on is timed on the device (off by
  /// default: only a backend that takes the spans at each step's end may
  /// turn it on, or they would pile up).
  void setDeviceTiming(bool on) { timing_ = on; }
  /// The timed operations enqueued so far (an open batch's stay), measured
  /// from \p stepStart (a timing cudaEvent_t, complete, as are the
  /// operations: the step's end waited for them); their events go back to
  /// the pool. Names and categories are the host spans' ("send rP tT",
  /// "recv rP tT", "allreduce"), rows the streams'. A span that cannot be
  /// measured is left out: a trace is not worth failing a step.
  std::vector<DeviceSpan> takeDeviceSpans(void *stepStart);

  /// For tests: requests neither waited for nor handed to waitOnDevice,
  /// those handed to waitOnDevice and not yet drained, and whether a batch
  /// is open.
  size_t numPending() const { return pending_.size(); }
  size_t numDeviceWaits() const { return deviceWaits_.size(); }
  bool batchOpen() const { return batchOpen_; }

private:
  struct Pending {
    const char *op = "";
    int peer = -1; // world rank for p2p; -1 for all-reduces
    int tag = 0;
    GroupId group = kWorldGroup;
    int64_t count = 0;
    DType dtype = DType::F32;
    int event = -1; // -1 while its batch's group is still open
    std::string reader; // waitOnDeviceFor's, for a later error
  };

  NcclCommunicator(Communicator &bootstrap,
                   std::unique_ptr<NcclDeviceCalls> calls);

  Status checkBuffer(const char *op, const void *buf, int64_t count,
                     DType dtype) const;
  Expected<RequestHandle> postTransfer(Pending p, void *buf);
  /// Ends the open batch, if any: ncclGroupEnd, then the event that every
  /// request of the batch shares.
  Status closeBatch();
  RequestHandle track(Pending p);
  void releaseEventOf(const Pending &p);
  /// Whether \p p can be waited for: enqueued, communicators not aborted.
  Status usable(const Pending &p) const;
  /// The NCCL communicator an operation ran on.
  int commOf(const Pending &p) const;
  /// Polls \p p until its event is done or \p deadline: ok, or (after
  /// aborting every NCCL communicator) the timeout (reported as
  /// \p timeoutSeconds) or the async error.
  Status pollUntilDone(const Pending &p, Clock::time_point deadline,
                       double timeoutSeconds);
  /// Aborts the NCCL communicators once and turns \p cause into the error.
  Status fail(ErrorCode code, const std::string &message);
  std::string describe(const Pending &p) const;

  /// An operation timed on the device: slots of its timing events, -1
  /// while its batch is open or where recording failed.
  struct TimedOp {
    std::string name;
    TraceCategory category = TraceCategory::Other;
    int row = kHostRow;
    int begin = -1, end = -1;
  };
  /// A timing event on \p lane, or -1 (the span is then dropped).
  int timingEvent(Lane lane);

  Communicator &bootstrap_;
  std::unique_ptr<NcclDeviceCalls> calls_;
  /// Index of each group's NCCL communicator (-1 on non-members).
  std::vector<int> groupComms_;
  std::unordered_map<int64_t, Pending> pending_;
  /// Consumed by waitOnDevice, not yet known (on the host) to be done.
  std::vector<Pending> deviceWaits_;
  /// How many requests share each recorded event.
  std::unordered_map<int, int> eventUsers_;
  bool batchOpen_ = false;
  std::vector<int64_t> batchRequests_;
  bool aborted_ = false;
  int64_t nextId_ = 0;
  bool timing_ = false;
  std::vector<TimedOp> timedOps_;
  /// Indices into timedOps_ of the open batch's transfers.
  std::vector<size_t> batchTimedOps_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H
