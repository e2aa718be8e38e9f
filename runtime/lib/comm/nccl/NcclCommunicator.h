//===- NcclCommunicator.h - Communicator over NCCL streams ------*- C++ -*-===//
//
// The CUDA target's transport (docs/runtime-abi.md, "Communication on each
// target"). Made from the MPI communicator, which stays the bootstrap: the
// NCCL unique id crosses by an MPI broadcast, and whatever works on host
// memory (broadcast of the initial parameters, barrier, gatherBytes, the
// global norm's all-reduce through hostCommunicator(), abort) is MPI's.
//
// Communicators and streams. NCCL runs one communicator's operations one
// after another in issue order (whatever the stream), completes a send
// only once its receive is posted, and runs a group as one unit; so which
// transfers share a communicator decides whether a program deadlocks
// (comm/TransferStreams.h). Every communicator has a stream of its own
// (NcclDeviceCalls.h):
//  - the world's (communicator 0);
//  - one per group (createGroup: an ncclCommSplit of the world), on which
//    its all-reduces run;
//  - under "channel" transfer streams (openChannels), one per directed
//    channel sender -> receiver of world ranks: a two-rank communicator,
//    the sender its rank 0 and the receiver its rank 1, that carries every
//    transfer from the sender to the receiver, at both ends. Under
//    "shared", the world's carries every transfer.
// A transfer to or from a rank with no listed channel is refused.
//
// Start-up connection. NCCL connects a communicator lazily, at its first
// operation, and that can block the host until the peers join: mid-step,
// it would stall a rank that is needed elsewhere. So every communicator
// is used once at start-up, where every rank takes part, and waited for
// on the host with the deadline:
//  - a group's, right after its split: a one-element all-reduce;
//  - under "channel": the channels' communicators are split in rounds (the
//    list coloured greedily in its order, each channel in the first round
//    where neither of its ranks has one yet), so that each rank joins at
//    most one new communicator per ncclCommSplit; right after each split
//    the two members move one element, sender to receiver. No warm-up
//    then waits for a rank that is busy with another;
//  - under "shared": one group of a one-element send or receive per
//    listed channel end of this rank, on the world's.
//
// Device work is ordered by events, never by host waits:
//  - send: the channel's stream waits for the compute stream's work so far
//    (the buffer's producer), then ncclSend;
//  - recv: the same wait (the buffer comes from the compute stream's pool,
//    whose earlier users may still be reading it), then ncclRecv;
//  - a batch (bp_rt_end_batch) is one ncclGroupStart/End on one
//    communicator, opened at its first transfer and closed by endBatch()
//    or by anything that must see its operations enqueued (a wait, an
//    all-reduce); its requests share the event recorded after the group's
//    end. Under "channel" a batch holds one channel's transfers (the
//    compiler makes it so); a transfer of another channel in an open batch
//    is refused;
//  - allReduceStart: the group's stream waits for the compute stream (the
//    bucket's last gradient was accumulated there), ncclAllReduce sums in
//    place on the group's communicator, an event follows;
//  - hierarchicalAllReduceStart (docs/data-parallel.md, "Two levels"):
//    the stream of the copy's part waits for the compute stream,
//    ncclReduceScatter, an event; the stream of the rank's part across
//    copies waits for that event, ncclAllReduce of this member's shard, an
//    event; the copy's stream waits for it, ncclAllGather. The tail's
//    ncclAllReduce runs on the whole group's stream, after its own wait
//    for compute, beside them, and the copy's stream waits for its event
//    too: the event recorded last on the copy's stream, the request's,
//    then covers every step. The steps' own events stay with the request
//    until it completes, so that a timeout names the first step not done
//    and its group, and a wait asks every communicator involved for its
//    asynchronous error;
//  - waitOnDevice: the compute stream waits for the operation's event;
//    drainDeviceWaits() then bounds, on the host, what the compute stream
//    was told to wait for, so that a dead peer is a timeout and not a
//    cudaStreamSynchronize that never returns. Where compute runs on the
//    host (NcclDeviceCalls::hostComputes: the CPU tests' stand-in), the
//    compute wait would be a host wait without a deadline: the event is
//    polled with the deadline first.
// A pair of ranks' transfers match in the order they are posted (NCCL has
// no tags): the compiler's verifier checks that both ends order every
// channel alike (Verify.cpp, "channel order").
//
// Device spans (setDeviceTiming; the CUDA backend turns it on): a timing
// event on the operation's stream right before and right after it, kept
// until takeDeviceSpans measures them from the step's start event. An
// all-reduce's pair brackets its ncclAllReduce; a two-level one's, on the
// copy's stream, every step from the reduce-scatter to the join of the
// tail. A batch's transfers run
// as one NCCL launch at ncclGroupEnd (nothing of the group is on the
// stream before), so its pair brackets the group's end: every transfer of
// the batch gets that span, from when the stream could start the group
// (its compute waits met, the stream's earlier work done) to when the
// last of its transfers ended. The trace has one row for all transfer
// streams and one for all all-reduce streams (core/TraceSpan.h, TraceRow):
// spans of different channels, or of different groups, may overlap there.
//
// A wait polls the event and ncclCommGetAsyncError until its deadline; on
// timeout or an asynchronous error every NCCL communicator is aborted
// (ncclCommAbort) and the error names the rank, the operation and the peer.
//
// CUDA graphs (cuda/backend/StepGraph.h). While the backend captures the
// compute stream, the step's operations are recorded into the same graph:
// each operation's stream already waits for the compute stream's event
// first, which forks that stream into the capture, and endCapture() joins
// every stream so forked back (an event recorded on it, waited for by the
// compute stream), as a capture must before it ends. Events recorded in a
// capture are nodes of the graph, not events the host may query: while
// capturing, test() answers "not done" without asking, a host wait is an
// error, and no operation is timed. Once the graph is launched,
// graphLaunched() gives every operation recorded in the capture an event
// recorded on the compute stream after the launch (an operation is done
// when the graph is), and adds that event to the device waits as the
// graph's, whose drain polls it with the deadline and the asynchronous
// errors of every communicator the graph holds: a replay of the graph is
// bounded as the operations it stands for are.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H
#define BITPIPE_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H

