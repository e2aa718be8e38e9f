//===- GenerateBackward.cpp - The bitpipe-generate-backward pass ----------===//
//
// Reverse-mode differentiation of stage functions, one op at a time, through
// nn::BackwardOpInterface. The pass knows no op: each forward op emits its
// own backward ops, and declares which forward values they read
// (getSavedValues). Those values become explicit: returned by the forward,
// taken by the backward. A backward rule that reads a value it did not
// declare is reported, so the declarations cannot drift from the rules.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace bitpipe {
#define GEN_PASS_DEF_GENERATEBACKWARD
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

/// Records the ops a builder creates, so that their operands can be moved
/// from forward values to the backward function's.
struct CreatedOps : public OpBuilder::Listener {
  void notifyOperationInserted(Operation *op, OpBuilder::InsertPoint) override {
    ops.push_back(op);
  }
  SmallVector<Operation *> ops;
};

/// A 0-d float output is the loss: its backward starts from 1.
bool isLoss(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.getRank() == 0 && isa<FloatType>(type.getElementType());
}

/// Differentiates one stage function.
class StageDifferentiator {
public:
  StageDifferentiator(func::FuncOp forward, sched::Recompute recompute)
      : forward(forward), recompute(recompute) {}

  /// Builds `@<name>_bwd` after the forward, and makes the forward return
  /// its saved values. Returns the backward function.
  FailureOr<func::FuncOp> run();

private:
  LogicalResult collectActiveOps();
  void keepStatistics();
  void planRecomputation();
  void addGrad(OpBuilder &b, Value forwardValue, Value grad,
               Attribute layer = {});

  func::FuncOp forward;
  sched::Recompute recompute;
  /// Under Recompute::Full: the forward ops the backward runs again, in
  /// forward order.
  SmallVector<Operation *> recomputed;
  SmallVector<Operation *> activeOps; ///< Forward order.
  llvm::SetVector<Value> savedArgs, savedResults;
  IRMapping toBackward;                ///< Forward -> backward values.
  llvm::MapVector<Value, Value> grads; ///< Forward value -> gradient.
  /// A parameter used more than once in the stage (the tied embedding in a
  /// one-stage model): its further contributions, returned as results of
  /// their own instead of summed here. The runtime adds each into the
  /// parameter's float64 accumulator, as it adds the contributions of two
  /// stages on different ranks, so a one-stage program sums exactly what a
  /// pipelined one sums (docs/training-semantics.md).
  llvm::MapVector<Value, SmallVector<Value>> moreParamGrads;
};

LogicalResult StageDifferentiator::collectActiveOps() {
  Block &body = forward.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  // An op is active when one of its results flows to an output.
  DenseSet<Value> needed(ret.getOperands().begin(), ret.getOperands().end());
  for (Operation &op : llvm::reverse(body.without_terminator())) {
    if (llvm::none_of(op.getResults(),
                      [&](Value r) { return needed.contains(r); }))
      continue;
    auto backward = dyn_cast<nn::BackwardOpInterface>(&op);
    if (!backward)
      return op.emitOpError()
             << "has no backward rule (nn::BackwardOpInterface): cannot "
                "differentiate stage @"
             << forward.getSymName();
    activeOps.push_back(&op);
    needed.insert(op.operand_begin(), op.operand_end());
  }
  std::reverse(activeOps.begin(), activeOps.end());
  // Under Full the recomputed forward produces the statistics too.
  if (recompute != sched::Recompute::Selective)
    keepStatistics();
  for (Operation *op : activeOps)
    for (Value v : cast<nn::BackwardOpInterface>(op).getSavedValues()) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        savedArgs.insert(arg);
      else
        savedResults.insert(v);
    }
  if (recompute == sched::Recompute::Full)
    planRecomputation();
  return success();
}

/// Under Recompute::Full, the saved results are not returned but computed
/// again: the ops that define them and, transitively, their operands'
/// definitions; the forward arguments those read become the backward's.
void StageDifferentiator::planRecomputation() {
  llvm::SmallPtrSet<Operation *, 32> needed;
  SmallVector<Value> work(savedResults.begin(), savedResults.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      savedArgs.insert(arg);
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (needed.insert(def).second)
      llvm::append_range(work, def->getOperands());
  }
  for (Operation &op : forward.getBody().front().without_terminator())
    if (needed.contains(&op))
      recomputed.push_back(&op);
  savedResults.clear();
}

