//===- bitpipe-calibrate.cpp - The simulator fitted to real runs ----------===//
//
//   bitpipe-calibrate --fit RUN.json:SCHEDULE:D:N[:V]
//                     [--check OTHER.json:SCHEDULE:D:N[:V]]... [--skip-steps K]
//                     [--allreduce-from RUN.json:SCHEDULE:D:N[:V]] [--idle K]
//
// Fits the simulator's cost model to one run's Chrome trace (an executable's
// --trace): each stage's F/B/W time, the time from a transfer's post to its
// data being there, and from an all-reduce's last post to its sum (or takes
// that from another run). Then predicts every run given (the fitted one and
// the held-out --check runs, other schedules or micro-batch counts of the
// same model and ranks): the measured step time against the simulated one,
// with the fitted model, with free all-reduces and with free communication,
// so that what each costs is visible. --idle first says what each run's
// ranks did when they did not compute (docs/calibration.md).
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Calibration.h"
#include "bitpipe/Schedule/IdleTime.h"
#include "bitpipe/Schedule/Registry.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/MemoryBuffer.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace bitpipe::sched;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "bitpipe-calibrate: %s\n", message.c_str());
  return 1;
}

/// A run: its trace's events and the schedule it ran.
struct Run {
  std::string spec, file;
  Schedule schedule;
  std::vector<RunEvent> events;
};

/// "RUN.json:SCHEDULE:D:N[:V]" -> a run, or the reason it is not one.
Result<Run> loadRun(const std::string &flag, const std::string &spec) {
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(spec).split(parts, ':');
  auto bad = [&](const std::string &why) {
    return Result<Run>::failure(flag + " " + spec + ": " + why +
                                "; expected FILE:SCHEDULE:D:N[:V] (the trace, "
                                "the schedule, devices, micro-batches, "
                                "chunks per device)");
  };
  if (parts.size() != 4 && parts.size() != 5)
    return bad("has " + std::to_string(parts.size()) +
               " ':'-separated field(s)");
  ScheduleOptions request;
  request.schedule = parts[1].str();
  int devices = 0, microbatches = 0, chunks = 0;
  if (parts[2].getAsInteger(10, devices))
    return bad("devices '" + parts[2].str() + "' is not an integer");
  if (parts[3].getAsInteger(10, microbatches))
    return bad("micro-batches '" + parts[3].str() + "' is not an integer");
  request.devices = devices;
  request.microbatches = microbatches;
  if (parts.size() == 5) {
    if (parts[4].getAsInteger(10, chunks))
      return bad("chunks '" + parts[4].str() + "' is not an integer");
    request.chunksPerDevice = chunks;
  }
  Result<Schedule> schedule = generateSchedule(request);
  if (!schedule)
    return bad(schedule.error);

  Run run;
  run.spec = spec;
  run.file = parts[0].str();
  run.schedule = std::move(*schedule);
  auto buffer = llvm::MemoryBuffer::getFile(run.file);
  if (!buffer)
    return Result<Run>::failure(flag + " " + spec + ": cannot read '" +
                                run.file + "': " + buffer.getError().message());
  Result<ChromeTrace> trace = readChromeTrace((*buffer)->getBuffer().str());
  if (!trace)
    return Result<Run>::failure(run.file + ": " + trace.error);
  // Said before any fit, so that a refusal below ("holds 0 complete
  // steps") comes with what was left out.
  if (!trace->unused.empty())
    std::fprintf(stderr, "bitpipe-calibrate: %s: %s\n", run.file.c_str(),
                 trace->unused.describe(trace->totalEvents).c_str());
  run.events = std::move(trace->events);
  return Result<Run>::success(std::move(run));
}

/// "recv r1 4.20, untraced 1.03" in ms, largest first; "-" when empty.
std::string formatCauses(const IdleByCause &causes) {
  std::vector<std::pair<std::string, double>> sorted(causes.begin(),
                                                     causes.end());
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const auto &a, const auto &b) { return a.second > b.second; });
  std::string text;
  char number[32];
  for (const auto &[cause, time] : sorted) {
    std::snprintf(number, sizeof(number), " %.2f", time / 1e3);
    text += (text.empty() ? "" : ", ") + cause + number;
  }
  return text.empty() ? "-" : text;
}

double total(const IdleByCause &causes) {
  double sum = 0;
  for (const auto &[cause, time] : causes)
    sum += time;
  return sum;
}

