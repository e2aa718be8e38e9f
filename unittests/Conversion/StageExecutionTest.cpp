//===- StageExecutionTest.cpp - JIT-run lowered stage functions -*- C++ -*-===//
//
// The proof that bitpipe-lower-nn-to-runtime and bitpipe-lower-to-llvm
// compute what the nn IR means: a small GPT is built, partitioned,
// differentiated and lowered to the LLVM dialect exactly as bitpipe-opt
// would, JIT-compiled with the runtime's CPU kernels, and run as a pipeline
// would run it: the forward stage functions in order, then the backward
// functions in reverse, fed saved values and gradients as GenerateBackward's
// conventions say (Passes.td). Then
//  (a) the loss matches a float64 interpretation of the unpartitioned model
//      IR (ops from runtime/unittests/Reference.h, not the kernels);
//  (b) every parameter's gradient matches float64 central finite differences
//      of that reference loss on sampled entries (the tied token embedding
//      sums its two uses across stages);
//  (c) one chunk and three chunks, and the plain and split backward, agree.
//
// The driver reads the stage calls, their operands and the function
// attributes from the tensor-level IR before lowering; lowered functions
// use the bare-pointer convention: one pointer per tensor argument, one
// malloc'ed pointer per tensor result, owned (freed) by the caller.
//
//===----------------------------------------------------------------------===//

#include "ModelTestUtil.h"

#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"

#include "bitpipe/Conversion/Passes.h"
#include "bitpipe/Transforms/Passes.h"

#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::test;

namespace {

//===----------------------------------------------------------------------===//
// Host tensors
//===----------------------------------------------------------------------===//

/// A host tensor: f32 data or i32 ids.
struct HostTensor {
  std::vector<float> f;
  std::vector<int32_t> i;
  bool isInt = false;
  void *data() { return isInt ? static_cast<void *>(i.data()) : f.data(); }
  size_t bytes() const { return isInt ? i.size() * 4 : f.size() * 4; }
};

HostTensor zerosLike(Type type) {
  auto t = cast<RankedTensorType>(type);
  HostTensor h;
  h.isInt = t.getElementType().isInteger(32);
  if (h.isInt)
    h.i.assign(t.getNumElements(), 0);
  else
    h.f.assign(t.getNumElements(), 0.0f);
  return h;
}

//===----------------------------------------------------------------------===//
// Running a pipeline step
//===----------------------------------------------------------------------===//

/// A function's tensor-level signature and attributes, kept from before
/// lowering.
struct FnSpec {
  std::string name;
  SmallVector<Type> args, results;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;

