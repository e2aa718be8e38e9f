//===- ProfileFromIR.h - A model's profile, from its IR ---------*- C++ -*-===//
//
// Fills a ModelProfile from model IR: the per-unit FLOPs, parameters and
// saved activations of the cost analysis (analyzeModelCost, what
// bitpipe-annotate-cost writes and bitpipe-partition balances), and the
// values that cross between units. A ModelSource is the model the planner
// was given: a configuration (JSON), from which the import library builds
// the IR at each micro-batch size asked for, or model IR, whose
// micro-batch size its types fix. docs/planning.md.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_PLAN_PROFILEFROMIR_H
#define BITPIPE_PLAN_PROFILEFROMIR_H

#include "bitpipe/Import/ModelConfig.h"
#include "bitpipe/Plan/ModelProfile.h"
#include "bitpipe/Schedule/Partition.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/Error.h"

#include <map>
#include <memory>
#include <optional>
#include <string>

namespace bitpipe::plan {

/// The profile of the model function `fn` (a func.func with `nn.model`, as
/// bitpipe-import writes it). Fails, with a diagnostic, where the cost
/// analysis does.
mlir::FailureOr<ModelProfile> profileModelFunction(mlir::func::FuncOp fn);

/// A model as given to the planner.
class ModelSource {
public:
  /// Reads `path`: a configuration when it ends in ".json", model IR
  /// otherwise. Errors name the file and what is wrong with it.
  static llvm::Expected<std::unique_ptr<ModelSource>>
  open(const std::string &path);

  const std::string &path() const { return path_; }
  bool isConfig() const { return config_.has_value(); }
  const std::string &name() const { return name_; }
  int64_t seqLen() const { return seqLen_; }
  /// The configuration's or the IR's micro-batch size.
  int64_t defaultMicrobatchSize() const { return microbatchSize_; }
  /// Model IR has its micro-batch size in its types: no other can be had.
  bool fixesMicrobatchSize() const { return !isConfig(); }

  /// Whether the model can be cut from other units than its own: a
  /// configuration can (the importer numbers the units), model IR cannot.
  bool choosesUnits() const { return isConfig(); }

  /// The profile at `microbatchSize` sequences per micro-batch, in
  /// `units` (built once per size and units, then kept).
  sched::Result<ModelProfile>
  profile(int64_t microbatchSize,
          sched::PartitionUnits units = sched::PartitionUnits::Layers);

private:
  ModelSource() = default;

  std::string path_, name_;
  int64_t seqLen_ = 0, microbatchSize_ = 0;
  std::optional<ModelConfig> config_;
  std::map<std::pair<int64_t, sched::PartitionUnits>,
           sched::Result<ModelProfile>>
      profiles_;
};

} // namespace bitpipe::plan

#endif // BITPIPE_PLAN_PROFILEFROMIR_H