/// Replaces every active op that can return the statistics its backward
/// reads by the form that does (nn::BackwardOpInterface::
/// buildWithStatistics), so that the backward reads them instead of
/// computing them again; they become saved values like any other.
void StageDifferentiator::keepStatistics() {
  OpBuilder b(forward.getContext());
  for (Operation *&op : activeOps) {
    b.setInsertionPoint(op);
    Operation *withStats =
        cast<nn::BackwardOpInterface>(op).buildWithStatistics(b);
    if (!withStats)
      continue;
    for (unsigned i = 0, e = op->getNumResults(); i < e; ++i)
      op->getResult(i).replaceAllUsesWith(withStats->getResult(i));
    op->erase();
    op = withStats;
  }
}

void StageDifferentiator::addGrad(OpBuilder &b, Value forwardValue, Value grad,
                                  Attribute layer) {
  auto [it, inserted] = grads.insert({forwardValue, grad});
  if (inserted)
    return;
  if (auto arg = dyn_cast<BlockArgument>(forwardValue);
      arg && forward.getArgAttr(arg.getArgNumber(), nn::attr::kParam)) {
    moreParamGrads[forwardValue].push_back(grad);
    return;
  }
  // The value fans out: its gradient is the sum over its uses, computed in
  // the layer of the use that completes it.
  auto sum = b.create<nn::AddOp>(grad.getLoc(), it->second, grad);
  if (layer)
    sum->setAttr(nn::attr::kLayer, layer);
  it->second = sum;
}

