//===- RegistryTest.cpp - The schedule registry and its requests ----------===//
//
// The table must say what its generators do (placement, split backward,
// default N), and validate() must name the option and what it expects.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/Placement.h"

#include <gtest/gtest.h>

#include <set>

using namespace bitpipe::sched;

namespace {

/// validate()'s message for `request`; empty when it passes.
std::string errorOf(const ScheduleOptions &request, const char *prefix = "") {
  Result<ScheduleOptions> done = validate(request, prefix);
  return done.ok() ? std::string() : done.error;
}

} // namespace

TEST(Registry, EveryEntryDescribesItsGenerator) {
  for (const ScheduleInfo &info : schedules())
    for (int devices : {2, 4}) {
      SCOPED_TRACE(std::string(info.name) + " D=" + std::to_string(devices));
      ScheduleOptions request{info.name, devices};
      Result<ScheduleOptions> done = validate(request);
      ASSERT_TRUE(done.ok()) << done.error;
      EXPECT_EQ(*done->microbatches,
                info.defaultMicrobatchesPerDevice * devices);
      EXPECT_EQ(*done->chunksPerDevice, info.defaultChunks);

      Result<Schedule> s = generateSchedule(request);
      ASSERT_TRUE(s.ok()) << s.error;
      EXPECT_EQ(s->name, info.name);
      EXPECT_EQ(s->numMicrobatches,
                info.defaultMicrobatchesPerDevice * devices);
      EXPECT_EQ(s->placement.kind, info.placement);
      EXPECT_EQ(s->splitBackward, info.splitsBackward);
      Result<Placement> p = schedulePlacement(request);
      ASSERT_TRUE(p.ok()) << p.error;
      EXPECT_TRUE(*p == s->placement);
      if (info.takesChunks()) {
        EXPECT_EQ(p->numStages, devices * info.defaultChunks);
      }
    }
}

TEST(Registry, NamesAreUniqueAndListedInOrder) {
  std::set<std::string> seen;
  for (const ScheduleInfo &info : schedules()) {
    EXPECT_TRUE(seen.insert(info.name).second) << info.name;
    EXPECT_EQ(findSchedule(info.name), &info);
  }
  EXPECT_EQ(scheduleNames().size(), schedules().size());
  EXPECT_EQ(scheduleNameList(),
            "gpipe, 1f1b, interleaved-1f1b, chimera, bitpipe, "
            "bitpipe-periodic, zb-h1, bitpipe-zb, bitpipe-periodic-zb, zbv");
  EXPECT_EQ(findSchedule("pipedream"), nullptr);
}

TEST(Registry, ValidateNamesTheOptionAndWhatItExpects) {
  const std::string names =
      "gpipe, 1f1b, interleaved-1f1b, chimera, bitpipe, bitpipe-periodic, "
      "zb-h1, bitpipe-zb, bitpipe-periodic-zb, zbv";
  EXPECT_EQ(errorOf({"", 4}), "schedule is required (one of " + names + ")");
  EXPECT_EQ(errorOf({"zigzag", 4}, "--"),
            "unknown --schedule 'zigzag' (expected one of " + names + ")");
  EXPECT_EQ(errorOf({"1f1b", 0}), "devices must be at least 1, got 0");
  EXPECT_EQ(errorOf({"bitpipe", 3}, "--"),
            "--devices must be even: bitpipe needs an even number of devices "
            "(its two pipelines pair device r with device D-1-r), got 3");
  EXPECT_EQ(errorOf({"gpipe", 2, 0}), "microbatches must be at least 1, got 0");
  EXPECT_EQ(errorOf({"1f1b", 4, 8, 2}),
            "chunks-per-device=2 does not apply to schedule '1f1b', which "
            "runs 1 chunk per device (interleaved-1f1b runs several)");
  EXPECT_EQ(errorOf({"bitpipe", 4, 8, 2}),
            "chunks-per-device=2 does not apply to schedule 'bitpipe', whose "
            "bidirectional-v placement fixes the chunks per device");
  EXPECT_EQ(errorOf({"interleaved-1f1b", 4, 8, 1}),
            "chunks-per-device must be at least 2 for interleaved-1f1b (use "
            "1f1b for 1), got 1");
  ScheduleOptions noCopies{"1f1b", 2};
  noCopies.dataParallel = 0;
  EXPECT_EQ(errorOf(noCopies, "--"), "--dp must be at least 1, got 0");
  // A loop schedule's one chunk may be said explicitly.
  EXPECT_EQ(errorOf({"1f1b", 4, 8, 1}), "");
}

