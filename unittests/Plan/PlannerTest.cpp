//===- PlannerTest.cpp - The planner's search, on hand-made models --------===//
//
// Profiles built by hand, so that the best configuration and its numbers
// can be worked out on paper (docs/planning.md).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Plan/Planner.h"
#include "bitpipe/Plan/Report.h"
#include "bitpipe/Schedule/Registry.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace bitpipe;
using namespace bitpipe::plan;

namespace {

/// One node of `gpus` GPUs whose achievable speed is 1e12 FLOP/s, with
/// free links (latency 0, a bandwidth no test's bytes notice).
sched::Cluster freeCluster(int gpus, double memory = 1e12) {
  sched::Cluster c;
  c.name = "test";
  c.nodes = 1;
  c.gpusPerNode = gpus;
  c.gpuMemoryBytes = memory;
  c.peakBf16Flops = 1e12;
  c.achievableFraction = 1;
  c.intraNode = {0, 1e30};
  return c;
}

/// One linear of 2 * tokens * 1000 * 62500 = 1e9 FLOPs a sequence (8
/// tokens): a uniform unit's work, at whatever rate its shape runs.
constexpr int64_t kUnitIn = 1000, kUnitOut = 62500;

/// `units` identical units: forward 1 ms, backward 2 ms at 1e12 FLOP/s per
/// sequence (one linear: B and W 1 ms each), `params` parameters, `act`
/// activation bytes per sequence, and a hand-off of `boundary` bytes per
/// sequence from each unit to the next.
ModelProfile uniformModel(int units, int64_t microbatchSize, double params,
                          double act, double boundary = 0) {
  ModelProfile m;
  m.name = "uniform";
  m.seqLen = 8;
  m.microbatchSize = microbatchSize;
  for (int u = 0; u < units; ++u) {
    LayerProfile l;
    l.kind = "transformer";
    l.forwardFlops = 1e9 * microbatchSize;
    l.backwardFlops = 2e9 * microbatchSize;
    l.work.addLinear({8 * microbatchSize, kUnitIn, kUnitOut}, 1);
    l.parameters = params;
    l.activationBytes = act * microbatchSize;
    m.layers.push_back(l);
    if (u + 1 < units)
      m.crossings.push_back({u, u + 1, boundary * microbatchSize});
  }
  return m;
}

ProfileSource uniform(int units, double params, double act,
                      double boundary = 0) {
  return [=](int64_t size, sched::PartitionUnits) {
    return sched::Result<ModelProfile>::success(
        uniformModel(units, size, params, act, boundary));
  };
}

PlanRequest request(int64_t batch, std::vector<std::string> schedules = {}) {
  PlanRequest r;
  r.globalBatch = batch;
  r.microbatchSizes = {1};
  r.schedules = std::move(schedules);
  r.precision = sched::ComputePrecision::Fp32;
  // The tests' caps are what a rank may use; the headroom's own tests set
  // it.
  r.memoryHeadroomFraction = 0;
  return r;
}

int64_t rejectedFor(const PlanResult &r, Rejection reason) {
  return r.rejections[static_cast<int>(reason)].count;
}

TEST(StageProfiles, CutsAsThePartitionerAndSumsEachStage) {
  ModelProfile m = uniformModel(4, 1, 10, 100, 7);
  // A value from unit 0 read by unit 3 crosses every cut between them.
  m.crossings.push_back({0, 3, 1000});
  sched::Result<std::vector<StageProfile>> two = stageProfiles(m, 2);
  ASSERT_TRUE(two) << two.error;
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[0].firstLayer, 0);
  EXPECT_EQ((*two)[0].lastLayer, 1);
  EXPECT_EQ((*two)[1].firstLayer, 2);
  EXPECT_DOUBLE_EQ((*two)[0].forwardFlops, 2e9);
  EXPECT_DOUBLE_EQ((*two)[0].backwardFlops, 4e9);
  EXPECT_DOUBLE_EQ((*two)[0].parameters, 20);
  EXPECT_DOUBLE_EQ((*two)[0].activationBytes, 200);
  // Unit 1 -> 2 (7 bytes) and unit 0 -> 3 (1000 bytes) leave stage 0.
  EXPECT_DOUBLE_EQ((*two)[0].boundaryBytes, 1007);
  EXPECT_DOUBLE_EQ((*two)[1].boundaryBytes, 0);

  EXPECT_FALSE(stageProfiles(m, 5));
  EXPECT_FALSE(stageProfiles(m, 0));
}

