//===- CostsFromIR.cpp - The simulator's costs of a module's stages -------===//

#include "bitpipe/Dialect/BitPipe/Programs/CostsFromIR.h"

#include "bitpipe/Analysis/CostModel.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Schedule/Recompute.h"
#include "bitpipe/Support/TensorBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;

namespace {

/// Sums of the `nn.cost` fields over a stage function's ops, with what the
/// ops' statistics weigh and cost (the forward FLOPs of the ops that have
/// them), and what the stage receives.
struct StageCost {
  bitpipe::sched::StageKeeping keeping;
  /// The annotated ops' FLOPs by kernel (the cost analysis's split), for
  /// a split backward's B and W.
  bitpipe::sched::ComputeWork work;
  bool annotated = false; ///< At least one op carries nn.cost.
};

StageCost sumCosts(func::FuncOp fn) {
  StageCost c;
  bitpipe::sched::StageKeeping &k = c.keeping;
  fn.walk([&](Operation *op) {
    auto cost =
        op->getAttrOfType<bitpipe::nn::CostAttr>(bitpipe::nn::attr::kCost);
    if (!cost)
      return;
    c.annotated = true;
    k.forwardFlops += static_cast<double>(cost.getFwdFlops());
    k.backwardFlops += static_cast<double>(cost.getBwdFlops());
    k.keptBytes += static_cast<double>(cost.getActBytes());
    // Of the saved bytes, the statistics, whichever form the op has, as
    // the cost analysis counts them.
    bitpipe::Cost analysed = bitpipe::costOfOp(op);
    k.statisticBytes += static_cast<double>(analysed.statisticBytes);
    k.statisticFlops += static_cast<double>(analysed.statisticFlops);
    c.work.add(analysed.work);
  });
  for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
    if (!fn.getArgAttr(i, bitpipe::nn::attr::kParam))
      k.inputBytes += bitpipe::estimatedTensorBytes(fn.getArgumentTypes()[i]);
  return c;
}

} // namespace

FailureOr<bitpipe::sched::CostModel>
bitpipe::costModelFromIR(ModuleOp module, const sched::Schedule &schedule,
                         sched::CostModel cost, StageTimes times,
                         double flopsPerUnit, const sched::Cluster *cluster) {
  assert((times != StageTimes::Cluster || cluster) &&
         "cluster times need a cluster");
  FailureOr<SmallVector<func::FuncOp>> stages = collectStageFunctions(module);
  if (failed(stages))
    return failure();
  const int numStages = schedule.placement.numStages;
  // Hand-written programs may come without stage functions: then there is
  // nothing to size, and only unit costs make sense.
  if (stages->empty()) {
    if (times != StageTimes::Unit)
      return module.emitError() << "FLOP times need the stage functions "
                                   "(func.func with bitpipe.stage)";
    return cost;
  }
  if (static_cast<int>(stages->size()) != numStages)
    return module.emitError() << "has " << stages->size()
                              << " stage functions, but the placement has "
                              << numStages << " stages";

  // What the backwards compute again (bitpipe-generate-backward's record;
  // none when absent), counted by the planner's rule.
  sched::Recompute recompute = sched::Recompute::None;
  if (auto recorded = module->getAttrOfType<bp::RecomputeAttr>(
          bp::BitPipeDialect::kRecomputeAttrName))
    recompute = recorded.getValue();
  SmallVector<StageCost> stageCosts;
  SmallVector<sched::RecomputedStage> recomputed;
  for (func::FuncOp fn : *stages) {
    stageCosts.push_back(sumCosts(fn));
    recomputed.push_back(
        sched::recomputedStage(recompute, stageCosts.back().keeping));
    // What the stage hands on: not the values it keeps for its backward,
    // which bitpipe-generate-backward returns too (`bitpipe.saved`).
    double boundary = 0;
    for (auto [i, result] : llvm::enumerate(fn.getResultTypes()))
      if (!fn.getResultAttr(i, attr::kSaved))
        boundary += estimatedTensorBytes(result);
    cost.boundaryBytes.push_back(boundary);
    cost.stashBytes.push_back(recomputed.back().keptBytes);
    double gradient = 0;
    for (unsigned i = 0, e = fn.getNumArguments(); i < e; ++i)
      if (fn.getArgAttr(i, nn::attr::kParam))
        gradient += estimatedTensorBytes(fn.getArgumentTypes()[i]);
    cost.gradientBytes.push_back(gradient);
  }
  if (times == StageTimes::Unit)
    return cost;

  // Without a rate, units of the cheapest stage's forward, so that the
  // numbers read like the papers' slots and a balanced partition gives the
  // unit-cost result.
  double cheapest = 0;
  for (auto [s, c] : llvm::enumerate(stageCosts)) {
    double forward = c.keeping.forwardFlops;
    if (!c.annotated || forward <= 0)
      return (*stages)[s].emitError()
             << "has no nn.cost forward FLOPs; FLOP times need "
                "bitpipe-annotate-cost";
    cheapest = s == 0 ? forward : std::min(cheapest, forward);
  }
  if (times == StageTimes::Cluster) {
    for (auto [c, again] : llvm::zip_equal(stageCosts, recomputed)) {
      const sched::ComputeTimes t =
          cluster->computeTimes(c.work, schedule.splitBackward);
      // Recomputation is forward work again, at the stage's forward rate,
      // before the input gradients can start (as the planner charges it).
      const double extra = (again.backwardFlops - c.keeping.backwardFlops) *
                           t.forward / c.keeping.forwardFlops;
      cost.forward.push_back(t.forward);
      cost.backward.push_back(schedule.splitBackward ? t.inputGrad + extra
                                                     : t.backward() + extra);
      cost.weightGrad.push_back(schedule.splitBackward ? t.weightGrad : 0);
    }
    return cost;
  }
  double unit = flopsPerUnit > 0 ? flopsPerUnit : cheapest;
  for (auto [c, again] : llvm::zip_equal(stageCosts, recomputed)) {
    cost.forward.push_back(c.keeping.forwardFlops / unit);
    double backward = again.backwardFlops / unit;
    if (!schedule.splitBackward) {
      cost.backward.push_back(backward);
      cost.weightGrad.push_back(0);
      continue;
    }
    // W is the linears' weight-gradient products (sched::ComputeWork, as
    // the planner splits it); ops whose nn.cost the cost analysis cannot
    // split (none of the nn ops) leave halves, the zero-bubble papers'
    // B = W.
    double weight =
        c.work.empty() ? backward / 2 : c.work.weightGradFlops() / unit;
    cost.backward.push_back(backward - weight);
    cost.weightGrad.push_back(weight);
  }
  return cost;
}
