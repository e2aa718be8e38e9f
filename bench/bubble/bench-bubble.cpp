//===- bench-bubble.cpp - Measured pipeline bubbles vs. the simulator -----===//
//
//   bench-bubble --trace RUN.json --schedule S --devices D [--microbatches N]
//                [--chunks-per-device V] [--skip-steps K]
//
// Reads the Chrome trace that a compiled executable wrote with --trace (one
// process per rank, compute events named like "F3.s2", "B3.s2", "W3.s2"),
// and prints, per rank, the bubble fraction measured in the real run next
// to the one the schedule library's simulator predicts for the same
// schedule when every forward / backward / weight-gradient of a stage takes
// its measured mean time (communication free, as bitpipe-simulate's
// default).
//
// Measured as bitpipe-calibrate measures (include/bitpipe/Schedule/
// Calibration.h, docs/calibration.md): each rank's compute events cut into
// steps by the schedule's action count; a step's window runs from its first
// compute start to its last compute end over all ranks (the simulator's
// makespan); a rank's bubble is 1 - its compute time / the window. The first
// K steps (default 1: start-up, cold caches) are skipped. The mean window is
// printed next to the simulated makespan too: where the model has no
// bubble, their ratio still says how far the run is from it.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Calibration.h"
#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Support/ScheduleCommandLine.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace bitpipe::sched;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "bench-bubble: %s\n", message.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  namespace cl = llvm::cl;
  // Only these in --help, not every option libLLVM registers.
  cl::OptionCategory category("bench-bubble options");
  cl::opt<std::string> traceFlag("trace", cl::desc("the run's Chrome trace"),
                                 cl::value_desc("RUN.json"), cl::Required,
                                 cl::cat(category));
  // No default schedule or device count: they must be the run's.
  bitpipe::ScheduleCommandLine scheduleFlags(category, {"", 0});
  cl::opt<int> skipStepsFlag(
      "skip-steps", cl::desc("steps skipped at the start (default 1)"),
      cl::value_desc("K"), cl::init(1), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv, "measured pipeline bubbles against the simulator's\n");
  const std::string tracePath = traceFlag;
  const int skipSteps = skipStepsFlag;
  if (skipSteps < 0)
    return fail("--skip-steps must not be negative");
  Result<ScheduleOptions> options = scheduleFlags.validated();
  if (!options)
    return fail(options.error);

  Result<Schedule> schedule = generateSchedule(*options);
  if (!schedule)
    return fail(schedule.error);

  auto buffer = llvm::MemoryBuffer::getFile(tracePath);
  if (!buffer)
    return fail(tracePath + ": " + buffer.getError().message());
  // The run measured and its costs fitted as bitpipe-calibrate does
  // (Calibration.h); here with free communication, bitpipe-simulate's
  // default, so that the bubbles are the schedule's own.
  Result<ChromeTrace> trace = readChromeTrace((*buffer)->getBuffer().str());
  if (!trace)
    return fail(tracePath + ": " + trace.error);
  if (!trace->unused.empty())
    std::fprintf(stderr, "bench-bubble: %s: %s\n", tracePath.c_str(),
                 trace->unused.describe(trace->totalEvents).c_str());
  const std::vector<RunEvent> &events = trace->events;
  Result<Calibration> fit = calibrate(*schedule, events, skipSteps);
  if (!fit)
    return fail(tracePath + ": " + fit.error);
  Result<MeasuredRun> run = measureRun(*schedule, events, skipSteps);
  if (!run)
    return fail(tracePath + ": " + run.error);
  CostModel cost = fit->cost;
  cost.p2pLatency = 0;
  Result<SimResult> predicted = simulate(*schedule, cost);
  if (!predicted)
    return fail(predicted.error);
  const int ranks = schedule->numRanks();
  const int stages = schedule->placement.numStages;
  const int steps = run->stepsUsed + skipSteps;
  const std::vector<double> &measured = run->rankBubble;
  const double meanWindow = run->stepTime;

  std::printf("%s, D=%d, N=%d: %d step(s) measured (first %d skipped)\n",
              options->schedule.c_str(), options->devices,
              *options->microbatches, steps - skipSteps, skipSteps);
  std::printf("mean measured cost per stage (ms):");
  for (int s = 0; s < stages; ++s)
    std::printf(" s%d F %.2f B %.2f%s", s, cost.forward[s] / 1e3,
                cost.backward[s] / 1e3, s + 1 < stages ? "," : "\n");
  // The step itself: what the bubbles are fractions of. With free
  // communication the simulated step is the shortest the measured costs
  // allow; the measured one adds transfers and, on shared cores, waits.
  std::printf("step (ms): measured %.2f, simulated %.2f, ratio %.2f\n",
              meanWindow / 1e3, predicted->makespan / 1e3,
              predicted->makespan > 0 ? meanWindow / predicted->makespan : 0.0);
  std::printf("%-6s %10s %10s %8s\n", "rank", "measured", "simulated",
              "ratio");
  double sumMeasured = 0;
  for (int r = 0; r < ranks; ++r) {
    double sim = predicted->ranks[r].bubbleRatio;
    sumMeasured += measured[r];
    std::printf("%-6d %10.3f %10.3f %8.2f\n", r, measured[r], sim,
                sim > 0 ? measured[r] / sim : 0.0);
  }
  std::printf("%-6s %10.3f %10.3f %8.2f\n", "all", sumMeasured / ranks,
              predicted->bubbleRatio,
              predicted->bubbleRatio > 0
                  ? sumMeasured / ranks / predicted->bubbleRatio
                  : 0.0);
  return 0;
}
