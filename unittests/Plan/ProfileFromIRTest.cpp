//===- ProfileFromIRTest.cpp - Profiles from IR, against the passes -------===//
//
// The planner cuts a model as bitpipe-partition does without running it
// (ModelProfile.h): these tests run the real passes on the same model and
// check that the stages agree, FLOPs, parameters and hand-off bytes alike.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Plan/ProfileFromIR.h"

#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Dialect/NN/IR/NNOps.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/InitAllDialects.h"
#include "bitpipe/Support/TensorBytes.h"
#include "bitpipe/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace mlir;
using namespace bitpipe;

namespace {

std::string example(const std::string &name) {
  return std::string(BITPIPE_SOURCE_DIR) + "/examples/" + name;
}

struct PassStage {
  double forwardFlops = 0, backwardFlops = 0, resultBytes = 0,
         paramElements = 0;
};

/// Runs annotate-cost and partition{chunks=S} and reads each stage
/// function as bitpipe-simulate does.
std::vector<PassStage> partitionWithPasses(MLIRContext &context,
                                           const ModelConfig &config, int S) {
  OwningOpRef<ModuleOp> module = buildModel(context, config);
  PassManager pm(&context);
  std::string pipeline =
      "bitpipe-annotate-cost,bitpipe-partition{chunks=" + std::to_string(S) +
      "}";
  EXPECT_TRUE(succeeded(parsePassPipeline(pipeline, pm)));
  EXPECT_TRUE(succeeded(pm.run(*module)));
  std::vector<std::pair<int64_t, PassStage>> stages;
  for (auto fn : module->getOps<func::FuncOp>()) {
    auto stage = fn->getAttrOfType<IntegerAttr>(attr::kStage);
    if (!stage)
      continue;
    PassStage st;
    fn.walk([&](Operation *op) {
      if (auto cost = op->getAttrOfType<nn::CostAttr>(nn::attr::kCost)) {
        st.forwardFlops += double(cost.getFwdFlops());
        st.backwardFlops += double(cost.getBwdFlops());
      }
    });
    for (Type t : fn.getResultTypes())
      st.resultBytes += estimatedTensorBytes(t);
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, nn::attr::kParam))
        st.paramElements += double(
            cast<RankedTensorType>(fn.getArgumentTypes()[i]).getNumElements());
    stages.push_back({stage.getInt(), st});
  }
  std::sort(stages.begin(), stages.end(),
            [](auto &a, auto &b) { return a.first < b.first; });
  std::vector<PassStage> out;
  for (auto &[i, st] : stages)
    out.push_back(st);
  return out;
}

class ProfileModel : public ::testing::Test {
protected:
  ProfileModel() {
    registerAllBitPipePasses();
    DialectRegistry registry;
    registerAllDialects(registry);
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
  }
  MLIRContext context;
};

TEST_F(ProfileModel, StagesAgreeWithThePartitionPass) {
  llvm::Expected<ModelConfig> config =
      loadModelConfig(example("gpt-tiny.json"));
  ASSERT_TRUE(bool(config)) << llvm::toString(config.takeError());
  llvm::Expected<std::unique_ptr<plan::ModelSource>> source =
      plan::ModelSource::open(example("gpt-tiny.json"));
  ASSERT_TRUE(bool(source)) << llvm::toString(source.takeError());
  EXPECT_TRUE((*source)->isConfig());
  EXPECT_EQ((*source)->seqLen(), 32);
  EXPECT_EQ((*source)->defaultMicrobatchSize(), 4);

  for (int64_t size : {1, 4}) {
    sched::Result<plan::ModelProfile> profile = (*source)->profile(size);
    ASSERT_TRUE(profile) << profile.error;
    EXPECT_EQ(profile->microbatchSize, size);
    // GPT: embedding, 6 layers, head.
    ASSERT_EQ(profile->layers.size(), 8u);
    // The statistics each unit keeps (docs/architecture.md, "Saved
    // statistics"): a layer's two layer norms (mean and rstd, 8 bytes a
    // row) and attention's log-sum-exps (4 bytes a row per head, 4 heads);
    // the head's final norm and cross-entropy (8 bytes a row each). What
    // recomputing them costs is their ops' forwards, part of the unit's.
    const double rows = 32.0 * double(size);
    EXPECT_DOUBLE_EQ(profile->layers[0].statisticBytes, 0);
    for (int l = 1; l <= 6; ++l)
      EXPECT_DOUBLE_EQ(profile->layers[l].statisticBytes,
                       2 * 8 * rows + 4 * 4 * rows);
    EXPECT_DOUBLE_EQ(profile->layers[7].statisticBytes, 8 * rows + 8 * rows);
    for (int l = 1; l <= 7; ++l) {
      EXPECT_GT(profile->layers[l].statisticFlops, 0);
      EXPECT_LT(profile->layers[l].statisticFlops,
                profile->layers[l].forwardFlops);
    }
    ModelConfig sized = *config;
    sized.microbatchSize = size;
    for (int S : {1, 2, 3, 5, 8}) {
      sched::Result<std::vector<plan::StageProfile>> mine =
          plan::stageProfiles(*profile, S);
      ASSERT_TRUE(mine) << mine.error;
      std::vector<PassStage> theirs = partitionWithPasses(context, sized, S);
      ASSERT_EQ(theirs.size(), size_t(S));
      for (int s = 0; s < S; ++s) {
        SCOPED_TRACE("micro-batch " + std::to_string(size) + ", " +
                     std::to_string(S) + " stages, stage " + std::to_string(s));
        EXPECT_DOUBLE_EQ((*mine)[s].forwardFlops, theirs[s].forwardFlops);
        EXPECT_DOUBLE_EQ((*mine)[s].backwardFlops, theirs[s].backwardFlops);
        // The last stage's results are the loss, which goes nowhere.
        if (s + 1 < S) {
          EXPECT_DOUBLE_EQ((*mine)[s].boundaryBytes, theirs[s].resultBytes);
        }
        // The tied embedding is a parameter of the first and last units;
        // a stage holding both holds it once (docs/planning.md, "Limits").
        if (S > 1) {
          EXPECT_DOUBLE_EQ((*mine)[s].parameters, theirs[s].paramElements);
        }
      }
    }
  }
}

