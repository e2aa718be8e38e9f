//===- kernel-rates.cpp - A target's kernels' FLOP rates by shape ---------===//
//
//   bench-kernel-rates        [flags]   (the CPU kernels)
//   bitpipe-gpu-kernel-rates  [flags]   (the CUDA target's bf16 kernels)
//     flags: [--tokens LIST] [--dims LIST] [--seq-lens LIST]
//            [--head-dims LIST] [--batch-heads B,H]
//            [--other-shape TOKENS,DIM] [--threads N] [--jobs N]
//            [--min-time S] [-o FILE]
//
// The planner (bitpipe-plan) turns a kernel's FLOPs into time with a rate.
// A single rate per machine prices a product of 128 rows like one of 2048,
// yet the small one runs well below the machine's peak: packing the
// operands, the loop edges, a GPU's unfilled SMs and the traffic to memory
// cost per call and per operand, not per FLOP. So a plan with small
// micro-batches or thin layers looks cheaper than it runs. This program
// measures, on the machine it runs on, the rate each kernel reaches at
// each shape, and prints the rates as a cluster file's `kernel_rates`
// object (docs/clusters.md), so that the planner charges every kernel at
// its own shape's rate.
//
// What is timed is the target's (RateTarget.h: CpuKernels.cpp,
// CudaKernels.cpp), the calls a compiled stage function makes:
//  - linear, for every tokens x in x out of --tokens and --dims (both in
//    and out range over --dims): the three products of y = x W^T, each
//    2 * tokens * in * out FLOPs;
//  - attention, for every seq_len x head_dim, causal and not, on B
//    sequences of H heads (--batch-heads): forward 4 * B * T * T *
//    (H * head_dim) FLOPs, the backward twice that: the full T x T square
//    even when causal, as the planner counts it, so a causal rate is that
//    of the work counted, not of the work done;
//  - other: everything else as one rate, from layer norm forward and
//    backward, GELU forward and backward and the residual add on
//    [TOKENS, DIM] (--other-shape), counted 5, 10, 8, 16 and 1 FLOPs an
//    element; the rate is their FLOPs over their time.
// FLOPs are counted as lib/Dialect/NN/IR/NNCost.cpp counts them, so that
// the planner's count over a measured rate is the kernel's time. Each
// kernel runs once untimed at each shape (first touch, the kernels'
// scratch, a GPU's algorithm choice and plans), then is timed until
// --min-time seconds have passed and at least three calls were timed; the
// rate is the FLOPs over the median call.
//
// --jobs N (the CPU) runs N identical processes that start each timing
// together, so that the rates are those of N busy cores sharing caches and
// memory bandwidth, as N ranks of a run on one machine are; the printed
// rates are the mean over the jobs. Progress goes to stderr, one line per
// shape; the JSON to stdout or -o.
//
//===----------------------------------------------------------------------===//

#include "RateTarget.h"

#include "bitpipe/Schedule/KernelRates.h"
#include "bitpipe/base/AtomicFile.h"
#include "core/Flags.h"
#include "core/Json.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <optional>
#include <pthread.h>
#include <set>
#include <signal.h>
#include <string>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using namespace bitpipe::runtime;
using namespace bitpipe::bench;
namespace sched = bitpipe::sched;

void bitpipe::bench::fail(const char *fmt, ...) {
  std::va_list args;
  va_start(args, fmt);
  std::fprintf(stderr, "%s: ", kTarget.program);
  std::vfprintf(stderr, fmt, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::fflush(nullptr);
  std::_Exit(1);
}

namespace {

const char *const kProgram = kTarget.program;

/// The flags' upper bounds: the executables' --threads bound
/// (exec/KernelThreads.cpp), and far above any sensible job count or
/// timing, low enough to catch a typo.
constexpr int64_t kMaxThreads = 4096;
constexpr int64_t kMaxJobs = 1024;
constexpr double kMaxMinTime = 3600;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

struct Options {
  std::vector<int64_t> tokens{128, 512, 2048};
  std::vector<int64_t> dims{256, 768, 1024};
  std::vector<int64_t> seqLens{64, 128, 256};
  std::vector<int64_t> headDims{32, 64};
  int64_t batch = 4, heads = 8;
  int64_t otherTokens = 512, otherDim = 768;
  int64_t threads = 1, jobs = 1;
  double minTime = 0.05;
  std::string output; // empty: stdout
};

/// \p text split at commas, each part a positive integer; nothing when a
/// part is not one.
std::optional<std::vector<int64_t>> positiveIntegers(const std::string &text) {
  std::vector<int64_t> values;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma - start);
    int64_t value = 0;
    if (!parseIntFlag("", part, 1, &value).isOk())
      return std::nullopt;
    values.push_back(value);
    if (comma == std::string::npos)
      return values;
    start = comma + 1;
  }
}

