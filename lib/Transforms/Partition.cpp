//===- Partition.cpp - The bitpipe-partition pass -------------------------===//
//
// Cuts the model function into contiguous chunks of layers and outlines each
// chunk as a stage function; the model function becomes the chain of calls
// of its stages. Where to cut is decided by the schedule library
// (sched::balancePartition, or sched::partitionAt for user-given cuts) on the
// per-layer forward + backward FLOPs of the cost model. This file only
// gathers those costs and rewrites the IR.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Analysis/CostModel.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Schedule/Partition.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatAdapters.h"
#include "llvm/Support/raw_ostream.h"

namespace bitpipe {
#define GEN_PASS_DEF_PARTITION
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

/// The model function: the one with `nn.model`, or else the only function
/// that holds nn ops. Emits an error and fails when there is none or the
/// choice is ambiguous.
FailureOr<func::FuncOp> findModelFunction(ModuleOp module) {
  SmallVector<func::FuncOp> withModelAttr, withNNOps;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (fn->hasAttr(nn::attr::kModel))
      withModelAttr.push_back(fn);
    bool hasNN = fn.walk([](Operation *op) {
                       return isa<nn::NNDialect>(op->getDialect())
                                  ? WalkResult::interrupt()
                                  : WalkResult::advance();
                     })
                     .wasInterrupted();
    if (hasNN)
      withNNOps.push_back(fn);
  }
  auto ambiguous = [&](MutableArrayRef<func::FuncOp> fns, const Twine &why) {
    return fns[1].emitError()
           << "bitpipe-partition expects one model function, but @"
           << fns[0].getSymName() << " and @" << fns[1].getSymName() << " "
           << why;
  };
  const std::string model = ("'" + nn::attr::kModel + "'").str();
  if (withModelAttr.size() == 1)
    return withModelAttr.front();
  if (withModelAttr.size() > 1)
    return ambiguous(withModelAttr, "both have " + model);
  if (withNNOps.size() == 1)
    return withNNOps.front();
  if (withNNOps.size() > 1)
    return ambiguous(withNNOps, "both hold nn ops and neither has " + model);
  return module.emitError()
         << "bitpipe-partition found no model function: expected a "
            "func.func with "
         << model << ", or a single func.func holding nn ops";
}

/// Where each value of the model body comes from and goes to, per chunk.
struct ChunkInfo {
  /// The body's ops of this chunk, in program order.
  SmallVector<Operation *> ops;
  /// Unlayered constants the chunk uses: cloned into it rather than passed.
  llvm::SetVector<Operation *> constants;
  /// Values defined by earlier chunks, in program order of their definition.
  llvm::SetVector<Value> inputs;
  /// Model arguments used, by argument number.
  llvm::SmallVector<unsigned> arguments;
  /// Values later chunks or the model's return use, in program order.
  llvm::SetVector<Value> outputs;
};

/// An op of the model body whose only role is to provide a constant: it has
/// no layer of its own, so each chunk that needs it gets a copy.
bool isUnlayeredConstant(Operation *op) {
  return !op->hasAttr(nn::attr::kLayer) && op->getNumOperands() == 0 &&
         op->hasTrait<OpTrait::ConstantLike>();
}

struct PartitionPass : public bitpipe::impl::PartitionBase<PartitionPass> {
  using PartitionBase::PartitionBase;

  void runOnOperation() override;

private:
  /// The layer costs and the cut, or failure with a diagnostic.
  FailureOr<sched::Partition> choosePartition(func::FuncOp fn,
                                              const ModelCost &cost);
  /// Assigns every body op to its chunk and finds what crosses each
  /// boundary. Fails on values flowing backwards or unlayered ops.
  LogicalResult analyzeFlow(func::FuncOp fn, const sched::Partition &cut,
                            SmallVectorImpl<ChunkInfo> &chunks);
  void outline(func::FuncOp fn, const sched::Partition &cut,
               MutableArrayRef<ChunkInfo> chunks);
  void printTable(func::FuncOp fn, const sched::Partition &cut,
                  ArrayRef<int64_t> flops);
};

