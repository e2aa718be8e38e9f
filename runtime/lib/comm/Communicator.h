//===- Communicator.h - Device-agnostic communication interface -*- C++ -*-===//
//
// What the training loop needs from a transport: point-to-point send/recv and
// a non-blocking sum all-reduce (the eager gradient sync), broadcast of the
// initial parameters, a barrier, and a host-side gather for logs and traces.
// Buffers are (pointer, element count, DType), never a host-only type, so the
// NCCL implementation can take device pointers through the same interface.
//
// Nothing waits forever. Every wait has a deadline (timeout(), set with
// setTimeout() or the BITPIPE_COMM_TIMEOUT environment variable, seconds):
// when a peer has died or hangs, the waiting rank prints which rank, peer and
// operation timed out and gets ErrorCode::Timeout back; it should then call
// abort(), which stops every rank of the job with a non-zero exit.
//
// Groups are created once, at start-up, collectively: every rank calls
// createGroup() with the same rank lists in the same order (the compiler
// emits the full list into every rank's program), and gets the same ids back.
// A rank that is not in a group may hold its id but cannot use it. A
// partition (createPartition) is one such call for several disjoint groups
// at once: its one id stands on each rank for the part that holds it.
//
// A group whose gradients sum in two levels (docs/data-parallel.md, "Two
// levels") is the whole group and two partitions of it: its members within
// each data-parallel copy, and each pipeline rank's copies.
// hierarchicalAllReduceStart sums a bucket over the whole group through
// them.
//
// Channels are opened once, after the groups and before any transfer,
// collectively (openChannels): every rank passes the program's layout and
// its full list of directed channels. A device transport connects them
// there, so that no connection is made mid-step.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_COMMUNICATOR_H
#define BITPIPE_RUNTIME_COMM_COMMUNICATOR_H

#include "TransferStreams.h"
#include "core/DType.h"
#include "core/Status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace bitpipe::runtime {

/// A group of ranks; kWorldGroup (every rank) always exists.
using GroupId = int32_t;
constexpr GroupId kWorldGroup = 0;

/// A group that sums in two levels (docs/data-parallel.md, "Two levels";
/// the layout is bitpipe/base/GradientSyncGroups.h's): the ids of the whole
/// group and of the two partitions of it that createPartition made. Each
/// stands on a member for the part that holds it.
struct TwoLevelGroup {
  /// Every world rank of the group: where the tail is summed.
  GroupId whole = -1;
  /// The group's members in this rank's copy, in the group's order: the
  /// reduce-scatter and the all-gather. Member i holds shard i.
  GroupId withinCopy = -1;
  /// This rank's pipeline rank in every copy: the shard's all-reduce.
  GroupId acrossCopies = -1;
};

/// A pending non-blocking operation. Ids are never reused within a run, so a
/// stale handle is reported instead of silently matching a newer request.
struct RequestHandle {
  int64_t id = -1;
  bool valid() const { return id >= 0; }
};

class Communicator {
public:
  virtual ~Communicator();

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Collective over every rank (see the file comment). \p ranks are world
  /// ranks, distinct, in [0, size()); their order defines ranks within the
  /// group: ranks[0] is the group's first rank, the broadcast root.
  virtual Expected<GroupId> createGroup(const std::vector<int> &ranks) = 0;
  /// Collective over every rank, as createGroup: \p parts are disjoint
  /// lists of world ranks (each as createGroup takes it), the same on every
  /// rank. The one id returned stands on each rank for the part that holds
  /// it (ranked as listed); a rank in no part holds it as a non-member. One
  /// call where a group per part would take one each: every rank joins
  /// every createGroup, member or not.
  virtual Expected<GroupId>
  createPartition(const std::vector<std::vector<int>> &parts) = 0;
  virtual bool isMember(GroupId group) const = 0;
  /// The world ranks of \p group, in group order; of a partition, the part
  /// that holds this rank (none on a rank in no part).
  virtual const std::vector<int> &groupRanks(GroupId group) const = 0;