/// freeCluster's GPUs with rates by kernel shape: the uniform units'
/// products run at 1e11 FLOP/s on micro-batches of one sequence (8 tokens)
/// and at 1e12 on micro-batches of 8 (64 tokens).
sched::Cluster measuredCluster(int gpus) {
  sched::Cluster c = freeCluster(gpus);
  std::vector<sched::LinearRate> linear;
  for (auto [tokens, rate] : {std::pair<int64_t, double>{8, 1e11}, {64, 1e12}})
    linear.push_back({{tokens, kUnitIn, kUnitOut}, rate, rate, rate});
  std::vector<sched::AttentionRate> attention;
  for (bool causal : {false, true})
    attention.push_back({{128, 64, causal}, 1e12, 1e12});
  sched::Result<sched::KernelRates> rates =
      sched::KernelRates::create(linear, attention, 1e12, "by hand", "test");
  EXPECT_TRUE(rates) << rates.error;
  c.kernelRates = *rates;
  return c;
}

// At one rate, micro-batches of one sequence win (64 of them: the pipeline
// fills for 3 of 67 slots of 3 ms); at the measured rates their small
// products run at a tenth of the speed of micro-batches of 8, which win.
TEST(Planner, SmallMicrobatchesPayForTheirSmallProducts) {
  PlanRequest req = request(64, {"1f1b"});
  req.devices = {4};
  req.microbatchSizes = {1, 8};
  sched::Result<PlanResult> flat =
      search(req, freeCluster(4), uniform(8, 0, 100));
  sched::Result<PlanResult> measured =
      search(req, measuredCluster(4), uniform(8, 0, 100));
  ASSERT_TRUE(flat && measured);
  ASSERT_FALSE(flat->ranked.empty() || measured->ranked.empty());
  EXPECT_EQ(flat->ranked.front().config.microbatchSize, 1);
  EXPECT_EQ(measured->ranked.front().config.microbatchSize, 8);
  // 8 micro-batches of 8 sequences, stages of 2 units: (8 + 3) x 3 ms x 2 x
  // 8 at 1e12 either way.
  const Estimate &best = measured->ranked.front();
  EXPECT_NEAR(best.stepTime, 11 * 0.048, 1e-9);
}

// A split backward's halves run at the cluster's split_fraction of the
// rates; an unsplit one does not. On one device (no bubble) zb-h1's step is
// N (F + (B + W) / fraction): halving the fraction twice adds twice as
// much the second time.
TEST(Planner, ASplitBackwardRunsAtTheClustersSplitFraction) {
  auto step = [](const char *schedule, double fraction) {
    PlanConfig config;
    config.schedule = schedule;
    config.devices = 1;
    config.dataParallel = 1;
    config.microbatchSize = 1;
    config.microbatches = 4;
    sched::Cluster c = measuredCluster(1);
    c.kernelRates->splitFraction = fraction;
    sched::Result<Estimate> e =
        evaluate(config, uniformModel(4, 1, 1e6, 0), c, request(4));
    EXPECT_TRUE(e) << e.error;
    return e ? e->stepTime : -1.0;
  };
  const double whole = step("zb-h1", 1), half = step("zb-h1", 0.5),
               quarter = step("zb-h1", 0.25);
  EXPECT_GT(half, whole);
  EXPECT_NEAR(quarter - half, 2 * (half - whole), 1e-12);
  EXPECT_DOUBLE_EQ(step("1f1b", 0.5), step("1f1b", 1));
  EXPECT_NEAR(step("1f1b", 1), whole, 1e-12);
}

// Two GPUs, global batch 4, micro-batches of one sequence, 4 units of
// F = 1 ms and B = 2 ms. Data parallel (D=1, dp=2, N=2): each copy runs
// 2 x (4 + 8) ms = 24 ms, and the free all-reduce adds nothing. Pipelined
// (D=2, dp=1, N=4, stages of F = 2 ms, B = 4 ms): 1F1B takes
// (N + D - 1)(F + B) = 5 x 6 = 30 ms. GPipe ties 1F1B at D=1 but keeps both
// micro-batches' activations: 1F1B wins on memory.
TEST(Planner, PicksTheKnownBestOfATinyCase) {
  sched::Result<PlanResult> r =
      search(request(4, {"gpipe", "1f1b"}), freeCluster(2), uniform(4, 0, 100));
  ASSERT_TRUE(r) << r.error;
  ASSERT_EQ(r->ranked.size(), 4u);
  const Estimate &best = r->ranked[0];
  EXPECT_EQ(best.config.schedule, "1f1b");
  EXPECT_EQ(best.config.devices, 1);
  EXPECT_EQ(best.config.dataParallel, 2);
  EXPECT_EQ(best.config.microbatches, 2);
  EXPECT_NEAR(best.stepTime, 0.024, 1e-12);
  EXPECT_NEAR(best.tokensPerSecond, 4 * 8 / 0.024, 1e-6);
  EXPECT_NEAR(best.bubble, 0, 1e-12);
  // 1F1B at D=1 keeps one micro-batch's 4 units of activations.
  EXPECT_DOUBLE_EQ(best.peakMemory.activations, 400);
  EXPECT_EQ(r->ranked[1].config.schedule, "gpipe");
  EXPECT_DOUBLE_EQ(r->ranked[1].peakMemory.activations, 800);
  EXPECT_NEAR(r->ranked[2].stepTime, 0.030, 1e-12);
  EXPECT_EQ(r->ranked[2].config.devices, 2);
  EXPECT_EQ(r->rejected(), 0);
  EXPECT_EQ(r->considered, 4);
}