  int64_t argAttr(unsigned i, StringRef key) const {
    auto a = argAttrs[i] ? argAttrs[i].getAs<IntegerAttr>(key) : IntegerAttr();
    return a ? a.getInt() : -1;
  }
  int64_t resultAttr(unsigned i, StringRef key) const {
    auto a = resultAttrs[i] ? resultAttrs[i].getAs<IntegerAttr>(key)
                            : IntegerAttr();
    return a ? a.getInt() : -1;
  }
};

FnSpec specOf(func::FuncOp fn) {
  FnSpec s;
  s.name = fn.getSymName().str();
  for (unsigned i = 0; i < fn.getNumArguments(); ++i) {
    s.args.push_back(fn.getArgumentTypes()[i]);
    s.argAttrs.push_back(fn.getArgAttrDict(i));
  }
  for (unsigned i = 0; i < fn.getNumResults(); ++i) {
    s.results.push_back(fn.getResultTypes()[i]);
    s.resultAttrs.push_back(fn.getResultAttrDict(i));
  }
  return s;
}

/// One call of a forward stage in the model function: the callee, the value
/// ids of its operands and of its results (outputs, then saved values).
struct StageCall {
  FnSpec forward;
  std::vector<FnSpec> backward; // {bwd} or {bwd_input, bwd_weight}
  std::vector<int> operands, results;
};

/// Everything the driver needs, read from the tensor-level IR.
struct Plan {
  std::vector<std::string> modelArgNames; // nn.param or nn.input name
  std::vector<bool> modelArgIsParam;
  std::vector<Type> valueTypes; // by value id; model args first
  std::vector<StageCall> calls;
  int lossValue = -1;
};

Plan makePlan(ModuleOp module) {
  Plan plan;
  func::FuncOp model = modelFunction(module);
  llvm::DenseMap<Value, int> id;
  for (BlockArgument arg : model.getArguments()) {
    unsigned n = arg.getArgNumber();
    auto param = model.getArgAttrOfType<StringAttr>(n, nn::attr::kParam);
    auto input = model.getArgAttrOfType<StringAttr>(n, nn::attr::kInput);
    plan.modelArgNames.push_back((param ? param : input).str());
    plan.modelArgIsParam.push_back(bool(param));
    id[arg] = plan.valueTypes.size();
    plan.valueTypes.push_back(arg.getType());
  }
  auto lookup = [&](StringRef name) {
    return module.lookupSymbol<func::FuncOp>(name);
  };
  for (Operation &op : model.getBody().front()) {
    if (auto ret = dyn_cast<func::ReturnOp>(op)) {
      plan.lossValue = id.lookup(ret.getOperand(0));
      continue;
    }
    auto call = dyn_cast<func::CallOp>(op);
    if (!call) {
      ADD_FAILURE() << "model function: unexpected "
                    << op.getName().getStringRef().str();
      return plan;
    }
    func::FuncOp callee = lookup(call.getCallee());
    StageCall s;
    s.forward = specOf(callee);
    if (auto bwd = callee->getAttrOfType<FlatSymbolRefAttr>(attr::kBackward))
      s.backward.push_back(specOf(lookup(bwd.getValue())));
    for (StringRef half : {attr::kBackwardInput, attr::kBackwardWeight})
      if (auto bwd = callee->getAttrOfType<FlatSymbolRefAttr>(half))
        s.backward.push_back(specOf(lookup(bwd.getValue())));
    for (Value v : call.getOperands())
      s.operands.push_back(id.lookup(v));
    for (Value v : call.getResults()) {
      id[v] = plan.valueTypes.size();
      s.results.push_back(id[v]);
      plan.valueTypes.push_back(v.getType());
    }
    plan.calls.push_back(std::move(s));
  }
  return plan;
}

/// Calls the lowered \p fn: bare pointers in, malloc'ed pointers out (copied
/// to host tensors and freed here: the caller owns returned buffers). A
/// parameter's gradient (an nn.param result) is accumulated in place: the
/// lowered function takes a float64 accumulator for it after its arguments
/// (the CPU target's), which starts at zero here and comes back as the
/// result's host tensor.
std::vector<HostTensor> invoke(ExecutionEngine &engine, const FnSpec &fn,
                               const std::vector<HostTensor *> &args) {
  EXPECT_EQ(args.size(), fn.args.size()) << fn.name;
  std::vector<void *> pointers, packed;
  for (HostTensor *t : args)
    pointers.push_back(t->data());
  std::vector<bool> accumulated(fn.results.size());
  std::vector<std::vector<double>> accumulators(fn.results.size());
  size_t returned = 0;
  for (auto [i, type] : llvm::enumerate(fn.results)) {
    accumulated[i] =
        fn.resultAttrs[i] && fn.resultAttrs[i].get(nn::attr::kParam);
    if (!accumulated[i]) {
      ++returned;
      continue;
    }
    accumulators[i].assign(cast<RankedTensorType>(type).getNumElements(), 0.0);
    pointers.push_back(accumulators[i].data());
  }
  for (void *&p : pointers)
    packed.push_back(&p);
  std::vector<void *> results(returned, nullptr);
  if (!results.empty())
    packed.push_back(results.data()); // One pointer, or a struct of them.
  if (llvm::Error err = engine.invokePacked(fn.name, packed)) {
    ADD_FAILURE() << "invoking " << fn.name << ": "
                  << llvm::toString(std::move(err));
    return {};
  }
  std::vector<HostTensor> out;
  size_t next = 0;
  for (auto [i, type] : llvm::enumerate(fn.results)) {
    out.push_back(zerosLike(type));
    if (accumulated[i]) {
      for (size_t k = 0; k < accumulators[i].size(); ++k)
        out.back().f[k] = static_cast<float>(accumulators[i][k]);
      continue;
    }
    std::memcpy(out.back().data(), results[next], out.back().bytes());
    bp_free(results[next++]);
  }
  return out;
}

/// What one training step on one micro-batch produced.
struct StepResult {
  float loss = NAN;
  std::map<std::string, std::vector<float>> grads;
};

/// Finds, for each argument of backward function \p bwd that stands for a
/// forward argument, which one: bitpipe-generate-backward records it as
/// `bitpipe.forward_arg = i`. The types must agree.
std::vector<int> forwardArgOf(const FnSpec &fwd, const FnSpec &bwd) {
  std::vector<int> map(bwd.args.size(), -1);
  for (unsigned i = 0; i < bwd.args.size(); ++i) {
    int64_t j = bwd.argAttr(i, attr::kForwardArg);
    if (j < 0)
      continue;
    if (j >= static_cast<int64_t>(fwd.args.size()) ||
        fwd.args[j] != bwd.args[i]) {
      ADD_FAILURE() << bwd.name << " argument " << i
                    << " names forward argument " << j << " of " << fwd.name
                    << ", which does not exist or has another type";
      return map;
    }
    map[i] = static_cast<int>(j);
  }
  return map;
}

struct Variant {
  unsigned chunks;
  bool split;
};

/// Builds, lowers, JIT-compiles and runs one step of the tiny GPT.
StepResult runStep(const Variant &variant, int *numStages = nullptr) {
  MLIRContext ctx;
  registerEverything(ctx);
  OwningOpRef<ModuleOp> module = buildModel(ctx, tinyGpt());
  Data data = makeData(*module, tinyGpt());

  std::string passes =
      "bitpipe-annotate-cost,bitpipe-partition{chunks=" +
      std::to_string(variant.chunks) + "},bitpipe-generate-backward" +
      (variant.split ? "{split=true}" : "");
  if (failed(runPipeline(*module, passes)))
    return {};
  Plan plan = makePlan(*module);
  if (numStages)
    *numStages = plan.calls.size();

  // Lowered functions are called from C++: make them all visible.
  for (auto fn : module->getOps<func::FuncOp>())
    if (!fn.isExternal())
      fn.setPublic();
  if (failed(runPipeline(
          *module, "bitpipe-lower-nn-to-runtime,bitpipe-lower-to-llvm"))) {
    ADD_FAILURE() << "lowering failed";
    return {};
  }

  ExecutionEngineOptions options;
  auto engineOr = ExecutionEngine::create(*module, options);
  if (!engineOr) {
    ADD_FAILURE() << "JIT: " << llvm::toString(engineOr.takeError());
    return {};
  }
  auto &engine = *engineOr;
  engine->registerSymbols(runtimeSymbols);

  // Host values by id: model arguments first, then stage results.
  std::vector<HostTensor> values;
  for (auto [i, name] : llvm::enumerate(plan.modelArgNames)) {
    HostTensor t;
    if (plan.modelArgIsParam[i]) {
      t.f = data.params.at(name);
    } else {
      t.isInt = true;
      t.i = data.inputs.at(name);
    }
    values.push_back(std::move(t));
  }
  values.resize(plan.valueTypes.size());

  // Forward, stage by stage.
  for (StageCall &call : plan.calls) {
    std::vector<HostTensor *> args;
    for (int v : call.operands)
      args.push_back(&values[v]);
    std::vector<HostTensor> out = invoke(*engine, call.forward, args);
    if (out.size() != call.results.size())
      return {};
    for (auto [v, t] : llvm::zip(call.results, out))
      values[v] = std::move(t);
  }
  StepResult result;
  result.loss = values[plan.lossValue].f[0];

  // Backward, in reverse. grads[v]: the gradient of value v, summed over
  // its uses (zero until a use contributes; the loss is seeded inside).
  std::map<int, HostTensor> grads;
  auto gradOf = [&](int v) -> HostTensor & {
    auto it = grads.find(v);
    if (it == grads.end())
      it = grads.emplace(v, zerosLike(plan.valueTypes[v])).first;
    return it->second;
  };
  auto accumulate = [&](int v, const HostTensor &g) {
    HostTensor &into = gradOf(v);
    for (size_t k = 0; k < into.f.size(); ++k)
      into.f[k] += g.f[k];
  };
  std::vector<std::vector<HostTensor>> stashes(plan.calls.size());
  // A backward function's arguments, from its attributes.
  auto argsOf = [&](size_t c, const FnSpec &fn) {
    StageCall &call = plan.calls[c];
    unsigned numOutputs = 0;
    for (unsigned r = 0; r < call.forward.results.size(); ++r)
      if (call.forward.resultAttr(r, attr::kSaved) < 0)
        ++numOutputs;
    std::vector<int> fwdArg = forwardArgOf(call.forward, fn);
    std::vector<HostTensor *> args;
    for (unsigned i = 0; i < fn.args.size(); ++i) {
      if (int64_t s = fn.argAttr(i, attr::kSaved); s >= 0)
        args.push_back(&values[call.results[numOutputs + s]]);
      else if (int64_t r = fn.argAttr(i, attr::kGradOfResult); r >= 0)
        args.push_back(&gradOf(call.results[r]));
      else if (int64_t j = fn.argAttr(i, attr::kStash); j >= 0)
        args.push_back(&stashes[c].at(j));
      else
        args.push_back(&values[call.operands[fwdArg[i]]]);
    }
    return args;
  };
  auto takeResults = [&](size_t c, const FnSpec &fn,
                         std::vector<HostTensor> out) {
    if (out.size() != fn.results.size())
      return;
    for (unsigned r = 0; r < out.size(); ++r) {
      if (int64_t a = fn.resultAttr(r, attr::kGradOfArg); a >= 0)
        accumulate(plan.calls[c].operands[a], out[r]);
      else if (int64_t j = fn.resultAttr(r, attr::kStash); j >= 0) {
        stashes[c].resize(std::max<size_t>(stashes[c].size(), j + 1));
        stashes[c][j] = std::move(out[r]);
      } else
        ADD_FAILURE() << fn.name << " result " << r << " has no role";
    }
  };
  // Plain: one backward per stage. Split: every input half first (as a
  // zero-bubble schedule may), then every weight half, so that the weight
  // halves see only what the conventions hand them.
  for (size_t c = plan.calls.size(); c-- > 0;) {
    const FnSpec &fn = plan.calls[c].backward.at(0);
    takeResults(c, fn, invoke(*engine, fn, argsOf(c, fn)));
  }
  if (variant.split)
    for (size_t c = plan.calls.size(); c-- > 0;) {
      const FnSpec &fn = plan.calls[c].backward.at(1);
      takeResults(c, fn, invoke(*engine, fn, argsOf(c, fn)));
    }

  for (auto [i, name] : llvm::enumerate(plan.modelArgNames))
    if (plan.modelArgIsParam[i])
      result.grads[name] = gradOf(i).f;
  return result;
}

/// Steps are deterministic; compile and run each variant once.
const StepResult &cachedStep(Variant v) {
  static std::map<std::pair<unsigned, bool>, StepResult> cache;
  auto key = std::make_pair(v.chunks, v.split);
  auto it = cache.find(key);
  if (it == cache.end())
    it = cache.emplace(key, runStep(v)).first;
  return it->second;
}

class StageExecution : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // The pipelines are spelled as on bitpipe-opt's command line.
    static bool registered = [] {
      registerBitPipePasses();
      registerConversionPasses();
      registerLowerToLLVMPipeline();
      return true;
    }();
    (void)registered;
  }
};