  /// Collective over every rank, once, after the groups and before any
  /// transfer (see the file comment): how the program's transfers share
  /// queues (\p streams) and every directed channel {sender, receiver} of
  /// world ranks that one of them crosses (\p channels: distinct, sender
  /// != receiver, each in [0, size()); the same list on every rank). A
  /// transfer on no listed channel is an error where the transport routes
  /// by channel. MPI matches messages by tag: it only checks the list.
  virtual Status openChannels(TransferStreams streams,
                              const std::vector<Channel> &channels) = 0;

  /// Non-blocking send of \p count elements to world rank \p peer. The buffer
  /// must stay untouched until wait() returns. \p tag tells apart messages
  /// between the same two ranks (the compiler numbers them).
  virtual Expected<RequestHandle> send(const void *buf, int64_t count,
                                       DType dtype, int peer, int tag) = 0;
  /// Non-blocking receive into \p buf; the message must have exactly \p count
  /// elements (a mismatch is reported by wait()).
  virtual Expected<RequestHandle> recv(void *buf, int64_t count, DType dtype,
                                       int peer, int tag) = 0;

  /// Starts an in-place sum of \p buf over \p group (the caller must be a
  /// member). Every member starts its all-reduces on a group in the same order.
  virtual Expected<RequestHandle> allReduceStart(void *buf, int64_t count,
                                                 DType dtype,
                                                 GroupId group) = 0;
  /// Starts an in-place sum of \p buf over \p group.whole in two levels
  /// (docs/data-parallel.md, "Two levels"), bitpipe/base/GradientSyncGroups.h's
  /// shardLayout(count, members of the copy) cutting the buffer: a
  /// reduce-scatter within the copy leaves member i the copy's sum of shard
  /// i, an all-reduce across the copies sums that shard over the group, an
  /// all-gather within the copy hands every member every shard; the tail
  /// after the shards is all-reduced over the whole group beside them. The
  /// result is the flat all-reduce's up to the order of the sums, and the
  /// same bits on every member. One request for all of it: wait, test,
  /// waitOnDevice and the deadline work as for allReduceStart, and a
  /// timeout names the step that did not end and its group. Every member
  /// starts its sums on a group in the same order, as allReduceStart's.
  virtual Expected<RequestHandle>
  hierarchicalAllReduceStart(void *buf, int64_t count, DType dtype,
                             const TwoLevelGroup &group) = 0;
  /// Starts an in-place sum reduce-scatter over \p group (the caller must
  /// be a member): \p buf holds one part of \p count elements per member,
  /// the j-th member's at j * count, and the j-th member ends with the
  /// group's sum of part j there; its other parts are left undefined. What
  /// a sharded optimizer (docs/data-parallel.md, "Sharded optimizer") sums
  /// a bucket's gradients with. Waited for, ordered and timed out as
  /// allReduceStart.
  virtual Expected<RequestHandle>
  reduceScatterStart(void *buf, int64_t count, DType dtype, GroupId group) = 0;
  /// Starts an in-place all-gather over \p group (the caller must be a
  /// member): \p buf holds one part of \p count elements per member of the
  /// group, the j-th member's at j * count; each member's own part is its
  /// input, and afterwards every member holds every part. What a sharded
  /// optimizer (docs/data-parallel.md, "Sharded optimizer") hands each
  /// replica its peers' updated weights with. Waited for, ordered and
  /// timed out as allReduceStart.
  virtual Expected<RequestHandle>
  allGatherStart(void *buf, int64_t count, DType dtype, GroupId group) = 0;
  /// Waits for an all-reduce; the same as wait(), named for symmetry.
  Status allReduceWait(RequestHandle h) { return wait(h); }

  /// Orders the target's compute work after \p h (a receive, before the
  /// stage that reads its buffer; an all-reduce, before the optimizer step)
  /// without blocking the host where the transport can: a device
  /// communicator makes its compute stream wait for the operation's event.
  /// A transport on host memory (MPI) waits, as wait() does. Consumes the
  /// handle; the deadline and error reporting are wait()'s.
  virtual Status waitOnDevice(RequestHandle h) { return wait(h); }
  /// waitOnDevice, naming what reads the result ("step 4: forward F3.s2
  /// (gpt_stage2)") in the error should the operation fail after the call
  /// returned (drainDeviceWaits reports it then).
  virtual Status waitOnDeviceFor(RequestHandle h, const std::string &reader) {
    (void)reader; // a host wait reports at once, in the caller's context
    return waitOnDevice(h);
  }