TEST(Planner, RanksByStepTime) {
  sched::Result<PlanResult> r =
      search(request(16), freeCluster(4), uniform(8, 1000, 100, 64));
  ASSERT_TRUE(r) << r.error;
  ASSERT_GT(r->ranked.size(), 5u);
  for (size_t i = 1; i < r->ranked.size(); ++i)
    EXPECT_LE(r->ranked[i - 1].stepTime, r->ranked[i].stepTime) << i;
}

TEST(Planner, RespectsTheMemoryCapAndCountsWhatItRejects) {
  PlanRequest req = request(8);
  req.microbatchSizes = {1, 2};
  sched::Result<PlanResult> free =
      search(req, freeCluster(4), uniform(8, 1000, 1e6));
  ASSERT_TRUE(free) << free.error;
  // A cap between the smallest and the largest peak rejects some.
  double low = 1e300, high = 0;
  for (const Estimate &e : free->ranked) {
    low = std::min(low, e.peakMemory.total());
    high = std::max(high, e.peakMemory.total());
  }
  ASSERT_LT(low, high);
  req.memoryCapBytes = (low + high) / 2;
  sched::Result<PlanResult> capped =
      search(req, freeCluster(4), uniform(8, 1000, 1e6));
  ASSERT_TRUE(capped) << capped.error;
  EXPECT_FALSE(capped->ranked.empty());
  for (const Estimate &e : capped->ranked)
    EXPECT_LE(e.peakMemory.total(), req.memoryCapBytes);
  int64_t over = 0;
  for (const Estimate &e : free->ranked)
    over += e.peakMemory.total() > req.memoryCapBytes;
  EXPECT_EQ(rejectedFor(*capped, Rejection::Memory) +
                rejectedFor(*capped, Rejection::MemoryStates) -
                rejectedFor(*free, Rejection::MemoryStates),
            over);
  EXPECT_EQ(capped->considered, free->considered);
  int64_t counted = 0;
  for (const RejectionCount &c : capped->rejections)
    counted += c.count;
  EXPECT_EQ(counted + int64_t(capped->ranked.size()), capped->considered);
  EXPECT_FALSE(capped->rejections[int(Rejection::Memory)].example.empty());
}

// Full recomputation (docs/recompute.md): a stage keeps only its input per
// micro-batch in flight and runs its forward again in its backward. On a
// model whose units keep 1 MB a sequence and hand on 1 kB, it fits caps
// that no configuration fits without, and costs each backward a forward.
TEST(Planner, FullRecomputationTradesItsForwardForTheActivations) {
  PlanRequest req = request(8, {"1f1b"});
  req.devices = {4};
  ProfileSource model = uniform(8, 1000, 1e6, 1e3);
  sched::Result<PlanResult> keep = search(req, freeCluster(4), model);
  ASSERT_TRUE(keep) << keep.error;
  ASSERT_FALSE(keep->ranked.empty());
  const Estimate &best = keep->ranked.front();

  req.recompute = sched::Recompute::Full;
  sched::Result<PlanResult> full = search(req, freeCluster(4), model);
  ASSERT_TRUE(full) << full.error;
  ASSERT_FALSE(full->ranked.empty());
  const Estimate &recomputing = full->ranked.front();
  EXPECT_EQ(recomputing.config.recompute, sched::Recompute::Full);
  // Backward 2 ms -> 3 ms a unit: the step is longer, the activations far
  // smaller (inputs of 1 kB a sequence instead of 2 MB a stage).
  EXPECT_GT(recomputing.stepTime, best.stepTime * 1.2);
  EXPECT_LT(recomputing.peakMemory.activations,
            best.peakMemory.activations / 100);

  // A cap below every configuration that keeps its activations: nothing
  // fits, unless a configuration may recompute to fit.
  req.recompute = sched::Recompute::None;
  req.memoryCapBytes = recomputing.peakMemory.total() * 1.01;
  ASSERT_LT(req.memoryCapBytes, best.peakMemory.total());
  sched::Result<PlanResult> capped = search(req, freeCluster(4), model);
  EXPECT_FALSE(capped && !capped->ranked.empty());
  req.recomputeToFit = true;
  sched::Result<PlanResult> fitted = search(req, freeCluster(4), model);
  ASSERT_TRUE(fitted) << fitted.error;
  ASSERT_FALSE(fitted->ranked.empty());
  for (const Estimate &e : fitted->ranked) {
    EXPECT_EQ(e.config.recompute, sched::Recompute::Full);
    EXPECT_LE(e.peakMemory.total(), req.memoryCapBytes);
  }
}