//===----------------------------------------------------------------------===//
// The checks
//===----------------------------------------------------------------------===//

/// (a) and (b) for one variant.
void checkAgainstReference(Variant v) {
  const StepResult &step = cachedStep(v);
  ASSERT_FALSE(step.grads.empty());

  MLIRContext ctx;
  registerEverything(ctx);
  OwningOpRef<ModuleOp> module = buildModel(ctx, tinyGpt());
  Data data = makeData(*module, tinyGpt());

  // (a) The loss.
  double ref = referenceLoss(*module, data);
  double lossErr = std::abs(step.loss - ref) / std::abs(ref);
  EXPECT_LT(lossErr, 1e-4) << "loss " << step.loss << " vs reference " << ref;

  // (b) Gradients against central differences, on the largest-magnitude
  // entry of each parameter (so the check is never vacuous) and three
  // random ones. Entries far below the tensor's scale are compared with an
  // absolute tolerance relative to that scale: fp32 rounding in the kernels
  // leaves them with little relative precision.
  std::mt19937 gen(7);
  const double h = 1e-4;
  double maxRel = 0;
  std::string worst;
  ASSERT_EQ(step.grads.size(), data.params.size());
  for (auto &[name, g] : step.grads) {
    SCOPED_TRACE("parameter " + name);
    ASSERT_EQ(g.size(), data.params.at(name).size());
    int64_t top = 0;
    for (size_t k = 0; k < g.size(); ++k)
      if (std::abs(g[k]) > std::abs(g[top]))
        top = k;
    std::vector<int64_t> entries{top};
    std::uniform_int_distribution<int64_t> pick(0, g.size() - 1);
    for (int k = 0; k < 3; ++k)
      entries.push_back(pick(gen));
    double scale = 0;
    std::vector<double> fd;
    for (int64_t e : entries) {
      fd.push_back((referenceLoss(*module, data, name, e, h) -
                    referenceLoss(*module, data, name, e, -h)) /
                   (2 * h));
      scale = std::max(scale, std::abs(fd.back()));
    }
    EXPECT_GT(scale, 1e-6) << "vacuous: the gradient of " << name << " is ~0";
    for (auto [e, d] : llvm::zip(entries, fd)) {
      double denom = std::max(std::abs(d), 1e-2 * scale);
      double rel = std::abs(g[e] - d) / denom;
      EXPECT_LT(rel, 1e-2) << name << "[" << e << "]: compiled " << g[e]
                           << ", finite differences " << d;
      if (std::abs(d) >= 1e-2 * scale && rel > maxRel) {
        maxRel = rel;
        worst = name + "[" + std::to_string(e) + "]";
      }
    }
  }
  std::printf("chunks=%u%s: loss %.7f (reference %.7f, rel err %.2e); max "
              "gradient rel err vs finite differences %.2e (%s)\n",
              v.chunks, v.split ? " split" : "", step.loss, ref, lossErr,
              maxRel, worst.c_str());
}

