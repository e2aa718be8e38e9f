//===- InFlightCapTest.cpp - 1F1B with fewer micro-batches in flight ------===//
//
// The memory-saving variant of 1F1B (max-in-flight=k, docs/schedules.md,
// "Fewer micro-batches in flight"): every order verifies and plays, each
// rank holds at most min(k, D - r) and the busiest exactly the cap, k = D
// is 1F1B itself, and the makespan trades against k: never lower when k
// falls, never below the round-trip bound, within one round trip of it.
// TestUtil's player and in-flight count are the oracle; the simulator must
// agree with them.
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

using namespace bitpipe::sched;
using bitpipe::sched::test::peakInFlight;
using bitpipe::sched::test::play;

namespace {

Schedule capped(int D, int N, int k) {
  ScheduleOptions request{"1f1b", D, N};
  request.maxInFlight = k;
  Result<Schedule> s = generateSchedule(request);
  EXPECT_TRUE(s.ok()) << "D=" << D << " N=" << N << " k=" << k << ": "
                      << s.error;
  return s.ok() ? *s : Schedule{};
}

/// F=1, B=2: rank 0 may start micro-batch m + k only after m's backward
/// there ends, 3D slots after m's forward started (D forwards, D backwards
/// of 2), so every k micro-batches take a round trip; and no rank does
/// better than 1F1B, 3N + 3(D-1).
long roundTripBound(int D, int N, int k) {
  long rounds = (N + k - 1) / k;
  return std::max(rounds * 3L * D, 3L * N + 3L * (D - 1));
}

const int kMicrobatchCounts[] = {1, 2, 3, 5, 8, 16, 33};

} // namespace

TEST(InFlightCap, EveryOrderVerifiesAndHoldsTheCap) {
  for (int D = 1; D <= 10; ++D)
    for (int N : kMicrobatchCounts)
      for (int k = 1; k <= D; ++k) {
        SCOPED_TRACE("D=" + std::to_string(D) + " N=" + std::to_string(N) +
                     " k=" + std::to_string(k));
        Schedule s = capped(D, N, k);
        std::vector<Diagnostic> problems = verify(s);
        ASSERT_TRUE(problems.empty())
            << formatDiagnostics(problems) << formatGrid(s);
        ASSERT_TRUE(play(s).finished) << play(s).stuck;
        int busiest = 0;
        for (int r = 0; r < D; ++r) {
          int peak = peakInFlight(s.ranks[r]);
          EXPECT_LE(peak, std::min(k, D - r)) << "rank " << r;
          busiest = std::max(busiest, peak);
        }
        // The cap is what the busiest rank holds, when there are enough
        // micro-batches to fill it.
        EXPECT_EQ(busiest, std::min(k, N));
        // The simulator counts the same.
        Result<SimResult> sim = simulate(s, CostModel{});
        ASSERT_TRUE(sim.ok()) << sim.error;
        int simulated = 0;
        for (const RankStats &r : sim->ranks)
          simulated = std::max(simulated, r.peakInFlight);
        EXPECT_EQ(simulated, busiest);
      }
}

TEST(InFlightCap, CapOfDIs1F1BAndSaysNothing) {
  for (int D : {1, 2, 4, 7})
    for (int N : {D, 2 * D + 1}) {
      Result<Schedule> plain = generateOneFOneB(D, N);
      ASSERT_TRUE(plain.ok()) << plain.error;
      Schedule s = capped(D, N, D);
      EXPECT_EQ(s.ranks, plain->ranks) << "D=" << D << " N=" << N;
      EXPECT_EQ(s.note, "");
      // And the registry's default is the same, no cap.
      Result<ScheduleOptions> done = validate({"1f1b", D, N});
      ASSERT_TRUE(done.ok()) << done.error;
      EXPECT_EQ(done->maxInFlight, D);
    }
  Schedule s = capped(8, 16, 3);
  EXPECT_EQ(s.name, "1f1b");
  EXPECT_EQ(s.note, "at most 3 micro-batches in flight per rank "
                    "(max-in-flight=3; 1F1B holds D - r on rank r)");
}

TEST(InFlightCap, MakespanTradesAgainstTheCap) {
  for (int D = 2; D <= 16; D += 2)
    for (int N : {D, 2 * D, 4 * D}) {
      long previous = 0;
      for (int k = D; k >= 1; --k) {
        SCOPED_TRACE("D=" + std::to_string(D) + " N=" + std::to_string(N) +
                     " k=" + std::to_string(k));
        test::PlayResult played = play(capped(D, N, k));
        ASSERT_TRUE(played.finished) << played.stuck;
        // A smaller cap never makes the step shorter.
        EXPECT_GE(played.makespan, previous);
        previous = played.makespan;
        long bound = roundTripBound(D, N, k);
        EXPECT_GE(played.makespan, bound);
        // The list order stays within one round trip of the bound (0.73 of
        // one, D <= 16: bench/results-log.md, "Fewer micro-batches in
        // flight").
        EXPECT_LE(played.makespan, bound + 3L * D);
        if (k == D) { // 1F1B's closed form.
          EXPECT_EQ(played.makespan, 3L * N + 3L * (D - 1));
        }
        if (k == 1) { // One micro-batch at a time, end to end.
          EXPECT_EQ(played.makespan, 3L * D * N);
        }
      }
    }
  // Numbers the docs quote (docs/schedules.md): D=8, N=32.
  EXPECT_EQ(play(capped(8, 32, 8)).makespan, 117);
  EXPECT_EQ(play(capped(8, 32, 4)).makespan, 201);
  EXPECT_EQ(play(capped(8, 32, 2)).makespan, 387);
}

TEST(InFlightCap, RegistryNamesTheOptionTheValueAndTheRange) {
  auto errorOf = [](int D, int k, const char *schedule = "1f1b",
                    const char *prefix = "") {
    ScheduleOptions request{schedule, D};
    request.maxInFlight = k;
    Result<ScheduleOptions> done = validate(request, prefix);
    return done.ok() ? std::string() : done.error;
  };
  EXPECT_EQ(errorOf(4, 0, "1f1b", "--"),
            "--max-in-flight must be at least 1, got 0");
  EXPECT_EQ(errorOf(4, -2), "max-in-flight must be at least 1, got -2");
  EXPECT_EQ(errorOf(4, 5),
            "max-in-flight must be at most 4 (devices: 1f1b without a cap "
            "holds at most D micro-batches in flight), got 5");
  EXPECT_EQ(errorOf(4, 2, "bitpipe"),
            "max-in-flight=2 does not apply to schedule 'bitpipe' (only these "
            "take a cap on the micro-batches in flight: 1f1b)");
  EXPECT_EQ(errorOf(4, 2, "gpipe", "--"),
            "--max-in-flight=2 does not apply to schedule 'gpipe' (only these "
            "take a cap on the micro-batches in flight: 1f1b)");
  EXPECT_EQ(errorOf(4, 1), "");
  EXPECT_EQ(errorOf(4, 4), "");
  // The others complete without a cap.
  Result<ScheduleOptions> done = validate({"bitpipe", 4});
  ASSERT_TRUE(done.ok()) << done.error;
  EXPECT_FALSE(done->maxInFlight.has_value());
  // A direct call is refused alike.
  EXPECT_EQ(generateOneFOneB(4, 8, 5).error, errorOf(4, 5));
  EXPECT_EQ(generateOneFOneB(4, 8, 0).error, errorOf(4, 0));
}