/// What each rank of `run` did when it did not compute (IdleTime.h), and
/// its `largest` longest gaps inside a step.
int printIdle(const Run &run, int skip, int largest) {
  Result<IdleBreakdown> idle = explainIdle(run.schedule, run.events, skip);
  if (!idle)
    return fail(run.file + ": " + idle.error);
  std::printf("idle time of %s, mean ms per step: step %.2f, period %.2f "
              "(step start to step start)\n",
              run.spec.c_str(), idle->measured.stepTime / 1e3,
              idle->stepPeriod / 1e3);
  for (size_t r = 0; r < idle->inStep.size(); ++r) {
    std::printf("  rank %zu in step: %.2f: %s\n", r,
                total(idle->inStep[r]) / 1e3,
                formatCauses(idle->inStep[r]).c_str());
    std::printf("  rank %zu between steps: %.2f: %s\n", r,
                total(idle->betweenSteps[r]) / 1e3,
                formatCauses(idle->betweenSteps[r]).c_str());
    std::vector<const IdleGap *> gaps;
    for (const IdleGap &g : idle->gaps)
      if (g.rank == static_cast<int>(r) && !g.betweenSteps)
        gaps.push_back(&g);
    std::stable_sort(gaps.begin(), gaps.end(),
                     [](const IdleGap *a, const IdleGap *b) {
                       return a->length() > b->length();
                     });
    gaps.resize(std::min<size_t>(gaps.size(), largest));
    for (const IdleGap *g : gaps) {
      IdleByCause spans;
      for (const auto &[name, time] : g->spans)
        spans[name] += time;
      if (g->untraced() > 0)
        spans[kUntraced] = g->untraced();
      std::printf("    step %d, %.2f ms in: %.2f ms gap: %s\n", g->step,
                  (g->start - g->stepStart) / 1e3, g->length() / 1e3,
                  formatCauses(spans).c_str());
    }
  }
  std::printf("\n");
  return 0;
}

/// What the fit found: per-stage times, the ranks' speeds, the
/// point-to-point latency.
void printFit(const std::string &spec, const Calibration &fit) {
  const CostModel &cost = fit.cost;
  const bool gpu = fit.fromDevice;
  std::printf("fitted on %s: %d compute steps%s, %d transfers %s\n",
              spec.c_str(), fit.computeSamples,
              gpu ? " (the devices' compute streams)" : "", fit.transferSamples,
              gpu ? "timed on the devices' streams"
                  : "the receiver waited for");
  std::printf("  mean ms per stage:");
  for (size_t s = 0; s < cost.forward.size(); ++s) {
    std::printf(" s%zu F %.3f B %.3f", s, cost.forward[s] / 1e3,
                cost.backward[s] / 1e3);
    if (cost.weightGrad[s] > 0)
      std::printf(" W %.3f", cost.weightGrad[s] / 1e3);
    std::printf(s + 1 < cost.forward.size() ? "," : "\n");
  }
  if (fit.rankComputeScale.empty()) {
    std::printf("  ranks' speeds: not separable from the stages' costs (each "
                "stage ran on one rank)\n");
  } else {
    std::printf("  each rank's compute time over the ranks' mean, in the "
                "stages they share:");
    for (size_t r = 0; r < fit.rankComputeScale.size(); ++r)
      std::printf(" r%zu %.3f", r, fit.rankComputeScale[r]);
    std::printf("\n");
  }
  std::printf("  point-to-point: %.3f ms from %s to its data\n",
              cost.p2pLatency / 1e3,
              gpu ? "both ends' launch" : "a send's post");
}

/// The run the all-reduce time comes from, and how many samples it had.
struct AllReduceSource {
  std::string spec;
  int samples = 0;
};