  /// Ends a batch of transfers (program.h's bp_rt_end_batch): the sends and
  /// receives posted since the previous batch's end are one group, so that
  /// crossed transfers between two ranks cannot deadlock (NCCL: one
  /// ncclGroupStart/End around them; under "channel" streams the transfers
  /// of one channel). A transport that posts each transfer at once (MPI's
  /// non-blocking calls) has nothing to do.
  virtual Status endBatch() { return Status::ok(); }

  /// Waits on the host, with the deadline, for every operation handed to
  /// waitOnDevice since the last call: before the host waits for the
  /// compute stream (the step's end), so that a dead peer ends in a timeout
  /// naming it rather than in a device wait that never returns. A host
  /// transport has waited already.
  virtual Status drainDeviceWaits() { return Status::ok(); }

  /// The communicator for host memory (the global norm's one double, the
  /// initial parameters' broadcast): this one where it moves host memory,
  /// the MPI bootstrap under a device communicator. Same ranks, same group
  /// ids.
  virtual Communicator &hostCommunicator() { return *this; }

  /// Waits for \p h with the default timeout; the handle is consumed.
  Status wait(RequestHandle h) { return waitFor(h, timeout()); }
  /// Waits at most \p timeoutSeconds. On timeout prints
  /// "bitpipe: rank R: timeout after S s waiting for OP with rank P ..." to
  /// stderr and returns ErrorCode::Timeout; the handle stays pending.
  virtual Status waitFor(RequestHandle h, double timeoutSeconds) = 0;
  /// Drives progress and reports whether \p h completed, without blocking.
  /// A completed handle must still be passed to wait() (which returns at
  /// once) so that errors are reported in one place.
  virtual Expected<bool> test(RequestHandle h) = 0;

  /// Blocking broadcast of \p buf from the group's first rank to its members.
  virtual Status broadcast(void *buf, int64_t count, DType dtype,
                           GroupId group) = 0;
  /// Blocking barrier over \p group, subject to the timeout.
  virtual Status barrier(GroupId group) = 0;

  /// Host-side gather over the world: rank \p root receives every rank's
  /// \p local bytes in \p all (indexed by rank); other ranks get \p all empty.
  virtual Status gatherBytes(const std::string &local, int root,
                             std::vector<std::string> *all) = 0;

  /// Prints "bitpipe: rank R: fatal: MESSAGE" to stderr and stops the whole
  /// job with exit code \p code (MPI_Abort): the launcher then kills the
  /// other ranks, so one bad rank never leaves the rest hanging.
  [[noreturn]] virtual void abort(int code, const std::string &message) = 0;

  double timeout() const { return timeoutSeconds_; }
  void setTimeout(double seconds) { timeoutSeconds_ = seconds; }

protected:
  Communicator();

private:
  double timeoutSeconds_;
};

/// Whether \p channels is what openChannels takes for a world of \p size
/// ranks; the error names the channel and what was expected.
Status checkChannels(int rank, int size, const std::vector<Channel> &channels);

/// The environment variable that sets the default wait deadline, and the
/// longest deadline it or --timeout may set (11.6 days).
inline constexpr const char *kCommTimeoutVariable = "BITPIPE_COMM_TIMEOUT";
inline constexpr double kMaxCommTimeoutSeconds = 1e6;

/// BITPIPE_COMM_TIMEOUT's deadline: nothing when it is unset, its seconds
/// when it is a number above 0 and at most kMaxCommTimeoutSeconds, else an
/// error naming it (the executable refuses to start on it).
Expected<std::optional<double>> commTimeoutFromEnvironment();

/// Default wait deadline: BITPIPE_COMM_TIMEOUT's, else 300 s (long enough
/// for a slow first step, short enough not to burn a job's allocation on a
/// dead peer).
double defaultCommTimeoutSeconds();

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_COMMUNICATOR_H
