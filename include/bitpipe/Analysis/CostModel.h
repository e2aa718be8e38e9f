//===- CostModel.h - FLOPs and bytes of model IR ----------------*- C++ -*-===//
//
// Per op: forward and backward FLOPs (from nn::CostOpInterface), parameter
// bytes (its weight operands) and activation bytes (the forward values its
// backward reads, weights excluded: nn::BackwardOpInterface). Per layer
// (`nn.layer`) and per model: the same, each value counted once, so a tied
// embedding is one parameter and an activation read by two backward rules is
// kept once. The FLOPs come split by kernel shape too (sched::ComputeWork),
// which the planner times at a cluster's measured rates. The partitioner
// balances these numbers; the simulator times them.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_ANALYSIS_COSTMODEL_H
#define BITPIPE_ANALYSIS_COSTMODEL_H

#include "bitpipe/Schedule/ComputeWork.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>

namespace bitpipe {

struct Cost {
  int64_t forwardFlops = 0;
  int64_t backwardFlops = 0;
  int64_t parameterBytes = 0;
  int64_t activationBytes = 0;
  /// Of activationBytes, the statistics the ops keep for their backward
  /// (nn::BackwardOpInterface::getStatisticBytes), and the forward FLOPs of
  /// those ops: what selective recomputation saves and pays
  /// (sched::recomputedStage).
  int64_t statisticBytes = 0;
  int64_t statisticFlops = 0;
  /// The FLOPs above by the rate they run at: linear products and attention
  /// by shape, the rest apart (sched::ComputeWork).
  sched::ComputeWork work;
};

/// The cost of one layer: the ops that carry one `nn.layer` value.
struct LayerCost {
  int64_t layer = 0;
  /// "embedding", "transformer" or "head", from the ops the layer holds.
  llvm::StringRef kind;
  int64_t numOps = 0;
  int64_t parameterCount = 0;
  Cost cost;
};

struct ModelCost {
  llvm::SmallVector<LayerCost> layers; ///< Ascending `nn.layer`.
  Cost total;
  int64_t parameterCount = 0;          ///< Distinct parameter elements.
};

/// The cost of one nn op (all zero for an op without the interfaces).
Cost costOfOp(mlir::Operation *op);

/// The costs of `fn`'s layers and of the whole model. Fails, with a
/// diagnostic naming the op, when an nn op has a dynamic shape or an op
/// lacks `nn.layer`.
mlir::FailureOr<ModelCost> analyzeModelCost(mlir::func::FuncOp fn);

} // namespace bitpipe

#endif // BITPIPE_ANALYSIS_COSTMODEL_H