/// A grid axis: positive integers, none twice (the grid lists each point
/// once).
FlagSet::Apply gridAxis(std::vector<int64_t> *out) {
  return [out](const std::string &flag, const std::string &value) {
    std::optional<std::vector<int64_t>> values = positiveIntegers(value);
    if (!values || std::set<int64_t>(values->begin(), values->end()).size() !=
                       values->size())
      return badFlagValue(
          flag, value, "a comma-separated list of distinct positive integers");
    *out = *values;
    return Status::ok();
  };
}

/// Two positive integers "A,B" (\p want names them, e.g. "B,H").
FlagSet::Apply intPair(const char *want, int64_t *first, int64_t *second) {
  return [=](const std::string &flag, const std::string &value) {
    std::optional<std::vector<int64_t>> values = positiveIntegers(value);
    if (!values || values->size() != 2)
      return badFlagValue(
          flag, value, formatString("two positive integers %s", want).c_str());
    *first = (*values)[0];
    *second = (*values)[1];
    return Status::ok();
  };
}

/// A whole number from 1 to \p max.
FlagSet::Apply count(int64_t max, int64_t *out) {
  return [=](const std::string &flag, const std::string &value) {
    int64_t n = 0;
    if (!parseIntFlag(flag, value, 1, &n).isOk() || n > max)
      return badFlagValue(flag, value,
                          formatString("a whole number from 1 to %lld",
                                       static_cast<long long>(max))
                              .c_str());
    *out = n;
    return Status::ok();
  };
}

FlagSet flagsFor(Options *o, bool *help) {
  FlagSet flags;
  flags
      .add("--tokens", "LIST", "linear rows, e.g. 128,512,2048 (the default)",
           gridAxis(&o->tokens))
      .add("--dims", "LIST",
           "linear in and out features, e.g. 256,768,1024 (the default)",
           gridAxis(&o->dims))
      .add("--seq-lens", "LIST", "attention lengths (default 64,128,256)",
           gridAxis(&o->seqLens))
      .add("--head-dims", "LIST", "attention head widths (default 32,64)",
           gridAxis(&o->headDims))
      .add("--batch-heads", "B,H",
           "attention's sequences and heads per call (default 4,8)",
           intPair("B,H", &o->batch, &o->heads))
      .add("--other-shape", "TOKENS,DIM",
           "rows and width of the other kernels (default 512,768)",
           intPair("TOKENS,DIM", &o->otherTokens, &o->otherDim))
      .add("--threads", "N", "kernel threads of each job (default 1)",
           count(kMaxThreads, &o->threads))
      .add("--jobs", "N", "measuring processes at once (default 1)",
           count(kMaxJobs, &o->jobs))
      .number("--min-time", "S",
              "seconds of timed calls per kernel and shape (default 0.05)",
              &o->minTime, 0, /*strict=*/true, kMaxMinTime)
      .text("-o", "FILE", "write the JSON there (default stdout)", &o->output)
      .toggle("--help", "this text", help);
  return flags;
}

std::string joined(const std::vector<int64_t> &values) {
  std::string text;
  for (int64_t v : values)
    text += (text.empty() ? "" : ",") + std::to_string(v);
  return text;
}