FailureOr<sched::Partition>
PartitionPass::choosePartition(func::FuncOp fn, const ModelCost &cost) {
  bool byChunks = chunks != 0, byBoundaries = !boundaries.empty();
  if (byChunks == byBoundaries)
    return fn.emitError()
           << "bitpipe-partition expects exactly one of 'chunks' (a positive "
              "number of chunks) and 'boundaries' (the layers that start "
              "chunks), got "
           << (byChunks ? "both" : "neither");

  // Costs are forward + backward FLOPs: a pipeline stage runs both for every
  // micro-batch, and the slowest stage paces all of them.
  std::vector<double> layerCosts;
  for (const LayerCost &layer : cost.layers)
    layerCosts.push_back(
        static_cast<double>(layer.cost.forwardFlops + layer.cost.backwardFlops));

  sched::Result<sched::Partition> cut =
      byChunks ? sched::balancePartition(layerCosts, chunks)
               : sched::partitionAt(
                     layerCosts, std::vector<int64_t>(boundaries.begin(),
                                                      boundaries.end()));
  if (!cut)
    return fn.emitError() << "bitpipe-partition option '"
                          << (byChunks ? "chunks" : "boundaries")
                          << "' on @" << fn.getSymName() << ": "
                          << cut.error;
  return std::move(*cut);
}

LogicalResult PartitionPass::analyzeFlow(func::FuncOp fn,
                                         const sched::Partition &cut,
                                         SmallVectorImpl<ChunkInfo> &chunks) {
  Block &body = fn.getBody().front();
  chunks.resize(cut.numChunks());
  // The chunk of each op that has a layer; program position of every op, to
  // order the values that cross boundaries deterministically.
  DenseMap<Operation *, int64_t> chunkOf, position;
  for (Operation &op : body.without_terminator()) {
    int64_t next = position.size();
    position[&op] = next;
    if (isUnlayeredConstant(&op))
      continue;
    auto layer = op.getAttrOfType<IntegerAttr>(nn::attr::kLayer);
    if (!layer)
      return op.emitOpError()
             << "has no '" << nn::attr::kLayer
             << "' attribute: bitpipe-partition puts every op of the model "
                "in the chunk of its layer";
    int64_t k = cut.chunkOf(layer.getInt());
    chunkOf[&op] = k;
    chunks[k].ops.push_back(&op);
  }

  auto layerOf = [](Operation *op) {
    return op->getAttrOfType<IntegerAttr>(nn::attr::kLayer).getInt();
  };
  for (auto [k, chunk] : llvm::enumerate(chunks)) {
    llvm::SmallSetVector<unsigned, 8> arguments;
    for (Operation *op : chunk.ops) {
      // Operands, and values the op's regions (if any) capture from above.
      llvm::SetVector<Value> used(op->operand_begin(), op->operand_end());
      getUsedValuesDefinedAbove(op->getRegions(), used);
      for (Value v : used) {
        if (auto arg = dyn_cast<BlockArgument>(v)) {
          arguments.insert(arg.getArgNumber());
          continue;
        }
        Operation *def = v.getDefiningOp();
        if (isUnlayeredConstant(def)) {
          chunk.constants.insert(def);
          continue;
        }
        int64_t from = chunkOf.lookup(def);
        if (from == static_cast<int64_t>(k))
          continue;
        // Model IR computes layer by layer, so data only flows forward; a
        // value flowing back would make the stages call each other.
        if (from > static_cast<int64_t>(k))
          return op->emitOpError()
                 << "in layer " << layerOf(op) << " (chunk " << k
                 << ") uses a value of layer " << layerOf(def) << " (chunk "
                 << from
                 << "): values may only flow from a chunk to later ones";
        chunk.inputs.insert(v);
        chunks[from].outputs.insert(v);
      }
    }
    chunk.arguments.assign(arguments.begin(), arguments.end());
    llvm::sort(chunk.arguments);
  }
  // What the model returns leaves the chunk that computes it.
  for (Value v : body.getTerminator()->getOperands())
    if (Operation *def = v.getDefiningOp(); def && chunkOf.count(def))
      chunks[chunkOf.lookup(def)].outputs.insert(v);

  // Program order, so that the signatures read like the model.
  auto before = [&](Value a, Value b) {
    auto key = [&](Value v) {
      return std::make_pair(position.lookup(v.getDefiningOp()),
                            cast<OpResult>(v).getResultNumber());
    };
    return key(a) < key(b);
  };
  for (ChunkInfo &chunk : chunks) {
    SmallVector<Value> inputs = chunk.inputs.takeVector();
    SmallVector<Value> outputs = chunk.outputs.takeVector();
    llvm::sort(inputs, before);
    llvm::sort(outputs, before);
    chunk.inputs.insert(inputs.begin(), inputs.end());
    chunk.outputs.insert(outputs.begin(), outputs.end());
  }
  return success();
}