TEST(Planner, SelectiveRecomputationTradesTheStatisticsForTheirForwards) {
  PlanRequest req = request(8, {"1f1b"});
  req.devices = {4};
  // Each unit keeps 1000 bytes a sequence, 200 of them statistics, whose
  // ops' forwards are half the unit's (0.5 ms of its backward's 2 ms again).
  ProfileSource model = [](int64_t size, sched::PartitionUnits) {
    ModelProfile m = uniformModel(8, size, 1e6, 1e3);
    for (LayerProfile &l : m.layers) {
      l.statisticBytes = 200 * size;
      l.statisticFlops = l.forwardFlops / 2;
    }
    return sched::Result<ModelProfile>::success(std::move(m));
  };
  sched::Result<PlanResult> keep = search(req, freeCluster(4), model);
  req.recompute = sched::Recompute::Selective;
  sched::Result<PlanResult> selective = search(req, freeCluster(4), model);
  ASSERT_TRUE(keep && selective);
  ASSERT_FALSE(keep->ranked.empty() || selective->ranked.empty());
  const Estimate &a = keep->ranked.front(), &b = selective->ranked.front();
  ASSERT_EQ(a.config.dataParallel, b.config.dataParallel);
  ASSERT_EQ(a.config.microbatches, b.config.microbatches);
  EXPECT_EQ(b.config.recompute, sched::Recompute::Selective);
  // Four fifths of the activations; the step about 0.5/3 longer a unit.
  EXPECT_DOUBLE_EQ(b.peakMemory.activations, a.peakMemory.activations * 0.8);
  EXPECT_GT(b.stepTime, a.stepTime * 1.1);
  EXPECT_LT(b.stepTime, a.stepTime * 1.2);
}

TEST(Planner, AnImpossibleCapRejectsEverythingBeforeSimulating) {
  PlanRequest req = request(8);
  req.memoryCapBytes = 1; // Not even the weights fit.
  sched::Result<PlanResult> r =
      search(req, freeCluster(4), uniform(8, 1000, 100));
  ASSERT_TRUE(r) << r.error;
  EXPECT_TRUE(r->ranked.empty());
  EXPECT_GT(rejectedFor(*r, Rejection::MemoryStates), 0);
  EXPECT_EQ(rejectedFor(*r, Rejection::Memory), 0);
}

TEST(Planner, NeverUsesMoreGpusThanItHas) {
  for (bool idle : {false, true}) {
    PlanRequest req = request(12);
    req.allowIdleGpus = idle;
    req.gpus = 6;
    sched::Result<PlanResult> r =
        search(req, freeCluster(8), uniform(12, 10, 10));
    ASSERT_TRUE(r) << r.error;
    ASSERT_FALSE(r->ranked.empty());
    bool fewer = false;
    for (const Estimate &e : r->ranked) {
      EXPECT_LE(e.config.gpus(), 6);
      if (!idle) {
        EXPECT_EQ(e.config.gpus(), 6);
      }
      fewer = fewer || e.config.gpus() < 6;
      EXPECT_EQ(int64_t(e.config.dataParallel) * e.config.microbatches *
                    e.config.microbatchSize,
                12);
    }
    EXPECT_EQ(fewer, idle);
  }
}

