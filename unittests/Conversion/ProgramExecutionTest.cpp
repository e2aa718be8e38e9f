//===- ProgramExecutionTest.cpp - JIT-run a lowered training step -*- C++
//-*-===//
//
// The proof that bitpipe-lower-to-runtime emits what bitpipe/program.h
// promises. A tiny GPT on one device goes through bitpipe-pipeline and
// bitpipe-lower-to-runtime as bitpipe-opt would run them, is JIT-compiled
// with the CPU kernels, and rank 0's program (through
// bitpipe_rank_programs) runs one training step against a fake executor
// defined here. The fake does what program.h asks of the real one, and no
// more: it reads the manifest with llvm::json, keeps values by id, binds
// the arguments of each stage function by role, calls it through
// bitpipe_stage_entries, and accumulates parameter gradients. On the way it
// checks the value discipline of the calls (an id is defined once and used
// only until it is released; every tensor is released once; every handle
// is consumed). Then
//  (a) the loss of each micro-batch matches the float64 reference of the
//      unpartitioned model (ModelTestUtil.h);
//  (b) every parameter's gradient, summed over the micro-batches, matches
//      central finite differences of the summed reference loss on its
//      largest entry;
// for GPipe (one stage), interleaved 1F1B (two stages on the device, local
// copies, the tied embedding on both) and ZB-H1 (split backward).
//
//===----------------------------------------------------------------------===//

#include "ModelTestUtil.h"

#include "bitpipe/Conversion/LowerToRuntime/LowerToRuntime.h"
#include "bitpipe/Transforms/Pipeline.h"
#include "bitpipe/program.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>

using namespace mlir;
using namespace bitpipe;
using namespace bitpipe::test;

namespace {

//===----------------------------------------------------------------------===//
// Buffers and handles of the fake executor
//===----------------------------------------------------------------------===//

/// A buffer of `count` 4-byte elements (f32 or i32), from the runtime's pool
/// and returned to it (bp_free) when the last value or handle holding it
/// lets go, as stage results must be.
struct Buffer {
  std::shared_ptr<void> data;
  int64_t count = 0;
  float *f() const { return static_cast<float *>(data.get()); }
};

Buffer adopt(void *data, int64_t count) {
  return {std::shared_ptr<void>(data, bp_free), count};
}
Buffer allocate(int64_t count) {
  void *data = bp_alloc(count * 4);
  std::memset(data, 0, count * 4);
  return adopt(data, count);
}

/// What a forward keeps for its backward: its arguments (forward_arg), its
/// saved results, and, between the halves of a split backward, the output
/// gradient and the stash.
struct Handle {
  int64_t fn = -1;
  std::vector<Buffer> args, saved, stash;
  Buffer grad0;
};

int64_t elementsOf(const llvm::json::Object &role) {
  int64_t n = 1;
  for (const llvm::json::Value &d : *role.getArray("shape"))
    n *= *d.getAsInteger();
  return n;
}

} // namespace

/// The executor state program.h keeps opaque: here, the fake's.
struct bp_rt_context {
  const llvm::json::Array *functions = nullptr;
  const bp_stage_entry_t *entries = nullptr;
  std::map<std::string, Buffer> params;
  /// The parameters' gradient accumulators, float64 as the CPU target's:
  /// backward stage functions add into them in place (program.h).
  std::map<std::string, std::vector<double>> grads;
  /// Training inputs by micro-batch, by `nn.input` name.
  std::vector<std::map<std::string, std::vector<int32_t>>> inputs;

  std::map<int32_t, Buffer> values; ///< Live tensor values.
  std::set<int32_t> defined;        ///< Every id defined so far.
  std::map<int32_t, Handle> handles;
  std::set<int32_t> tokens;
  std::map<int64_t, float> losses;
  int64_t stepMicrobatches = -1;
  std::vector<std::string> trace; ///< "F0.f1": forward of function 1, mb 0.

  const llvm::json::Object &function(int32_t fn) {
    return *(*functions)[fn].getAsObject();
  }
  std::string kindOf(int32_t fn) {
    return function(fn).getString("kind")->str();
  }

  void define(int32_t id, Buffer buffer) {
    EXPECT_TRUE(defined.insert(id).second)
        << "value " << id << " defined twice";
    values[id] = std::move(buffer);
  }
  Buffer use(int32_t id) {
    auto it = values.find(id);
    if (it == values.end()) {
      ADD_FAILURE() << "value " << id << " used but not live";
      return allocate(1);
    }
    return it->second;
  }