/// --allreduce-from: fits \p spec's run and takes its all-reduce time into
/// \p cost, or says why it cannot (another device, no all-reduce to time).
Result<AllReduceSource> takeAllReduceFrom(const std::string &spec, int skip,
                                          bool gpu, CostModel &cost) {
  Result<Run> other = loadRun("--allreduce-from", spec);
  if (!other)
    return Result<AllReduceSource>::failure(other.error);
  Result<Calibration> otherFit =
      calibrate(other->schedule, other->events, skip);
  if (!otherFit)
    return Result<AllReduceSource>::failure(other->file + ": " +
                                            otherFit.error);
  if (otherFit->fromDevice != gpu)
    return Result<AllReduceSource>::failure(
        "--allreduce-from " + spec + ": a " +
        (otherFit->fromDevice ? "GPU" : "CPU") +
        " run's trace, and the fitted run's is a " + (gpu ? "GPU" : "CPU") +
        " one: their all-reduces are not the same model");
  if (otherFit->allReduceSamples == 0)
    return Result<AllReduceSource>::failure(
        "--allreduce-from " + spec +
        (gpu ? ": no collective that every member ran"
             : ": no step with all-reduce waits after its compute "
               "(it takes a schedule whose all-reduces all span "
               "one group: BitPipe or Chimera at D = 2)"));
  cost.allReduceLatency = otherFit->cost.allReduceLatency;
  cost.allReducePostTime = otherFit->cost.allReducePostTime;
  return Result<AllReduceSource>::success(
      {other->spec, otherFit->allReduceSamples});
}

void printAllReduce(const CostModel &cost, bool gpu,
                    const AllReduceSource &source) {
  if (gpu)
    std::printf("  all-reduce: %.3f ms each, on its stream beside compute, "
                "from its last member's launch (median of %d collectives of "
                "%s)\n\n",
                cost.allReduceLatency / 1e3, source.samples,
                source.spec.c_str());
  else
    std::printf("  all-reduce: %.3f ms each, in the waits after the compute "
                "(median of %d steps of %s); posting one: %.3f ms of the "
                "rank's time\n\n",
                cost.allReduceLatency / 1e3, source.samples,
                source.spec.c_str(), cost.allReducePostTime / 1e3);
}

