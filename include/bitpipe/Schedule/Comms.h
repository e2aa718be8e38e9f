//===- Comms.h - Point-to-point transfers implied by a schedule -*- C++ -*-===//
//
// A schedule lists only compute (F, B, W) and all-reduce actions. Every edge
// between consecutive stages of one micro-batch whose two ends run on
// different devices needs a transfer: the activation of F(m,s-1) goes to
// F(m,s), the gradient of B(m,s+1) goes to B(m,s). Lowering places a send
// right after the producing action and a receive right before the consuming
// one, so that sends and receives of one (src,dst) channel can be matched
// one-to-one in program order, as NCCL and MPI match them. Edges whose two
// ends share a device (BitPipe's V bottom) become explicit local copies: no
// transfer, but visible to the passes that insert the copy.
//
// Each send and receive also belongs to a batch, the unit the CUDA runtime
// issues as one ncclGroupStart/End on the stream the program's
// TransferStreams gives it (Transport.h, docs/nccl-transfers.md).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_COMMS_H
#define BITPIPE_SCHEDULE_COMMS_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"
#include "bitpipe/Schedule/Transport.h"

#include <string>
#include <vector>

namespace bitpipe::sched {

/// The site of every compute action (F, B, W) of a schedule, by
/// (kind, micro-batch, stage). Keeps the first occurrence of a duplicate.
class ActionTable {
public:
  ActionTable(int numMicrobatches, int numStages);
  /// Records every compute action of `schedule`. Out-of-range actions are
  /// skipped (use inRange to report them).
  static ActionTable build(const Schedule &schedule);

  /// True for a compute action whose micro-batch and stage exist.
  bool inRange(const Action &action) const;
  const ActionSite &at(ActionKind kind, int microbatch, int stage) const;
  ActionSite &at(ActionKind kind, int microbatch, int stage);
  int numMicrobatches() const { return numMicrobatches_; }
  int numStages() const { return numStages_; }

private:
  int slot(ActionKind kind, int microbatch, int stage) const;
  int numMicrobatches_;
  int numStages_;
  std::vector<ActionSite> sites_;
};

/// One hand-off of an activation (F) or a gradient (B) between consecutive
/// stages of one micro-batch.
struct Transfer {
  bool gradient =
      false; ///< false: F(m,from) -> F(m,to); true: B(m,from) -> B(m,to).
  int microbatch = -1;
  int fromStage = -1;
  int toStage = -1;
  int src = -1;           ///< Rank of the producing action.
  int dst = -1;           ///< Rank of the consuming action.
  int producerIndex = -1; ///< Index of the producer in Schedule::ranks[src].
  int consumerIndex = -1; ///< Index of the consumer in Schedule::ranks[dst].

  /// Same device: a local copy, nothing goes over a link.
  bool local() const { return src == dst; }
  Action producer() const;
  Action consumer() const;
};

enum class CommKind {
  Compute,    ///< An F, B or W of the schedule.
  AllReduce,  ///< An AR of the schedule.
  SendF,      ///< Send an activation, right after the F that produced it.
  RecvF,      ///< Receive an activation, right before the F that needs it.
  SendB,      ///< Send a gradient, right after the B that produced it.
  RecvB,      ///< Receive a gradient, right before the B that needs it.
  LocalCopyF, ///< Same-device activation hand-off (after its producer).
  LocalCopyB, ///< Same-device gradient hand-off (after its producer).
};

/// One step of a lowered per-rank program.
struct CommAction {
  CommKind kind = CommKind::Compute;
  /// Compute/AllReduce: the action itself. Transfers: the producing action.
  Action action = Action::forward(-1, -1);
  /// Compute/AllReduce: index into Schedule::ranks[r]. Send/LocalCopy: index
  /// of the producer there; Recv: index of the consumer there.
  int actionIndex = -1;
  int transfer = -1; ///< Index into CommProgram::transfers, or -1.
  int peer = -1;     ///< Send: destination rank. Recv: source rank.
  /// Send/Recv: the batch (one NCCL group) it is issued in, numbered from 0
  /// per rank in program order; -1 otherwise.
  int batch = -1;

  bool isTransfer() const { return transfer >= 0; }
  /// A send or a receive (not a local copy).
  bool isSendOrRecv() const {
    return kind == CommKind::SendF || kind == CommKind::SendB ||
           kind == CommKind::RecvF || kind == CommKind::RecvB;
  }
  bool isSend() const {
    return kind == CommKind::SendF || kind == CommKind::SendB;
  }
  /// "F3.s1", "AR(4,7)", "SEND_F3.s1->P2", "RECV_F3.s1<-P1",
  /// "SEND_B3.s2->P1", "RECV_B3.s2<-P2", "COPY_F3.s3", "COPY_B3.s4".
  std::string str() const;
};

/// True when `name` is one that CommAction::str() writes (the spans of a
/// simulated run's trace are named so).
bool isCommActionName(const std::string &name);

/// A schedule with its transfers made explicit.
struct CommProgram {
  std::vector<Transfer> transfers; ///< Local copies included.
  std::vector<std::vector<CommAction>> ranks;
  /// How the batches are laid out on NCCL communicators and streams.
  TransferStreams streams = TransferStreams::Channel;

  /// One line per rank, "P<r>: " then the steps' str(), space-separated.
  std::string format() const;
};

/// Derives the transfers of `schedule` and numbers their batches for
/// `streams`: under Channel each hand-off is a batch of its own; under
/// Shared a batch holds the sends and receives between two compute or
/// all-reduce steps of a rank. Fails on an out-of-range action, a compute
/// action that appears twice, or an action whose input is produced by no
/// rank (a B without its F, a W without its B, an F or B without its
/// neighbouring stage).
Result<CommProgram>
lowerComms(const Schedule &schedule,
           TransferStreams streams = TransferStreams::Channel);

/// Numbers the batches of `program`'s sends and receives for `streams` (as
/// lowerComms does) and sets program.streams.
void assignBatches(CommProgram &program, TransferStreams streams);

/// The first disagreement on one (src,dst) channel between the order in
/// which src sends and the order in which dst receives.
struct ChannelMismatch {
  int src = -1;
  int dst = -1;
  int position = 0;      ///< 0-based position on the channel.
  int sendTransfer = -1; ///< Transfer src sends there, -1 if src sends no more.
  int recvTransfer =
      -1;            ///< Transfer dst expects there, -1 if dst expects no more.
  int sendItem = -1; ///< Index of the send in program.ranks[src], or -1.
  int recvItem = -1; ///< Index of the receive in program.ranks[dst], or -1.
};

/// Checks that on every channel the k-th send and the k-th receive carry the
/// same transfer. Programs from lowerComms always match in count; the order
/// is the schedule's property. Hand-edited programs can also miss one side.
std::vector<ChannelMismatch> checkChannels(const CommProgram &program);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_COMMS_H
