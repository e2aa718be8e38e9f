//===- BaselineSchedulesTest.cpp - GPipe, 1F1B, interleaved, Chimera, ZB --===//
//
// Makespans and bubble ratios under unit costs (F=1, B=2; B=W=1 when split)
// against the closed forms of the papers, peak in-flight activations, and
// the registry. Where a closed form does not hold for a textbook schedule
// the test states what is measured and why. TestUtil's player is the
// oracle; Chimera is also played with F=B=1, the costs its closed form
// counts in. With B = 2F, where no closed form is known, Chimera is compared
// with the optimum that an exhaustive search (OptimalSchedule.h) finds.
//
//===----------------------------------------------------------------------===//

#include "OptimalSchedule.h"
#include "TestUtil.h"

#include "bitpipe/Schedule/Generators.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

using namespace bitpipe::sched;
using bitpipe::sched::test::peakInFlight;
using bitpipe::sched::test::play;

namespace {

/// `v` only for interleaved-1f1b; the registry defaults it (to 2) there.
Schedule generate(const std::string &name, int D, int N,
                  std::optional<int> v = std::nullopt) {
  Result<Schedule> s = generateSchedule({name, D, N, v});
  EXPECT_TRUE(s.ok()) << name << ": " << s.error;
  return s.ok() ? *s : Schedule{};
}

double ratio(long num, long den) {
  return static_cast<double>(num) / static_cast<double>(den);
}

struct Size {
  int D, N;
};
const Size kSizes[] = {{4, 4}, {4, 8}, {8, 8}, {8, 16}};

/// Chimera's placement written out from the paper rather than taken from
/// the generator: D stages; "down" runs stage s on rank s, "up" on rank
/// D-1-s; in every unit of D micro-batches the first D/2 go down.
test::SearchProblem chimeraProblem(int D, int N, long backwardCost,
                                   bool channelsInOrder) {
  test::SearchProblem p;
  p.numRanks = D;
  p.stageRank.assign(2, std::vector<int>(D));
  for (int s = 0; s < D; ++s) {
    p.stageRank[0][s] = s;
    p.stageRank[1][s] = D - 1 - s;
  }
  for (int m = 0; m < N; ++m)
    p.microbatchPipeline.push_back(m % D < D / 2 ? 0 : 1);
  p.backwardCost = backwardCost;
  p.channelsInOrder = channelsInOrder;
  return p;
}

/// Lower bound on any Chimera order (N micro-batches, N a multiple of D).
/// Every rank runs every micro-batch once: N(F+B) of work. Rank r's first
/// action is a forward of stage r (down) or D-1-r (up), so it waits for at
/// least min(r, D-1-r) forwards; its last action is a backward of one of
/// those stages (each forward precedes its own backward on the rank), after
/// which as many backwards still run on other ranks. The middle ranks give
/// (F+B)(N + D/2 - 1). With F=B=1 that is Chimera's 2N+D-2.
long chimeraLowerBound(int D, int N, long F, long B) {
  return (F + B) * (N + D / 2 - 1);
}

/// Makespans of Chimera with F=1, B=2 and free communication.
struct ChimeraMakespans {
  long generator = -1; ///< The generator's order.
  long optimum = -1;   ///< Best order the project can run (channels in order).
  long optimumAnyChannelOrder = -1; ///< Best order by the dependencies alone.
};

/// The generator's makespan for D, N, which the search's evaluator,
/// TestUtil's player and the library's simulator must all agree on.
long generatorMakespan(const test::SearchProblem &problem, const Schedule &s) {
  // The generator uses the placement the search assumes.
  EXPECT_EQ(s.microbatchPipeline, problem.microbatchPipeline);
  for (int p = 0; p < 2; ++p)
    EXPECT_EQ(s.placement.pipelines[p].stageDevice, problem.stageRank[p]);
  long own = test::OptimalScheduleSearch(problem).makespanOf(s.ranks);
  EXPECT_EQ(own, play(s).makespan);
  Result<SimResult> sim = simulate(s, CostModel());
  EXPECT_TRUE(sim.ok()) << sim.error;
  if (sim.ok()) {
    EXPECT_EQ(sim.value->makespan, own);
  }
  return own;
}

/// Fails the test unless `found` is a real order: it runs to its makespan
/// under the search's own rules, and (if the search kept channels in
/// order) the library's verifier accepts it and its simulator agrees.
void expectRealisable(const test::SearchProblem &problem,
                      const test::SearchResult &found, const Schedule &shape) {
  EXPECT_EQ(test::OptimalScheduleSearch(problem).makespanOf(found.orders),
            found.makespan);
  if (!problem.channelsInOrder)
    return;
  Schedule s = shape;
  s.ranks = found.orders;
  std::vector<Diagnostic> diags = verify(s);
  EXPECT_TRUE(diags.empty()) << formatDiagnostics(diags);
  Result<SimResult> sim = simulate(s, CostModel());
  ASSERT_TRUE(sim.ok()) << sim.error;
  EXPECT_EQ(sim.value->makespan, found.makespan) << formatGrid(s);
}

/// The generator against both searches.
ChimeraMakespans compareChimeraWithSearch(int D, int N) {
  ChimeraMakespans out;
  Schedule gen = generate("chimera", D, N);
  test::SearchProblem ordered = chimeraProblem(D, N, 2, true);
  out.generator = generatorMakespan(ordered, gen);
  test::SearchResult best = test::OptimalScheduleSearch(ordered).solve();
  expectRealisable(ordered, best, gen);
  out.optimum = best.makespan;
  test::SearchProblem any = chimeraProblem(D, N, 2, false);
  test::SearchResult anyBest = test::OptimalScheduleSearch(any).solve();
  expectRealisable(any, anyBest, gen);
  out.optimumAnyChannelOrder = anyBest.makespan;
  return out;
}

} // namespace