/// The command line that measures the same again (all but -o).
std::string commandOf(const Options &o) {
  return formatString(
      "%s --tokens %s --dims %s --seq-lens %s --head-dims %s "
      "--batch-heads %lld,%lld --other-shape %lld,%lld --threads %lld "
      "--jobs %lld --min-time %g",
      kProgram, joined(o.tokens).c_str(), joined(o.dims).c_str(),
      joined(o.seqLens).c_str(), joined(o.headDims).c_str(),
      static_cast<long long>(o.batch), static_cast<long long>(o.heads),
      static_cast<long long>(o.otherTokens), static_cast<long long>(o.otherDim),
      static_cast<long long>(o.threads), static_cast<long long>(o.jobs),
      o.minTime);
}

//===----------------------------------------------------------------------===//
// The grid
//===----------------------------------------------------------------------===//

std::vector<LinearShape> linearGrid(const Options &o) {
  std::vector<LinearShape> grid;
  for (int64_t tokens : o.tokens)
    for (int64_t in : o.dims)
      for (int64_t out : o.dims)
        grid.push_back({tokens, in, out});
  return grid;
}

std::vector<AttentionShape> attentionGrid(const Options &o) {
  std::vector<AttentionShape> grid;
  for (int64_t seqLen : o.seqLens)
    for (int64_t headDim : o.headDims)
      for (bool causal : {true, false})
        grid.push_back({seqLen, headDim, causal});
  return grid;
}

/// Rates in measuring order: three per linear shape, two per attention
/// shape, then the other kernels'.
size_t rateCount(const Options &o) {
  return 3 * linearGrid(o).size() + 2 * attentionGrid(o).size() + 1;
}

//===----------------------------------------------------------------------===//
// Jobs
//===----------------------------------------------------------------------===//

/// What the jobs share, in anonymous shared memory mapped before they are
/// forked: a barrier that starts each kernel's timing in all jobs at once,
/// and every job's rates, which the parent reads once they have exited.
class JobTable {
public:
  JobTable(int64_t jobs, size_t rates) : jobs_(jobs), rates_(rates) {
    bytes_ = sizeof(Shared) + sizeof(double) * jobs * rates;
    void *memory = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED)
      fail("cannot map %zu bytes of shared memory: %s", bytes_,
           std::strerror(errno));
    shared_ = static_cast<Shared *>(memory);
    pthread_barrierattr_t attr;
    pthread_barrierattr_init(&attr);
    pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&shared_->barrier, &attr, static_cast<unsigned>(jobs));
    pthread_barrierattr_destroy(&attr);
  }
  JobTable(const JobTable &) = delete;
  JobTable &operator=(const JobTable &) = delete;
  /// After the jobs have exited.
  ~JobTable() {
    pthread_barrier_destroy(&shared_->barrier);
    munmap(shared_, bytes_);
  }

  /// Returns when every job has called it.
  void sync() { pthread_barrier_wait(&shared_->barrier); }
  void record(int64_t job, size_t index, double rate) {
    shared_->rates[job * rates_ + index] = rate;
  }
  /// The jobs' mean rate number \p index.
  double mean(size_t index) const {
    double sum = 0;
    for (int64_t job = 0; job < jobs_; ++job)
      sum += shared_->rates[job * rates_ + index];
    return sum / static_cast<double>(jobs_);
  }

private:
  struct Shared {
    pthread_barrier_t barrier;
    double rates[];
  };
  int64_t jobs_;
  size_t rates_;
  size_t bytes_;
  Shared *shared_;
};

/// One measuring process: times kernels in step with the other jobs and
/// records their rates in measuring order.
class Job {
public:
  Job(JobTable &table, int64_t index, double minTime, RateTarget &target)
      : table_(table), index_(index), minTime_(minTime), target_(target) {}

  /// Times each of \p kernels, all jobs starting it together; returns
  /// their rates, the jobs' mean, once every job has measured them.
  std::vector<double> measure(const std::vector<Timed> &kernels) {
    const size_t first = next_;
    for (const Timed &k : kernels) {
      table_.sync();
      table_.record(index_, next_++,
                    k.flops / target_.medianSeconds(k.call, minTime_));
    }
    table_.sync();
    std::vector<double> means;
    for (size_t i = first; i < next_; ++i)
      means.push_back(table_.mean(i));
    return means;
  }

  /// The first job speaks for all in the progress lines.
  bool reports() const { return index_ == 0; }

private:
  JobTable &table_;
  int64_t index_;
  double minTime_;
  RateTarget &target_;
  size_t next_ = 0;
};