TEST(Planner, CountsWhatTheScheduleOrTheModelCannotDo) {
  // Three GPUs: BitPipe needs an even D (D=3, dp=1 is refused), and a
  // 2-unit model has no room for D=3 stages of 1F1B.
  sched::Result<PlanResult> r = search(request(6, {"bitpipe", "1f1b"}),
                                       freeCluster(3), uniform(2, 10, 10));
  ASSERT_TRUE(r) << r.error;
  EXPECT_GT(rejectedFor(*r, Rejection::Schedule), 0);
  EXPECT_GT(rejectedFor(*r, Rejection::Stages), 0);
  EXPECT_NE(r->rejections[int(Rejection::Schedule)].example.find("even"),
            std::string::npos)
      << r->rejections[int(Rejection::Schedule)].example;
}

TEST(Planner, AShardedOptimizerDividesItsStateByTheStagesRanks) {
  // BitPipe on 2 devices x 2 copies: each stage on both devices of a copy
  // (the mirror pair), so on 4 world ranks; 1F1B on 2 x 2: each stage on
  // one device of a copy, 2 world ranks.
  for (auto [schedule, ranks] : {std::pair{"bitpipe", 4.0}, {"1f1b", 2.0}}) {
    PlanConfig config;
    config.schedule = schedule;
    config.devices = 2;
    config.dataParallel = 2;
    config.microbatchSize = 1;
    config.microbatches = 4;
    PlanRequest req = request(8);
    sched::Result<Estimate> whole =
        evaluate(config, uniformModel(4, 1, 1e6, 0), freeCluster(4), req);
    ASSERT_TRUE(whole) << whole.error;
    req.shardOptimizer = true;
    sched::Result<Estimate> sharded =
        evaluate(config, uniformModel(4, 1, 1e6, 0), freeCluster(4), req);
    ASSERT_TRUE(sharded) << sharded.error;
    EXPECT_DOUBLE_EQ(sharded->peakMemory.optimizer,
                     whole->peakMemory.optimizer / ranks)
        << schedule;
    // Under fp32 only the moments: the weights (what the stages read) and
    // gradients stay whole.
    EXPECT_DOUBLE_EQ(sharded->peakMemory.weights, whole->peakMemory.weights);
    EXPECT_DOUBLE_EQ(sharded->peakMemory.gradients,
                     whole->peakMemory.gradients);

    // Under bf16 the fp32 master weights too (4 of a parameter's 6 weight
    // bytes); the bf16 copy the stages read stays whole.
    req.precision = sched::ComputePrecision::Bf16;
    sched::Result<Estimate> bf16 =
        evaluate(config, uniformModel(4, 1, 1e6, 0), freeCluster(4), req);
    ASSERT_TRUE(bf16) << bf16.error;
    const double params = whole->peakMemory.weights / 4;
    EXPECT_DOUBLE_EQ(bf16->peakMemory.weights, params * (2 + 4 / ranks))
        << schedule;
    EXPECT_DOUBLE_EQ(bf16->peakMemory.optimizer,
                     whole->peakMemory.optimizer / ranks);
  }
}

TEST(Planner, ChargesDataParallelAllReducesForEverySchedule) {
  sched::Cluster c = freeCluster(2);
  c.intraNode = {1e-3, 1e9};
  PlanConfig config;
  config.schedule = "1f1b";
  config.devices = 1;
  config.dataParallel = 2;
  config.microbatchSize = 1;
  config.microbatches = 2;
  PlanRequest req = request(4);
  sched::Result<Estimate> e =
      evaluate(config, uniformModel(4, 1, 1e6, 0), c, req);
  ASSERT_TRUE(e) << e.error;
  // 4e6 parameters, fp32 gradients: 16 MB over 2 ranks, each sending half
  // (the ring's 2(n-1)/n): 2 * 8e6 bytes over both copies.
  EXPECT_DOUBLE_EQ(e->allReduceBytes, 2 * 16e6);
  EXPECT_GT(e->stepTime, 0.024);
}

TEST(Planner, GivesTheSameAnswerOnAnyNumberOfThreads) {
  PlanRequest req = request(16);
  req.microbatchSizes = {1, 2};
  req.memoryCapBytes = 5e4; // Some fit, some do not.
  req.jobs = 1;
  sched::Result<PlanResult> one =
      search(req, freeCluster(4), uniform(8, 1000, 1e4, 64));
  req.jobs = 3;
  sched::Result<PlanResult> three =
      search(req, freeCluster(4), uniform(8, 1000, 1e4, 64));
  ASSERT_TRUE(one && three);
  ASSERT_EQ(one->ranked.size(), three->ranked.size());
  EXPECT_GT(one->rejected(), 0);
  for (size_t i = 0; i < one->ranked.size(); ++i) {
    EXPECT_EQ(one->ranked[i].config.schedule, three->ranked[i].config.schedule);
    EXPECT_EQ(one->ranked[i].config.devices, three->ranked[i].config.devices);
    EXPECT_EQ(one->ranked[i].stepTime, three->ranked[i].stepTime);
  }
  for (int r = 0; r < kNumRejections; ++r) {
    EXPECT_EQ(one->rejections[r].count, three->rejections[r].count);
    EXPECT_EQ(one->rejections[r].example, three->rejections[r].example);
  }
}

