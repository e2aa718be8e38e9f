//===- CostModel.h - Times and sizes the simulator charges ------*- C++ -*-===//
//
// Time is in abstract units ("slots"); exporters scale it. The defaults are
// the unit costs the papers count in (F=1, B=2, W=1) with free communication,
// so that a default-constructed CostModel reproduces the slot counts quoted in
// docs/bitpipe-order.md. For a split-backward schedule, B is the input-gradient half only:
// set backward accordingly (zero-bubble papers use F=B=W=1).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_COSTMODEL_H
#define BITPIPE_SCHEDULE_COSTMODEL_H

#include <vector>

namespace bitpipe::sched {

struct CostModel {
  /// Per-stage compute times. An empty vector (or a stage past its end)
  /// falls back to the unit cost below.
  std::vector<double> forward, backward, weightGrad;
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

  double forwardTime(int stage) const;
  double backwardTime(int stage) const;
  double weightGradTime(int stage) const;
  double boundary(int stage) const;
  double stash(int stage) const;
  double gradient(int stage) const;
  /// Time of one transfer of `bytes` over a link.
  double p2pTime(double bytes) const;
  /// Time of one all-reduce of `bytes` among `ranks` ranks.
  double allReduceTime(double bytes, int ranks) const;
  /// Bytes each rank sends in that ring all-reduce.
  static double allReduceBytesPerRank(double bytes, int ranks);
};

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_COSTMODEL_H
