//===- PendingOps.h - What a communicator still waits for -------*- C++ -*-===//
//
// The operations a transport has started and not yet completed, and how
// each one reads in a message. Every transport keeps the same facts about
// them (the operation, its peer or group, tag, element count and dtype)
// and names them the same way when a wait times out or fails, so that a
// rank's error reads alike whichever transport it ran on. A transport adds
// what it completes an operation by (an MPI request; an NCCL communicator
// and event) by deriving from PendingOp.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_COMM_PENDINGOPS_H
#define BITPIPE_RUNTIME_COMM_PENDINGOPS_H

#include "comm/Communicator.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace bitpipe::runtime {

/// One started operation, as a message names it.
struct PendingOp {
  /// "send", "recv", "allreduce", "barrier", "warm-up recv", ...
  std::string op;
  /// The world rank of a transfer's peer; -1 where there is none.
  int peer = -1;
  /// A transfer's tag; none for the start-up warm-ups, which have no tag.
  std::optional<int> tag;
  /// A collective's group; none for transfers (and for an operation whose
  /// name lists its peers).
  std::optional<GroupId> group;
  int64_t count = 0;
  DType dtype = DType::F32;
  /// What reads the result on the device (Communicator::waitOnDeviceFor),
  /// for an error reported after the wait was handed over; may be empty.
  std::string reader;
  /// Where an operation of several steps stands (describeTwoLevelStep);
  /// empty for one of a single step.
  std::string step;
};

/// The steps of a two-level all-reduce (Communicator::
/// hierarchicalAllReduceStart; docs/data-parallel.md, "Two levels"): the
/// three of the shards, in the order they run, and the tail, which runs
/// beside them.
enum class TwoLevelStep { ReduceScatter, AllReduceAcross, AllGather, Tail };

/// \p step of a two-level all-reduce as a message names it after the
/// operation: "step 2 of 3: allreduce across copies over group 5 (ranks
/// 1,3, 4 x f32)", "the tail: allreduce over group 1 (ranks 0,1,2,3, 1 x
/// f32)". \p group, its \p groupRanks and \p count (elements of \p dtype)
/// are the step's own.
std::string describeTwoLevelStep(TwoLevelStep step, GroupId group,
                                 const std::vector<int> &groupRanks,
                                 int64_t count, DType dtype);

/// \p op in a message: "recv with rank 1 (tag 4, 16 x f32)", "allreduce
/// over group 2 (ranks 0,2, 64 x f32)", "warm-up of the channels (to rank
/// 1) (1 x i32)", followed by ", STEP" where it names a step and ", read by
/// READER" where it names a reader.
/// \p groupRanks are the world ranks of op.group, read only where it has
/// one.
std::string describePendingOp(const PendingOp &op,
                              const std::vector<int> &groupRanks);

/// The error for \p h when no pending operation has it: \p use ("wait on",
/// "test of", ...) names what was asked, \p rank the asking rank.
Status unknownRequest(int rank, const char *use, RequestHandle h);

/// A transport's started operations of type \p Op (a PendingOp with the
/// transport's handles), by request handle. Ids count up from 0 and are
/// never reused (Communicator.h, RequestHandle).
template <typename Op> class PendingOps {
public:
  /// Keeps \p op until erase() and hands out its handle.
  RequestHandle add(Op op) {
    RequestHandle h{nextId_++};
    ops_.emplace(h.id, std::move(op));
    return h;
  }
  /// The operation of \p h; null when there is none (unknown, or already
  /// completed and erased).
  Op *find(RequestHandle h) {
    auto it = ops_.find(h.id);
    return it == ops_.end() ? nullptr : &it->second;
  }
  void erase(RequestHandle h) { ops_.erase(h.id); }
  /// Calls \p f(Op &) on every operation, in no particular order.
  template <typename F> void forEach(F f) {
    for (auto &entry : ops_)
      f(entry.second);
  }
  size_t size() const { return ops_.size(); }
  bool empty() const { return ops_.empty(); }

private:
  std::unordered_map<int64_t, Op> ops_;
  int64_t nextId_ = 0;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_COMM_PENDINGOPS_H
