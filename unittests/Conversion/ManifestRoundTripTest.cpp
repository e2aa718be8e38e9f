//===- ManifestRoundTripTest.cpp - The manifest, written and read back ----===//
//
// The compiler fills the manifest (lib/Conversion/ProgramToRuntime) and the
// runtime checks what it says (runtime/lib/exec/Manifest.cpp); both through
// its one definition, bitpipe/base/ManifestFormat.h (structs, writer,
// reader), with its words from bitpipe/abi/ManifestKeys.def. This test
// holds the two sides to each other on real programs:
// examples/gpt-tiny.json, compiled for every schedule, on one pipeline and
// on two data-parallel copies of it, through bitpipe-pipeline and
// bitpipe-lower-to-runtime as bitpipe-compile runs them. The manifest
// global of the lowered module is read back and written again, byte for
// byte, and goes through the runtime's own reader, and everything that
// reader returns is compared with what the scheduled module said before the
// lowering:
//   - the model (the configuration file) and the schedule (the options);
//   - functions: exactly the callees of the programs' compute ops, each
//     with the kind and stage its calls give it, and one role per argument
//     and result, with the shape and dtype of the function's type;
//   - params: exactly the parameters the forward functions take, each
//     held by some rank;
//   - ranks: one per program, with its number of values (one per SSA
//     result), its data-parallel copy, the parameters of the forward
//     functions it calls, and its all-reduce buckets (group members and
//     gradients, in bucket order).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Conversion/LowerToRuntime/LowerToRuntime.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/Import/ModelConfig.h"
#include "bitpipe/Transforms/Pipeline.h"
#include "bitpipe/base/ManifestFormat.h"
#include "bitpipe/program.h"

#include "exec/Manifest.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/Error.h"

#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

using namespace mlir;
using namespace bitpipe;
namespace rt = bitpipe::runtime;

namespace {

//===----------------------------------------------------------------------===//
// What the scheduled module says
//===----------------------------------------------------------------------===//

/// A callee, as its calls and its type say. Types, not the func.func: the
/// lowering replaces the functions (types live in the context).
struct CalledFunction {
  rt::FunctionKind kind;
  int64_t stage;
  FunctionType type;
};

struct Bucket {
  std::vector<int64_t> group;
  std::vector<std::string> grads;
};

struct Program {
  int64_t numValues = 0;
  std::set<std::string> forwards; ///< Forward functions it calls.
  std::vector<Bucket> buckets;    ///< By bucket number.
};

/// The scheduled module's account of the functions and programs, read from
/// its ops before bitpipe-lower-to-runtime replaces them.
struct Scheduled {
  std::map<std::string, CalledFunction> functions;
  std::map<int64_t, Program> programs; ///< By rank.
};

/// The kind the runtime must give the callee of \p op: a backward whose
/// handle a weight_grad also consumes is an input half.
rt::FunctionKind kindOfCall(Operation *op) {
  if (isa<bp::ForwardOp>(op))
    return rt::FunctionKind::Forward;
  if (isa<bp::WeightGradOp>(op))
    return rt::FunctionKind::BackwardWeight;
  Value saved = cast<bp::BackwardOp>(op).getSaved();
  bool split = llvm::any_of(saved.getUsers(), [](Operation *user) {
    return isa<bp::WeightGradOp>(user);
  });
  return split ? rt::FunctionKind::BackwardInput : rt::FunctionKind::Backward;
}

Scheduled readScheduled(ModuleOp module) {
  Scheduled e;
  SymbolTable symbols(module);
  for (auto program : module.getOps<bp::ProgramOp>()) {
    Program &p = e.programs[program.getRank()];
    std::map<int64_t, Bucket> buckets;
    for (Operation &op : program.getBody().front()) {
      p.numValues += op.getNumResults();
      FlatSymbolRefAttr callee;
      int64_t stage = -1;
      if (auto f = dyn_cast<bp::ForwardOp>(op)) {
        callee = f.getCalleeAttr();
        stage = f.getStage();
        p.forwards.insert(callee.getValue().str());
      } else if (auto b = dyn_cast<bp::BackwardOp>(op)) {
        callee = b.getCalleeAttr();
        stage = b.getStage();
      } else if (auto w = dyn_cast<bp::WeightGradOp>(op)) {
        callee = w.getCalleeAttr();
        stage = w.getStage();
      } else if (auto start = dyn_cast<bp::AllReduceStartOp>(op)) {
        Bucket &bucket = buckets[start.getBucket()];
        bucket.group.assign(start.getGroup().begin(), start.getGroup().end());
        if (ArrayAttr grads = start.getGradsAttr())
          for (StringRef grad : grads.getAsValueRange<StringAttr>())
            bucket.grads.push_back(grad.str());
      }
      if (callee)
        e.functions[callee.getValue().str()] = {
            kindOfCall(&op), stage,
            symbols.lookup<func::FuncOp>(callee.getValue()).getFunctionType()};
    }
    for (auto &[index, bucket] : buckets)
      p.buckets.push_back(std::move(bucket));
  }
  return e;
}

//===----------------------------------------------------------------------===//
// Compiling
//===----------------------------------------------------------------------===//

struct Case {
  const char *schedule;
  int dataParallel;
};

void PrintTo(const Case &c, std::ostream *os) {
  *os << c.schedule << " dp=" << c.dataParallel;
}

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string name = info.param.schedule;
  for (char &c : name)
    if (!isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name + "_dp" + std::to_string(info.param.dataParallel);
}

constexpr int kDevices = 4;
constexpr int kMicrobatches = 8;

class ManifestRoundTrip : public ::testing::TestWithParam<Case> {
protected:
  void SetUp() override {
    DialectRegistry registry;
    registry.insert<nn::NNDialect, bp::BitPipeDialect, arith::ArithDialect,
                    func::FuncDialect, LLVM::LLVMDialect, memref::MemRefDialect,
                    tensor::TensorDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();

    llvm::Expected<ModelConfig> loaded =
        loadModelConfig(BITPIPE_EXAMPLES_DIR "/gpt-tiny.json");
    ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
    config = *loaded;
    module = buildModel(context, config);
    ASSERT_TRUE(module);
  }

