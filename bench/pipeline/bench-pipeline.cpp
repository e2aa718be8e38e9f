//===- bench-pipeline.cpp - Cost of the bitpipe-pipeline pass pipeline ----===//
//
// Runs bitpipe-pipeline in-process on a model built from a config (GPT-96
// by default), for N and 2N micro-batches, and prints one Markdown row per
// N with the median wall time of the pass pipeline alone (the model is
// built and the context set up before the clock starts) and the peak
// resident memory of the whole run, then the ratio of the two times. A
// pipeline that scales linearly in the size of the programs shows about 2
// (the model part, partition and backward, does not grow with N).
//
// Each measurement runs in a forked child, so that ru_maxrss (from wait4)
// is that run's peak, not the largest of all runs so far.
//
// Usage: bench-pipeline [config.json] [--schedule S] [--devices D]
//                       [--microbatches N] [--chunks-per-device V] [--dp K]
//                       [--repeat R]
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/NN/IR/NNDialect.h"
#include "bitpipe/Import/ModelBuilder.h"
#include "bitpipe/Import/ModelConfig.h"
#include "bitpipe/Support/ScheduleCommandLine.h"
#include "bitpipe/Transforms/Pipeline.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

using namespace mlir;

namespace {

struct Request {
  std::string config = "examples/gpt-96.json";
  /// Validated: N and v filled in.
  bitpipe::sched::ScheduleOptions schedule;
  int repeat = 5;
};

/// One run of the pipeline; returns its wall time in seconds, or a negative
/// number on failure.
double runPipeline(const bitpipe::ModelConfig &config, const Request &r,
                   int microbatches) {
  MLIRContext context(MLIRContext::Threading::DISABLED);
  context.loadDialect<bitpipe::nn::NNDialect, bitpipe::bp::BitPipeDialect,
                      arith::ArithDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> module = bitpipe::buildModel(context, config);
  if (!module)
    return -1;
  PassManager pm(&context);
  bitpipe::PipelineConfig options;
  options.request = r.schedule;
  options.request.microbatches = microbatches;
  bitpipe::buildPipeline(pm, options);

  auto start = std::chrono::steady_clock::now();
  if (failed(pm.run(*module)))
    return -1;
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       start)
      .count();
}

struct Measurement {
  double seconds = -1;
  double peakMiB = 0;
};

/// Runs the pipeline in a child; the child reports its time through a pipe.
Measurement measure(const bitpipe::ModelConfig &config, const Request &r,
                    int microbatches) {
  int fds[2];
  if (pipe(fds) != 0)
    return {};
  pid_t child = fork();
  if (child == 0) {
    close(fds[0]);
    double seconds = runPipeline(config, r, microbatches);
    ssize_t written = write(fds[1], &seconds, sizeof seconds);
    _exit(written == sizeof seconds && seconds >= 0 ? 0 : 1);
  }
  close(fds[1]);
  Measurement m;
  double seconds = -1;
  if (read(fds[0], &seconds, sizeof seconds) != sizeof seconds)
    seconds = -1;
  close(fds[0]);
  int status = 0;
  struct rusage usage;
  if (wait4(child, &status, 0, &usage) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    return m;
  m.seconds = seconds;
  m.peakMiB = usage.ru_maxrss / 1024.0;
  return m;
}

Measurement median(const bitpipe::ModelConfig &config, const Request &r,
                   int microbatches) {
  std::vector<Measurement> runs;
  for (int i = 0; i < r.repeat; ++i) {
    Measurement m = measure(config, r, microbatches);
    if (m.seconds < 0)
      return m;
    runs.push_back(m);
  }
  std::sort(runs.begin(), runs.end(),
            [](const Measurement &a, const Measurement &b) {
              return a.seconds < b.seconds;
            });
  return runs[runs.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  namespace cl = llvm::cl;
  // Only these in --help, not every option libLLVM registers.
  cl::OptionCategory category("bench-pipeline options");
  Request r;
  cl::opt<std::string> configPath(cl::Positional, cl::desc("[config.json]"),
                                  cl::init(r.config), cl::cat(category));
  // BitPipe on 8 devices with 32 micro-batches unless told otherwise.
  bitpipe::ScheduleCommandLine scheduleFlags(category, {"bitpipe", 8, 32});
  cl::opt<int> repeat("repeat", cl::desc("runs per N; the median is shown"),
                      cl::value_desc("R"), cl::init(r.repeat),
                      cl::cat(category));
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv, "bitpipe-pipeline's time and memory as N doubles\n");
  r.config = configPath;
  r.repeat = std::max(1, repeat.getValue());
  bitpipe::sched::Result<bitpipe::sched::ScheduleOptions> checked =
      scheduleFlags.validated();
  if (!checked) {
    std::fprintf(stderr, "bench-pipeline: %s\n", checked.error.c_str());
    return 2;
  }
  r.schedule = *checked;

  llvm::Expected<bitpipe::ModelConfig> config =
      bitpipe::loadModelConfig(r.config);
  if (!config) {
    std::fprintf(stderr, "error: %s\n",
                 llvm::toString(config.takeError()).c_str());
    return 1;
  }

  std::printf("bitpipe-pipeline: %s, schedule=%s devices=%d dp=%d, median "
              "of %d runs\n\n",
              config->name.c_str(), r.schedule.schedule.c_str(),
              r.schedule.devices, r.schedule.dataParallel, r.repeat);
  std::printf("| N | pipeline (s) | peak RSS (MiB) |\n|---|---|---|\n");
  double times[2];
  for (int k = 0; k < 2; ++k) {
    int n = *r.schedule.microbatches << k;
    Measurement m = median(*config, r, n);
    if (m.seconds < 0) {
      std::fprintf(stderr,
                   "error: bitpipe-pipeline failed for N=%d (run bitpipe-opt "
                   "--bitpipe-pipeline for the diagnostic)\n",
                   n);
      return 1;
    }
    times[k] = m.seconds;
    std::printf("| %d | %.3f | %.1f |\n", n, m.seconds, m.peakMiB);
  }
  std::printf("\ntime(2N) / time(N): %.2f\n", times[1] / times[0]);
  return 0;
}