/// (c) Two variants compute the same loss and gradients.
void checkSame(Variant a, Variant b) {
  const StepResult &x = cachedStep(a), &y = cachedStep(b);
  ASSERT_FALSE(x.grads.empty());
  ASSERT_FALSE(y.grads.empty());
  EXPECT_NEAR(x.loss, y.loss, 1e-5 * std::abs(x.loss));
  double maxRel = 0;
  for (auto &[name, g] : x.grads) {
    const std::vector<float> &h = y.grads.at(name);
    ASSERT_EQ(g.size(), h.size());
    double scale = 0;
    for (float v : g)
      scale = std::max(scale, double(std::abs(v)));
    for (size_t k = 0; k < g.size(); ++k) {
      double rel = std::abs(g[k] - h[k]) / scale;
      maxRel = std::max(maxRel, rel);
      ASSERT_LT(rel, 1e-5) << name << "[" << k << "]: " << g[k] << " vs "
                           << h[k];
    }
  }
  std::printf("chunks=%u%s vs chunks=%u%s: max gradient difference %.2e of "
              "the tensor's largest entry\n",
              a.chunks, a.split ? " split" : "", b.chunks,
              b.split ? " split" : "", maxRel);
}

TEST_F(StageExecution, PartitionsAsExpected) {
  // The driver really runs one and three stage functions.
  int stages = 0;
  runStep({3, false}, &stages);
  EXPECT_EQ(stages, 3);
}

TEST_F(StageExecution, OneChunkMatchesReference) {
  checkAgainstReference({1, false});
}

TEST_F(StageExecution, ThreeChunksMatchReference) {
  checkAgainstReference({3, false});
}

TEST_F(StageExecution, SplitBackwardMatchesReference) {
  checkAgainstReference({3, true});
}

TEST_F(StageExecution, OneAndThreeChunksAgree) {
  checkSame({1, false}, {3, false});
}

TEST_F(StageExecution, SplitBackwardAgrees) {
  checkSame({3, false}, {3, true});
  checkSame({1, false}, {1, true});
}

} // namespace