FailureOr<func::FuncOp> StageDifferentiator::run() {
  if (!forward.getBody().hasOneBlock())
    return forward.emitOpError() << "must have a single block to be "
                                    "differentiated";
  if (failed(collectActiveOps()))
    return failure();

  MLIRContext *ctx = forward.getContext();
  OpBuilder b(ctx);
  Block &fwdBody = forward.getBody().front();
  auto fwdReturn = cast<func::ReturnOp>(fwdBody.getTerminator());

  // The backward's signature: forward args it reads, saved results, then the
  // gradients of the outputs that are not the loss.
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<Value> argSources; // Forward value each argument stands for.
  // Each forward argument keeps its attributes and says which argument it
  // is (`bitpipe.forward_arg`): the runtime binds it from the forward's
  // call, and a bound bitpipe.backward leaves it out of its operands.
  for (BlockArgument arg : fwdBody.getArguments())
    if (savedArgs.contains(arg)) {
      argTypes.push_back(arg.getType());
      NamedAttrList attrs(forward.getArgAttrDict(arg.getArgNumber()));
      attrs.set(attr::kForwardArg, b.getI64IntegerAttr(arg.getArgNumber()));
      argAttrs.push_back(attrs.getDictionary(ctx));
      argSources.push_back(arg);
    }
  for (auto [i, v] : llvm::enumerate(savedResults)) {
    argTypes.push_back(v.getType());
    argAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(attr::kSaved, b.getI64IntegerAttr(i))));
    argSources.push_back(v);
  }
  SmallVector<unsigned> gradArgOutputs;
  for (auto [i, out] : llvm::enumerate(fwdReturn.getOperands()))
    if (!isLoss(out)) {
      argTypes.push_back(out.getType());
      argAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(attr::kGradOfResult, b.getI64IntegerAttr(i))));
      gradArgOutputs.push_back(i);
    }

  b.setInsertionPointAfter(forward);
  auto bwd = b.create<func::FuncOp>(forward.getLoc(),
                                    (forward.getSymName() + "_bwd").str(),
                                    b.getFunctionType(argTypes, {}));
  bwd.setPrivate();
  // Not `bitpipe.stage`: the stage functions are the forwards; a backward
  // names the forward it belongs to.
  bwd->setAttr(attr::kBackwardOf, FlatSymbolRefAttr::get(forward));
  Block *body = bwd.addEntryBlock();
  for (auto [i, attrs] : llvm::enumerate(argAttrs))
    if (attrs)
      bwd.setArgAttrs(i, attrs);
  unsigned numSources = argSources.size();
  for (auto [i, v] : llvm::enumerate(argSources))
    toBackward.map(v, body->getArgument(i));

  // The forward again (Recompute::Full): its results stand for the saved
  // values the backward rules read.
  b.setInsertionPointToStart(body);
  for (Operation *op : recomputed)
    b.clone(*op, toBackward);

  // Seed the gradients of the outputs.
  for (auto [i, out] : llvm::enumerate(fwdReturn.getOperands())) {
    if (isLoss(out)) {
      auto one = DenseElementsAttr::get(
          cast<ShapedType>(out.getType()),
          b.getFloatAttr(getElementTypeOrSelf(out), 1.0));
      addGrad(b, out, b.create<arith::ConstantOp>(forward.getLoc(), one));
    }
  }
  for (auto [k, outIndex] : llvm::enumerate(gradArgOutputs))
    addGrad(b, fwdReturn.getOperand(outIndex),
            body->getArgument(numSources + k));

  // Reverse sweep.
  CreatedOps created;
  b.setListener(&created);
  for (Operation *op : llvm::reverse(activeOps)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      Value g = grads.lookup(r);
      any |= static_cast<bool>(g);
      resultGrads.push_back(g);
    }
    if (!any)
      continue;
    // Statistics (the last results) have no gradient; every other result
    // needs one.
    unsigned numStatistics =
        cast<nn::BackwardOpInterface>(op).getNumStatisticResults();
    ArrayRef<Value> differentiable =
        ArrayRef<Value>(resultGrads).drop_back(numStatistics);
    if (llvm::is_contained(differentiable, Value()))
      return op->emitOpError() << "has results with and without gradients; "
                                  "only single-result forward ops are "
                                  "supported";
    if (llvm::any_of(ArrayRef<Value>(resultGrads).take_back(numStatistics),
                     [](Value g) { return static_cast<bool>(g); }))
      return op->emitOpError() << "has a gradient flowing into a statistic "
                                  "(a result its backward reads), which has "
                                  "none";
    created.ops.clear();
    SmallVector<Value> operandGrads;
    if (failed(cast<nn::BackwardOpInterface>(op).buildBackward(b, resultGrads,
                                                               operandGrads)))
      return op->emitOpError() << "backward rule failed";
    // Move the new ops' operands from forward values to backward ones.
    for (Operation *newOp : created.ops) {
      if (Attribute layer = op->getAttr(nn::attr::kLayer))
        newOp->setAttr(nn::attr::kLayer, layer);
      for (OpOperand &operand : newOp->getOpOperands()) {
        Value v = operand.get();
        if (v.getParentRegion() != &forward.getBody())
          continue;
        Value mapped = toBackward.lookupOrNull(v);
        if (!mapped)
          return op->emitOpError()
                 << "backward rule reads a forward value it does not list in "
                    "getSavedValues (operand #"
                 << operand.getOperandNumber() << " of '" << newOp->getName()
                 << "')";
        operand.set(mapped);
      }
    }
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
      if (g)
        addGrad(b, operand, g, op->getAttr(nn::attr::kLayer));
  }
  b.setListener(nullptr);

  // Results: the gradient of every forward argument that has one.
  SmallVector<Value> results;
  SmallVector<DictionaryAttr> resultAttrs;
  for (BlockArgument arg : fwdBody.getArguments()) {
    Value g = grads.lookup(arg);
    if (!g)
      continue;
    NamedAttrList attrs;
    attrs.append(attr::kGradOfArg, b.getI64IntegerAttr(arg.getArgNumber()));
    if (Attribute name =
            forward.getArgAttr(arg.getArgNumber(), nn::attr::kParam))
      attrs.append(nn::attr::kParam, name);
    // A parameter's contributions, one result each (see moreParamGrads).
    SmallVector<Value> contributions = {g};
    llvm::append_range(contributions, moreParamGrads.lookup(arg));
    for (Value c : contributions) {
      results.push_back(c);
      resultAttrs.push_back(attrs.getDictionary(ctx));
    }
  }
  b.create<func::ReturnOp>(forward.getLoc(), results);
  bwd.setType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(resultAttrs))
    bwd.setResultAttrs(i, attrs);

  // The forward returns its saved results after its outputs.
  if (!savedResults.empty()) {
    unsigned numOutputs = fwdReturn.getNumOperands();
    SmallVector<Value> newResults(fwdReturn.getOperands());
    llvm::append_range(newResults, savedResults);
    fwdReturn->setOperands(newResults);
    forward.setType(b.getFunctionType(forward.getArgumentTypes(),
                                      ValueRange(newResults).getTypes()));
    for (unsigned i = 0; i < savedResults.size(); ++i)
      forward.setResultAttr(numOutputs + i, attr::kSaved,
                            b.getI64IntegerAttr(i));
  }
  forward->setAttr(attr::kBackward, FlatSymbolRefAttr::get(bwd));
  return bwd;
}

//===----------------------------------------------------------------------===//
// Splitting a backward into input-gradient and weight-gradient halves.
//===----------------------------------------------------------------------===//

