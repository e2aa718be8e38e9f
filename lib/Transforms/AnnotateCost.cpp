//===- AnnotateCost.cpp - The bitpipe-annotate-cost pass ------------------===//

#include "bitpipe/Analysis/CostModel.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatAdapters.h"
#include "llvm/Support/raw_ostream.h"

namespace bitpipe {
#define GEN_PASS_DEF_ANNOTATECOST
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

nn::CostAttr costAttr(MLIRContext *context, const Cost &cost) {
  return nn::CostAttr::get(context, cost.forwardFlops, cost.backwardFlops,
                           cost.parameterBytes, cost.activationBytes);
}

/// One table row: label and kind left-aligned, numbers right-aligned.
void printRow(llvm::raw_ostream &os, llvm::StringRef label,
              llvm::StringRef kind, llvm::ArrayRef<std::string> numbers) {
  static constexpr unsigned widths[] = {5, 16, 16, 14, 14, 14};
  os << llvm::left_justify(label, 7) << " " << llvm::left_justify(kind, 12);
  for (auto [number, width] : llvm::zip(numbers, widths))
    os << " " << llvm::right_justify(number, width);
  os << "\n";
}

void printRow(llvm::raw_ostream &os, llvm::StringRef label,
              llvm::StringRef kind, int64_t ops, int64_t params,
              const Cost &c) {
  printRow(os, label, kind,
           {std::to_string(ops), std::to_string(c.forwardFlops),
            std::to_string(c.backwardFlops), std::to_string(params),
            std::to_string(c.parameterBytes),
            std::to_string(c.activationBytes)});
}

void printSummary(llvm::raw_ostream &os, func::FuncOp fn,
                  const ModelCost &cost) {
  os << "cost of @" << fn.getSymName();
  if (auto model = fn->getAttrOfType<nn::ModelAttr>(nn::attr::kModel))
    os << " (" << model.getFamily() << ", " << model.getLayers()
       << " layers, hidden " << model.getHidden() << ", micro-batch "
       << model.getMicrobatchSize() << " x " << model.getSeqLen() << " tokens)";
  os << ", per micro-batch\n";
  printRow(os, "layer", "kind",
           {"ops", "fwd_flops", "bwd_flops", "params", "param_bytes",
            "act_bytes"});
  int64_t ops = 0;
  for (const LayerCost &layer : cost.layers) {
    printRow(os, std::to_string(layer.layer), layer.kind, layer.numOps,
             layer.parameterCount, layer.cost);
    ops += layer.numOps;
  }
  printRow(os, "total", "", ops, cost.parameterCount, cost.total);
  os << llvm::format("parameters: %lld (%.3f billion)\n",
                     (long long)cost.parameterCount,
                     cost.parameterCount / 1e9);
}

struct AnnotateCostPass
    : public bitpipe::impl::AnnotateCostBase<AnnotateCostPass> {
  using AnnotateCostBase::AnnotateCostBase;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      // Analyse first: it rejects what cannot be costed (dynamic shapes,
      // ops without a layer) before any op is annotated.
      FailureOr<ModelCost> cost = analyzeModelCost(fn);
      if (failed(cost))
        return signalPassFailure();
      if (cost->layers.empty())
        continue;
      fn.walk([&](nn::CostOpInterface op) {
        op->setAttr(nn::attr::kCost, costAttr(&getContext(), costOfOp(op)));
      });
      if (printSummary)
        ::printSummary(llvm::outs(), fn, *cost);
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
