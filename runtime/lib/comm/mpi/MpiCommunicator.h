//===- MpiCommunicator.h - Communicator over MPI ----------------*- C++ -*-===//
//
// The CPU transport. Every operation is non-blocking underneath (Isend,
// Irecv, Iallreduce, Ibcast, Ibarrier) so that every wait, including the
// "blocking" broadcast and barrier, can be polled with MPI_Test against a
// deadline instead of blocking in MPI forever on a dead peer.
//
// Error handling is MPI_ERRORS_RETURN on our communicators: an MPI failure
// becomes a Status naming the operation, not an abort inside the library.
//
// A two-level all-reduce (hierarchicalAllReduceStart; docs/data-parallel.md,
// "Two levels") is one request for three collectives that run one after
// another (MPI_Ireduce_scatter_block, MPI_Iallreduce, MPI_Iallgather on
// the group's partitions) and the tail's MPI_Iallreduce beside them. MPI
// has no way to chain them, so the communicator posts each step when a poll
// finds the one before done, and every poll moves every such request on,
// whichever request it was for: a rank waiting for a receive must still
// post the steps its peers wait for. One rule keeps the steps in line with
// MPI's: the collectives of a communicator are matched in the order they
// are posted, and steps become ready in whatever order the network ends
// them, so a step is posted only after every step issued before it on the
// same communicator (its ticket; issue order is program order, the same on
// every member). That is NCCL's order too: one queue per communicator.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_MPI_MPICOMMUNICATOR_H
#define BITPIPE_RUNTIME_COMM_MPI_MPICOMMUNICATOR_H

#include "comm/Communicator.h"
#include "comm/PendingOps.h"

#include <memory>
#include <unordered_map>

#include <mpi.h>

namespace bitpipe::runtime {

class MpiCommunicator final : public Communicator {
public:
  /// Initialises MPI unless the caller already did (then finalising stays
  /// the caller's job too).
  static Expected<std::unique_ptr<MpiCommunicator>> create(int *argc,
                                                           char ***argv);
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Expected<GroupId> createGroup(const std::vector<int> &ranks) override;
  /// One MPI_Comm_split, colour = the part's index.
  Expected<GroupId>
  createPartition(const std::vector<std::vector<int>> &parts) override;
  bool isMember(GroupId group) const override;
  const std::vector<int> &groupRanks(GroupId group) const override;
  /// Checks the list; nothing to open (MPI matches by tag).
  Status openChannels(TransferStreams streams,
                      const std::vector<Channel> &channels) override;

  Expected<RequestHandle> send(const void *buf, int64_t count, DType dtype,
                               int peer, int tag) override;
  Expected<RequestHandle> recv(void *buf, int64_t count, DType dtype, int peer,
                               int tag) override;
  Expected<RequestHandle> allReduceStart(void *buf, int64_t count, DType dtype,
                                         GroupId group) override;
  /// Steps posted as the polls find the ones before done (file comment).
  Expected<RequestHandle>
  hierarchicalAllReduceStart(void *buf, int64_t count, DType dtype,
                             const TwoLevelGroup &group) override;
  Expected<RequestHandle> allGatherStart(void *buf, int64_t count, DType dtype,
                                         GroupId group) override;
  Expected<RequestHandle> reduceScatterStart(void *buf, int64_t count,
                                             DType dtype,
                                             GroupId group) override;
  Status waitFor(RequestHandle h, double timeoutSeconds) override;
  Expected<bool> test(RequestHandle h) override;
  Status broadcast(void *buf, int64_t count, DType dtype,
                   GroupId group) override;
  Status barrier(GroupId group) override;
  Status gatherBytes(const std::string &local, int root,
                     std::vector<std::string> *all) override;
  [[noreturn]] void abort(int code, const std::string &message) override;