/// Weight-gradient work: ops with the trait, and sums of their results
/// only (a parameter's contributions are not summed by this pass, but a
/// hand-written backward may sum them).
bool isWeightWork(Operation *op, const DenseSet<Operation *> &weightOps) {
  if (nn::isWeightGradient(op))
    return true;
  if (!isa<nn::AddOp>(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value v) {
    Operation *def = v.getDefiningOp();
    return def && weightOps.contains(def);
  });
}

/// Replaces `bwd` by `<fwd>_bwd_input` and `<fwd>_bwd_weight`.
void splitBackward(func::FuncOp forward, func::FuncOp bwd) {
  MLIRContext *ctx = bwd.getContext();
  OpBuilder b(ctx);
  Block &body = bwd.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  DenseSet<Operation *> weightOps;
  for (Operation &op : body.without_terminator())
    if (isWeightWork(&op, weightOps))
      weightOps.insert(&op);

  // What the weight half reads from outside itself: backward arguments
  // (taken directly) and input-half values (stashed).
  llvm::SetVector<Value> weightArgs, stash;
  for (Operation &op : body.without_terminator()) {
    if (!weightOps.contains(&op))
      continue;
    for (Value v : op.getOperands()) {
      if (isa<BlockArgument>(v))
        weightArgs.insert(v);
      else if (!weightOps.contains(v.getDefiningOp()))
        stash.insert(v);
    }
  }
  // Keep the backward's argument order.
  SmallVector<Value> sortedArgs = weightArgs.takeVector();
  llvm::sort(sortedArgs, [](Value a, Value b) {
    return cast<BlockArgument>(a).getArgNumber() <
           cast<BlockArgument>(b).getArgNumber();
  });
  weightArgs.insert(sortedArgs.begin(), sortedArgs.end());

  auto makeFunc = [&](StringRef suffix, TypeRange args) {
    b.setInsertionPoint(bwd);
    auto fn = b.create<func::FuncOp>(bwd.getLoc(),
                                     (forward.getSymName() + suffix).str(),
                                     b.getFunctionType(args, {}));
    fn.setPrivate();
    fn->setAttr(attr::kBackwardOf, FlatSymbolRefAttr::get(forward));
    fn.addEntryBlock();
    return fn;
  };
  auto gradAttrs = [&](unsigned resultIndex) {
    return bwd.getResultAttrDict(resultIndex);
  };

  // Input half: the same arguments; every non-weight op; returns its
  // gradients, then the stash.
  func::FuncOp input = makeFunc("_bwd_input", bwd.getArgumentTypes());
  for (unsigned i = 0; i < bwd.getNumArguments(); ++i)
    input.setArgAttrs(i, bwd.getArgAttrDict(i));
  IRMapping inMap;
  inMap.map(body.getArguments(), input.getArguments());
  b.setInsertionPointToStart(&input.getBody().front());
  for (Operation &op : body.without_terminator())
    if (!weightOps.contains(&op))
      b.clone(op, inMap);
  SmallVector<Value> inResults;
  SmallVector<DictionaryAttr> inAttrs;
  SmallVector<Value> weightResults;
  SmallVector<DictionaryAttr> weightAttrs;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Operation *def = v.getDefiningOp();
    if (def && weightOps.contains(def)) {
      weightResults.push_back(v);
      weightAttrs.push_back(gradAttrs(i));
      continue;
    }
    inResults.push_back(inMap.lookup(v));
    inAttrs.push_back(gradAttrs(i));
  }
  for (auto [j, v] : llvm::enumerate(stash)) {
    inResults.push_back(inMap.lookup(v));
    inAttrs.push_back(b.getDictionaryAttr(
        b.getNamedAttr(attr::kStash, b.getI64IntegerAttr(j))));
  }
  b.create<func::ReturnOp>(bwd.getLoc(), inResults);
  input.setType(b.getFunctionType(input.getArgumentTypes(),
                                  ValueRange(inResults).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(inAttrs))
    if (attrs)
      input.setResultAttrs(i, attrs);

  // Weight half: the backward arguments it reads, then the stash.
  SmallVector<Type> wTypes;
  for (Value v : weightArgs)
    wTypes.push_back(v.getType());
  for (Value v : stash)
    wTypes.push_back(v.getType());
  func::FuncOp weight = makeFunc("_bwd_weight", wTypes);
  Block &wBody = weight.getBody().front();
  IRMapping wMap;
  for (auto [i, v] : llvm::enumerate(weightArgs)) {
    wMap.map(v, wBody.getArgument(i));
    weight.setArgAttrs(
        i, bwd.getArgAttrDict(cast<BlockArgument>(v).getArgNumber()));
  }
  for (auto [j, v] : llvm::enumerate(stash)) {
    unsigned i = weightArgs.size() + j;
    wMap.map(v, wBody.getArgument(i));
    weight.setArgAttrs(i, b.getDictionaryAttr(b.getNamedAttr(
                              attr::kStash, b.getI64IntegerAttr(j))));
  }
  b.setInsertionPointToStart(&wBody);
  for (Operation &op : body.without_terminator())
    if (weightOps.contains(&op))
      b.clone(op, wMap);
  SmallVector<Value> wResults;
  for (Value v : weightResults)
    wResults.push_back(wMap.lookup(v));
  b.create<func::ReturnOp>(bwd.getLoc(), wResults);
  weight.setType(b.getFunctionType(wTypes, ValueRange(wResults).getTypes()));
  for (auto [i, attrs] : llvm::enumerate(weightAttrs))
    if (attrs)
      weight.setResultAttrs(i, attrs);

  forward->removeAttr(attr::kBackward);
  forward->setAttr(attr::kBackwardInput, FlatSymbolRefAttr::get(input));
  forward->setAttr(attr::kBackwardWeight, FlatSymbolRefAttr::get(weight));
  bwd.erase();
}