  /// Schedules the model as bitpipe-compile does, then lowers it; returns
  /// the manifest text of the lowered module's globals.
  std::string compile(const Case &c) {
    PipelineConfig options;
    options.request.schedule = c.schedule;
    options.request.devices = kDevices;
    options.request.microbatches = kMicrobatches;
    options.request.dataParallel = c.dataParallel;
    PassManager schedule(&context);
    buildPipeline(schedule, options);
    if (failed(schedule.run(*module))) {
      ADD_FAILURE() << "bitpipe-pipeline failed for " << c.schedule;
      return "";
    }
    expected = readScheduled(*module);

    PassManager lower(&context);
    buildLowerToRuntimePipeline(lower);
    if (failed(lower.run(*module))) {
      ADD_FAILURE() << "bitpipe-lower-to-runtime failed for " << c.schedule;
      return "";
    }
    auto text = module->lookupSymbol<LLVM::GlobalOp>("bitpipe_manifest");
    auto size = module->lookupSymbol<LLVM::GlobalOp>("bitpipe_manifest_size");
    if (!text || !size) {
      ADD_FAILURE() << "the lowered module has no manifest globals";
      return "";
    }
    std::string manifest = cast<StringAttr>(*text.getValue()).str();
    EXPECT_EQ(cast<IntegerAttr>(*size.getValue()).getInt(),
              static_cast<int64_t>(manifest.size()));
    return manifest;
  }

