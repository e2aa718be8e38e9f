//===- CostModel.h - Times and sizes the simulator charges ------*- C++ -*-===//
//
// Time is in abstract units ("slots"); exporters scale it. The defaults are
// the unit costs the papers count in (F=1, B=2, W=1) with free communication,
// so that a default-constructed CostModel reproduces the slot counts quoted in
// docs/bitpipe-order.md. For a split-backward schedule, B is the input-gradient
// half only: set backward accordingly (zero-bubble papers use F=B=W=1).
//
// With a `deployment` (a cluster and where the simulated pipeline copy sits
// in it, docs/clusters.md), communication costs follow the links between
// the ranks involved, in seconds: give the compute times in seconds too.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_COSTMODEL_H
#define BITPIPE_SCHEDULE_COSTMODEL_H

#include "bitpipe/Schedule/Cluster.h"
#include "bitpipe/Schedule/Transport.h"

#include <optional>
#include <vector>

namespace bitpipe::sched {

/// NCCL's all-reduce algorithms the cost model knows (docs/clusters.md,
/// "All-reduce"), and Cheapest: the faster of the two for the message and
/// the group, as NCCL's tuner picks one per call.
enum class AllReduceAlgorithm { Ring, Tree, Cheapest };

/// "ring", "tree", "cheapest".
const char *allReduceAlgorithmName(AllReduceAlgorithm algorithm);

/// NCCL's tree all-reduce of `bytes` over `worldRanks` in the alpha-beta
/// model: a chain through each node's members and a double binary tree
/// across the nodes, reduced up and broadcast down, each phase pipelined,
///   2 * ((m - 1) * alpha_intra + ceil(log2 k) * alpha_inter) + 2 b / beta
/// for k nodes holding at most m members each, beta the slowest link the
/// group spans (intra_node on one node, inter_node's per-GPU share
/// otherwise). Each rank sends b in each phase (its two trees carry half
/// each), so 2b in all. A group of one costs nothing.
double treeAllReduceTime(const Cluster &cluster, double bytes,
                         const std::vector<int> &worldRanks);

struct CostModel {
  /// Per-stage compute times. An empty vector (or a stage past its end)
  /// falls back to the unit cost below.
  std::vector<double> forward, backward, weightGrad;
  /// When set for a rank: actionTimes[rank][i] is the time of the rank's
  /// compute step i (an index into Schedule::ranks[rank]), in place of its
  /// stage's: one draw of a run's measured spread (Calibration.h). Steps
  /// past a rank's list, and every non-compute step, keep the per-stage
  /// time.
  std::vector<std::vector<double>> actionTimes;
  /// When set for a rank: every compute step of rank r takes
  /// rankComputeScale[r] times its time above (a straggler: a device or a
  /// core slower than the others). Ranks past the list run at 1.
  std::vector<double> rankComputeScale;
  double unitForward = 1.0;
  double unitBackward = 2.0;
  double unitWeightGrad = 1.0;

  /// boundaryBytes[s]: the activation stage s hands to stage s+1; the gradient
  /// flowing back over that boundary has the same size. Missing: 0 bytes.
  std::vector<double> boundaryBytes;
  /// stashBytes[s]: activation memory stage s keeps from its F until its B.
  /// Missing: 0 bytes (peak in-flight is then reported in chunks only).
  std::vector<double> stashBytes;
  /// gradientBytes[s]: parameter-gradient bytes of stage s (all-reduce size).
  std::vector<double> gradientBytes;

