//===- CostsFromIR.cpp - The simulator's costs of a module's stages -------===//

#include "bitpipe/Dialect/BitPipe/Programs/CostsFromIR.h"

#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Support/TensorBytes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;

namespace {

/// Sums of the `nn.cost` fields over a stage function's ops.
struct StageCost {
  double forwardFlops = 0, backwardFlops = 0, activationBytes = 0;
  bool annotated = false; ///< At least one op carries nn.cost.
};

StageCost sumCosts(func::FuncOp fn) {
  StageCost c;
  fn.walk([&](Operation *op) {
    auto cost =
        op->getAttrOfType<bitpipe::nn::CostAttr>(bitpipe::nn::attr::kCost);
    if (!cost)
      return;
    c.annotated = true;
    c.forwardFlops += static_cast<double>(cost.getFwdFlops());
    c.backwardFlops += static_cast<double>(cost.getBwdFlops());
    c.activationBytes += static_cast<double>(cost.getActBytes());
  });
  return c;
}

} // namespace

FailureOr<bitpipe::sched::CostModel>
bitpipe::costModelFromIR(ModuleOp module, const sched::Schedule &schedule,
                         sched::CostModel cost, StageTimes times,
                         double flopsPerUnit) {
  FailureOr<SmallVector<func::FuncOp>> stages = collectStageFunctions(module);
  if (failed(stages))
    return failure();
  const int numStages = schedule.placement.numStages;
  // Hand-written programs may come without stage functions: then there is
  // nothing to size, and only unit costs make sense.
  if (stages->empty()) {
    if (times == StageTimes::Flops)
      return module.emitError() << "FLOP times need the stage functions "
                                   "(func.func with bitpipe.stage)";
    return cost;
  }
  if (static_cast<int>(stages->size()) != numStages)
    return module.emitError() << "has " << stages->size()
                              << " stage functions, but the placement has "
                              << numStages << " stages";

  SmallVector<StageCost> stageCosts;
  for (func::FuncOp fn : *stages) {
    stageCosts.push_back(sumCosts(fn));
    double boundary = 0;
    for (Type result : fn.getResultTypes())
      boundary += estimatedTensorBytes(result);
    cost.boundaryBytes.push_back(boundary);
    cost.stashBytes.push_back(stageCosts.back().activationBytes);
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
    if (!c.annotated || c.forwardFlops <= 0)
      return (*stages)[s].emitError()
             << "has no nn.cost forward FLOPs; FLOP times need "
                "bitpipe-annotate-cost";
    cheapest = s == 0 ? c.forwardFlops : std::min(cheapest, c.forwardFlops);
  }
  double unit = flopsPerUnit > 0 ? flopsPerUnit : cheapest;
  for (const StageCost &c : stageCosts) {
    cost.forward.push_back(c.forwardFlops / unit);
    double backward = c.backwardFlops / unit;
    // nn.cost does not split the backward; halves are the zero-bubble
    // papers' assumption (B = W).
    cost.backward.push_back(schedule.splitBackward ? backward / 2 : backward);
    cost.weightGrad.push_back(schedule.splitBackward ? backward / 2 : 0);
  }
  return cost;
}