// A model of `layers` identical layers as whole-layer units, or as twice as
// many half units, each half the work, parameters and activations.
ProfileSource layersOrHalves(int layers) {
  return [=](int64_t size, sched::PartitionUnits units) {
    if (units == sched::PartitionUnits::Layers)
      return sched::Result<ModelProfile>::success(
          uniformModel(layers, size, 1000, 100));
    ModelProfile m = uniformModel(2 * layers, size, 500, 50);
    for (LayerProfile &l : m.layers) {
      l.forwardFlops /= 2;
      l.backwardFlops /= 2;
      l.work.linears.front().count /= 2;
    }
    return sched::Result<ModelProfile>::success(std::move(m));
  };
}

TEST(Planner, CutsFromHalfLayersWhereTheStagesBalanceBetter) {
  PlanRequest req = request(4, {"1f1b"});
  req.devices = {2};
  req.units = {sched::PartitionUnits::Layers, sched::PartitionUnits::Halves};
  // Three layers on two stages: whole layers cut 2 | 1 (6 ms a micro-batch
  // on the slower stage), halves 3 | 3 (4.5 ms).
  sched::Result<PlanResult> both =
      search(req, freeCluster(2), layersOrHalves(3));
  ASSERT_TRUE(both) << both.error;
  ASSERT_FALSE(both->ranked.empty());
  const Estimate &halves = both->ranked.front();
  EXPECT_EQ(halves.config.units, sched::PartitionUnits::Halves);
  // The command that builds it says so.
  CommandContext context;
  context.modelPath = "m.json";
  context.modelName = "m";
  std::string command = compileCommand(halves.config, context);
  EXPECT_NE(command.find(" --units halves"), std::string::npos) << command;
  req.units = {sched::PartitionUnits::Layers};
  sched::Result<PlanResult> layers =
      search(req, freeCluster(2), layersOrHalves(3));
  ASSERT_TRUE(layers && !layers->ranked.empty());
  const Estimate &whole = layers->ranked.front();
  EXPECT_EQ(whole.config.units, sched::PartitionUnits::Layers);
  ASSERT_EQ(whole.config.microbatches, halves.config.microbatches);
  // 1F1B at N = 4 on two equal stages of 4.5 ms: N + D - 1 = 5 slots of
  // them. The 2 | 1 cut is slower than its slower stage's work alone, 4 x
  // 6 ms.
  EXPECT_NEAR(halves.stepTime, 5 * 4.5e-3, 1e-9);
  EXPECT_GE(whole.stepTime, 4 * 6e-3);
  // Four layers split evenly either way: whole layers, on the tie.
  req.units = {sched::PartitionUnits::Layers, sched::PartitionUnits::Halves};
  sched::Result<PlanResult> even =
      search(req, freeCluster(2), layersOrHalves(4));
  ASSERT_TRUE(even && !even->ranked.empty());
  EXPECT_EQ(even->ranked.front().config.units, sched::PartitionUnits::Layers);
}

TEST(Planner, TriesOnlyTheDepthsAsked) {
  PlanRequest req = request(8);
  req.devices = {2, 8};
  sched::Result<PlanResult> r =
      search(req, freeCluster(8), uniform(16, 10, 10));
  ASSERT_TRUE(r) << r.error;
  ASSERT_FALSE(r->ranked.empty());
  bool two = false, eight = false;
  for (const Estimate &e : r->ranked) {
    EXPECT_TRUE(e.config.devices == 2 || e.config.devices == 8)
        << e.config.devices;
    two = two || e.config.devices == 2;
    eight = eight || e.config.devices == 8;
  }
  EXPECT_TRUE(two && eight);
  // Every other depth is left out before it is counted.
  PlanRequest all = request(8);
  sched::Result<PlanResult> every =
      search(all, freeCluster(8), uniform(16, 10, 10));
  ASSERT_TRUE(every) << every.error;
  EXPECT_LT(r->considered, every->considered);
}