  MLIRContext context;
  ModelConfig config;
  OwningOpRef<ModuleOp> module;
  Scheduled expected;
};

std::vector<int64_t> shapeOf(Type type) {
  ArrayRef<int64_t> shape = cast<RankedTensorType>(type).getShape();
  return {shape.begin(), shape.end()};
}

rt::DType dtypeOf(Type type) {
  return cast<RankedTensorType>(type).getElementType().isF32() ? rt::DType::F32
                                                               : rt::DType::I32;
}

/// Each role of \p roles has the shape and dtype of the value of \p types
/// at its position; a parameter gradient's slot holds \p target's
/// accumulator.
void expectRolesFit(const std::vector<rt::Role> &roles, TypeRange types,
                    const rt::TargetSpec &target, const std::string &where) {
  ASSERT_EQ(roles.size(), types.size()) << where;
  for (size_t i = 0; i < roles.size(); ++i) {
    EXPECT_EQ(roles[i].shape, shapeOf(types[i])) << where << " #" << i;
    EXPECT_EQ(roles[i].dtype, roles[i].kind == rt::RoleKind::Param &&
                                      where.find("result") != std::string::npos
                                  ? target.gradientDType()
                                  : dtypeOf(types[i]))
        << where << " #" << i;
  }
}

TEST_P(ManifestRoundTrip, TheRuntimeReadsWhatTheCompilerWrote) {
  const Case &c = GetParam();
  std::string text = compile(c);
  ASSERT_FALSE(text.empty());

  // The version the runtime reads: the one constant of program.h both
  // sides are built with.
  std::string version =
      "{\"version\":" + std::to_string(BP_MANIFEST_VERSION) + ",";
  EXPECT_EQ(text.substr(0, version.size()), version);

  // One definition: what the reader makes of the compiler's text, the
  // writer spells again byte for byte.
  rt::Expected<manifest::Manifest> doc = manifest::readManifest(text);
  ASSERT_TRUE(doc.isOk()) << doc.status().message();
  EXPECT_EQ(manifest::writeManifest(*doc), text);

  rt::Expected<rt::Manifest> read = rt::parseManifest(text);
  ASSERT_TRUE(read.isOk()) << read.status().message();
  const rt::Manifest &m = *read;

  // The model and the schedule.
  EXPECT_EQ(m.model.name, config.name);
  EXPECT_EQ(m.model.family, rt::ModelFamily::Gpt);
  EXPECT_EQ(m.model.vocab, config.vocab);
  EXPECT_EQ(m.model.seqLen, config.seqLen);
  EXPECT_EQ(m.model.microbatchSize, config.microbatchSize);
  EXPECT_EQ(m.schedule.name, c.schedule);
  EXPECT_EQ(m.schedule.microbatches, kMicrobatches);
  EXPECT_EQ(m.schedule.devices, kDevices);
  EXPECT_EQ(m.schedule.dataParallel, c.dataParallel);
  EXPECT_EQ(m.schedule.worldSize, kDevices * c.dataParallel);

  // Functions: the programs' callees, once each.
  std::set<std::string> listed;
  std::set<std::string> paramsOfForwards;
  std::map<std::string, std::set<std::string>> paramsOf; // forward -> names
  for (const rt::StageFunction &f : m.functions) {
    SCOPED_TRACE(f.name);
    EXPECT_TRUE(listed.insert(f.name).second) << "listed twice";
    auto it = expected.functions.find(f.name);
    ASSERT_NE(it, expected.functions.end()) << "no program calls it";
    EXPECT_EQ(f.kind, it->second.kind);
    EXPECT_EQ(f.stage, it->second.stage);
    FunctionType type = it->second.type;
    expectRolesFit(f.args, type.getInputs(), m.target, f.name + " argument");
    expectRolesFit(f.results, type.getResults(), m.target, f.name + " result");
    if (f.kind == rt::FunctionKind::Forward)
      for (const rt::Role &role : f.args)
        if (role.kind == rt::RoleKind::Param) {
          paramsOf[f.name].insert(m.params[role.param].name);
          paramsOfForwards.insert(m.params[role.param].name);
        }
  }
  EXPECT_EQ(listed.size(), expected.functions.size());

  // Params: exactly those of the forward functions, each held somewhere.
  std::set<std::string> params;
  for (size_t p = 0; p < m.params.size(); ++p) {
    params.insert(m.params[p].name);
    EXPECT_GE(m.ownerRank(static_cast<int>(p)), 0) << m.params[p].name;
  }
  EXPECT_EQ(params, paramsOfForwards);

  // Ranks: one per pipeline rank, whatever the copy count, as the program
  // says (docs/data-parallel.md).
  ASSERT_EQ(m.ranks.size(), expected.programs.size());
  ASSERT_EQ(static_cast<int>(m.ranks.size()), kDevices);
  for (auto &[rank, program] : expected.programs) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_LT(rank, static_cast<int64_t>(m.ranks.size()));
    const rt::RankSpec &r = m.ranks[rank];
    EXPECT_EQ(r.numValues, program.numValues);
    // Every copy runs it: world rank c * D + p is pipeline rank p.
    for (int c = 0; c < GetParam().dataParallel; ++c) {
      int w = m.worldRank(c, static_cast<int>(rank));
      EXPECT_EQ(m.copyOf(w), c);
      EXPECT_EQ(&m.rankSpec(w), &r);
    }
    std::set<std::string> held, want;
    for (int p : r.params)
      held.insert(m.params[p].name);
    for (const std::string &fwd : program.forwards)
      want.insert(paramsOf[fwd].begin(), paramsOf[fwd].end());
    EXPECT_EQ(held, want);
    ASSERT_EQ(r.buckets.size(), program.buckets.size());
    for (size_t b = 0; b < r.buckets.size(); ++b) {
      const std::vector<int> &group = m.groups[r.buckets[b].group];
      EXPECT_EQ(std::vector<int64_t>(group.begin(), group.end()),
                program.buckets[b].group)
          << "bucket " << b;
      // The group spans its pipeline ranks in every copy.
      EXPECT_EQ(m.worldGroup(r.buckets[b].group).size(),
                group.size() * GetParam().dataParallel)
          << "bucket " << b;
      std::vector<std::string> grads;
      for (int p : r.buckets[b].params)
        grads.push_back(m.params[p].name);
      EXPECT_EQ(grads, program.buckets[b].grads) << "bucket " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    EverySchedule, ManifestRoundTrip,
    ::testing::Values(Case{"gpipe", 1}, Case{"gpipe", 2}, Case{"1f1b", 1},
                      Case{"1f1b", 2}, Case{"interleaved-1f1b", 1},
                      Case{"interleaved-1f1b", 2}, Case{"chimera", 1},
                      Case{"chimera", 2}, Case{"bitpipe", 1},
                      Case{"bitpipe", 2}, Case{"zb-h1", 1}, Case{"zb-h1", 2}),
    caseName);

} // namespace