  /// Calls function `fn` through its entry; returns its results.
  std::vector<Buffer> run(int32_t fn, const std::vector<Buffer> &args) {
    const llvm::json::Array &argRoles = *function(fn).getArray("args");
    const llvm::json::Array &resultRoles = *function(fn).getArray("results");
    EXPECT_EQ(args.size(), argRoles.size());
    std::vector<void *> buffers;
    for (auto [buffer, role] : llvm::zip(args, argRoles)) {
      EXPECT_EQ(buffer.count, elementsOf(*role.getAsObject()))
          << "function " << fn << ": argument size";
      buffers.push_back(buffer.data.get());
    }
    buffers.resize(args.size() + resultRoles.size(), nullptr);
    // A parameter's gradient slot holds its accumulator, which the
    // function adds into.
    for (auto [i, v] : llvm::enumerate(resultRoles)) {
      const llvm::json::Object &role = *v.getAsObject();
      if (*role.getString("role") != "param")
        continue;
      EXPECT_EQ(*role.getString("dtype"), "f64")
          << "function " << fn << ": the CPU's accumulators are float64";
      std::vector<double> &acc = grads[role.getString("param")->str()];
      acc.resize(elementsOf(role), 0.0);
      buffers[args.size() + i] = acc.data();
    }
    entries[fn](buffers.data());
    std::vector<Buffer> results;
    for (auto [i, role] : llvm::enumerate(resultRoles))
      results.push_back(*role.getAsObject()->getString("role") == "param"
                            ? Buffer()
                            : adopt(buffers[args.size() + i],
                                    elementsOf(*role.getAsObject())));
    return results;
  }

  /// The arguments of a backward half, bound from the handle by role.
  std::vector<Buffer> bindFromHandle(int32_t fn, Handle &h) {
    std::vector<Buffer> args;
    for (const llvm::json::Value &v : *function(fn).getArray("args")) {
      const llvm::json::Object &role = *v.getAsObject();
      StringRef kind = *role.getString("role");
      int64_t index = role.getInteger("index").value_or(-1);
      if (kind == "forward_arg")
        args.push_back(h.args.at(index));
      else if (kind == "saved")
        args.push_back(h.saved.at(index));
      else if (kind == "stash")
        args.push_back(h.stash.at(index));
      else if (kind == "grad_of_result" && h.grad0.data)
        args.push_back(h.grad0);
      else if (kind == "param")
        args.push_back(params.at(role.getString("param")->str()));
      else
        ADD_FAILURE() << "function " << fn << ": cannot bind role "
                      << kind.str();
    }
    return args;
  }

  /// Results of a backward half: the input gradient defined as `out0`, the
  /// stash kept (the gradients went into their accumulators).
  void takeBackwardResults(int32_t fn, Handle &h,
                           const std::vector<Buffer> &results, int32_t out0) {
    bool outSeen = false;
    for (auto [v, buffer] :
         llvm::zip(*function(fn).getArray("results"), results)) {
      const llvm::json::Object &role = *v.getAsObject();
      StringRef kind = *role.getString("role");
      if (kind == "param") {
        continue; // accumulated in place (run)
      } else if (kind == "grad_of_arg") {
        EXPECT_FALSE(outSeen) << "two input gradients";
        EXPECT_GE(out0, 0) << "function " << fn << " has no out0";
        outSeen = true;
        if (out0 >= 0)
          define(out0, buffer);
      } else if (kind == "stash") {
        int64_t k = *role.getInteger("index");
        h.stash.resize(std::max<size_t>(h.stash.size(), k + 1));
        h.stash[k] = buffer;
      } else {
        ADD_FAILURE() << "function " << fn << ": unexpected result "
                      << kind.str();
      }
    }
    EXPECT_EQ(outSeen, out0 >= 0);
  }
};