/// The cost analysis's FLOPs by kernel shape (sched::ComputeWork): a GPT
/// layer's four linears and its causal attention, the rest apart, summing
/// to the unit's FLOPs; the head's tied projection onto the vocabulary.
TEST_F(ProfileModel, WorkSplitsTheFlopsByKernelShape) {
  llvm::Expected<std::unique_ptr<plan::ModelSource>> source =
      plan::ModelSource::open(example("gpt-tiny.json"));
  ASSERT_TRUE(bool(source)) << llvm::toString(source.takeError());
  sched::Result<plan::ModelProfile> profile = (*source)->profile(2);
  ASSERT_TRUE(profile) << profile.error;
  const int64_t tokens = 2 * 32, H = 64;
  for (const plan::LayerProfile &l : profile->layers) {
    const sched::ComputeWork &w = l.work;
    EXPECT_DOUBLE_EQ(w.forwardFlops(), l.forwardFlops) << l.kind;
    EXPECT_DOUBLE_EQ(w.inputGradFlops() + w.weightGradFlops(), l.backwardFlops)
        << l.kind;
  }
  const sched::ComputeWork &layer = profile->layers[1].work;
  ASSERT_EQ(layer.linears.size(), 4u);
  // Sorted by (tokens, in, out): the attention's output projection, qkv,
  // the MLP's up and down projections, one of each.
  EXPECT_EQ(layer.linears[0].shape, (sched::LinearShape{tokens, H, H}));
  EXPECT_EQ(layer.linears[1].shape, (sched::LinearShape{tokens, H, 3 * H}));
  EXPECT_EQ(layer.linears[2].shape, (sched::LinearShape{tokens, H, 4 * H}));
  EXPECT_EQ(layer.linears[3].shape, (sched::LinearShape{tokens, 4 * H, H}));
  for (const sched::LinearWork &l : layer.linears)
    EXPECT_EQ(l.count, 1);
  ASSERT_EQ(layer.attentions.size(), 1u);
  EXPECT_EQ(layer.attentions[0].shape, (sched::AttentionShape{32, 16, true}));
  EXPECT_GT(layer.otherForwardFlops, 0);
  const sched::ComputeWork &head = profile->layers.back().work;
  ASSERT_EQ(head.linears.size(), 1u);
  EXPECT_EQ(head.linears[0].shape, (sched::LinearShape{tokens, H, 256}));
}

TEST_F(ProfileModel, ModelIrFixesTheMicrobatchSize) {
  llvm::Expected<ModelConfig> config =
      loadModelConfig(example("gpt-tiny.json"));
  ASSERT_TRUE(bool(config));
  OwningOpRef<ModuleOp> module = buildModel(context, *config);
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("plan-model", "mlir", path));
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    ASSERT_FALSE(ec);
    module->print(os);
  }
  llvm::Expected<std::unique_ptr<plan::ModelSource>> source =
      plan::ModelSource::open(std::string(path));
  ASSERT_TRUE(bool(source)) << llvm::toString(source.takeError());
  EXPECT_FALSE((*source)->isConfig());
  EXPECT_TRUE((*source)->fixesMicrobatchSize());
  EXPECT_EQ((*source)->defaultMicrobatchSize(), 4);
  EXPECT_TRUE((*source)->profile(4));
  sched::Result<plan::ModelProfile> other = (*source)->profile(2);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error.find("fixes the micro-batch size at 4"),
            std::string::npos)
      << other.error;
  llvm::sys::fs::remove(path);
}

TEST_F(ProfileModel, ErrorsNameTheFile) {
  llvm::Expected<std::unique_ptr<plan::ModelSource>> missing =
      plan::ModelSource::open("/nonexistent/model.mlir");
  ASSERT_FALSE(bool(missing));
  EXPECT_NE(llvm::toString(missing.takeError()).find("/nonexistent/model.mlir"),
            std::string::npos);
}

} // namespace