  /// Requests started and not yet waited for (for tests and leak checks).
  size_t numPending() const { return pending_.size(); }

private:
  struct Group {
    MPI_Comm comm = MPI_COMM_NULL; // MPI_COMM_NULL on non-members
    std::vector<int> ranks;
  };
  /// A two-level all-reduce's state between its steps (the file comment;
  /// MpiCommunicator.cpp).
  struct TwoLevelSum;
  struct Pending : PendingOp {
    /// A two-level all-reduce's: the step in flight (null between steps).
    MPI_Request request = MPI_REQUEST_NULL;
    bool done = false;
    MPI_Status status;
    /// Set on a two-level all-reduce only; shared, so that a copy of the
    /// request still finds the shard MPI writes into where it was.
    std::shared_ptr<TwoLevelSum> twoLevel;
    /// Set on a reduce-scatter only: MPI leaves the member's sum in
    /// `scratch`, copied to `landing` (its part of the buffer) once done.
    std::shared_ptr<std::vector<char>> scratch;
    char *landing = nullptr;
  };
  /// How many collectives of two-level all-reduces were issued on one
  /// communicator, and how many of them posted (the file comment).
  struct CollectiveOrder {
    int64_t issued = 0, posted = 0;
  };

  MpiCommunicator() = default;

  Status checkBuffer(const char *op, const void *buf, int64_t count,
                     DType dtype) const;
  Status checkGroup(const char *op, GroupId group) const;
  /// Refuses an all-reduce of a dtype MPI moves as raw bits (\p op names
  /// it).
  Status checkSummable(const char *op, DType dtype) const;
  /// \p ranks as createGroup and createPartition take them, marked in
  /// \p seen (a rank seen already is an error), mixed into \p hash, with
  /// this rank's position among them (or -1) in \p position.
  Status checkRankList(const char *op, const std::vector<int> &ranks,
                       std::vector<bool> *seen, uint64_t *hash,
                       int *position) const;
  /// Whether every rank passed the lists that hash to \p hash: a
  /// world-wide comparison, so that a compiler bug shows up as an error
  /// and not as a hang later.
  Status checkSameOnEveryRank(const char *op, uint64_t hash);
  /// MPI_Comm_split of the world into \p colour (MPI_UNDEFINED: none),
  /// ranked by \p key; the new group has \p ranks.
  Expected<GroupId> splitWorld(const char *op, int colour, int key,
                               std::vector<int> ranks);
  /// One MPI_Test of \p p (a two-level all-reduce: its steps moved on as
  /// far as they can); sets p.done. A failure names the operation.
  Status poll(Pending &p);
  /// A two-level all-reduce's poll.
  Status advance(Pending &p);
  /// Posts the chain's next step where its communicator's order allows
  /// (tickets); whether it did.
  Expected<bool> postStep(Pending &p);
  /// Sets p.step to where a two-level all-reduce stands.
  void noteStep(Pending &p) const;
  /// Polls every two-level all-reduce not yet done, in issue order.
  void progressTwoLevel();
  /// Completes the status check of a finished request (recv sizes).
  Status finish(const Pending &p) const;
  std::string describe(const Pending &p) const;
  Status mpiError(int err, const std::string &what) const;

  MPI_Comm world_ = MPI_COMM_NULL;
  bool ownsInit_ = false;
  int rank_ = 0;
  int size_ = 1;
  std::vector<Group> groups_;
  PendingOps<Pending> pending_;
  /// The two-level all-reduces not known to be done, oldest first.
  std::vector<int64_t> twoLevelOps_;
  /// By group: the order of the two-level steps on its communicator.
  std::unordered_map<GroupId, CollectiveOrder> order_;
};

/// The caller's place among the run's ranks on its node (those that share
/// its memory, MPI_COMM_TYPE_SHARED): what picks a rank's GPU and shares a
/// node's CPUs among its ranks. Collective over MPI_COMM_WORLD.
struct NodeRanks {
  int localRank = 0;
  int localSize = 1;
};
Expected<NodeRanks> nodeRanks(int worldRank);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_MPI_MPICOMMUNICATOR_H