TEST(BaselineSchedules, GPipeAnd1F1BBubble) {
  for (const char *name : {"gpipe", "1f1b"})
    for (Size c : kSizes) {
      test::PlayResult r = play(generate(name, c.D, c.N));
      ASSERT_TRUE(r.finished) << r.stuck;
      EXPECT_EQ(r.makespan, 3L * (c.N + c.D - 1)) << name;
      EXPECT_DOUBLE_EQ(r.bubbleRatio(), ratio(c.D - 1, c.N + c.D - 1))
          << name << " D=" << c.D << " N=" << c.N;
    }
}

TEST(BaselineSchedules, InterleavedBubble) {
  // Each chunk costs F=1, B=2 (the ratio does not depend on the scale).
  const int v = 2;
  for (Size c : kSizes) {
    test::PlayResult r = play(generate("interleaved-1f1b", c.D, c.N, v));
    ASSERT_TRUE(r.finished) << r.stuck;
    EXPECT_DOUBLE_EQ(r.bubbleRatio(), ratio(c.D - 1, v * c.N + c.D - 1))
        << "D=" << c.D << " N=" << c.N;
  }
  // v = 4 as well.
  test::PlayResult r4 = play(generate("interleaved-1f1b", 4, 8, 4));
  ASSERT_TRUE(r4.finished);
  EXPECT_DOUBLE_EQ(r4.bubbleRatio(), ratio(3, 4 * 8 + 3));
}

TEST(BaselineSchedules, ChimeraReachesClosedFormWithEqualCosts) {
  // Chimera's (D-2)/(2N+D-2) counts F and B as equal slots. With F=B=1 a
  // rank does 2N slots of work, so the closed form is a makespan of
  // 2N + D - 2: D-2 idle slots per rank in all, whatever N. That needs the
  // units to overlap: a middle rank's D-2 idle slots are all forced at the
  // very start and end, so it may not idle at all between units.
  // Both the alternating order and the registered one (chosen for B=2F:
  // the alternating order at N = D, the critical-path order beyond) reach
  // it.
  for (int D : {4, 8})
    for (int N : {D, 2 * D, 4 * D}) {
      Result<Schedule> alternating =
          generateChimera(D, N, ChimeraOrder::Alternating);
      ASSERT_TRUE(alternating.ok()) << alternating.error;
      for (const Schedule &s : {*alternating, generate("chimera", D, N)}) {
        test::PlayResult r = play(s, /*B=*/1);
        ASSERT_TRUE(r.finished) << r.stuck;
        EXPECT_EQ(r.makespan, 2L * N + D - 2) << "D=" << D << " N=" << N;
        EXPECT_DOUBLE_EQ(r.bubbleRatio(), ratio(D - 2, 2 * N + D - 2))
            << "D=" << D << " N=" << N;
      }
    }
}

