//===- BenchSchedules.cpp - Cost and quality of the schedule generators ---===//
//
// Three tables, in Markdown:
//
//  1. Wall time of generate + verify + simulate (unit costs) for every
//     schedule at D=32 and N, 2N micro-batches, with the ratio of the two: a
//     library that scales linearly in the number of actions shows about 2.
//     Each measurement is the median of several runs.
//  2. Makespan, bubble ratio and peak in-flight activations (max over ranks,
//     in chunks: one per (micro-batch, stage) whose F is done and B is not)
//     for every schedule at small D and N, next to the closed-form bubble
//     ratio the papers give, where one applies.
//  3. (--zero-bubble: this table only) the comparison of the
//     zero-bubble schedules with BitPipe (docs/zero-bubble.md): bitpipe,
//     bitpipe-zb, zb-h1 and zbv at D in {4, 8, 16}, N in {D, 2D, 4D}:
//     makespan, bubble, and the peak activations per rank, counted until
//     B (the simulator's measure) and until W (a split backward's W reads
//     the stash), in chunks and in a device's share of the model.
//
// Costs are the papers' units: F=1, B=2 for a whole backward; the split
// schedules (zb-h1, bitpipe-zb, zbv) split it into B=1 (input gradient) and
// W=1 (weights), so every schedule does the same work per (micro-batch,
// stage). Communication is free.
//
// Usage: bench-schedules [--repeat K] [--devices D] [--microbatches N]
//                        [--zero-bubble]
//        bench-schedules --baselines   (only BaselinesTable.h's table)
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/CostModel.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"

#include "BaselinesTable.h"

#include "core/Flags.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace bitpipe::sched;