void PartitionPass::outline(func::FuncOp fn, const sched::Partition &cut,
                            MutableArrayRef<ChunkInfo> chunks) {
  MLIRContext *ctx = &getContext();
  Block &body = fn.getBody().front();
  Operation *terminator = body.getTerminator();
  OpBuilder moduleBuilder(fn); // stages go before the model, in order
  OpBuilder callBuilder(terminator);
  // Each original value that leaves a chunk -> the call result carrying it.
  DenseMap<Value, Value> outside;
  // The body's ops before the calls go in.
  SmallVector<Operation *> originals = llvm::map_to_vector(
      body.without_terminator(), [](Operation &op) { return &op; });

  for (auto [k, chunk] : llvm::enumerate(chunks)) {
    SmallVector<Type> argTypes, resultTypes;
    for (Value v : chunk.inputs)
      argTypes.push_back(v.getType());
    for (unsigned arg : chunk.arguments)
      argTypes.push_back(fn.getArgument(arg).getType());
    for (Value v : chunk.outputs)
      resultTypes.push_back(v.getType());

    std::string name = (fn.getSymName() + "_stage" + Twine(k)).str();
    auto stage = moduleBuilder.create<func::FuncOp>(
        fn.getLoc(), name, FunctionType::get(ctx, argTypes, resultTypes));
    stage->setAttr(attr::kStage, moduleBuilder.getI64IntegerAttr(k));
    stage->setAttr(attr::kLayers, moduleBuilder.getDenseI64ArrayAttr(
                                      {cut.firstLayer(k), cut.lastLayer(k)}));
    // A parameter used by two chunks becomes an argument of both: the tied
    // token embedding is read by the embedding (first stage) and by the
    // output projection (last stage). Each stage then produces its own
    // gradient for it; a later pass sums the two.
    unsigned numInputs = chunk.inputs.size();
    for (auto [i, arg] : llvm::enumerate(chunk.arguments))
      if (DictionaryAttr attrs = fn.getArgAttrDict(arg))
        stage.setArgAttrs(numInputs + i, attrs);

    Block *entry = stage.addEntryBlock();
    IRMapping map;
    for (auto [v, arg] : llvm::zip(chunk.inputs, entry->getArguments()))
      map.map(v, arg);
    for (auto [i, arg] : llvm::enumerate(chunk.arguments))
      map.map(fn.getArgument(arg), entry->getArgument(numInputs + i));
    OpBuilder b = OpBuilder::atBlockEnd(entry);
    for (Operation *constant : chunk.constants)
      b.clone(*constant, map);
    for (Operation *op : chunk.ops)
      b.clone(*op, map);
    SmallVector<Value> results;
    for (Value v : chunk.outputs)
      results.push_back(map.lookup(v));
    b.create<func::ReturnOp>(fn.getLoc(), results);

    // The call, in the model body, fed by earlier calls and the arguments.
    SmallVector<Value> operands;
    for (Value v : chunk.inputs)
      operands.push_back(outside.lookup(v));
    for (unsigned arg : chunk.arguments)
      operands.push_back(fn.getArgument(arg));
    auto call = callBuilder.create<func::CallOp>(fn.getLoc(), stage, operands);
    for (auto [v, result] : llvm::zip(chunk.outputs, call.getResults()))
      outside[v] = result;
  }

  // Only the return and the original ops, about to go, use the originals.
  for (auto [original, result] : outside)
    original.replaceAllUsesWith(result);
  // Reverse program order, so that every op goes after its users. A constant
  // that the return itself uses stays in the model.
  for (Operation *op : llvm::reverse(originals))
    if (!isUnlayeredConstant(op) || op->use_empty())
      op->erase();
}