TEST(Planner, KeepsHeadroomOfTheCapByDefault) {
  // The default leaves kDefaultMemoryHeadroomFraction of the cap free: a
  // configuration that fits only in the whole cap is rejected, and fits
  // when the headroom is 0 or smaller.
  PlanRequest whole = request(4, {"1f1b"});
  sched::Result<PlanResult> free =
      search(whole, freeCluster(2), uniform(4, 1000, 1e6));
  ASSERT_TRUE(free && !free->ranked.empty()) << free.error;
  const double peak = free->ranked.front().peakMemory.total();

  PlanRequest byDefault = whole;
  byDefault.memoryHeadroomFraction = PlanRequest().memoryHeadroomFraction;
  EXPECT_EQ(byDefault.memoryHeadroomFraction, kDefaultMemoryHeadroomFraction);
  byDefault.memoryCapBytes = peak * 1.05; // within the cap, not its 90%
  sched::Result<PlanResult> r =
      search(byDefault, freeCluster(2), uniform(4, 1000, 1e6));
  ASSERT_TRUE(r) << r.error;
  EXPECT_DOUBLE_EQ(r->memoryCapBytes, peak * 1.05);
  EXPECT_DOUBLE_EQ(r->memoryHeadroomBytes,
                   kDefaultMemoryHeadroomFraction * peak * 1.05);
  EXPECT_DOUBLE_EQ(r->memoryBudgetBytes(),
                   r->memoryCapBytes - r->memoryHeadroomBytes);
  for (const Estimate &e : r->ranked)
    EXPECT_LE(e.peakMemory.total(), r->memoryBudgetBytes());
  EXPECT_LT(r->ranked.size(), free->ranked.size());
  EXPECT_NE(
      r->rejections[int(Rejection::Memory)].example.find("over the budget of"),
      std::string::npos)
      << r->rejections[int(Rejection::Memory)].example;

  // In bytes instead: the same budget.
  PlanRequest bytes = byDefault;
  bytes.memoryHeadroomFraction = 0;
  bytes.memoryHeadroomBytes = r->memoryHeadroomBytes;
  sched::Result<PlanResult> b =
      search(bytes, freeCluster(2), uniform(4, 1000, 1e6));
  ASSERT_TRUE(b) << b.error;
  EXPECT_DOUBLE_EQ(b->memoryBudgetBytes(), r->memoryBudgetBytes());
  EXPECT_EQ(b->ranked.size(), r->ranked.size());

  // The cluster's memory when no cap is given.
  PlanRequest clusterCap = request(4, {"1f1b"});
  clusterCap.memoryHeadroomFraction = 0.25;
  sched::Result<PlanResult> c =
      search(clusterCap, freeCluster(2, 4e9), uniform(4, 10, 10));
  ASSERT_TRUE(c) << c.error;
  EXPECT_DOUBLE_EQ(c->memoryCapBytes, 4e9);
  EXPECT_DOUBLE_EQ(c->memoryBudgetBytes(), 3e9);
}

// One GPU, D = dp = 1, free links: the GPU computes the whole step, so the
// model's FLOPs over the step are its achievable rate, and MFU is the
// achievable fraction exactly.
TEST(Planner, StatesModelFlopUtilisationAndTokensPerGpu) {
  for (double fraction : {1.0, 0.5}) {
    sched::Cluster c = freeCluster(1);
    c.achievableFraction = fraction;
    sched::Result<PlanResult> r =
        search(request(4, {"1f1b"}), c, uniform(4, 10, 10));
    ASSERT_TRUE(r && r->ranked.size() == 1) << r.error;
    const Estimate &e = r->ranked.front();
    // 4 units of 1e9 + 2e9 FLOP per sequence of 8 tokens.
    EXPECT_DOUBLE_EQ(r->modelFlopsPerToken, 4 * 3e9 / 8);
    EXPECT_NEAR(e.stepTime, 4 * 4 * 3e9 / (1e12 * fraction), 1e-12);
    EXPECT_NEAR(e.mfu, fraction, 1e-12);
    EXPECT_DOUBLE_EQ(e.tokensPerSecondPerGpu(), e.tokensPerSecond);
  }
  // Two copies: per GPU is half, and pipelining's bubble lowers MFU below
  // the achievable fraction.
  sched::Result<PlanResult> r =
      search(request(4, {"1f1b"}), freeCluster(2), uniform(4, 10, 10));
  ASSERT_TRUE(r) << r.error;
  for (const Estimate &e : r->ranked) {
    EXPECT_DOUBLE_EQ(e.tokensPerSecondPerGpu(), e.tokensPerSecond / 2);
    EXPECT_NEAR(e.mfu, r->modelFlopsPerToken * e.tokensPerSecond / (2 * 1e12),
                1e-12);
    EXPECT_LE(e.mfu, 1 + 1e-12);
    if (e.config.devices == 2) {
      EXPECT_LT(e.mfu, 1 - 1e-3);
    }
  }
  EXPECT_DOUBLE_EQ(modelFlopsUtilization(3e12, 2, 3, 1e12), 0.5);
  EXPECT_EQ(modelFlopsUtilization(3e12, 0, 3, 1e12), 0);
}

