//===- RankFunction.cpp - A rank program as a function of calls -----------===//
//
// The calls of a rank are an item sequence for the schedule library's
// repetition finder (Schedule/Repetition.h): the shape of a call is its
// function and the arguments that say what it runs (the stage function, the
// input kind, the peer and the element count), and every integer argument
// is a lane, which in a repeated run advances by its own stride per body
// call (micro-batch numbers by the unit of the schedule, value ids by the
// values a repetition defines, tags by the transfers a repetition posts on
// the channel). The finder is exact, so the loops make the same calls, in
// the same order, as the straight line they replace; this file checks that
// again by unrolling before it emits anything (docs/repetition.md).
//
//===----------------------------------------------------------------------===//

#include "RankFunction.h"

#include "bitpipe/Schedule/Repetition.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/ErrorHandling.h"

#include <map>
#include <tuple>

using namespace mlir;
using namespace bitpipe;

namespace {

/// The most integer arguments of a bp_rt_* call (bp_rt_forward's six):
/// lane i of a call's item is its argument i.
constexpr int kLanes = 6;

/// A repeated run of fewer calls than this stays a straight line: its loop
/// (a counter, a compare, a branch, the arguments' arithmetic) would cost
/// about what it saves, and a reader of the IR sees the calls themselves.
constexpr size_t kMinLoopCalls = 8;

/// The arguments that say what a call runs rather than which values and
/// micro-batch it runs on; they join the function in the item's shape, so
/// that two calls of different stage functions, kinds or peers never stand
/// for one body call of a loop.
ArrayRef<unsigned> identityArgs(abi::RuntimeCall fn) {
  using RC = abi::RuntimeCall;
  static const unsigned load[] = {1, 3};    // kind, count
  static const unsigned compute[] = {0};    // stage function
  static const unsigned transfer[] = {1, 2}; // count, peer
  switch (fn) {
  case RC::bp_rt_load_input:
    return load;
  case RC::bp_rt_forward:
  case RC::bp_rt_backward:
  case RC::bp_rt_weight_grad:
    return compute;
  case RC::bp_rt_send:
  case RC::bp_rt_recv:
    return transfer;
  default:
    return {};
  }
}

sched::ItemSequence callItems(ArrayRef<PlannedCall> calls) {
  sched::ShapeTable shapes;
  sched::ItemSequence items(kLanes);
  std::vector<int64_t> lanes(kLanes);
  for (const PlannedCall &c : calls) {
    std::vector<int64_t> shape = {static_cast<int64_t>(c.fn)};
    for (unsigned i : identityArgs(c.fn))
      shape.push_back(c.args[i]);
    for (int l = 0; l < kLanes; ++l)
      lanes[l] = l < static_cast<int>(c.args.size())
                     ? c.args[l]
                     : sched::ItemSequence::kAbsent;
    items.append(shapes.key(shape), lanes);
  }
  return items;
}

/// Emits calls into one function: constants are made once at the entry,
/// loop-varying arguments inside the loop that uses them.
class CallEmitter {
public:
  CallEmitter(OpBuilder &b, func::FuncOp fn, ModuleOp module)
      : b(b), fn(fn), module(module) {}

  /// Emits `c`; in a loop body, lane l of it advances by `strides[l]` per
  /// iteration of `iv` (strides empty outside loops).
  void emit(const PlannedCall &c, Value iv, ArrayRef<int64_t> strides) {
    const abi::Signature &signature = abi::signatureOf(c.fn);
    SmallVector<Value> args = {fn.getArgument(0)};
    for (auto [i, kind] : llvm::enumerate(signature.params.drop_front())) {
      auto type = cast<IntegerType>(abi::typeOf(kind, b.getContext()));
      int64_t stride = strides.empty() ? 0 : strides[i];
      Value base = constant(c.args[i], type);
      if (stride == 0) {
        args.push_back(base);
        continue;
      }
      // base + iv * stride, in the argument's width: the values are the
      // ones the straight line would pass, all of which fit.
      Value &sum = sums[{c.args[i], stride, type.getWidth()}];
      if (!sum)
        sum = b.create<arith::AddIOp>(c.loc, base, product(iv, stride, type));
      args.push_back(sum);
    }
    abi::checkArguments(signature, args);
    FlatSymbolRefAttr callee = abi::declare(b, module, signature);
    b.create<func::CallOp>(c.loc, callee, TypeRange{}, args);
  }

  /// The constant `value` of `type` (an integer or index), made once at
  /// the function's entry.
  Value constant(int64_t value, Type type) {
    Value &v = constants[{value, type}];
    if (!v) {
      // In order of first use, ahead of everything else.
      OpBuilder::InsertionGuard guard(b);
      if (lastConstant)
        b.setInsertionPointAfter(lastConstant);
      else
        b.setInsertionPointToStart(&fn.getBody().front());
      v = type.isIndex()
              ? b.create<arith::ConstantIndexOp>(fn.getLoc(), value)
                    .getResult()
              : b.create<arith::ConstantIntOp>(fn.getLoc(), value, type)
                    .getResult();
      lastConstant = v.getDefiningOp();
    }
    return v;
  }