TEST(Registry, GeneratorsRefuseLikeTheRegistry) {
  EXPECT_EQ(generateBitPipe(3, 6).error, errorOf({"bitpipe", 3, 6}));
  EXPECT_EQ(generateChimera(4, 0).error, errorOf({"chimera", 4, 0}));
  EXPECT_EQ(generateInterleaved1F1B(4, 8, 1).error,
            errorOf({"interleaved-1f1b", 4, 8, 1}));
  EXPECT_EQ(generateGPipe(0, 4).error, errorOf({"gpipe", 0, 4}));
}

TEST(Registry, CountsStayWithinTheLimits) {
  // devices=2147483647 used to run on with gigabytes (and its default N,
  // 2 D, overflowed int).
  EXPECT_EQ(errorOf({"1f1b", 2147483647}, "--"),
            "--devices must be at most 4096, got 2147483647");
  EXPECT_EQ(errorOf({"1f1b", 4, 65537}),
            "microbatches must be at most 65536, got 65537");
  EXPECT_EQ(errorOf({"1f1b", -4}), "devices must be at least 1, got -4");
  EXPECT_EQ(
      errorOf({"interleaved-1f1b", 4, 8, 65}),
      "chunks-per-device must be at most 64 for interleaved-1f1b, got 65");
  EXPECT_EQ(errorOf({"interleaved-1f1b", 4, 8, -3}),
            "chunks-per-device must be at least 2 for interleaved-1f1b (use "
            "1f1b for 1), got -3");
  EXPECT_EQ(errorOf({"interleaved-1f1b", 4096, 65536, 64}),
            "microbatches * devices * chunks per device must be at most "
            "16777216 (the actions of one pipeline copy; docs/models.md, "
            "\"Limits\"), got 65536 * 4096 * 64 = 17179869184");
  ScheduleOptions manyCopies{"1f1b", 4096};
  manyCopies.dataParallel = 65536;
  EXPECT_EQ(errorOf(manyCopies, "--"),
            "--devices * --dp (the ranks) must be at most 1048576, got 4096 "
            "* 65536");
  manyCopies.dataParallel = 65537;
  EXPECT_EQ(errorOf(manyCopies), "dp must be at most 65536, got 65537");
  // The largest accepted request.
  ScheduleOptions largest{"1f1b", 4096, 4096};
  largest.dataParallel = 256;
  EXPECT_EQ(errorOf(largest), "");
}

TEST(Registry, PlacementCountsAsValidate) {
  EXPECT_EQ(checkPlacementCounts(4, 1, 1), "");
  EXPECT_EQ(checkPlacementCounts(5000, 1, 1),
            "devices must be at most 4096, got 5000");
  EXPECT_EQ(checkPlacementCounts(4, -1, 1),
            "chunks-per-device must be at least 1, got -1");
  EXPECT_EQ(checkPlacementCounts(4, 1, 0), "dp must be at least 1, got 0");
}

TEST(Registry, SplitBackwardOnlyWhereTheScheduleHasWeightSteps) {
  for (const ScheduleInfo &info : schedules()) {
    ScheduleOptions request{info.name, 4};
    request.splitBackward = true;
    if (info.splitsBackward) {
      EXPECT_EQ(errorOf(request), "") << info.name;
      continue;
    }
    EXPECT_EQ(errorOf(request, "--"),
              std::string("--split-backward does not apply to schedule '") +
                  info.name +
                  "': its steps have no weight-gradient (W) step to run the "
                  "second half of a split backward (zb-h1 has them, and "
                  "splits the backward without the option)")
        << info.name;
  }
}