// BitPipe's ranks hold two pipelines' stages: a cap that 1F1B's weights
// fit under and BitPipe's do not leaves BitPipe without a plan, and the
// result says why, schedule by schedule.
TEST(Planner, KeepsTheBestOfEachScheduleAndWhyNoneFits) {
  PlanRequest req = request(8, {"bitpipe", "1f1b", "gpipe"});
  req.devices = {4};
  sched::Result<PlanResult> free =
      search(req, freeCluster(4), uniform(8, 1e7, 10));
  ASSERT_TRUE(free) << free.error;
  ASSERT_EQ(free->schedules.size(), 3u);
  // In the registry's order, whatever the request's.
  EXPECT_EQ(free->schedules[0].schedule, "gpipe");
  EXPECT_EQ(free->schedules[1].schedule, "1f1b");
  EXPECT_EQ(free->schedules[2].schedule, "bitpipe");
  int64_t considered = 0;
  for (const ScheduleOutcome &o : free->schedules) {
    considered += o.considered;
    ASSERT_GE(o.best, 0) << o.schedule;
    EXPECT_EQ(free->ranked[o.best].config.schedule, o.schedule);
    // Its first row in the ranking.
    for (int i = 0; i < o.best; ++i)
      EXPECT_NE(free->ranked[i].config.schedule, o.schedule);
  }
  EXPECT_EQ(considered, free->considered);

  // 2 units per rank under 1F1B and GPipe, 4 under BitPipe (its two
  // pipelines' copies), 16 bytes per parameter under fp32: 320 MB and
  // 640 MB, and a few MiB of buffers.
  req.memoryCapBytes = 480e6;
  sched::Result<PlanResult> r =
      search(req, freeCluster(4), uniform(8, 1e7, 10));
  ASSERT_TRUE(r) << r.error;
  const ScheduleOutcome &bitpipe = r->schedules[2];
  EXPECT_EQ(bitpipe.best, -1);
  EXPECT_GT(bitpipe.considered, 0);
  EXPECT_EQ(bitpipe.rejections[int(Rejection::MemoryStates)].count,
            bitpipe.considered);
  EXPECT_NE(bitpipe.rejections[int(Rejection::MemoryStates)].example.find(
                "bitpipe D=4"),
            std::string::npos);
  EXPECT_GE(r->schedules[1].best, 0);
  EXPECT_EQ(r->schedules[1].rejections[int(Rejection::MemoryStates)].count, 0);
}

TEST(Planner, RejectsABadRequest) {
  sched::Cluster c = freeCluster(4);
  PlanRequest r = request(0);
  EXPECT_NE(checkRequest(r, c, "--").find("--global-batch"), std::string::npos);
  r = request(8);
  r.gpus = 5;
  EXPECT_NE(checkRequest(r, c).find("gpus must be in [1, 4]"),
            std::string::npos);
  r = request(8, {"nope"});
  EXPECT_NE(checkRequest(r, c).find("unknown schedule 'nope'"),
            std::string::npos);
  r = request(8);
  r.microbatchSizes = {0};
  EXPECT_NE(checkRequest(r, c).find("microbatch-sizes"), std::string::npos);
  r = request(8);
  r.devices = {4, 0};
  EXPECT_NE(checkRequest(r, c, "--")
                .find("--devices must be positive pipeline depths, got 0"),
            std::string::npos);
  r = request(8);
  r.memoryHeadroomFraction = 1;
  EXPECT_EQ(checkRequest(r, c, "--"),
            "--memory-headroom must be a number of bytes in [0, 1e18] or a "
            "share of the memory in [0%, 100%), got 0.000000 bytes and "
            "100.000000%");
  r = request(8);
  r.memoryCapBytes = 2e9;
  r.memoryHeadroomBytes = 2e9;
  EXPECT_EQ(checkRequest(r, c, "--"),
            "--memory-headroom of 1.86 GiB leaves nothing of the 1.86 GiB of "
            "memory per GPU (expected less than it)");
  r = request(8);
  r.jobs = -1;
  EXPECT_NE(checkRequest(r, c).find("jobs must be in [0, 1024]"),
            std::string::npos);
  EXPECT_FALSE(search(request(0), c, uniform(4, 1, 1)));
}

} // namespace