TEST(BaselineSchedules, OptimalScheduleSearchReachesProvenOptima) {
  // The oracle against optima known in closed form, so that a mistake in
  // the search shows here before it is trusted for Chimera with B = 2F.
  // One pipeline, F=1, B=2: the last rank starts after D-1 forwards, works
  // 3N and then D-1 backwards follow its last one: 3(N+D-1), which 1F1B
  // reaches, so that is the optimum.
  for (bool channelsInOrder : {false, true})
    for (int D : {2, 3, 4})
      for (int N : {D, 2 * D}) {
        test::SearchProblem p;
        p.numRanks = D;
        p.stageRank.assign(1, std::vector<int>(D));
        for (int s = 0; s < D; ++s)
          p.stageRank[0][s] = s;
        p.microbatchPipeline.assign(N, 0);
        p.channelsInOrder = channelsInOrder;
        test::OptimalScheduleSearch search(p);
        test::SearchResult best = search.solve();
        EXPECT_EQ(best.makespan, 3L * (N + D - 1)) << "D=" << D << " N=" << N;
        EXPECT_EQ(search.makespanOf(best.orders), best.makespan);
      }
  // Chimera with F=B=1: the lower bound is the paper's 2N+D-2, which the
  // generator reaches (ChimeraReachesClosedFormWithEqualCosts).
  for (bool channelsInOrder : {false, true})
    for (auto [D, N] : {std::pair{4, 4}, {4, 8}, {6, 6}}) {
      test::OptimalScheduleSearch search(
          chimeraProblem(D, N, 1, channelsInOrder));
      EXPECT_EQ(search.solve().makespan, 2L * N + D - 2)
          << "D=" << D << " N=" << N;
    }
  // The evaluator refuses orders that cannot run: both ranks first wait
  // for each other.
  test::OptimalScheduleSearch any(chimeraProblem(2, 2, 2, false));
  EXPECT_EQ(any.makespanOf({{Action::forward(1, 1), Action::forward(0, 0),
                             Action::backward(1, 1), Action::backward(0, 0)},
                            {Action::forward(0, 1), Action::forward(1, 0),
                             Action::backward(0, 1), Action::backward(1, 0)}}),
            -1);
  // Rank 0 sends F0.s0's activation, then B1.s1's gradient; rank 1 takes
  // the gradient first. That runs (F0.s0 [0,1], F1.s1 [1,2], B1.s1 [2,4]
  // on rank 0; B1.s0 [4,6], F0.s1 [6,7], B0.s1 [7,9] on rank 1; B0.s0
  // [9,11]), but not where channels deliver in order.
  const std::vector<std::vector<Action>> crossed = {
      {Action::forward(0, 0), Action::forward(1, 1), Action::backward(1, 1),
       Action::backward(0, 0)},
      {Action::forward(1, 0), Action::backward(1, 0), Action::forward(0, 1),
       Action::backward(0, 1)}};
  EXPECT_EQ(any.makespanOf(crossed), 11);
  test::OptimalScheduleSearch ordered(chimeraProblem(2, 2, 2, true));
  EXPECT_EQ(ordered.makespanOf(crossed), -1);
}

TEST(BaselineSchedules, ChimeraGeneratorOptimalForOneUnitWithDoubleBackward) {
  // F=1, B=2, N = D (one unit). The search (OptimalSchedule.h, every order
  // of every rank's actions) finds 4N+D-4 = 5D-4: 16 at D=4, 26 at D=6,
  // D/2-1 slots above the lower bound (15, 24), which no order reaches
  // here, with or without channels in order. The generator's order takes
  // exactly the optimum.
  struct Case {
    int D, N;
    long optimum;
  };
  for (Case c : {Case{4, 4, 16}, Case{6, 6, 26}}) {
    SCOPED_TRACE("D=" + std::to_string(c.D) + " N=" + std::to_string(c.N));
    ChimeraMakespans m = compareChimeraWithSearch(c.D, c.N);
    EXPECT_EQ(m.optimum, c.optimum);
    EXPECT_EQ(m.optimumAnyChannelOrder, c.optimum);
    EXPECT_GT(m.optimum, chimeraLowerBound(c.D, c.N, 1, 2));
    EXPECT_EQ(m.generator, m.optimum);
  }
}