  /// Starts a loop body: its induction variable's casts and multiples are
  /// made once per body.
  void enterLoop() {
    counters.clear();
    products.clear();
    sums.clear();
  }

private:
  /// The induction variable `iv` (index) as an integer of `type`.
  Value counter(Value iv, IntegerType type) {
    Value &v = counters[type.getWidth()];
    if (!v) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfterValue(iv);
      v = b.create<arith::IndexCastOp>(iv.getLoc(), type, iv);
    }
    return v;
  }

  /// `iv * stride` as an integer of `type`, made once per body.
  Value product(Value iv, int64_t stride, IntegerType type) {
    Value &v = products[{stride, type.getWidth()}];
    if (!v) {
      Value k = counter(iv, type);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointAfterValue(k);
      v = stride == 1 ? k
                      : b.create<arith::MulIOp>(iv.getLoc(), k,
                                                constant(stride, type))
                            .getResult();
    }
    return v;
  }

  OpBuilder &b;
  func::FuncOp fn;
  ModuleOp module;
  llvm::DenseMap<std::pair<int64_t, Type>, Value> constants;
  Operation *lastConstant = nullptr;
  std::map<unsigned, Value> counters;
  std::map<std::pair<int64_t, unsigned>, Value> products;
  /// (base, stride, width) -> base + iv * stride, in the current body. A
  /// sum is made where its first user needs it, which dominates the rest.
  std::map<std::tuple<int64_t, int64_t, unsigned>, Value> sums;
};

} // namespace

func::FuncOp bitpipe::emitRankFunction(bp::ProgramOp program,
                                       ArrayRef<PlannedCall> calls,
                                       bool loops) {
  OpBuilder b(program);
  MLIRContext *ctx = b.getContext();
  auto module = program->getParentOfType<ModuleOp>();
  // A bp_rank_program_t (ModelSymbols.def).
  auto fn = b.create<func::FuncOp>(
      program.getLoc(), ("bitpipe_rank" + Twine(program.getRank())).str(),
      abi::functionTypeOf(
          abi::symbolsOf(abi::ModelTable::bitpipe_rank_programs).entry, ctx));
  // Calls with integer arguments and a counter: nothing an optimiser can
  // improve, yet at D=64 most of the module. `optnone` (kept by the
  // conversion to the LLVM dialect as a pass-through attribute) spares them
  // LLVM's -O2 pipeline and selects the fast instruction selector; the
  // stage functions are optimised as before (bench/results-log.md,
  // "Compiler cost at scale").
  // The attribute is llvm.func's, which func-to-llvm carries over by name.
  StringAttr passthrough = LLVM::LLVMFuncOp::getPassthroughAttrName(
      OperationName(LLVM::LLVMFuncOp::getOperationName(), ctx));
  fn->setAttr(passthrough, b.getArrayAttr({b.getStringAttr("noinline"),
                                           b.getStringAttr("optnone")}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToEnd(entry);
  CallEmitter emitter(b, fn, module);

  sched::ItemSequence items = callItems(calls);
  std::vector<sched::Segment> segments;
  if (loops) {
    segments = sched::segmentRepetitions(items);
    // The finder promises exactness; a rank function that made other calls
    // than its program says would train something else, so check.
    sched::Result<sched::ItemSequence> unrolled =
        sched::unroll(segments, sched::keptItems(items, segments));
    if (!unrolled || *unrolled != items)
      llvm::report_fatal_error(
          llvm::Twine("bitpipe: internal error: the loops of rank ") +
          llvm::Twine(program.getRank()) +
          " do not unroll to its calls; rerun with loops=false");
  } else {
    segments.push_back({0, calls.size(), 1, {}});
  }

  for (const sched::Segment &s : segments) {
    if (!s.repeated() || s.length() < kMinLoopCalls) {
      for (size_t i = s.begin; i < s.begin + s.length(); ++i)
        emitter.emit(calls[i], Value(), {});
      continue;
    }
    Type index = b.getIndexType();
    auto loop = b.create<scf::ForOp>(
        calls[s.begin].loc, emitter.constant(0, index),
        emitter.constant(static_cast<int64_t>(s.count), index),
        emitter.constant(1, index));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    emitter.enterLoop();
    for (size_t j = 0; j < s.period; ++j) {
      const PlannedCall &c = calls[s.begin + j];
      ArrayRef<int64_t> strides =
          ArrayRef<int64_t>(s.strides).slice(j * kLanes, c.args.size());
      emitter.emit(c, loop.getInductionVar(), strides);
    }
  }
  b.create<func::ReturnOp>(program.getLoc());
  return fn;
}