namespace {

struct Options {
  int repeat = 7;
  int devices = 32;
  int microbatches = 256;
  bool baselines = false;
  bool zeroBubbleOnly = false;
};

/// Reads the flags into \p o; false (with a message) on a malformed one.
bool parseArgs(int argc, char **argv, Options &o) {
  int64_t repeat = o.repeat, devices = o.devices, microbatches = o.microbatches;
  const std::string devicesFlag = std::string("--") + option::kDevices;
  const std::string microbatchesFlag =
      std::string("--") + option::kMicrobatches;
  bitpipe::runtime::FlagSet flags;
  flags.integer("--repeat", "K", "runs per measurement (default 7)", &repeat, 1)
      .integer(devicesFlag.c_str(), "D", "pipeline devices (default 32)",
               &devices, 1)
      .integer(microbatchesFlag.c_str(), "N", "micro-batches (default 256)",
               &microbatches, 1)
      .toggle("--baselines", "only the table of the baselines at their best",
              &o.baselines)
      .toggle("--zero-bubble",
              "only the zero-bubble table (docs/zero-bubble.md)",
              &o.zeroBubbleOnly);
  bitpipe::runtime::Status parsed = flags.parse(argc, argv);
  constexpr int64_t kMax = 1000000;
  if (!parsed.isOk() || repeat > kMax || devices > kMax ||
      microbatches > kMax) {
    std::fprintf(stderr,
                 "bench-schedules: %s\nusage: bench-schedules [flags], each "
                 "at most %lld\n%s",
                 parsed.isOk() ? "a value is too large"
                               : parsed.message().c_str(),
                 static_cast<long long>(kMax), flags.help().c_str());
    return false;
  }
  o.repeat = static_cast<int>(repeat);
  o.devices = static_cast<int>(devices);
  o.microbatches = static_cast<int>(microbatches);
  return true;
}

/// The papers' unit costs for `s` (see the file comment).
CostModel unitCosts(const Schedule &s) {
  CostModel cost;
  if (s.splitBackward)
    cost.unitBackward = 1.0;
  return cost;
}

/// Generates, verifies and simulates one schedule; the simulation, or an
/// empty optional after printing why it failed.
std::optional<SimResult> runOnce(const std::string &name, int D, int N,
                                 double backward = 0) {
  // interleaved-1f1b with the registry's default v (2).
  Result<Schedule> s = generateSchedule({name, D, N});
  if (!s) {
    std::fprintf(stderr, "%s D=%d N=%d: %s\n", name.c_str(), D, N,
                 s.error.c_str());
    return std::nullopt;
  }
  std::vector<Diagnostic> diags = verify(*s);
  if (!diags.empty()) {
    std::fprintf(stderr, "%s D=%d N=%d does not verify:\n%s\n", name.c_str(), D,
                 N, formatDiagnostics(diags).c_str());
    return std::nullopt;
  }
  CostModel cost = unitCosts(*s);
  if (backward > 0)
    cost.unitBackward = backward;
  Result<SimResult> sim = simulate(*s, cost);
  if (!sim || sim->deadlocked) {
    std::fprintf(stderr, "%s D=%d N=%d cannot be simulated: %s\n", name.c_str(),
                 D, N, sim ? sim->deadlockReport().c_str() : sim.error.c_str());
    return std::nullopt;
  }
  return std::move(*sim.value);
}

/// Wall time in milliseconds of one generate + verify + simulate; negative
/// on failure.
double millis(const std::string &name, int D, int N) {
  auto start = std::chrono::steady_clock::now();
  bool ok = runOnce(name, D, N).has_value();
  auto end = std::chrono::steady_clock::now();
  return ok ? std::chrono::duration<double, std::milli>(end - start).count()
            : -1;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Median times of N and 2N micro-batches. The two sizes alternate, after
/// one discarded warm-up run each, so that a change in the machine's load
/// during the measurement (shared machines) biases both alike and the
/// ratio stays meaningful. Negative on failure.
std::pair<double, double> medianMillis(const std::string &name, int D, int N,
                                       int repeat) {
  if (millis(name, D, N) < 0 || millis(name, D, 2 * N) < 0)
    return {-1, -1};
  std::vector<double> small, large;
  for (int k = 0; k < repeat; ++k) {
    small.push_back(millis(name, D, N));
    large.push_back(millis(name, D, 2 * N));
  }
  return {median(small), median(large)};
}

/// The closed-form bubble ratio the papers give for `name`, if any.
std::optional<double> closedForm(const std::string &name, int D, int N) {
  // interleaved-1f1b runs with the registry's default chunk count.
  const double d = D, n = N,
               v = findSchedule("interleaved-1f1b")->defaultChunks;
  if (name == "gpipe" || name == "1f1b")
    return (d - 1) / (n + d - 1);
  if (name == "interleaved-1f1b")
    return (d - 1) / (v * n + d - 1);
  if (name == "chimera")
    return (d - 2) / (2 * n + d - 2);
  if (name == "bitpipe" && N == D)
    return (d - 2) / (3 * n + d - 2);
  return std::nullopt;
}

void timingTable(const Options &o) {
  const int D = o.devices, N = o.microbatches;
  std::printf("### Generate + verify + simulate, D=%d (median of %d runs)\n\n",
              D, o.repeat);
  std::printf("| schedule | N=%d (ms) | N=%d (ms) | time(2N)/time(N) |\n", N,
              2 * N);
  std::printf("|---|---:|---:|---:|\n");
  for (const std::string &name : scheduleNames()) {
    auto [t1, t2] = medianMillis(name, D, N, o.repeat);
    if (t1 < 0 || t2 < 0) {
      std::printf("| %s | failed | failed | - |\n", name.c_str());
      continue;
    }
    std::printf("| %s | %.1f | %.1f | %.2f |\n", name.c_str(), t1, t2,
                t1 > 0 ? t2 / t1 : 0.0);
  }
  std::printf("\n");
}

void qualityTable() {
  std::printf("### Makespan, bubble ratio and peak activations "
              "(F=1, B=2; split schedules B=1, W=1)\n\n");
  std::printf("| schedule | D | N | makespan | bubble (measured) | "
              "bubble (closed form) | peak in-flight (chunks) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string &name : scheduleNames())
    for (int D : {4, 8, 16})
      for (int N : {D, 2 * D, 4 * D}) {
        std::optional<SimResult> sim = runOnce(name, D, N);
        if (!sim) {
          std::printf("| %s | %d | %d | failed | - | - | - |\n", name.c_str(),
                      D, N);
          continue;
        }
        int peak = 0;
        for (const RankStats &r : sim->ranks)
          peak = std::max(peak, r.peakInFlight);
        std::optional<double> closed = closedForm(name, D, N);
        char closedText[32] = "-";
        if (closed)
          std::snprintf(closedText, sizeof(closedText), "%.4f", *closed);
        std::printf("| %s | %d | %d | %g | %.4f | %s | %d |\n", name.c_str(), D,
                    N, sim->makespan, sim->bubbleRatio, closedText, peak);
      }
  std::printf("\n");
}

/// Chimera's closed form counts F and B as equal slots: measure it there.
void chimeraEqualCostTable() {
  std::printf("### chimera with F=B=1\n\n");
  std::printf("| D | N | makespan | bubble (measured) | bubble (closed form) "
              "|\n");
  std::printf("|---:|---:|---:|---:|---:|\n");
  for (int D : {4, 8, 16})
    for (int N : {D, 2 * D, 4 * D}) {
      std::optional<SimResult> sim = runOnce("chimera", D, N, 1.0);
      if (!sim) {
        std::printf("| %d | %d | failed | - | - |\n", D, N);
        continue;
      }
      std::printf("| %d | %d | %g | %.4f | %.4f |\n", D, N, sim->makespan,
                  sim->bubbleRatio, *closedForm("chimera", D, N));
    }
  std::printf("\n");
}

/// The zero-bubble table (see the file comment). A chunk is 1/S of the model:
/// zb-h1 has S = D stages, the others 2D. So that all run the same model,
/// the makespan is in slots of a 1/(2D) chunk's F (zb-h1's, whose stages
/// are twice as long, doubles), and "x share" (chunks x D / S) counts the
/// activations in micro-batches of one device's layers.
void zeroBubbleTable() {
  std::printf("### Zero-bubble schedules (F=1; bitpipe B=2; the others "
              "B=1, W=1; one slot = the F of 1/(2D) of the model)\n\n");
  std::printf("| schedule | D | N | makespan | / bitpipe | bubble | peak to B "
              "(chunks) | peak to W (chunks) | peak to W (x share) |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int D : {4, 8, 16})
    for (int N : {D, 2 * D, 4 * D}) {
      std::optional<SimResult> bitpipe = runOnce("bitpipe", D, N);
      for (const char *name : {"bitpipe", "bitpipe-zb", "zb-h1", "zbv"}) {
        Result<Schedule> s = generateSchedule({name, D, N});
        std::optional<SimResult> sim = runOnce(name, D, N);
        if (!s || !sim || !bitpipe) {
          std::printf("| %s | %d | %d | failed | - | - | - | - | - |\n", name,
                      D, N);
          continue;
        }
        int toB = 0, toW = 0;
        for (int r = 0; r < s->numRanks(); ++r) {
          toB = std::max(toB, sim->ranks[r].peakInFlight);
          toW = std::max(toW, peakStashes(s->ranks[r], s->splitBackward));
        }
        const double slots = sim->makespan * 2 * D / s->placement.numStages;
        std::printf("| %s | %d | %d | %g | %.3f | %.4f | %d | %d | %g |\n",
                    name, D, N, slots, slots / bitpipe->makespan,
                    sim->bubbleRatio, toB, toW,
                    double(toW) * D / s->placement.numStages);
      }
    }
  std::printf("\n");
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parseArgs(argc, argv, o))
    return 2;
  if (o.baselines)
    return bitpipe::bench::printBaselinesTable() ? 0 : 1;
  if (o.zeroBubbleOnly) {
    zeroBubbleTable();
    return 0;
  }
  timingTable(o);
  qualityTable();
  chimeraEqualCostTable();
  zeroBubbleTable();
  return 0;
}