TEST(BaselineSchedules, ChimeraRegisteredOrderNearOptimumBeyondOneUnit) {
  // F=1, B=2, N a multiple of D above D. The search finds orders (with
  // channels in order, so the project can run them) that meet the lower
  // bound 3(N + D/2 - 1), so that is the optimum.
  //  - The alternating order gives its streams alternate slots, which
  //    suits F=B but stalls a stream behind every 2-slot backward:
  //    4N+D-4, N - D/2 - 1 slots above the optimum for D >= 4, a gap that
  //    grows with N. At D=2 it reaches the optimum (the D=2 rows).
  //  - The critical-path order (CriticalPathOrder.h: backward first, then
  //    the one whose inputs were done first, then the longest chain of
  //    work; channels in order, at most D micro-batches of each direction
  //    in flight) reaches the optimum in every row.
  // The registered order is the faster of the two, the alternating one on
  // a tie (the D=2 rows), so it is optimal in every row.
  struct Case {
    int D, N;
    long alternating, registered, optimum;
  };
  for (Case c :
       {Case{2, 4, 12, 12, 12}, Case{2, 8, 24, 24, 24}, Case{4, 8, 32, 27, 27},
        Case{6, 12, 50, 42, 42}, Case{4, 16, 64, 51, 51}}) {
    SCOPED_TRACE("D=" + std::to_string(c.D) + " N=" + std::to_string(c.N));
    ChimeraMakespans m = compareChimeraWithSearch(c.D, c.N);
    EXPECT_EQ(m.optimum, chimeraLowerBound(c.D, c.N, 1, 2));
    EXPECT_EQ(m.optimum, c.optimum);
    EXPECT_EQ(m.optimumAnyChannelOrder, c.optimum);
    EXPECT_EQ(m.generator, c.registered);
    Result<Schedule> alternating =
        generateChimera(c.D, c.N, ChimeraOrder::Alternating);
    ASSERT_TRUE(alternating.ok()) << alternating.error;
    EXPECT_EQ(
        generatorMakespan(chimeraProblem(c.D, c.N, 2, true), *alternating),
        c.alternating);
    if (c.D > 2) {
      EXPECT_EQ(c.alternating, 4L * c.N + c.D - 4);
      EXPECT_EQ(c.alternating - c.optimum, c.N - c.D / 2 - 1);
    }
  }
  // Beyond the search's reach: never below the bound, never slower than
  // the alternating order, strictly faster from N = 2D on, and a smaller
  // bubble than 1F1B's closed form (D-1)/(N+D-1).
  for (int D : {4, 8, 16})
    for (int N : {D, 2 * D, 4 * D}) {
      SCOPED_TRACE("D=" + std::to_string(D) + " N=" + std::to_string(N));
      test::PlayResult r = play(generate("chimera", D, N));
      Result<Schedule> alternating =
          generateChimera(D, N, ChimeraOrder::Alternating);
      ASSERT_TRUE(alternating.ok()) << alternating.error;
      test::PlayResult before = play(*alternating);
      ASSERT_TRUE(r.finished) << r.stuck;
      EXPECT_GE(r.makespan, chimeraLowerBound(D, N, 1, 2));
      if (N == D)
        EXPECT_EQ(r.makespan, before.makespan);
      else
        EXPECT_LT(r.makespan, before.makespan);
      EXPECT_LT(r.bubbleRatio(), ratio(D - 1, N + D - 1));
    }
}

