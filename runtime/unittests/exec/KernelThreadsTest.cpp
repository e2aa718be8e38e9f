//===- KernelThreadsTest.cpp - Choosing a rank's threads ------------------===//

#include "KernelThreads.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;

namespace {

ThreadsContext machine(int cpus, int online, int ranks) {
  ThreadsContext c;
  c.affinityCpus = cpus;
  c.onlineCpus = online;
  c.localRanks = ranks;
  return c;
}

TEST(KernelThreadsTest, TheFlagFirstThenTheEnvironment) {
  ThreadsContext c = machine(16, 16, 1);
  c.ompEnv = "3";
  c.blasEnv = "5";
  c.flag = 2;
  EXPECT_EQ(chooseKernelThreads(c)->threads, 2);
  EXPECT_EQ(chooseKernelThreads(c)->source, "--threads");
  c.flag = 0;
  EXPECT_EQ(chooseKernelThreads(c)->threads, 3);
  EXPECT_EQ(chooseKernelThreads(c)->source, "OMP_NUM_THREADS");
  c.ompEnv.reset();
  EXPECT_EQ(chooseKernelThreads(c)->threads, 5);
  EXPECT_EQ(chooseKernelThreads(c)->source, "OPENBLAS_NUM_THREADS");
}

TEST(KernelThreadsTest, ABoundRankTakesItsCpusAnUnboundOneItsShare) {
  EXPECT_EQ(chooseKernelThreads(machine(4, 16, 4))->threads, 4);
  EXPECT_EQ(chooseKernelThreads(machine(4, 16, 4))->source,
            "the rank's CPU binding");
  // mpirun --bind-to none: every rank sees the whole machine.
  EXPECT_EQ(chooseKernelThreads(machine(16, 16, 4))->threads, 4);
  EXPECT_EQ(chooseKernelThreads(machine(2, 2, 4))->threads, 1);
  EXPECT_EQ(chooseKernelThreads(machine(8, 8, 1))->threads, 8);
  EXPECT_EQ(chooseKernelThreads(machine(8, 8, 1))->source,
            "the machine's CPUs");
}

TEST(KernelThreadsTest, MalformedCountsAreRefusedByName) {
  ThreadsContext c = machine(2, 2, 1);
  for (const char *bad : {"two", "0", "-1", "3x", "99999"}) {
    c.ompEnv = bad;
    Expected<KernelThreads> t = chooseKernelThreads(c);
    ASSERT_FALSE(t.isOk()) << bad;
    EXPECT_NE(t.status().message().find(std::string("OMP_NUM_THREADS is '") +
                                        bad + "'"),
              std::string::npos)
        << t.status().message();
  }
  c.ompEnv.reset();
  c.flag = 5000;
  EXPECT_FALSE(chooseKernelThreads(c).isOk());
  // Empty is unset, as OpenMP reads it.
  c.flag = 0;
  c.blasEnv = "";
  EXPECT_EQ(chooseKernelThreads(c)->threads, 2);
}

} // namespace
