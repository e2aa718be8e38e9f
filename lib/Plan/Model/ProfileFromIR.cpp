//===- ProfileFromIR.cpp - A model's profile, from its IR -----------------===//

#include "bitpipe/Plan/ProfileFromIR.h"

#include "bitpipe/Analysis/CostModel.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/InitAllDialects.h"
#include "bitpipe/Support/TensorBytes.h"
#include "bitpipe/Support/TextGuard.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace bitpipe::plan {

namespace {

/// The model function of `module`: the one func.func with `nn.model`.
FailureOr<func::FuncOp> modelFunction(ModuleOp module, std::string &error) {
  func::FuncOp found;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn->hasAttr(nn::attr::kModel))
      continue;
    if (found) {
      error = "expected one func.func with '" + nn::attr::kModel.str() +
              "', got @" + found.getSymName().str() + " and @" +
              fn.getSymName().str();
      return failure();
    }
    found = fn;
  }
  if (!found) {
    error = "expected a func.func with '" + nn::attr::kModel.str() +
            "' (the model function bitpipe-import writes), got none";
    return failure();
  }
  return found;
}

/// Runs `body`, collecting the diagnostics it emits as text.
template <class F>
auto withDiagnostics(MLIRContext &context, std::string &text, F body) {
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &d) {
    llvm::raw_string_ostream os(text);
    if (!text.empty())
      os << "\n";
    os << d.getLocation() << ": " << d.str();
    return success();
  });
  return body();
}

} // namespace

FailureOr<ModelProfile> profileModelFunction(func::FuncOp fn) {
  FailureOr<ModelCost> cost = analyzeModelCost(fn);
  if (failed(cost))
    return failure();
  ModelProfile profile;
  profile.name = fn.getSymName().str();
  if (auto model = fn->getAttrOfType<nn::ModelAttr>(nn::attr::kModel)) {
    profile.seqLen = model.getSeqLen();
    profile.microbatchSize = model.getMicrobatchSize();
  }
  llvm::DenseMap<int64_t, int> unitOf; // nn.layer -> unit index
  for (const LayerCost &layer : cost->layers) {
    unitOf[layer.layer] = static_cast<int>(profile.layers.size());
    LayerProfile p;
    p.kind = layer.kind.str();
    p.forwardFlops = static_cast<double>(layer.cost.forwardFlops);
    p.backwardFlops = static_cast<double>(layer.cost.backwardFlops);
    p.parameters = static_cast<double>(layer.parameterCount);
    p.activationBytes = static_cast<double>(layer.cost.activationBytes);
    p.statisticBytes = static_cast<double>(layer.cost.statisticBytes);
    p.statisticFlops = static_cast<double>(layer.cost.statisticFlops);
    p.work = layer.cost.work;
    profile.layers.push_back(std::move(p));
  }
  // What crosses between units: the values bitpipe-partition makes a
  // stage's results when a cut falls between their definition and a use.
  auto unitOfOp = [&](Operation *op) -> int {
    auto layer = op->getAttrOfType<IntegerAttr>(nn::attr::kLayer);
    if (!layer)
      return -1;
    auto it = unitOf.find(layer.getInt());
    return it == unitOf.end() ? -1 : it->second;
  };
  for (Operation &op : fn.getBody().getOps()) {
    int def = unitOfOp(&op);
    if (def < 0)
      continue;
    for (Value result : op.getResults()) {
      int last = def;
      for (Operation *user : result.getUsers())
        last = std::max(last, unitOfOp(user));
      if (last > def)
        profile.crossings.push_back(
            {def, last, estimatedTensorBytes(result.getType())});
    }
  }
  return profile;
}

