//===- Simulator.h - Event simulation of a pipeline schedule ----*- C++ -*-===//
//
// Runs a schedule against a CostModel and measures it: makespan, bubbles,
// peak activation memory, bytes moved, how much of the gradient all-reduce
// hides behind compute, and the timeline the exporters draw.
//
// Model. Each rank has three independent resources: its compute stream, its
// point-to-point links (one FIFO channel per (src,dst) pair) and its
// all-reduce channel. The compute stream runs the rank's F/B/W actions in
// program order; an action starts when the stream is free and its inputs are
// there (a received activation/gradient, or the rank's own earlier result).
// A send starts when its producer finishes and the channel is free; the
// producer's rank does not wait for it. An AR is issued when the rank's
// program reaches it (it does not block compute); the collective starts once
// every member of the stages' replica group has issued its matching AR
// (matched per group, in program order) and all members' all-reduce channels
// are free; with CostModel::allReduceAfterCompute (MPI on CPUs) a rank
// issues its ARs only when its program has ended. The step ends when all
// compute and all all-reduces are done, since the optimizer step waits for
// the gradients.
//
// A transfer costs CostModel::p2pTime(bytes, src, dst) and a collective
// CostModel::allReduceTime(bytes, members): with a deployment, the link
// between the two ranks' GPUs and the ring over the group in every
// data-parallel copy (docs/clusters.md). The simulated ranks are one copy's.
//
// Under CostModel::transport = Nccl the transfers run as the CUDA runtime
// issues them (docs/nccl-transfers.md): each batch of the lowered program
// is one NCCL group, issued when the program has passed its last transfer
// and launched once the group before it on the same stream (per channel or
// per rank: CommProgram::streams) has completed; a transfer moves once both
// ends' groups are launched; a group completes when all its transfers
// have; a compute step waits for the whole group of the receive it reads
// (they share one event); each group of ranks has its own all-reduce
// stream. A deadlock is then explained as a cycle of waits (SimResult::
// cycle): which rank waits at which step, for which batch of which peer.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_SIMULATOR_H
#define BITPIPE_SCHEDULE_SIMULATOR_H

#include "bitpipe/Schedule/Comms.h"
#include "bitpipe/Schedule/CostModel.h"
#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <string>
#include <vector>

namespace bitpipe::sched {

enum class Lane { Compute, P2P, AllReduce };

/// One interval of the simulated run.
struct TimelineEvent {
  Lane lane = Lane::Compute;
  int rank = -1;
  /// Compute: SendX/RecvX/AllReduce as in CommKind (Compute for F/B/W).
  CommKind kind = CommKind::Compute;
  /// Compute/AllReduce: the action; P2P: the action whose output moves.
  Action action = Action::forward(-1, -1);
  /// Compute/AllReduce: index into Schedule::ranks[rank]; P2P: -1.
  int actionIndex = -1;
  int peer = -1; ///< P2P: the other end of the transfer.
  double start = 0;
  double end = 0;
  double bytes = 0; ///< P2P: bytes moved; AllReduce: bytes this rank sends.
};

struct RankStats {
  double busy = 0;        ///< Sum of compute durations.
  double idle = 0;        ///< makespan - busy.
  double bubbleRatio = 0; ///< idle / makespan.
  double computeEnd = 0;  ///< End of the rank's last compute action.
  int peakInFlight = 0;   ///< Max (stage, micro-batch) with F done, B not.
  double peakInFlightBytes = 0; ///< Same, weighted by CostModel::stash.
  double bytesSent = 0; ///< Point-to-point bytes (local copies excluded).
  double allReduceBytesSent = 0; ///< Ring all-reduce bytes this rank sends.
  /// Of those, the bytes that leave its node (with a deployment;
  /// CostModel::allReduceInterNodeBytesPerRank).
  double allReduceInterNodeBytes = 0;
  double allReduceTime = 0;      ///< Sum of this rank's collectives' durations.
  double allReduceHidden = 0;    ///< Part of that before the rank's computeEnd.
};

/// What a rank was waiting for when the run stopped progressing.
struct BlockedRank {
  int rank = -1;
  int actionIndex = -1; ///< Index into Schedule::ranks[rank].
  std::string reason;   ///< In words: the action and what it waits for.
};

struct SimResult {
  double makespan = 0;
  /// Compute-only: total idle / (ranks * makespan). Exposed all-reduce time
  /// at the end of the step counts as idle.
  double bubbleRatio = 0;
  std::vector<RankStats> ranks;
  double totalBytesSent = 0;
  /// Sum of the durations of all collectives (each counted once).
  double allReduceTime = 0;
  /// Fraction of all-reduce time that ran while the participating rank still
  /// had compute to do: sum(allReduceHidden) / sum(rank allReduceTime).
  /// 1 when there is no all-reduce time at all.
  double allReduceOverlap = 1;
  /// Every compute, transfer (on both ends) and all-reduce (on each member).
  std::vector<TimelineEvent> timeline;

  /// True when the run stopped with work left: the schedule cannot run.
  bool deadlocked = false;
  std::vector<BlockedRank> blocked;
  /// A deadlock's cycle of waits, each naming the rank (and step, where one
  /// is blocked) that waits and what for; the last waits on the first.
  /// Empty when the ranks wait on something outside any cycle (a transfer
  /// nobody sends) or when there is no deadlock.
  std::vector<BlockedRank> cycle;
  /// "deadlock: ...", the cycle, then one line per blocked rank. Empty when
  /// none.
  std::string deadlockReport() const;
};

/// What a simulation keeps beyond its results.
struct SimulateOptions {
  /// Off: SimResult::timeline stays empty; the makespan, the statistics and
  /// any deadlock are the same. For callers that only ask whether programs
  /// run (bitpipe-verify): at D=64, N=512 the timeline is some 500,000
  /// events and most of the run's memory.
  bool recordTimeline = true;
};

/// Simulates `schedule`. Fails when the schedule cannot be lowered (see
/// lowerComms) or an all-reduce names a stage its rank does not hold; a
/// schedule that runs into a deadlock succeeds with `deadlocked` set.
Result<SimResult> simulate(const Schedule &schedule, const CostModel &cost,
                           const SimulateOptions &options = {});
/// Same, from an already lowered program (what a pass produced).
Result<SimResult> simulate(const Schedule &schedule, const CommProgram &program,
                           const CostModel &cost,
                           const SimulateOptions &options = {});

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_SIMULATOR_H