namespace {

//===----------------------------------------------------------------------===//
// The fake bp_rt_* functions
//===----------------------------------------------------------------------===//

void fakeLoadInput(bp_rt_context *c, int32_t value, int32_t kind, int64_t mb,
                   int64_t count) {
  c->trace.push_back("L" + std::to_string(mb));
  const std::vector<int32_t> &data =
      c->inputs.at(mb).at(kind == 0 ? "tokens" : "labels");
  EXPECT_EQ(count, static_cast<int64_t>(data.size()));
  Buffer buffer = allocate(count);
  std::memcpy(buffer.data.get(), data.data(), count * 4);
  c->define(value, buffer);
}

void fakeForward(bp_rt_context *c, int32_t fn, int64_t mb, int32_t in0,
                 int32_t in1, int32_t out0, int32_t saved) {
  c->trace.push_back("F" + std::to_string(mb) + ".f" + std::to_string(fn));
  EXPECT_EQ(c->kindOf(fn), "forward");
  std::vector<int32_t> bound;
  for (int32_t v : {in0, in1})
    if (v >= 0)
      bound.push_back(v);
  Handle h;
  h.fn = fn;
  size_t next = 0;
  for (const llvm::json::Value &v : *c->function(fn).getArray("args")) {
    const llvm::json::Object &role = *v.getAsObject();
    if (*role.getString("role") == "param")
      h.args.push_back(c->params.at(role.getString("param")->str()));
    else if (next < bound.size())
      h.args.push_back(c->use(bound[next++]));
    else
      ADD_FAILURE() << "forward " << fn << ": too few bound inputs";
  }
  EXPECT_EQ(next, bound.size()) << "forward " << fn << ": unused inputs";
  if (h.args.size() != c->function(fn).getArray("args")->size())
    return;

  std::vector<Buffer> results = c->run(fn, h.args);
  bool outSeen = false;
  for (auto [v, buffer] :
       llvm::zip(*c->function(fn).getArray("results"), results)) {
    const llvm::json::Object &role = *v.getAsObject();
    if (*role.getString("role") == "output") {
      EXPECT_FALSE(outSeen);
      outSeen = true;
      if (role.getArray("shape")->empty()) // The loss.
        c->losses[mb] = buffer.f()[0];
      c->define(out0, buffer);
    } else {
      int64_t k = *role.getInteger("index");
      h.saved.resize(std::max<size_t>(h.saved.size(), k + 1));
      h.saved[k] = buffer;
    }
  }
  EXPECT_TRUE(c->defined.insert(saved).second) << "handle " << saved;
  c->handles[saved] = std::move(h);
}

void fakeBackward(bp_rt_context *c, int32_t fn, int64_t mb, int32_t saved,
                  int32_t grad0, int32_t out0) {
  c->trace.push_back("B" + std::to_string(mb) + ".f" + std::to_string(fn));
  std::string kind = c->kindOf(fn);
  EXPECT_TRUE(kind == "backward" || kind == "backward_input") << kind;
  auto it = c->handles.find(saved);
  if (it == c->handles.end()) {
    ADD_FAILURE() << "backward on handle " << saved << ", which is not live";
    return;
  }
  Handle &h = it->second;
  if (grad0 >= 0)
    h.grad0 = c->use(grad0);
  c->takeBackwardResults(fn, h, c->run(fn, c->bindFromHandle(fn, h)), out0);
  if (kind == "backward")
    c->handles.erase(it);
}

void fakeWeightGrad(bp_rt_context *c, int32_t fn, int64_t mb, int32_t saved) {
  c->trace.push_back("W" + std::to_string(mb) + ".f" + std::to_string(fn));
  EXPECT_EQ(c->kindOf(fn), "backward_weight");
  auto it = c->handles.find(saved);
  if (it == c->handles.end()) {
    ADD_FAILURE() << "weight_grad on handle " << saved << ", not live";
    return;
  }
  c->takeBackwardResults(fn, it->second,
                         c->run(fn, c->bindFromHandle(fn, it->second)), -1);
  c->handles.erase(it);
}

void fakeLocalCopy(bp_rt_context *c, int32_t src, int32_t dst) {
  c->define(dst, c->use(src));
}

void fakeRelease(bp_rt_context *c, int32_t value) {
  EXPECT_EQ(c->values.erase(value), 1u)
      << "release of value " << value << ", which is not live";
}

void fakeAllReduceStart(bp_rt_context *c, int32_t bucket, int32_t token) {
  EXPECT_TRUE(c->tokens.insert(token).second);
}
void fakeAllReduceWait(bp_rt_context *c, int32_t token) {
  EXPECT_EQ(c->tokens.erase(token), 1u);
}

void fakeOptimizerStep(bp_rt_context *c, int64_t microbatches) {
  c->trace.push_back("S");
  c->stepMicrobatches = microbatches;
}

// One device: nothing is sent.
void fakeSend(bp_rt_context *, int32_t, int64_t, int32_t, int32_t) {
  ADD_FAILURE() << "bp_rt_send on one device";
}
void fakeRecv(bp_rt_context *, int32_t, int64_t, int32_t, int32_t) {
  ADD_FAILURE() << "bp_rt_recv on one device";
}
void fakeEndBatch(bp_rt_context *, int32_t) {
  ADD_FAILURE() << "bp_rt_end_batch on one device";
}

llvm::orc::SymbolMap fakeRuntimeSymbols(llvm::orc::MangleAndInterner interner) {
  llvm::orc::SymbolMap map = runtimeSymbols(interner);
  auto add = [&](const char *name, auto *fn) {
    map[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(fn),
                           llvm::JITSymbolFlags::Exported};
  };
  add("bp_rt_load_input", &fakeLoadInput);
  add("bp_rt_forward", &fakeForward);
  add("bp_rt_backward", &fakeBackward);
  add("bp_rt_weight_grad", &fakeWeightGrad);
  add("bp_rt_send", &fakeSend);
  add("bp_rt_recv", &fakeRecv);
  add("bp_rt_end_batch", &fakeEndBatch);
  add("bp_rt_local_copy", &fakeLocalCopy);
  add("bp_rt_allreduce_start", &fakeAllReduceStart);
  add("bp_rt_allreduce_wait", &fakeAllReduceWait);
  add("bp_rt_optimizer_step", &fakeOptimizerStep);
  add("bp_rt_release", &fakeRelease);
  return map;
}

//===----------------------------------------------------------------------===//
// Compiling and running a step
//===----------------------------------------------------------------------===//

constexpr int kMicrobatches = 2;

/// Parameters from the first seed, micro-batch m's inputs from seed + m.
std::vector<Data> makeMicrobatches(ModuleOp model) {
  std::vector<Data> data;
  for (int m = 0; m < kMicrobatches; ++m) {
    data.push_back(makeData(model, tinyGpt(), 1234 + m));
    data.back().params = data.front().params;
  }
  return data;
}

/// The address of symbol `name` of the JIT-compiled module, or null after a
/// failure.
template <typename T> T *lookupGlobal(ExecutionEngine &engine, StringRef name) {
  llvm::Expected<void *> address = engine.lookup(name);
  if (!address) {
    ADD_FAILURE() << name.str() << ": " << llvm::toString(address.takeError());
    return nullptr;
  }
  return static_cast<T *>(*address);
}

struct StepRun {
  bp_rt_context ctx;
  llvm::json::Value manifest = nullptr; ///< ctx.functions points into it.
  int32_t numEntries = 0;
};

/// Lowers the tiny GPT for `schedule` on one device and runs rank 0's
/// program once against the fake executor.
void runStep(StringRef schedule, StepRun &run) {
  MLIRContext context;
  registerEverything(context);
  OwningOpRef<ModuleOp> module = buildModel(context, tinyGpt());
  std::vector<Data> data = makeMicrobatches(*module);

  PipelineConfig options;
  options.request = {schedule.str(), /*devices=*/1, kMicrobatches};
  PassManager pm(&context);
  buildPipeline(pm, options);
  buildLowerToRuntimePipeline(pm);
  ASSERT_TRUE(succeeded(pm.run(*module))) << "lowering " << schedule.str();

  ExecutionEngineOptions engineOptions;
  auto engineOr = ExecutionEngine::create(*module, engineOptions);
  ASSERT_TRUE(bool(engineOr)) << llvm::toString(engineOr.takeError());
  ExecutionEngine &engine = **engineOr;
  engine.registerSymbols(fakeRuntimeSymbols);

  auto manifest = lookupGlobal<const char>(engine, "bitpipe_manifest");
  auto size = lookupGlobal<const int64_t>(engine, "bitpipe_manifest_size");
  auto entries =
      lookupGlobal<const bp_stage_entry_t>(engine, "bitpipe_stage_entries");
  auto numEntries =
      lookupGlobal<const int32_t>(engine, "bitpipe_num_stage_entries");
  auto ranks =
      lookupGlobal<const bp_rank_program_t>(engine, "bitpipe_rank_programs");
  auto numRanks = lookupGlobal<const int32_t>(engine, "bitpipe_num_ranks");
  ASSERT_TRUE(manifest && size && entries && numEntries && ranks && numRanks);
  run.numEntries = *numEntries;
  ASSERT_EQ(*numRanks, 1);

  auto json = llvm::json::parse(StringRef(manifest, *size));
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  run.manifest = std::move(*json);
  const llvm::json::Object &root = *run.manifest.getAsObject();
  EXPECT_EQ(root.getInteger("version"), BP_MANIFEST_VERSION);
  bp_rt_context &ctx = run.ctx;
  ctx.functions = root.getArray("functions");
  ASSERT_EQ(static_cast<int32_t>(ctx.functions->size()), run.numEntries);
  ctx.entries = entries;

  // Parameters as the manifest lists them, with the test's values (the
  // manifest's init would draw other numbers).
  for (const llvm::json::Value &v : *root.getArray("params")) {
    const llvm::json::Object &p = *v.getAsObject();
    std::string name = p.getString("name")->str();
    const std::vector<float> &values = data.front().params.at(name);
    ASSERT_EQ(elementsOf(p), static_cast<int64_t>(values.size())) << name;
    ctx.params[name] = allocate(values.size());
    std::memcpy(ctx.params[name].data.get(), values.data(), values.size() * 4);
  }
  for (const Data &d : data)
    ctx.inputs.push_back(d.inputs);

  ranks[0](&ctx);

  // Everything the program defined is gone at its end.
  EXPECT_TRUE(ctx.values.empty())
      << ctx.values.size() << " values never "
      << "released, the first " << ctx.values.begin()->first;
  EXPECT_TRUE(ctx.handles.empty()) << "handles never consumed";
  EXPECT_TRUE(ctx.tokens.empty()) << "all-reduces never waited";
  const llvm::json::Object &rank0 = *(*root.getArray("ranks"))[0].getAsObject();
  EXPECT_EQ(static_cast<int64_t>(ctx.defined.size()),
            *rank0.getInteger("num_values"));
}

//===----------------------------------------------------------------------===//
// The checks
//===----------------------------------------------------------------------===//

class ProgramExecution : public ::testing::TestWithParam<const char *> {
protected:
  static void SetUpTestSuite() {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  }
};

TEST_P(ProgramExecution, MatchesReference) {
  StepRun run;
  runStep(GetParam(), run);
  if (HasFatalFailure())
    return;
  const bp_rt_context &ctx = run.ctx;
  std::string trace = llvm::join(ctx.trace, " ");
  std::printf("%s: %d functions; %s\n", GetParam(), run.numEntries,
              trace.c_str());
  EXPECT_EQ(ctx.stepMicrobatches, kMicrobatches);
  ASSERT_EQ(ctx.losses.size(), static_cast<size_t>(kMicrobatches));

  MLIRContext context;
  registerEverything(context);
  OwningOpRef<ModuleOp> model = buildModel(context, tinyGpt());
  std::vector<Data> data = makeMicrobatches(*model);

  // (a) The loss of each micro-batch.
  for (int m = 0; m < kMicrobatches; ++m) {
    double ref = referenceLoss(*model, data[m]);
    EXPECT_LT(std::abs(ctx.losses.at(m) - ref) / std::abs(ref), 1e-4)
        << "micro-batch " << m << ": loss " << ctx.losses.at(m)
        << ", reference " << ref;
  }

  // (b) Gradients summed over the micro-batches, on each parameter's
  // largest entry, against central differences of the summed loss.
  ASSERT_EQ(ctx.grads.size(), data.front().params.size());
  const double h = 1e-4;
  for (const auto &[name, g] : ctx.grads) {
    int64_t top = 0;
    for (int64_t k = 0; k < static_cast<int64_t>(g.size()); ++k)
      if (std::abs(g[k]) > std::abs(g[top]))
        top = k;
    double fd = 0;
    for (const Data &d : data)
      fd += (referenceLoss(*model, d, name, top, h) -
             referenceLoss(*model, d, name, top, -h)) /
            (2 * h);
    EXPECT_GT(std::abs(fd), 1e-6) << "vacuous: the gradient of " << name;
    EXPECT_LT(std::abs(g[top] - fd) / std::abs(fd), 1e-2)
        << name << "[" << top << "]: compiled " << g[top]
        << ", finite differences " << fd;
  }
}

INSTANTIATE_TEST_SUITE_P(OneDevice, ProgramExecution,
                         ::testing::Values("gpipe", "interleaved-1f1b",
                                           "zb-h1"),
                         [](const auto &info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

} // namespace