/// Measures every shape in one process: job \p index of the table.
void runJob(const Options &o, JobTable &table, int64_t index) {
  std::unique_ptr<RateTarget> target = makeRateTarget(o.threads);
  Job job(table, index, o.minTime, *target);
  for (const LinearShape &s : linearGrid(o)) {
    std::vector<double> r = job.measure(target->linear(s)->kernels());
    if (job.reports())
      std::fprintf(stderr,
                   "linear tokens=%lld in=%lld out=%lld: forward %.3g, "
                   "input_grad %.3g, weight_grad %.3g FLOP/s\n",
                   static_cast<long long>(s.tokens),
                   static_cast<long long>(s.in), static_cast<long long>(s.out),
                   r[0], r[1], r[2]);
  }
  for (const AttentionShape &s : attentionGrid(o)) {
    std::vector<double> r =
        job.measure(target->attention(s, o.batch, o.heads)->kernels());
    if (job.reports())
      std::fprintf(stderr,
                   "attention seq_len=%lld head_dim=%lld causal=%s: forward "
                   "%.3g, backward %.3g FLOP/s\n",
                   static_cast<long long>(s.seqLen),
                   static_cast<long long>(s.headDim),
                   s.causal ? "true" : "false", r[0], r[1]);
  }
  std::vector<double> r =
      job.measure(target->other(o.otherTokens, o.otherDim)->kernels());
  if (job.reports())
    std::fprintf(stderr,
                 "other tokens=%lld dim=%lld (layer_norm, gelu, add): %.3g "
                 "FLOP/s\n",
                 static_cast<long long>(o.otherTokens),
                 static_cast<long long>(o.otherDim), r[0]);
}

std::string describeExit(int status) {
  if (WIFEXITED(status))
    return formatString("exited with status %d", WEXITSTATUS(status));
  if (WIFSIGNALED(status))
    return formatString("was killed by signal %d (%s)", WTERMSIG(status),
                        strsignal(WTERMSIG(status)));
  return "stopped";
}

/// Forks the jobs and waits for them all. A job that fails stops the
/// others, which would otherwise wait for it at the barrier forever.
Status runJobs(const Options &o, JobTable &table) {
  struct Child {
    pid_t pid;
    int64_t job;
  };
  std::vector<Child> running;
  Status result = Status::ok();
  auto failed = [&](std::string message) {
    if (result.isOk())
      result = Status::error(ErrorCode::IoError, std::move(message));
    for (const Child &c : running)
      kill(c.pid, SIGKILL);
  };
  // One job measures in this process: nothing to fork (and a GPU's
  // context is better not made in a process that forks).
  if (o.jobs == 1) {
    runJob(o, table, 0);
    return result;
  }
  std::fflush(nullptr); // or the children would print it again
  for (int64_t j = 0; j < o.jobs && result.isOk(); ++j) {
    const pid_t pid = fork();
    if (pid == 0) {
      runJob(o, table, j);
      std::fflush(nullptr);
      std::_Exit(0);
    }
    if (pid < 0)
      failed(formatString("cannot start job %lld: %s",
                          static_cast<long long>(j), std::strerror(errno)));
    else
      running.push_back({pid, j});
  }
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0 && errno == EINTR)
      continue;
    if (pid < 0)
      return Status::error(
          ErrorCode::IoError,
          formatString("waiting for the jobs: %s", std::strerror(errno)));
    auto child = std::find_if(running.begin(), running.end(),
                              [&](const Child &c) { return c.pid == pid; });
    if (child == running.end())
      continue;
    const int64_t job = child->job;
    running.erase(child);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
      failed(formatString("job %lld of %lld %s", static_cast<long long>(job),
                          static_cast<long long>(o.jobs),
                          describeExit(status).c_str()));
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Output
//===----------------------------------------------------------------------===//

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &utc);
  return text;
}