void PartitionPass::printTable(func::FuncOp fn, const sched::Partition &cut,
                               ArrayRef<int64_t> flops) {
  llvm::raw_ostream &os = llvm::outs();
  os << "partition of @" << fn.getSymName() << " into " << cut.numChunks()
     << " chunks (forward + backward FLOPs per micro-batch)\n";
  os << "chunk  layers            flops  of max\n";
  int64_t max = *llvm::max_element(flops);
  for (auto [k, f] : llvm::enumerate(flops)) {
    std::string layers = std::to_string(cut.firstLayer(k));
    if (cut.lastLayer(k) != cut.firstLayer(k))
      layers += "-" + std::to_string(cut.lastLayer(k));
    os << llvm::left_justify(std::to_string(k), 6) << " "
       << llvm::left_justify(layers, 9) << " "
       << llvm::right_justify(std::to_string(f), 14)
       << llvm::format("  %6.3f\n", max ? double(f) / double(max) : 1.0);
  }
  os << llvm::format("max %lld, balance (max / mean) %.3f\n", (long long)max,
                     cut.imbalance());
}

void PartitionPass::runOnOperation() {
  ModuleOp module = getOperation();
  FailureOr<func::FuncOp> found = findModelFunction(module);
  if (failed(found))
    return signalPassFailure();
  func::FuncOp fn = *found;
  if (fn.isExternal() || !fn.getBody().hasOneBlock()) {
    fn.emitError() << "bitpipe-partition expects the model function @"
                   << fn.getSymName() << " to have a body of one block";
    return signalPassFailure();
  }

  FailureOr<ModelCost> cost = analyzeModelCost(fn);
  if (failed(cost))
    return signalPassFailure();
  if (cost->layers.empty()) {
    fn.emitError() << "bitpipe-partition found no nn ops with '"
                   << nn::attr::kLayer << "' in @" << fn.getSymName()
                   << ": nothing to partition";
    return signalPassFailure();
  }
  // Boundaries name layers, and the library numbers them by position: the
  // two agree when the layers are 0..L-1, as bitpipe-import writes them. A
  // gap is more likely a mistake than an empty layer.
  for (auto [position, layer] : llvm::enumerate(cost->layers))
    if (layer.layer != static_cast<int64_t>(position)) {
      fn.emitError() << "bitpipe-partition expects the '" << nn::attr::kLayer
                     << "' values of @" << fn.getSymName() << " to be 0.."
                     << cost->layers.back().layer
                     << " without gaps, but no op has layer " << position;
      return signalPassFailure();
    }

  FailureOr<sched::Partition> cut = choosePartition(fn, *cost);
  if (failed(cut))
    return signalPassFailure();

  // Refuse to shadow symbols, e.g. when the pass runs twice.
  for (int64_t k = 0; k < cut->numChunks(); ++k) {
    std::string name = (fn.getSymName() + "_stage" + Twine(k)).str();
    if (SymbolTable::lookupSymbolIn(module, name)) {
      fn.emitError() << "bitpipe-partition cannot outline chunk " << k
                     << " as @" << name
                     << ": the module already has that symbol (was it "
                        "partitioned already?)";
      return signalPassFailure();
    }
  }

  SmallVector<ChunkInfo> chunkInfo;
  if (failed(analyzeFlow(fn, *cut, chunkInfo)))
    return signalPassFailure();

  // Exact integer FLOPs per chunk for the record (the library sums doubles).
  SmallVector<int64_t> flops(cut->numChunks(), 0);
  for (const LayerCost &layer : cost->layers)
    flops[cut->chunkOf(layer.layer)] +=
        layer.cost.forwardFlops + layer.cost.backwardFlops;

  outline(fn, *cut, chunkInfo);

  module->setAttr(attr::kPartition,
                  bp::PartitionAttr::get(&getContext(), cut->numChunks(),
                                         cut->starts, flops,
                                         llvm::APFloat(cut->imbalance())));
  if (print)
    printTable(fn, *cut, flops);
}

} // namespace
