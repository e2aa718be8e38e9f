//===- CostsFromIR.h - The simulator's costs of the stages ------*- C++ -*-===//
//
// The bridge from model IR to the schedule library's CostModel: what a
// stage's boundary tensors, saved activations and parameter gradients
// weigh (from the stage functions' types and `nn.cost`), and, with FLOP
// times, how long its forward and backward take (from `nn.cost` FLOPs),
// under the recomputation the module records (`bitpipe.recompute`; the
// planner's rule, sched::recomputedStage).
// bitpipe-simulate measures a schedule with it, and the lowering predicts
// each rank's bubble for the manifest with it.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_PROGRAMS_COSTSFROMIR_H
#define BITPIPE_DIALECT_BITPIPE_PROGRAMS_COSTSFROMIR_H

#include "bitpipe/Schedule/CostModel.h"
#include "bitpipe/Schedule/Schedule.h"

#include "bitpipe/Schedule/Cluster.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

namespace bitpipe {

/// How the stages' times are set.
enum class StageTimes {
  /// The unit costs of the base model, whatever a stage's size.
  Unit,
  /// `nn.cost` FLOPs over flopsPerUnit (0: the cheapest stage's forward
  /// FLOPs, so that times read as slots of it); where the schedule splits
  /// the backward, W is what only makes weight gradients (the cost
  /// analysis's sched::ComputeWork) and B the rest.
  Flops,
  /// Seconds: each stage's work timed by a cluster's rates
  /// (sched::Cluster::computeTimes: by kernel shape where the file has
  /// kernel_rates), W and B split as for Flops.
  Cluster,
};

/// \p base (its unit costs, latencies, transport) completed with the
/// stages of \p module: their bytes always, their times as \p times says.
/// A module without stage functions keeps \p base (hand-written programs)
/// unless FLOP or cluster times are asked for; errors name the stage
/// function. \p cluster is needed for StageTimes::Cluster.
mlir::FailureOr<sched::CostModel>
costModelFromIR(mlir::ModuleOp module, const sched::Schedule &schedule,
                sched::CostModel base, StageTimes times,
                double flopsPerUnit = 0,
                const sched::Cluster *cluster = nullptr);

} // namespace bitpipe

#endif // BITPIPE_DIALECT_BITPIPE_PROGRAMS_COSTSFROMIR_H