llvm::Expected<std::unique_ptr<ModelSource>>
ModelSource::open(const std::string &path) {
  auto error = [&](const std::string &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s",
                                   message.c_str());
  };
  std::unique_ptr<ModelSource> source(new ModelSource());
  source->path_ = path;
  if (llvm::StringRef(path).ends_with(".json")) {
    llvm::Expected<ModelConfig> config = loadModelConfig(path);
    if (!config)
      return config.takeError();
    source->name_ = config->name;
    source->seqLen_ = config->seqLen;
    source->microbatchSize_ = config->microbatchSize;
    source->config_ = *config;
    return std::move(source);
  }

  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path);
  if (!file)
    return error(path +
                 ": cannot read the model: " + file.getError().message() +
                 " (expected a model configuration, *.json, or model IR)");
  if (std::optional<TextExcess> excess =
          findTextExcess((*file)->getBuffer(), TextSyntax::Mlir))
    return error(path + ": " + excess->what + " at byte " +
                 std::to_string(excess->offset) +
                 ", which MLIR's parser cannot take safely");
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  std::string diagnostics, problem;
  std::optional<ModelProfile> profile;
  withDiagnostics(context, diagnostics, [&] {
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(*file), llvm::SMLoc());
    OwningOpRef<ModuleOp> module =
        parseSourceFile<ModuleOp>(sourceMgr, &context);
    if (!module)
      return;
    FailureOr<func::FuncOp> fn = modelFunction(*module, problem);
    if (failed(fn))
      return;
    FailureOr<ModelProfile> p = profileModelFunction(*fn);
    if (succeeded(p))
      profile = std::move(*p);
  });
  if (!profile)
    return error(path + ": " +
                 (problem.empty()
                      ? "cannot profile the model IR:\n" + diagnostics
                      : problem));
  source->name_ = profile->name;
  source->seqLen_ = profile->seqLen;
  source->microbatchSize_ = profile->microbatchSize;
  source->profiles_.emplace(
      std::make_pair(profile->microbatchSize, sched::PartitionUnits::Layers),
      sched::Result<ModelProfile>::success(*profile));
  return std::move(source);
}

sched::Result<ModelProfile> ModelSource::profile(int64_t microbatchSize,
                                                 sched::PartitionUnits units) {
  auto it = profiles_.find({microbatchSize, units});
  if (it != profiles_.end())
    return it->second;
  using R = sched::Result<ModelProfile>;
  if (!config_ && units != sched::PartitionUnits::Layers)
    return R::failure(path_ +
                      ": model IR fixes its partition units in its "
                      "ops' nn.layer (give the configuration to cut "
                      "it from " +
                      sched::partitionUnitsName(units) + ")");
  if (!config_)
    return R::failure(path_ + ": model IR fixes the micro-batch size at " +
                      std::to_string(microbatchSize_) + ", got a request for " +
                      std::to_string(microbatchSize) +
                      " (give the configuration to search others)");
  // Read again with the size as an override, so that the import library
  // checks it against the model limits as it checks --microbatch-size.
  ModelConfigOverrides overrides;
  overrides.microbatchSize = microbatchSize;
  llvm::Expected<ModelConfig> read = loadModelConfig(path_, overrides);
  if (!read)
    return profiles_
        .emplace(std::make_pair(microbatchSize, units),
                 R::failure(llvm::toString(read.takeError())))
        .first->second;
  ModelConfig config = *read;
  DialectRegistry registry;
  registerAllDialects(registry);
  MLIRContext context(registry);
  std::string diagnostics;
  R result = withDiagnostics(context, diagnostics, [&]() -> R {
    OwningOpRef<ModuleOp> module = buildModel(context, config, units);
    std::string problem;
    FailureOr<func::FuncOp> fn = modelFunction(*module, problem);
    if (failed(fn))
      return R::failure(problem);
    FailureOr<ModelProfile> p = profileModelFunction(*fn);
    if (failed(p))
      return R::failure(diagnostics);
    return R::success(std::move(*p));
  });
  if (!result)
    result.error = path_ + " at micro-batch size " +
                   std::to_string(microbatchSize) + ": " + result.error;
  return profiles_
      .emplace(std::make_pair(microbatchSize, units), std::move(result))
      .first->second;
}

} // namespace bitpipe::plan
