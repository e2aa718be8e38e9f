//===- Cluster.h - The machines a schedule runs on, and their links -*- C++ -*-===//
//
// A cluster description (docs/clusters.md): nodes of identical GPUs, their
// memory and bf16 throughput, and two link classes with an alpha-beta cost:
// intra_node (NVLink on a GPU node, shared memory on a CPU one) and
// inter_node (InfiniBand/RoCE). World ranks fill node n's GPUs
// n*G .. n*G+G-1 in order (docs/launching.md), one rank per GPU, so two
// distinct ranks never share a GPU and a same-GPU transfer is the
// simulator's local copy, which is free.
//
// Times are seconds and sizes bytes.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_CLUSTER_H
#define BITPIPE_SCHEDULE_CLUSTER_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/KernelRates.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitpipe::sched {

/// Alpha-beta cost of a link: a message of b bytes takes
/// latency + b / bandwidth seconds.
struct LinkCost {
  double latency = 0;   ///< Seconds, >= 0.
  double bandwidth = 0; ///< Bytes per second, per direction, > 0.
  double time(double bytes) const { return latency + bytes / bandwidth; }
};

enum class LinkClass { Local, IntraNode, InterNode };

/// The sizes a cluster file may give (docs/clusters.md): what the parser
/// accepts, and what a tool that sizes a cluster on its command line
/// accepts too.
inline constexpr int kMaxNodes = 1000000;
inline constexpr int kMaxGpusPerNode = 1024;

struct Cluster {
  std::string name;
  std::string description;
  /// Where the compute rate (gpu.peak_bf16_flops x achievable_fraction)
  /// and the links' numbers were fitted on real runs of this machine, as
  /// the file's optional "calibration" says; empty: they are assumed
  /// (vendor figures, typical fractions), and so is every time predicted
  /// from them.
  std::string computeCalibration;
  std::string linkCalibration;
  int nodes = 1;
  int gpusPerNode = 1;
  double gpuMemoryBytes = 0;
  /// Dense bf16 peak of one GPU, FLOP/s, and the fraction of it a
  /// transformer's matrix products reach (what the compute model charges).
  double peakBf16Flops = 0;
  double achievableFraction = 1;
  /// One GPU to another of its node, per direction.
  LinkCost intraNode;
  /// inter_node's latency, and the bandwidth of a node's network, summed
  /// over its NICs, per direction (docs/clusters.md).
  double interNodeLatency = 0;
  double interNodeBandwidthPerNode = 0;

  int size() const { return nodes * gpusPerNode; }
  int nodeOf(int worldRank) const { return worldRank / gpusPerNode; }
  /// The link between two world ranks' GPUs.
  LinkClass linkBetween(int a, int b) const;
  /// The cost of one transfer between GPUs on different nodes: the node's
  /// network shared by its GPUs, since in a pipeline's steady state and in
  /// a data-parallel all-reduce every GPU of a node talks across at once.
  LinkCost interNode() const;
  /// The cost model of `link`; Local costs nothing.
  LinkCost cost(LinkClass link) const;
  /// Sustained bf16 FLOP/s of one GPU: peak * achievable fraction.
  double achievableFlops() const { return peakBf16Flops * achievableFraction; }

  /// Rates measured by kernel shape (the file's optional kernel_rates);
  /// without them every FLOP runs at achievableFlops().
  std::optional<KernelRates> kernelRates;

  /// The seconds one GPU takes for \p work: at kernelRates where the file
  /// has them (its backward's halves at KernelRates::splitFraction of that
  /// when \p splitBackward: a schedule runs them as separate steps), else
  /// at achievableFlops().
  ComputeTimes computeTimes(const ComputeWork &work, bool splitBackward) const;
};

/// "local", "intra_node", "inter_node".
const char *linkClassName(LinkClass link);

/// Parses a cluster description. `fileName` only names the file in errors,
/// which read "FILE: FIELD: expected WHAT, got VALUE".
Result<Cluster> parseCluster(std::string_view text,
                             const std::string &fileName);
/// Reads and parses the file at `path`.
Result<Cluster> readCluster(const std::string &path);

/// Time of one point-to-point transfer of `bytes` between world ranks.
double transferTime(const Cluster &cluster, double bytes, int srcWorld,
                    int dstWorld);

/// The slowest link a group of world ranks spans: IntraNode when they share
/// a node, InterNode otherwise (Local for a single rank).
LinkClass groupSpan(const Cluster &cluster, const std::vector<int> &worldRanks);

/// Ring all-reduce of `bytes` over `worldRanks` (n of them): 2(n-1) steps,
/// each sending bytes/n over the slowest link of the ring,
/// 2(n-1) * (alpha + bytes / (n * beta)). A group of one costs nothing.
/// NCCL's tree algorithm is not modelled (docs/clusters.md).
double ringAllReduceTime(const Cluster &cluster, double bytes,
                         const std::vector<int> &worldRanks);

/// Where the pipeline copy the simulator runs sits in the world: the
/// simulator's rank p is world rank world.rank(copy, p)
/// (docs/data-parallel.md), and its all-reduce groups span every copy.
struct Deployment {
  Cluster cluster;
  World world;
  int copy = 0;

  int worldRank(int pipelineRank) const {
    return world.rank(copy, pipelineRank);
  }
  /// Empty when a schedule of `pipelineRanks` ranks can run so; otherwise
  /// what does not fit.
  std::string check(int pipelineRanks) const;
};

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_CLUSTER_H