std::string measuredLine(const Options &o) {
  std::string how =
      kTarget.threads
          ? formatString("%lld thread%s, %lld job%s at once, "
                         "rates the mean over the jobs",
                         static_cast<long long>(o.threads),
                         o.threads == 1 ? "" : "s",
                         static_cast<long long>(o.jobs), o.jobs == 1 ? "" : "s")
          : std::string(kTarget.kernels);
  return formatString(
      "%s (%s; attention on %lld sequences of %lld heads; other = "
      "layer_norm, gelu and add on [%lld, %lld]) on %s, %s",
      commandOf(o).c_str(), how.c_str(), static_cast<long long>(o.batch),
      static_cast<long long>(o.heads), static_cast<long long>(o.otherTokens),
      static_cast<long long>(o.otherDim), machineDescription().c_str(),
      utcNow().c_str());
}

/// The kernel_rates object of the jobs' mean rates, written as the
/// cluster file's parser reads it (sched::KernelRates::toJson).
Expected<std::string> kernelRatesJson(const Options &o, const JobTable &table) {
  for (size_t i = 0; i < rateCount(o); ++i)
    if (!(std::isfinite(table.mean(i)) && table.mean(i) > 0))
      return Status::error(
          ErrorCode::FormatError,
          formatString("rate %zu came out as %g; expected a positive, finite "
                       "number (a call too short for the clock?)",
                       i, table.mean(i)));
  size_t next = 0;
  std::vector<sched::LinearRate> linear;
  for (const LinearShape &s : linearGrid(o)) {
    linear.push_back(
        {s, table.mean(next), table.mean(next + 1), table.mean(next + 2)});
    next += 3;
  }
  std::vector<sched::AttentionRate> attention;
  for (const AttentionShape &s : attentionGrid(o)) {
    attention.push_back({s, table.mean(next), table.mean(next + 1)});
    next += 2;
  }
  sched::Result<sched::KernelRates> rates = sched::KernelRates::create(
      std::move(linear), std::move(attention), table.mean(next),
      measuredLine(o), "the measured rates");
  if (!rates)
    return Status::error(ErrorCode::FormatError, rates.error);
  return rates->toJson();
}

Status writeOutput(const std::string &path, const std::string &text) {
  if (!path.empty())
    return bitpipe::base::writeFileAtomically(path, text.data(), text.size());
  if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() ||
      std::fflush(stdout) != 0)
    return Status::error(
        ErrorCode::IoError,
        formatString("cannot write to stdout: %s", std::strerror(errno)));
  return Status::ok();
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  bool help = false;
  FlagSet flags = flagsFor(&o, &help);
  if (Status s = flags.parse(argc, argv); !s.isOk()) {
    std::fprintf(stderr, "%s: %s\n", kProgram, s.message().c_str());
    return 2;
  }
  if (help) {
    std::printf("usage: %s [flags]\nMeasures %s' FLOP rates by shape; "
                "prints a cluster file's kernel_rates object.\n%s",
                kProgram, kTarget.kernels, flags.help().c_str());
    return 0;
  }
  if (o.jobs > kTarget.maxJobs) {
    std::fprintf(stderr,
                 "%s: flag --jobs: '%lld' is more than %s allows "
                 "(%lld: one process per device)\n",
                 kProgram, static_cast<long long>(o.jobs), kTarget.kernels,
                 static_cast<long long>(kTarget.maxJobs));
    return 2;
  }
  std::fprintf(stderr,
               "%s: %zu linear shapes, %zu attention shapes and the other "
               "kernels; %s\n",
               kProgram, linearGrid(o).size(), attentionGrid(o).size(),
               kTarget.threads
                   ? formatString("%lld thread(s), %lld job(s) at once",
                                  static_cast<long long>(o.threads),
                                  static_cast<long long>(o.jobs))
                         .c_str()
                   : kTarget.kernels);
  JobTable table(o.jobs, rateCount(o));
  if (Status s = runJobs(o, table); !s.isOk()) {
    std::fprintf(stderr, "%s: %s\n", kProgram, s.message().c_str());
    return 1;
  }
  Expected<std::string> json = kernelRatesJson(o, table);
  if (!json.isOk()) {
    std::fprintf(stderr, "%s: %s\n", kProgram, json.status().message().c_str());
    return 1;
  }
  if (Status s = writeOutput(o.output, *json); !s.isOk()) {
    std::fprintf(stderr, "%s: %s\n", kProgram, s.message().c_str());
    return 1;
  }
  return 0;
}