  /// Point-to-point: latency + bytes / bandwidth. Bandwidth 0 = infinite.
  double p2pLatency = 0.0;
  double p2pBandwidth = 0.0;
  /// Ring all-reduce over n ranks: latency + 2(n-1)/n * bytes / bandwidth.
  /// A group of one rank costs nothing. Bandwidth 0 = infinite.
  double allReduceLatency = 0.0;
  double allReduceBandwidth = 0.0;
  /// When set, replaces the four flat numbers above: a transfer costs its
  /// link's alpha-beta time and an all-reduce NCCL's ring or tree time
  /// (allReduceAlgorithm) over the links its group spans, across every
  /// data-parallel copy.
  std::optional<Deployment> deployment;
  /// The rules transfers run under (Transport.h; docs/nccl-transfers.md).
  /// Nccl: each batch of a program is one NCCL group, issued when the
  /// program reaches its end, launched once the group before it on its
  /// stream (the program's TransferStreams) has completed; a transfer
  /// moves once both its ends' groups are launched (a send completes only
  /// when its receive is posted); a compute step that reads a receive waits
  /// for that receive's whole group; all-reduces run on one stream per
  /// group of ranks. Mpi (the default): a send starts when its producer
  /// ends and nothing waits for the receiver, as every test's exact numbers
  /// assume; all-reduces share one lane per rank.
  Transport transport = Transport::Mpi;
  /// An all-reduce moves only while its members wait for it, after their
  /// last compute: MPI without a progress thread (the CPU runtime) runs a
  /// collective only inside the members' MPI calls, and the rank waits for
  /// its sums just before the optimizer step. Off (the default): it runs
  /// beside compute from when every member has reached it, as NCCL's
  /// all-reduce stream does.
  bool allReduceAfterCompute = false;
  /// Time a rank spends posting each all-reduce, on its compute lane, before
  /// its next step: MPI's nonblocking all-reduce without a progress thread
  /// copies and starts the collective on the caller's core. 0 (the
  /// default): posting is free, as NCCL's enqueue nearly is.
  double allReducePostTime = 0.0;
  /// With a deployment: which algorithm an all-reduce costs. Cheapest (the
  /// default) takes the ring unless the tree is strictly faster.
  AllReduceAlgorithm allReduceAlgorithm = AllReduceAlgorithm::Cheapest;
  /// With a deployment: how a group of several pipeline ranks sums across
  /// the copies (GradientSync.h). Hierarchical: a ring reduce-scatter and
  /// all-gather among this copy's members, and the shards' all-reduce
  /// across copies (allReduceAlgorithm's, the slowest member's), one after
  /// another.
  GradientSync gradientSync = GradientSync::Flat;

  double forwardTime(int stage) const;
  double backwardTime(int stage) const;
  double weightGradTime(int stage) const;
  /// rankComputeScale[rank], or 1.
  double computeScale(int rank) const;
  double boundary(int stage) const;
  double stash(int stage) const;
  double gradient(int stage) const;
  /// Time of one transfer of `bytes` over a link (the flat numbers).
  double p2pTime(double bytes) const;
  /// Time of one all-reduce of `bytes` among `ranks` ranks (flat numbers).
  double allReduceTime(double bytes, int ranks) const;
  /// Time of one transfer of `bytes` from pipeline rank `src` to `dst`: over
  /// their link with a deployment, p2pTime(bytes) without.
  double p2pTime(double bytes, int src, int dst) const;
  /// The ranks an all-reduce among pipeline ranks `members` really spans:
  /// with a deployment, every copy's (worldGroup), else `members`.
  std::vector<int> allReduceGroup(const std::vector<int> &members) const;
  /// Whether the sum among pipeline ranks `members` runs in two levels
  /// (gradientSync, with a deployment).
  bool syncsInTwoLevels(const std::vector<int> &members) const;
  /// The algorithm an all-reduce of `bytes` among pipeline ranks `members`
  /// runs: with a deployment, allReduceAlgorithm resolved for the message
  /// and allReduceGroup(members) (Cheapest becomes Ring or Tree), in two
  /// levels that of the shards' all-reduce across copies; the ring
  /// without one.
  AllReduceAlgorithm
  allReduceAlgorithmFor(double bytes, const std::vector<int> &members) const;
  /// Time of one sum of `bytes` among pipeline ranks `members`: that
  /// algorithm over allReduceGroup(members) with a deployment, or the two
  /// levels' steps one after another; allReduceTime(bytes,
  /// members.size()) without one.
  double allReduceTime(double bytes, const std::vector<int> &members) const;
  /// Bytes each rank sends in that sum: the ring's share, or the tree's
  /// 2 * bytes, over allReduceGroup(members); in two levels the ring's
  /// share among the copy's members twice over (reduce-scatter and
  /// all-gather) and the shard's all-reduce across copies.
  double allReduceBytesPerRank(double bytes,
                               const std::vector<int> &members) const;
  /// Of those, the bytes sent in steps whose group spans nodes, which the
  /// model moves at the inter-node link's per-GPU share: all of a flat
  /// all-reduce's across nodes, only the shard's across copies in two
  /// levels when the copy's members share a node; 0 without a deployment.
  double allReduceInterNodeBytesPerRank(double bytes,
                                        const std::vector<int> &members) const;
  /// Bytes each rank sends in a ring all-reduce among `ranks`.
  static double allReduceBytesPerRank(double bytes, int ranks);
};

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_COSTMODEL_H
