//===- KernelProfileTest.cpp - Kernel timers and the --profile table ------===//

#include "core/KernelProfile.h"
#include "train/KernelProfileReport.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using namespace bitpipe::runtime;

namespace {

void busy(std::chrono::microseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

class KernelProfileTest : public ::testing::Test {
protected:
  void SetUp() override {
    kernel_profile::enable(false);
    kernel_profile::reset();
  }
  void TearDown() override {
    kernel_profile::enable(false);
    kernel_profile::reset();
  }
};

const KernelTotals &of(const KernelProfileTotals &t, KernelId id) {
  return t[static_cast<int>(id)];
}

TEST_F(KernelProfileTest, OffCountsNothing) {
  {
    BP_PROFILE_KERNEL(gelu_fwd);
  }
  EXPECT_EQ(of(kernel_profile::totals(), KernelId::gelu_fwd).calls, 0u);
}

TEST_F(KernelProfileTest, AKernelIsChargedWithoutTheKernelsItCalls) {
  kernel_profile::enable(true);
  for (int i = 0; i < 2; ++i) {
    BP_PROFILE_KERNEL(linear_gelu_fwd);
    busy(std::chrono::microseconds(2000));
    {
      BP_PROFILE_KERNEL(linear_fwd);
      busy(std::chrono::microseconds(6000));
    }
    {
      BP_PROFILE_KERNEL(gelu_fwd);
      busy(std::chrono::microseconds(1000));
    }
  }
  KernelProfileTotals t = kernel_profile::totals();
  EXPECT_EQ(of(t, KernelId::linear_gelu_fwd).calls, 2u);
  EXPECT_EQ(of(t, KernelId::linear_fwd).calls, 2u);
  EXPECT_EQ(of(t, KernelId::gelu_fwd).calls, 2u);
  double outer = of(t, KernelId::linear_gelu_fwd).selfNanoseconds * 1e-6;
  double inner = of(t, KernelId::linear_fwd).selfNanoseconds * 1e-6;
  // 4 ms of its own against 12 ms in linear_fwd; a loaded machine may
  // stretch either, not move time from one to the other.
  EXPECT_GE(outer, 4.0);
  EXPECT_LT(outer, 12.0);
  EXPECT_GE(inner, 12.0);

  kernel_profile::reset();
  EXPECT_EQ(of(kernel_profile::totals(), KernelId::linear_fwd).calls, 0u);
}

TEST_F(KernelProfileTest, ThreadsCountIntoOneProfile) {
  kernel_profile::enable(true);
  std::thread other([] {
    for (int i = 0; i < 1000; ++i) {
      BP_PROFILE_KERNEL(add_fwd);
    }
  });
  for (int i = 0; i < 1000; ++i) {
    BP_PROFILE_KERNEL(add_fwd);
  }
  other.join();
  EXPECT_EQ(of(kernel_profile::totals(), KernelId::add_fwd).calls, 2000u);
}

TEST_F(KernelProfileTest, NamesAreTheAbis) {
  EXPECT_STREQ(kernelName(KernelId::embedding_fwd), "embedding_fwd");
  EXPECT_STREQ(kernelName(KernelId::cross_entropy_bwd), "cross_entropy_bwd");
  EXPECT_STREQ(kernelName(KernelId::fill), "fill");
  EXPECT_STREQ(kernelName(static_cast<KernelId>(kNumKernelIds - 1)), "free");
}

RankKernelProfile sample() {
  RankKernelProfile p;
  p.steps = 4;
  p.seconds = 4.0; // 1 s a step
  p.pageFaults = 6;
  p.totals[static_cast<int>(KernelId::linear_fwd)] = {48, 2'000'000'000};
  p.totals[static_cast<int>(KernelId::gelu_fwd)] = {16, 400'000'000};
  p.totals[static_cast<int>(KernelId::fill)] = {8, 40'000'000};
  return p;
}

TEST(KernelProfileReportTest, KernelsByTimeThenWhatIsOutside) {
  std::string table = formatKernelProfile(sample(), 1, 2);
  EXPECT_EQ(table,
            "bitpipe: kernel profile, rank 1, per step (steps 2-5; step "
            "1.000 s):\n"
            "  kernel                      calls    ms/step   share    "
            "us/call\n"
            "  linear_fwd                     12      500.0   50.0%    "
            "41666.7\n"
            "  gelu_fwd                        4      100.0   10.0%    "
            "25000.0\n"
            "  fill                            2       10.0    1.0%     "
            "5000.0\n"
            "  all kernels                    18      610.0   61.0%\n"
            "  outside kernels                        390.0   39.0%   the "
            "executor: transfers and their waits, the all-reduce, the "
            "optimizer, inputs\n"
            "  page faults                     2 per step\n")
      << table;
}

TEST(KernelProfileReportTest, PastTheTopKernelsTheyAreCountedNotListed) {
  std::string table = formatKernelProfile(sample(), 0, 2, /*top=*/1);
  EXPECT_NE(table.find("  linear_fwd "), std::string::npos);
  EXPECT_EQ(table.find("  gelu_fwd "), std::string::npos);
  EXPECT_NE(table.find("  (2 more kernels)\n"), std::string::npos);
  EXPECT_NE(table.find("  all kernels                    18      610.0"),
            std::string::npos)
      << table;
}

TEST(KernelProfileReportTest, BytesRoundTrip) {
  RankKernelProfile p = sample();
  std::optional<RankKernelProfile> back =
      parseKernelProfile(serializeKernelProfile(p));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->steps, 4);
  EXPECT_EQ(back->seconds, 4.0);
  EXPECT_EQ(back->pageFaults, 6);
  EXPECT_EQ(back->totals[static_cast<int>(KernelId::gelu_fwd)].calls, 16u);
  EXPECT_FALSE(parseKernelProfile("short"));
}

} // namespace
