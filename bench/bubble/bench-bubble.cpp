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
// Measured: the compute events of each rank are cut into steps by the
// schedule's action count; a step's window runs from its first compute
// start to its last compute end over all ranks (the simulator's makespan);
// a rank's bubble is 1 - its compute time / the window. The first K steps
// (default 1: start-up, cold caches) are skipped. The mean window is
// printed next to the simulated makespan too: where the model has no
// bubble, their ratio still says how far the run is from it.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Support/ScheduleCommandLine.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

using namespace bitpipe::sched;

namespace {

struct ComputeEvent {
  char kind; // 'F', 'B' or 'W'
  int microbatch, stage;
  double start, duration;
};

bool parseName(llvm::StringRef name, ComputeEvent &e) {
  if (name.size() < 4 || (name[0] != 'F' && name[0] != 'B' && name[0] != 'W'))
    return false;
  auto [mb, stage] = name.drop_front().split(".s");
  e.kind = name[0];
  return !mb.getAsInteger(10, e.microbatch) &&
         !stage.getAsInteger(10, e.stage);
}

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
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse((*buffer)->getBuffer());
  if (!json)
    return fail(tracePath + ": " + llvm::toString(json.takeError()));
  const llvm::json::Array *events = nullptr;
  if (const llvm::json::Object *o = json->getAsObject())
    events = o->getArray("traceEvents");
  else
    events = json->getAsArray();
  if (!events)
    return fail(tracePath + ": no trace events");

  // Compute events per rank, in time order.
  int ranks = schedule->numRanks();
  std::vector<std::vector<ComputeEvent>> perRank(ranks);
  for (const llvm::json::Value &v : *events) {
    const llvm::json::Object *o = v.getAsObject();
    if (!o || o->getString("ph") != llvm::StringRef("X"))
      continue;
    ComputeEvent e;
    auto name = o->getString("name");
    auto pid = o->getInteger("pid");
    auto ts = o->getNumber("ts"), dur = o->getNumber("dur");
    if (!name || !pid || !ts || !dur || !parseName(*name, e))
      continue;
    if (*pid < 0 || *pid >= ranks)
      return fail(tracePath + ": rank " + std::to_string(*pid) +
                  " outside a " + std::to_string(ranks) + "-rank schedule");
    e.start = *ts;
    e.duration = *dur;
    perRank[*pid].push_back(e);
  }
  for (auto &r : perRank)
    std::sort(r.begin(), r.end(), [](auto &a, auto &b) {
      return a.start < b.start;
    });

  // Cut into steps by the schedule's compute actions per rank.
  int steps = -1;
  std::vector<size_t> perStep(ranks);
  for (int r = 0; r < ranks; ++r) {
    perStep[r] = std::count_if(
        schedule->ranks[r].begin(), schedule->ranks[r].end(),
        [](const Action &a) { return a.kind != ActionKind::AllReduce; });
    int s = perStep[r] ? int(perRank[r].size() / perStep[r]) : 0;
    steps = steps < 0 ? s : std::min(steps, s);
  }
  if (steps <= skipSteps)
    return fail(tracePath + ": " + std::to_string(steps) +
                " complete step(s) in the trace; need more than --skip-steps " +
                std::to_string(skipSteps));

  // Measured bubbles, and mean costs per (kind, stage).
  std::vector<double> measured(ranks, 0);
  double meanWindow = 0; // The step's wall time, first start to last end.
  std::map<std::pair<char, int>, std::pair<double, int>> costs;
  for (int s = skipSteps; s < steps; ++s) {
    double begin = 1e300, end = -1e300;
    std::vector<double> busy(ranks, 0);
    for (int r = 0; r < ranks; ++r)
      for (size_t i = s * perStep[r]; i < (s + 1) * perStep[r]; ++i) {
        const ComputeEvent &e = perRank[r][i];
        begin = std::min(begin, e.start);
        end = std::max(end, e.start + e.duration);
        busy[r] += e.duration;
        auto &c = costs[{e.kind, e.stage}];
        c.first += e.duration;
        c.second += 1;
      }
    for (int r = 0; r < ranks; ++r)
      measured[r] += (1 - busy[r] / (end - begin)) / (steps - skipSteps);
    meanWindow += (end - begin) / (steps - skipSteps);
  }

  CostModel cost;
  int stages = schedule->placement.numStages;
  cost.forward.assign(stages, 0);
  cost.backward.assign(stages, 0);
  cost.weightGrad.assign(stages, 0);
  for (auto &[key, sum] : costs) {
    double mean = sum.first / sum.second;
    auto &lane = key.first == 'F'   ? cost.forward
                 : key.first == 'B' ? cost.backward
                                    : cost.weightGrad;
    if (key.second < 0 || key.second >= stages)
      return fail(tracePath + ": stage " + std::to_string(key.second) +
                  " outside the schedule");
    lane[key.second] = mean;
  }
  Result<SimResult> predicted = simulate(*schedule, cost);
  if (!predicted)
    return fail(predicted.error);

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