#include "NcclDeviceCalls.h"
#include "comm/Communicator.h"
#include "comm/PendingOps.h"
#include "core/TraceSpan.h"

#include <chrono>
#include <functional>
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
  /// communicator split from the world's, warmed up (file comment).
  Expected<GroupId> createGroup(const std::vector<int> &ranks) override;
  /// The bootstrap's partition, then one split of the world's NCCL
  /// communicator, colour = the part's index, each part's warmed up.
  Expected<GroupId>
  createPartition(const std::vector<std::vector<int>> &parts) override;
  bool isMember(GroupId group) const override;
  const std::vector<int> &groupRanks(GroupId group) const override;
  /// The channels' communicators, connected (file comment); once.
  Status openChannels(TransferStreams streams,
                      const std::vector<Channel> &channels) override;

  Expected<RequestHandle> send(const void *buf, int64_t count, DType dtype,
                               int peer, int tag) override;
  Expected<RequestHandle> recv(void *buf, int64_t count, DType dtype, int peer,
                               int tag) override;
  Expected<RequestHandle> allReduceStart(void *buf, int64_t count, DType dtype,
                                         GroupId group) override;
  /// On three streams, ordered by events (file comment).
  Expected<RequestHandle>
  hierarchicalAllReduceStart(void *buf, int64_t count, DType dtype,
                             const TwoLevelGroup &group) override;
  Expected<RequestHandle> allGatherStart(void *buf, int64_t count, DType dtype,
                                         GroupId group) override;
  Expected<RequestHandle> reduceScatterStart(void *buf, int64_t count,
                                             DType dtype,
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

  /// CUDA graphs (file comment). With nothing pending: from now on the
  /// operations go into the capture of the compute stream that the caller
  /// has begun.
  Status beginCapture();
  /// Closes the open batch and joins every stream the capture forked back
  /// into the compute stream; call before the capture ends.
  Status endCapture();
  bool capturing() const { return capturing_; }
  /// After a launch of the captured graph on the compute stream (the
  /// capture's own launch, or a replay): the operations recorded in the
  /// capture complete with it, and the device waits hold it as \p what
  /// ("the CUDA graph of step 5").
  Status graphLaunched(const std::string &what);

  /// For tests: requests neither waited for nor handed to waitOnDevice,
  /// those handed to waitOnDevice and not yet drained, and whether a batch
  /// is open.
  size_t numPending() const { return pending_.size(); }
  size_t numDeviceWaits() const { return deviceWaits_.size(); }
  bool batchOpen() const { return batchOpen_; }

private:
  /// One step of a two-level all-reduce: its group and communicator, and
  /// the event after it on that communicator's stream (-1: none of its
  /// own, the request's event covers it).
  struct Step {
    TwoLevelStep what = TwoLevelStep::ReduceScatter;
    GroupId group = -1;
    int comm = 0;
    int event = -1;
    int64_t count = 0;
  };
  struct Pending : PendingOp {
    int comm = 0;   // the NCCL communicator it runs on; kGraphComms: a graph
    int event = -1; // -1 while its batch's group is still open
    /// A two-level all-reduce's steps, in the order they are issued; none
    /// for an operation of one step.
    std::vector<Step> steps;
  };
  /// Pending::comm of a launched graph: every communicator in graphComms_.
  static constexpr int kGraphComms = -1;
  /// Where the transfers with one peer go: the communicator, and the
  /// peer's rank in it.
  struct Route {
    int comm = 0;
    int peer = -1;
  };

  NcclCommunicator(Communicator &bootstrap,
                   std::unique_ptr<NcclDeviceCalls> calls);

  Status checkBuffer(const char *op, const void *buf, int64_t count,
                     DType dtype) const;
  /// Issues one collective on \p group's communicator.
  using CollectiveCall = std::function<Status(int comm, NcclElement type)>;
  /// A collective over one group (all-reduce, reduce-scatter, all-gather):
  /// the checks, the batch closed, the group's stream ordered after the
  /// compute stream, \p call, and the request's event; a device span
  /// where \p timed (the all-reduce's, which the executor names by bucket).
  Expected<RequestHandle> startCollective(const char *op, void *buf,
                                          int64_t count, DType dtype,
                                          GroupId group, bool timed,
                                          const CollectiveCall &call);
  /// Whether this rank may run \p op on \p group.
  Status checkMember(const char *op, GroupId group) const;
  /// The NCCL communicator of the bootstrap's new group \p id: a split of
  /// the world's (this rank's \p colour, -1 for none, ranked by \p key),
  /// connected by a one-element all-reduce among its members.
  Expected<GroupId> splitGroup(GroupId id, int colour, int key);
  /// Enqueues a two-level all-reduce's steps on their streams, noting them
  /// (and their events) in \p p; the request's own event is the caller's.
  Status issueTwoLevel(Pending &p, char *buf, NcclElement type,
                       const TwoLevelGroup &group);
  Expected<RequestHandle> postTransfer(Pending p, void *buf);
  /// The route of a transfer \p op with world rank \p peer; an error naming
  /// both ranks when no channel was listed for it.
  Expected<Route> routeOf(const std::string &op, int peer) const;
  /// "shared": the world's communicator for every listed channel of this
  /// rank, connected by one group on it.
  Status openSharedChannels(const std::vector<Channel> &channels);
  /// "channel": a two-rank communicator per channel, split in rounds and
  /// warmed up after each.
  Status openChannelCommunicators(const std::vector<Channel> &channels);
  /// Enqueues a warm-up's operations through \p post and waits for them
  /// on \p comm's stream, with the deadline.
  Status warmUp(Pending what, const std::function<Status()> &post);
  /// Ends the open batch, if any: ncclGroupEnd, then the event that every
  /// request of the batch shares.
  Status closeBatch();
  void releaseEventOf(const Pending &p);
  /// Whether \p p can be waited for: enqueued, communicators not aborted.
  Status usable(const Pending &p) const;
  /// Polls \p p until its event is done or \p deadline: ok, or (after
  /// aborting every NCCL communicator) the timeout (reported as
  /// \p timeoutSeconds) or the async error.
  Status pollUntilDone(const Pending &p, Clock::time_point deadline,
                       double timeoutSeconds);
  /// An event recorded on \p comm's stream after an operation: the
  /// capture's, while capturing (graphLaunched replaces it).
  Expected<int> recordOpEvent(int comm);
  /// \p comm's stream joins the capture (its stream has just waited for
  /// the compute stream's event).
  void forked(int comm);
  /// ncclCommGetAsyncError of \p p's communicator (of each of a graph's).
  Status asyncErrorOf(const Pending &p);
  /// Aborts the NCCL communicators once and turns \p cause into the error.
  Status fail(ErrorCode code, const std::string &message);
  std::string describe(const Pending &p) const;
  /// describe(), with the first step of a two-level all-reduce whose event
  /// is not done (what a timeout blames): asks the device.
  std::string describeWaiting(const Pending &p);

  /// An operation timed on the device: slots of its timing events, -1
  /// while its batch is open or where recording failed.
  struct TimedOp {
    std::string name;
    TraceCategory category = TraceCategory::Other;
    int row = kHostRow;
    int begin = -1, end = -1;
  };
  /// A timing event on \p comm's stream, or -1 (the span is then dropped).
  int timingEvent(int comm);

  Communicator &bootstrap_;
  std::unique_ptr<NcclDeviceCalls> calls_;
  /// Index of each group's NCCL communicator (-1 on non-members).
  std::vector<int> groupComms_;
  /// The warm-ups' device memory (NcclDeviceCalls::scratch): two int32 per
  /// rank, enough for one send and one receive with every peer at once.
  int32_t *scratch_ = nullptr;
  bool channelsOpen_ = false;
  /// By world peer: where this rank's sends to it go, and its receives
  /// from it come from (openChannels).
  std::unordered_map<int, Route> sendRoutes_, recvRoutes_;
  PendingOps<Pending> pending_;
  /// Consumed by waitOnDevice, not yet known (on the host) to be done.
  std::vector<Pending> deviceWaits_;
  /// How many requests share each recorded event.
  std::unordered_map<int, int> eventUsers_;
  bool batchOpen_ = false;
  /// The open batch's communicator, and its first transfer (for the error
  /// about a batch that mixes channels).
  int batchComm_ = 0;
  std::string batchFirst_;
  std::vector<int64_t> batchRequests_;
  bool aborted_ = false;
  bool timing_ = false;
  std::vector<TimedOp> timedOps_;
  /// Indices into timedOps_ of the open batch's transfers.
  std::vector<size_t> batchTimedOps_;
  bool capturing_ = false;
  /// The streams forked into the capture (endCapture joins them), and the
  /// events recorded in it (graphLaunched replaces them).
  std::vector<int> capturedComms_;
  std::vector<int> capturedEvents_;
  /// The communicators of the last graph captured: what its launches'
  /// waits check for asynchronous errors.
  std::vector<int> graphComms_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_NCCL_NCCLCOMMUNICATOR_H
