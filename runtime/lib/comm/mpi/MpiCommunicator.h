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
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_MPI_MPICOMMUNICATOR_H
#define BITPIPE_RUNTIME_COMM_MPI_MPICOMMUNICATOR_H

#include "comm/Communicator.h"
#include "comm/PendingOps.h"

#include <memory>

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
  struct Pending : PendingOp {
    MPI_Request request = MPI_REQUEST_NULL;
    bool done = false;
    MPI_Status status;
  };

  MpiCommunicator() = default;

  Status checkBuffer(const char *op, const void *buf, int64_t count,
                     DType dtype) const;
  Status checkGroup(const char *op, GroupId group) const;
  /// One MPI_Test of \p p; sets p.done. A failure names the operation.
  Status poll(Pending &p);
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
