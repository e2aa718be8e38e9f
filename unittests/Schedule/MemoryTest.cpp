//===- MemoryTest.cpp - Per-rank peak memory ------------------------------===//

#include "bitpipe/Schedule/Memory.h"
#include "bitpipe/Schedule/Simulator.h"

#include "TestSchedules.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;
using namespace bitpipe::sched::test;

TEST(Memory, BytesPerParameterFollowTheRuntimesLayout) {
  // 4 master + 4 gradient + 8 moments; bf16 adds a 2-byte compute copy.
  EXPECT_EQ(bytesPerParameter(ComputePrecision::Fp32), 16);
  EXPECT_EQ(bytesPerParameter(ComputePrecision::Bf16), 18);
}

TEST(Memory, ARankSumsItsStateAndTheSchedulesPeakActivations) {
  // 1F1B, D=2, N=3: rank 0 warms up with D-1-0 = 1 extra forward, so two
  // micro-batches' stashes are in flight at its peak: 2 x 1 MB.
  CostModel cost;
  cost.stashBytes = {1e6, 1e6};
  Result<SimResult> sim = simulate(oneFOneB(2, 3), cost);
  ASSERT_TRUE(sim) << sim.error;
  double peak = sim->ranks[0].peakInFlightBytes;
  EXPECT_EQ(peak, 2e6);

  // 1e6 parameters under bf16 with NCCL's default 4 MiB buffer:
  //   weights 1e6 * (4 + 2) = 6e6, gradients 4e6, moments 8e6,
  //   activations 2e6, communication 4194304: 24194304 bytes.
  RankMemory m = rankMemory(1e6, ComputePrecision::Bf16, peak, 4194304);
  EXPECT_EQ(m.weights, 6e6);
  EXPECT_EQ(m.gradients, 4e6);
  EXPECT_EQ(m.optimizer, 8e6);
  EXPECT_EQ(m.activations, 2e6);
  EXPECT_EQ(m.communication, 4194304);
  EXPECT_EQ(m.total(), 24194304);
  // A sharded optimizer keeps a quarter of the moments (6e6 bytes less)
  // and, under bf16, a quarter of the fp32 master weights (3e6 less).
  RankMemory sharded =
      rankMemory(1e6, 0.25e6, ComputePrecision::Bf16, peak, 4194304);
  EXPECT_EQ(sharded.optimizer, 2e6);
  EXPECT_EQ(sharded.weights, 1e6 * 2 + 0.25e6 * 4);
  EXPECT_EQ(sharded.total(), 24194304 - 6e6 - 3e6);
  // Under fp32 the weights lose their 2-byte copy: 2e6 bytes less; the
  // master weights stay whole when sharded, since the stages read them.
  EXPECT_EQ(rankMemory(1e6, ComputePrecision::Fp32, peak, 4194304).total(),
            22194304);
  RankMemory shardedFp32 =
      rankMemory(1e6, 0.25e6, ComputePrecision::Fp32, peak, 4194304);
  EXPECT_EQ(shardedFp32.weights, 4e6);
  EXPECT_EQ(shardedFp32.total(), 22194304 - 6e6);
}