TEST(BaselineSchedules, ChimeraAtScale) {
  // D=16, N=64 (F=1, B=2): the alternating order takes 4N+D-4 = 268 slots,
  // bubble 76/268 = 0.284; the critical-path order 215, bubble 23/215 =
  // 0.107, 2 slots above the lower bound 3(N + D/2 - 1) = 213 (bench/
  // results-log.md, "Baselines at their best"). Both verify.
  Schedule s = generate("chimera", 16, 64);
  std::vector<Diagnostic> diags = verify(s, {/*requireAllReduce=*/true});
  EXPECT_TRUE(diags.empty()) << formatDiagnostics(diags);
  test::PlayResult r = play(s);
  ASSERT_TRUE(r.finished) << r.stuck;
  EXPECT_EQ(r.makespan, 215);
  EXPECT_EQ(chimeraLowerBound(16, 64, 1, 2), 213);
  Result<Schedule> alternating =
      generateChimera(16, 64, ChimeraOrder::Alternating);
  ASSERT_TRUE(alternating.ok()) << alternating.error;
  EXPECT_EQ(play(*alternating).makespan, 268);
  // Where the registered order meets the lower bound it is optimal without
  // a search: D=8, N=16 and 32; D=16, N=32 (57, 105, 117). Its bubble is
  // then (3D/2 - 3)/(3N + 3D/2 - 3) = (D-2)/(2N+D-2), Chimera's closed form.
  for (auto [D, N] : {std::pair{8, 16}, {8, 32}, {16, 32}}) {
    test::PlayResult at = play(generate("chimera", D, N));
    ASSERT_TRUE(at.finished) << at.stuck;
    EXPECT_EQ(at.makespan, chimeraLowerBound(D, N, 1, 2))
        << "D=" << D << " N=" << N;
    EXPECT_NEAR(at.bubbleRatio(), ratio(D - 2, 2 * N + D - 2), 1e-12)
        << "D=" << D << " N=" << N;
  }
}

TEST(BaselineSchedules, ChimeraEveryOrderVerifies) {
  // SchedulePropertiesTest checks the registered order; each candidate
  // must be a valid step as well (channels in order, all-reduces that
  // meet), whichever the registry picks, for every N, whole units or not.
  for (int D = 2; D <= 16; D += 2)
    for (int N : {1, D / 2 + 1, D, D + 1, 2 * D + 3, 3 * D})
      for (ChimeraOrder order :
           {ChimeraOrder::Alternating, ChimeraOrder::CriticalPath}) {
        SCOPED_TRACE("D=" + std::to_string(D) + " N=" + std::to_string(N) +
                     (order == ChimeraOrder::Alternating ? " alternating"
                                                         : " critical path"));
        Result<Schedule> s = generateChimera(D, N, order);
        ASSERT_TRUE(s.ok()) << s.error;
        std::vector<Diagnostic> diags = verify(*s, {/*requireAllReduce=*/true});
        EXPECT_TRUE(diags.empty()) << formatDiagnostics(diags);
      }
}

TEST(BaselineSchedules, ChimeraPeakActivations) {
  // The alternating order, one unit: rank r holds at most min(D-r, D/2)
  // down and min(r+1, D/2) up chunks, D on the middle ranks, as in the
  // paper. With overlapping units every rank peaks at D: one unit's
  // activations, no more.
  // The critical-path order lets at most D micro-batches of each direction
  // be in flight, and one in flight holds at most one chunk per rank and
  // direction: at most 2D chunks per rank, the memory of Chimera's forward
  // doubling. From N = 2D on (D >= 4) it holds more than the alternating
  // order's D (6 of 8 at D=4, N=8; 32 of 32 at D=16, N=64).
  // The registered order has the peak of the order it picked.
  for (int D : {2, 4, 8, 16})
    for (int N : {D, 2 * D, 4 * D, 2 * D + 3}) {
      SCOPED_TRACE("D=" + std::to_string(D) + " N=" + std::to_string(N));
      Result<Schedule> alternating =
          generateChimera(D, N, ChimeraOrder::Alternating);
      Result<Schedule> critical =
          generateChimera(D, N, ChimeraOrder::CriticalPath);
      ASSERT_TRUE(alternating.ok() && critical.ok());
      Schedule s = generate("chimera", D, N);
      const bool picked = s.ranks == critical->ranks;
      EXPECT_TRUE(picked || s.ranks == alternating->ranks);
      int criticalPeak = 0;
      for (int r = 0; r < D; ++r) {
        int expected =
            N == D ? std::min(D - r, D / 2) + std::min(r + 1, D / 2) : D;
        EXPECT_EQ(peakInFlight(alternating->ranks[r]), expected) << "r=" << r;
        EXPECT_LE(peakInFlight(critical->ranks[r]), 2 * D) << "r=" << r;
        criticalPeak = std::max(criticalPeak, peakInFlight(critical->ranks[r]));
        EXPECT_EQ(peakInFlight(s.ranks[r]),
                  peakInFlight((picked ? critical : alternating)->ranks[r]));
      }
      if (D >= 4 && N >= 2 * D && N % D == 0) {
        EXPECT_GT(criticalPeak, D);
      }
      if (D == 4 && N == 8) {
        EXPECT_EQ(criticalPeak, 6);
      }
      if (D == 16 && N == 64) {
        EXPECT_EQ(criticalPeak, 32);
      }
    }
}