/// The ops that reference each symbol of `module`, found in one walk (a
/// walk per stage would make the pass quadratic in the model's size).
llvm::DenseMap<StringAttr, SmallVector<Operation *>>
symbolUsers(ModuleOp module) {
  llvm::DenseMap<StringAttr, SmallVector<Operation *>> users;
  if (std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(&module.getBodyRegion()))
    for (const SymbolTable::SymbolUse &use : *uses) {
      SmallVector<Operation *> &list =
          users[use.getSymbolRef().getRootReference()];
      if (list.empty() || list.back() != use.getUser())
        list.push_back(use.getUser());
    }
  return users;
}

/// Calls of `forward` (among `users`, the ops that reference it) get the
/// saved results it now returns as well.
LogicalResult updateCallers(func::FuncOp forward, ArrayRef<Operation *> users) {
  for (Operation *user : users) {
    // Backward functions name their forward in an attribute; not a call.
    if (isa<func::FuncOp>(user))
      continue;
    auto call = dyn_cast<func::CallOp>(user);
    if (!call)
      return user->emitOpError()
             << "uses stage @" << forward.getSymName()
             << ", whose results change when its backward is generated; "
                "only func.call users are updated";
    if (call.getNumResults() == forward.getNumResults())
      continue;
    OpBuilder b(call);
    auto newCall =
        b.create<func::CallOp>(call.getLoc(), forward, call.getOperands());
    for (auto [oldResult, newResult] :
         llvm::zip(call.getResults(), newCall.getResults()))
      oldResult.replaceAllUsesWith(newResult);
    call.erase();
  }
  return success();
}

struct GenerateBackwardPass
    : public bitpipe::impl::GenerateBackwardBase<GenerateBackwardPass> {
  using GenerateBackwardBase::GenerateBackwardBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> stages;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr(attr::kStage))
        stages.push_back(fn);
    if (stages.empty()) {
      module.emitError() << "no stage functions (functions with '"
                         << attr::kStage << "'): run bitpipe-partition first";
      return signalPassFailure();
    }
    llvm::DenseMap<StringAttr, SmallVector<Operation *>> users =
        symbolUsers(module);
    for (func::FuncOp stage : stages) {
      if (stage->hasAttr(attr::kBackward) ||
          stage->hasAttr(attr::kBackwardInput)) {
        stage.emitOpError() << "already has a backward";
        return signalPassFailure();
      }
      FailureOr<func::FuncOp> bwd = StageDifferentiator(stage, recompute).run();
      if (failed(bwd) ||
          failed(updateCallers(stage, users.lookup(stage.getSymNameAttr()))))
        return signalPassFailure();
      if (split)
        splitBackward(stage, *bwd);
    }
    // What the stages keep, for the costs read from IR (CostsFromIR.h);
    // a module without it keeps everything.
    if (recompute != sched::Recompute::None)
      module->setAttr(bp::BitPipeDialect::kRecomputeAttrName,
                      bp::RecomputeAttr::get(&getContext(), recompute));
  }
};

} // namespace