/// The table: each run measured against its prediction with \p cost, with
/// free all-reduces, with free communication, at the run's own compute
/// speed and, with \p spread simulations, with the fitted spread of stage
/// times. The first run is the fitted one.
int printPredictions(const std::vector<Run> &runs, const CostModel &cost,
                     const StageSamples &samples, int skip, int spread,
                     SpreadDraws draws) {
  CostModel noAllReduce = cost;
  noAllReduce.allReduceLatency = 0;
  noAllReduce.allReducePostTime = 0;
  CostModel free = noAllReduce;
  free.p2pLatency = 0;
  std::printf(
      "| run | steps | measured step (ms) | predicted (ms) | error | "
      "measured bubble | predicted | free all-reduce: error | free "
      "communication: error | at the run's compute speed: scale per rank | "
      "error |%s\n|---|---|---|---|---|---|---|---|---|---|---|%s\n",
      spread ? " with the spread: predicted (ms) | error | bubble |" : "",
      spread ? "---|---|---|" : "");
  for (const Run &run : runs) {
    std::vector<Prediction> predictions;
    const CostModel *models[] = {&cost, &noAllReduce, &free};
    for (const CostModel *model : models) {
      Result<Prediction> p = predict(run.schedule, *model, run.events, skip);
      if (!p)
        return fail(run.file + ": " + p.error);
      predictions.push_back(*p);
    }
    Result<Prediction> atSpeed =
        predictAtRunSpeed(run.schedule, cost, run.events, skip);
    if (!atSpeed)
      return fail(run.file + ": " + atSpeed.error);
    const Prediction &p = predictions[0];
    std::string scales;
    for (double scale : atSpeed->rankComputeScale) {
      char text[32];
      std::snprintf(text, sizeof text, "%s%.3f", scales.empty() ? "" : " / ",
                    scale);
      scales += text;
    }
    std::printf("| %s%s | %d | %.2f | %.2f | %+.1f%% | %.3f | %.3f | %+.1f%% "
                "| %+.1f%% | %s | %+.1f%% |",
                run.spec.c_str(), &run == &runs.front() ? " (fitted)" : "",
                p.measured.stepsUsed, p.measured.stepTime / 1e3,
                p.simulatedStep / 1e3, 100 * p.stepError(), p.measured.bubble,
                p.simulatedBubble, 100 * predictions[1].stepError(),
                100 * predictions[2].stepError(), scales.c_str(),
                100 * atSpeed->stepError());
    if (spread) {
      Result<Prediction> drawn =
          predictWithSpread(run.schedule, cost, samples, run.events, skip,
                            spread, /*seed=*/1, draws);
      if (!drawn)
        return fail(run.file + ": " + drawn.error);
      std::printf(" %.2f | %+.1f%% | %.3f |", drawn->simulatedStep / 1e3,
                  100 * drawn->stepError(), drawn->simulatedBubble);
    }
    std::printf("\n");
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  namespace cl = llvm::cl;
  cl::OptionCategory category("bitpipe-calibrate options");
  cl::opt<std::string> fitFlag("fit",
                               cl::desc("the run to fit the cost model to"),
                               cl::value_desc("RUN.json:SCHEDULE:D:N[:V]"),
                               cl::Required, cl::cat(category));
  cl::list<std::string> checkFlag(
      "check", cl::desc("a held-out run to predict (repeatable)"),
      cl::value_desc("RUN.json:SCHEDULE:D:N[:V]"), cl::cat(category));
  cl::opt<int> skipFlag("skip-steps",
                        cl::desc("steps skipped at the start of every run "
                                 "(default 1: start-up, cold caches)"),
                        cl::value_desc("K"), cl::init(1), cl::cat(category));
  cl::opt<std::string> allReduceFlag(
      "allreduce-from",
      cl::desc("take the all-reduce time from this run instead of the fitted "
               "one (any schedule whose all-reduces span one group)"),
      cl::value_desc("RUN.json:SCHEDULE:D:N[:V]"), cl::cat(category));
  cl::opt<int> idleFlag(
      "idle",
      cl::desc("before the predictions, what each run's ranks did when not "
               "computing, with their K longest gaps inside a step"),
      cl::value_desc("K"), cl::init(-1), cl::cat(category));
  cl::opt<int> spreadFlag(
      "spread",
      cl::desc("also predict with the fitted run's spread of stage times: "
               "each step's time drawn from its stage's measured ones, the "
               "mean of N simulations (a fixed seed)"),
      cl::value_desc("N"), cl::init(0), cl::cat(category));
  cl::opt<SpreadDraws> spreadDrawsFlag(
      "spread-draws",
      cl::desc("how --spread draws each call's time (default: call)"),
      cl::values(clEnumValN(SpreadDraws::Independent, "call",
                            "independently, from all its stage's times"),
                 clEnumValN(SpreadDraws::ByStep, "step",
                            "all calls from one measured training step, "
                            "drawn per simulation, so that a slowdown the "
                            "ranks shared stays shared")),
      cl::init(SpreadDraws::Independent), cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv, "the simulator's cost model fitted to real runs\n");
  const int skip = skipFlag;
  if (skip < 0)
    return fail("--skip-steps must not be negative, got " +
                std::to_string(skip));
  const int spread = spreadFlag;
  if (spread < 0 || spread > 100000)
    return fail("--spread must be in [0, 100000] simulations, got " +
                std::to_string(spread));

  Result<Run> fitted = loadRun("--fit", fitFlag);
  if (!fitted)
    return fail(fitted.error);
  Result<Calibration> fit = calibrate(fitted->schedule, fitted->events, skip);
  if (!fit)
    return fail(fitted->file + ": " + fit.error);
  std::vector<Run> runs;
  runs.push_back(std::move(*fitted));
  for (const std::string &spec : checkFlag) {
    Result<Run> run = loadRun("--check", spec);
    if (!run)
      return fail(run.error);
    if (run->schedule.placement.numStages !=
        runs.front().schedule.placement.numStages)
      return fail("--check " + spec + ": its schedule has " +
                  std::to_string(run->schedule.placement.numStages) +
                  " stages, the fitted run's " +
                  std::to_string(runs.front().schedule.placement.numStages) +
                  "; the cost model is per stage, so both must cut the model "
                  "alike");
    runs.push_back(std::move(*run));
  }

  if (idleFlag >= 0)
    for (const Run &run : runs)
      if (int rc = printIdle(run, skip, idleFlag))
        return rc;

  CostModel cost = fit->cost;
  const bool gpu = fit->fromDevice;
  printFit(runs.front().spec, *fit);
  AllReduceSource allReduce{runs.front().spec, fit->allReduceSamples};
  if (!allReduceFlag.empty()) {
    Result<AllReduceSource> other =
        takeAllReduceFrom(allReduceFlag, skip, gpu, cost);
    if (!other)
      return fail(other.error);
    allReduce = *other;
  }
  printAllReduce(cost, gpu, allReduce);

  return printPredictions(runs, cost, fit->samples, skip, spread,
                          spreadDrawsFlag);
}