TEST(BaselineSchedules, ChimeraD4N4MatchesHandDerivedOrder) {
  // Derived by hand, not from the generator, from the rules of Chimera's
  // basic unit (Li & Hoefler, SC'21, section 3.1): micro-batches 0, 1 enter
  // the down pipeline at rank 0 and 2, 3 the up pipeline at rank 3; every
  // rank runs an action as soon as its inputs are there (F=1, B=2, free
  // communication); when two are ready at once, the micro-batch that
  // entered its pipeline first goes first (at t=2: F2 before F1 on rank 1,
  // F0 before F3 on rank 2; no forward and backward are ever ready
  // together). Each stage is all-reduced right after its rank's last
  // backward of it. Playing that by hand gives these start slots:
  //
  //   t:  0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15
  //   P0: F0 F1 .  F2 B2 B2 F3 B3 B3 .  B0 B0 .  .  B1 B1
  //   P1: .  F0 F2 F1 F3 .  B2 B2 B0 B0 B3 B3 B1 B1 .  .
  //   P2: .  F2 F0 F3 F1 .  B0 B0 B2 B2 B1 B1 B3 B3 .  .
  //   P3: F2 F3 .  F0 B0 B0 F1 B1 B1 .  B2 B2 .  .  B3 B3
  //
  // 16 slots, the optimum (ChimeraGeneratorOptimalForOneUnit...). The
  // paper's figure is not in the repository, so this is checked against
  // those rules, not the picture.
  const char *expected =
      "P0: F0.s0 F1.s0 F2.s3 B2.s3 F3.s3 B3.s3 AR(3) B0.s0 B1.s0 AR(0)\n"
      "P1: F0.s1 F2.s2 F1.s1 F3.s2 B2.s2 B0.s1 B3.s2 AR(2) B1.s1 AR(1)\n"
      "P2: F2.s1 F0.s2 F3.s1 F1.s2 B0.s2 B2.s1 B1.s2 AR(2) B3.s1 AR(1)\n"
      "P3: F2.s0 F3.s0 F0.s3 B0.s3 F1.s3 B1.s3 AR(3) B2.s0 B3.s0 AR(0)\n";
  const std::vector<std::vector<double>> starts = {{0, 1, 3, 4, 6, 7, 10, 14},
                                                   {1, 2, 3, 4, 6, 8, 10, 12},
                                                   {1, 2, 3, 4, 6, 8, 10, 12},
                                                   {0, 1, 3, 4, 6, 7, 10, 14}};
  Schedule s = generate("chimera", 4, 4);
  EXPECT_EQ(formatGrid(s), expected);
  EXPECT_EQ(s.microbatchPipeline, (std::vector<int>{0, 0, 1, 1}));
  Result<SimResult> sim = simulate(s, CostModel());
  ASSERT_TRUE(sim.ok()) << sim.error;
  std::vector<std::vector<double>> simulated(4);
  for (const TimelineEvent &e : sim.value->timeline)
    if (e.lane == Lane::Compute)
      simulated[e.rank].push_back(e.start);
  for (std::vector<double> &rank : simulated)
    std::sort(rank.begin(), rank.end());
  EXPECT_EQ(simulated, starts);
  EXPECT_EQ(sim.value->makespan, 16);
}
TEST(BaselineSchedules, ZeroBubbleH1) {
  for (Size c : kSizes) {
    Schedule s = generate("zb-h1", c.D, c.N);
    EXPECT_TRUE(s.splitBackward);
    test::PlayResult r = play(s);
    ASSERT_TRUE(r.finished) << r.stuck;
    // Zero Bubble paper: bubble (p-1)(T_F + T_B - T_W) = D-1 slots with
    // F=B=W=1, against 1F1B's 3(D-1) with the same split.
    EXPECT_EQ(r.makespan, 3L * c.N + c.D - 1) << "D=" << c.D << " N=" << c.N;
    EXPECT_DOUBLE_EQ(r.bubbleRatio(), ratio(c.D - 1, 3 * c.N + c.D - 1));
    for (int rank = 0; rank < c.D; ++rank) {
      // 1F1B's in-flight forwards, and never more than D micro-batches
      // between a forward and its W (1F1B's first-rank peak).
      EXPECT_EQ(peakInFlight(s.ranks[rank]), c.D - rank);
      int live = 0, peak = 0;
      for (const Action &a : s.ranks[rank]) {
        if (a.kind == ActionKind::Forward)
          peak = std::max(peak, ++live);
        if (a.kind == ActionKind::WeightGrad)
          --live;
      }
      EXPECT_EQ(peak, c.D) << "rank " << rank;
    }
  }
}

TEST(BaselineSchedules, OneFOneBPeakInFlight) {
  for (int D = 1; D <= 16; ++D)
    for (int N : {D, 2 * D, 3 * D + 1}) {
      Schedule s = generate("1f1b", D, N);
      for (int r = 0; r < D; ++r)
        EXPECT_EQ(peakInFlight(s.ranks[r]), D - r)
            << "D=" << D << " N=" << N << " r=" << r;
    }
  // With fewer micro-batches than ranks, a rank holds at most N.
  Schedule few = generate("1f1b", 8, 3);
  EXPECT_EQ(peakInFlight(few.ranks[0]), 3);
  // GPipe holds every micro-batch.
  EXPECT_EQ(peakInFlight(generate("gpipe", 4, 8).ranks[3]), 8);
}

TEST(BaselineSchedules, InterleavedFollowsMegatronRules) {
  // Megatron-LM: rank r runs 2(D-1-r) + (v-1)D warm-up forwards (capped at
  // N*v); forwards walk groups of D micro-batches through chunk 0, 1, ...;
  // backwards walk the same groups through the chunks in reverse.
  for (int D : {2, 4, 8})
    for (int v : {2, 3, 4})
      for (int N : {D, 2 * D, 3 * D}) {
        Schedule s = generate("interleaved-1f1b", D, N, v);
        for (int r = 0; r < D; ++r) {
          const std::vector<Action> &list = s.ranks[r];
          int warm = 0;
          while (warm < static_cast<int>(list.size()) &&
                 list[warm].kind == ActionKind::Forward)
            ++warm;
          // The steady phase opens with a forward, hence the +1.
          int warmup = std::min(2 * (D - 1 - r) + (v - 1) * D, N * v);
          EXPECT_EQ(warm, warmup < N * v ? warmup + 1 : warmup)
              << "D=" << D << " v=" << v << " N=" << N << " r=" << r;
          int f = 0, b = 0;
          for (const Action &a : list) {
            int k = a.kind == ActionKind::Forward ? f++ : b++;
            int group = k / (D * v), chunk = (k % (D * v)) / D;
            if (a.kind == ActionKind::Backward)
              chunk = v - 1 - chunk;
            EXPECT_EQ(a.microbatch, group * D + k % D);
            EXPECT_EQ(a.stage, chunk * D + r);
          }
        }
      }
}

TEST(BaselineSchedules, InterleavedWithMoreThanTwoChunks) {
  // v = 3, 4 chunks per device, N a multiple of D (Megatron's requirement).
  // Each chunk costs F=1, B=2 (1/v of a stage of the D-stage model). A rank
  // works 3vN chunk slots, and Megatron's closed form (D-1)/(vN+D-1) of the
  // bubble makes the makespan 3vN / (1 - bubble) = 3(vN + D - 1), i.e.
  // (vN + D - 1)(F + B)/v in stage units: 15 at D=4, N=4, v=3 (bench/
  // results-log.md, "Baselines at their best"). Rank r's peak is its warm-up
  // plus the steady phase's first forward, 2(D-1-r) + (v-1)D + 1 chunks,
  // or all vN when the warm-up covers every forward.
  for (int v : {3, 4})
    for (int D : {2, 4, 8})
      for (int N : {D, 2 * D, 4 * D}) {
        SCOPED_TRACE("D=" + std::to_string(D) + " N=" + std::to_string(N) +
                     " v=" + std::to_string(v));
        Schedule s = generate("interleaved-1f1b", D, N, v);
        EXPECT_TRUE(s.note.empty()) << s.note;
        std::vector<Diagnostic> diags = verify(s);
        EXPECT_TRUE(diags.empty()) << formatDiagnostics(diags);
        test::PlayResult r = play(s);
        ASSERT_TRUE(r.finished) << r.stuck;
        EXPECT_EQ(r.makespan, 3L * (v * N + D - 1));
        // The makespan is exact; the ratio is 1 - busy/makespan, rounded.
        EXPECT_NEAR(r.bubbleRatio(), ratio(D - 1, v * N + D - 1), 1e-12);
        for (int rank = 0; rank < D; ++rank) {
          const int warmup = 2 * (D - 1 - rank) + (v - 1) * D;
          EXPECT_EQ(peakInFlight(s.ranks[rank]),
                    warmup < v * N ? warmup + 1 : v * N)
              << "rank " << rank;
        }
      }
}

TEST(BaselineSchedules, InterleavedNonMultipleIsExplainedOrRefused) {
  // Accepted where the smaller last group still runs.
  Result<Schedule> ok = generateInterleaved1F1B(4, 6, 2);
  ASSERT_TRUE(ok.ok()) << ok.error;
  EXPECT_NE(ok->note.find("not a multiple"), std::string::npos);
  EXPECT_TRUE(play(*ok).finished);
  // Refused, with the requirement, where it would deadlock.
  Result<Schedule> bad = generateInterleaved1F1B(8, 12, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("multiple of D=8"), std::string::npos) << bad.error;
  EXPECT_FALSE(generateInterleaved1F1B(4, 8, 1).ok());
}

TEST(BaselineSchedules, ChimeraNoteCountsMicrobatchesInWords) {
  Result<Schedule> one = generateChimera(4, 5);
  ASSERT_TRUE(one.ok()) << one.error;
  EXPECT_EQ(one->note, "N=5 is not a multiple of D=4: the last unit has 1 "
                       "micro-batch (1 down, 0 up)");
  Result<Schedule> three = generateChimera(4, 7);
  ASSERT_TRUE(three.ok()) << three.error;
  EXPECT_EQ(three->note, "N=7 is not a multiple of D=4: the last unit has 3 "
                         "micro-batches (2 down, 1 up)");
}

TEST(BaselineSchedules, ChimeraNeedsEvenDevices) {
  Result<Schedule> s = generateChimera(5, 10);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error, "devices must be even: chimera needs an even number of "
                     "devices (its two pipelines pair device r with device "
                     "D-1-r), got 5");
}

TEST(BaselineSchedules, RegistryDispatchesByName) {
  for (const std::string &name : scheduleNames()) {
    Result<Schedule> s = generateSchedule({name, 4, 8});
    ASSERT_TRUE(s.ok()) << name << ": " << s.error;
    EXPECT_EQ(s->name, name);
    EXPECT_EQ(s->numMicrobatches, 8);
    EXPECT_EQ(s->numRanks(), 4);
  }
  Result<Schedule> bad = generateSchedule({"pipedream", 4, 8});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error.find("pipedream"), std::string::npos);
  EXPECT_NE(bad.error.find("bitpipe"), std::string::npos);
}
