//===- kernel-rates.cpp - The CPU kernels' FLOP rates by shape ------------===//
//
//   bench-kernel-rates [--tokens LIST] [--dims LIST] [--seq-lens LIST]
//                      [--head-dims LIST] [--batch-heads B,H]
//                      [--other-shape TOKENS,DIM] [--threads N] [--jobs N]
//                      [--min-time S] [-o FILE]
//
// The planner (bitpipe-plan) turns a kernel's FLOPs into time with a rate.
// A single rate per machine prices a product of 128 rows like one of 2048,
// yet the small one runs well below the core's peak: packing the operands,
// the loop edges and the traffic to memory cost per call and per operand,
// not per FLOP. So a plan with small micro-batches or thin layers looks
// cheaper than it runs. This program measures, on the machine it runs on,
// the rate each CPU kernel reaches at each shape, and prints the rates as
// a cluster file's `kernel_rates` object (docs/clusters.md), so that the
// planner charges every kernel at its own shape's rate.
//
// What is timed: exactly the runtime functions a compiled CPU stage calls.
//  - linear, for every tokens x in x out of --tokens and --dims (both in
//    and out range over --dims): the three products of y = x W^T, namely
//    bp_linear_fwd, bp_linear_bwd_input and bp_linear_bwd_weight_g64 (the
//    form with float64 accumulators, which the CPU target's stage
//    functions call), all without bias. Each is 2 * tokens * in * out
//    FLOPs.
//  - attention, for every seq_len x head_dim, causal and not:
//    bp_attention_fwd and bp_attention_bwd on B sequences of H heads
//    (--batch-heads). The forward is 4 * B * T * T * (H * head_dim) FLOPs,
//    the backward twice that: the full T x T square even when causal, as
//    the planner counts it, so a causal rate is that of the work counted,
//    not of the work done.
//  - other: everything else as one rate, from a sequence of layer_norm
//    forward and backward (_g64), gelu forward and backward (the tanh form)
//    and the residual add on [TOKENS, DIM] (--other-shape), counted 5, 10,
//    8, 16 and 1 FLOPs per element; the rate is their FLOPs over their
//    time.
// FLOPs are counted as lib/Dialect/NN/IR/NNCost.cpp counts them, so that
// the planner's count over a measured rate is the kernel's time.
//
// How: operands random from a fixed seed, 64-byte aligned like the
// runtime's pool's blocks. Each kernel runs once untimed at each shape
// (first touch of the pages, the kernels' scratch), then call by call
// until --min-time seconds have passed and at least kMinSamples calls
// were timed; the rate is the FLOPs over the median call's time.
//
// --threads sets the kernel threads as a training executable does
// (cpu::setKernelThreads, which keeps OpenBLAS on the calling thread and
// splits the products itself). --jobs N runs N identical processes that
// start each timing together, so that the rates are those of N busy cores
// sharing caches and memory bandwidth, as N ranks of a run on one machine
// are; the printed rates are the mean over the jobs. Progress goes to
// stderr, one line per shape; the JSON to stdout or -o.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/base/AtomicFile.h"
#include "bitpipe/base/CheckedArithmetic.h"
#include "bitpipe/runtime.h"
#include "core/Flags.h"
#include "core/Json.h"
#include "core/Random.h"
#include "cpu/Parallel.h"

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

namespace {

constexpr const char *kProgram = "bench-kernel-rates";

/// The fewest timed calls a rate is the median of, however long each takes.
constexpr size_t kMinSamples = 3;

/// The seed of every operand; each buffer of a shape draws its own stream.
constexpr uint64_t kSeed = 0x5eed;

/// The flags' upper bounds: the executables' --threads bound
/// (exec/KernelThreads.cpp), and far above any sensible job count or
/// timing, low enough to catch a typo.
constexpr int64_t kMaxThreads = 4096;
constexpr int64_t kMaxJobs = 1024;
constexpr double kMaxMinTime = 3600;

/// Prints "bench-kernel-rates: <message>" and ends the process with status
/// 1. Used where a job cannot go on; _Exit, because a job is a forked child
/// whose parent's state it must not tear down.
[[noreturn]] __attribute__((format(printf, 1, 2))) void fail(const char *fmt,
                                                             ...) {
  std::va_list args;
  va_start(args, fmt);
  std::fprintf(stderr, "%s: ", kProgram);
  std::vfprintf(stderr, fmt, args);
  std::fputc('\n', stderr);
  va_end(args);
  std::fflush(nullptr);
  std::_Exit(1);
}

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
// Operands and timing
//===----------------------------------------------------------------------===//

/// A tensor's elements, 64-byte aligned as bp_alloc's blocks are. Not from
/// bp_alloc itself: its pool keeps every freed size, and a grid has many.
template <typename T> class Buffer {
public:
  /// Zeros.
  static Buffer zeros(std::initializer_list<int64_t> shape) {
    Buffer b(shape);
    std::memset(b.data_, 0, b.bytes_);
    return b;
  }
  /// Uniform in [-1, 1), the fixed seed's \p stream.
  static Buffer random(std::initializer_list<int64_t> shape, uint64_t stream) {
    Buffer b(shape);
    for (int64_t i = 0; i < b.count_; ++i)
      b.data_[i] = static_cast<T>(
          2 * randomUniform(kSeed, stream, static_cast<uint64_t>(i)) - 1);
    return b;
  }

  Buffer(Buffer &&other) noexcept
      : data_(other.data_), count_(other.count_), bytes_(other.bytes_) {
    other.data_ = nullptr;
  }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
  Buffer &operator=(Buffer &&) = delete;
  ~Buffer() { std::free(data_); }

  T *get() const { return data_; }

private:
  explicit Buffer(std::initializer_list<int64_t> shape) {
    constexpr size_t kAlignment = 64;
    std::optional<int64_t> count = bitpipe::checkedProduct(shape);
    std::optional<int64_t> bytes =
        count
            ? bitpipe::checkedProduct({*count, static_cast<int64_t>(sizeof(T))})
            : std::nullopt;
    if (!bytes || *bytes > INT64_MAX - static_cast<int64_t>(kAlignment))
      fail("an operand of more than 2^63 bytes: the shapes are too large");
    count_ = *count;
    // aligned_alloc wants a multiple of the alignment.
    bytes_ = (static_cast<size_t>(*bytes) + kAlignment - 1) / kAlignment *
             kAlignment;
    data_ = static_cast<T *>(std::aligned_alloc(kAlignment, bytes_));
    if (!data_)
      fail("cannot allocate an operand of %zu bytes", bytes_);
  }

  T *data_ = nullptr;
  int64_t count_ = 0;
  size_t bytes_ = 0;
};

/// One kernel to time and the FLOPs one call of it counts.
struct Timed {
  double flops;
  std::function<void()> call;
};

using Clock = std::chrono::steady_clock;

/// The median time of \p call: one untimed call, then calls back to back
/// until \p minTime seconds have passed and kMinSamples were timed. The
/// median, because a core shared with other processes now and then loses a
/// call to them.
double medianSeconds(const std::function<void()> &call, double minTime) {
  call();
  std::vector<double> samples;
  const Clock::time_point start = Clock::now();
  Clock::time_point before = start;
  while (samples.size() < kMinSamples ||
         std::chrono::duration<double>(before - start).count() < minTime) {
    call();
    const Clock::time_point after = Clock::now();
    samples.push_back(std::chrono::duration<double>(after - before).count());
    before = after;
  }
  auto middle = samples.begin() + samples.size() / 2;
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

//===----------------------------------------------------------------------===//
// The kernels at a shape
//===----------------------------------------------------------------------===//

struct LinearShape {
  int64_t tokens, in, out;
};

/// A linear layer's three products on operands of one shape.
class LinearLayer {
public:
  explicit LinearLayer(LinearShape s)
      : s_(s), x_(Buffer<float>::random({s.tokens, s.in}, 1)),
        w_(Buffer<float>::random({s.out, s.in}, 2)),
        dy_(Buffer<float>::random({s.tokens, s.out}, 3)),
        y_(Buffer<float>::zeros({s.tokens, s.out})),
        dx_(Buffer<float>::zeros({s.tokens, s.in})),
        dw_(Buffer<double>::zeros({s.out, s.in})) {}

  /// forward, input_grad, weight_grad.
  std::vector<Timed> kernels() const {
    const double flops = 2.0 * s_.tokens * s_.in * s_.out;
    return {
        {flops,
         [this] {
           bp_check(bp_linear_fwd(x_.get(), w_.get(), nullptr, y_.get(),
                                  s_.tokens, s_.in, s_.out),
                    "linear_fwd");
         }},
        {flops,
         [this] {
           bp_check(bp_linear_bwd_input(dy_.get(), w_.get(), dx_.get(),
                                        s_.tokens, s_.in, s_.out),
                    "linear_bwd_input");
         }},
        // Accumulates into dw call after call, as micro-batches do.
        {flops,
         [this] {
           bp_check(bp_linear_bwd_weight_g64(dy_.get(), x_.get(), dw_.get(),
                                             nullptr, s_.tokens, s_.in, s_.out),
                    "linear_bwd_weight_g64");
         }},
    };
  }

private:
  LinearShape s_;
  Buffer<float> x_, w_, dy_, y_, dx_;
  Buffer<double> dw_;
};

struct AttentionShape {
  int64_t seqLen, headDim;
  bool causal;
};

/// Attention's forward and backward on B sequences of nh heads.
class AttentionLayer {
public:
  AttentionLayer(AttentionShape s, int64_t batch, int64_t heads)
      : s_(s), B_(batch), nh_(heads), H_(heads * s.headDim),
        qkv_(Buffer<float>::random({B_, s.seqLen, 3 * H_}, 1)),
        dout_(Buffer<float>::random({B_, s.seqLen, H_}, 2)),
        out_(Buffer<float>::zeros({B_, s.seqLen, H_})),
        lse_(Buffer<float>::zeros({B_, nh_, s.seqLen})),
        dqkv_(Buffer<float>::zeros({B_, s.seqLen, 3 * H_})) {
    // The backward reads the forward's out and lse.
    forward();
  }

  /// forward, backward.
  std::vector<Timed> kernels() const {
    const double forwardFlops =
        4.0 * static_cast<double>(B_) * s_.seqLen * s_.seqLen * H_;
    return {{forwardFlops, [this] { forward(); }},
            {2 * forwardFlops, [this] { backward(); }}};
  }

private:
  void forward() const {
    bp_check(bp_attention_fwd(qkv_.get(), out_.get(), lse_.get(), B_, s_.seqLen,
                              H_, nh_, s_.causal),
             "attention_fwd");
  }
  void backward() const {
    bp_check(bp_attention_bwd(qkv_.get(), out_.get(), dout_.get(), lse_.get(),
                              dqkv_.get(), B_, s_.seqLen, H_, nh_, s_.causal),
             "attention_bwd");
  }

  AttentionShape s_;
  int64_t B_, nh_, H_;
  Buffer<float> qkv_, dout_, out_, lse_, dqkv_;
};

/// The kernels that are neither a product nor attention, in the order of
/// a transformer block's pieces: layer norm, GELU and the residual add,
/// each forward and backward (the add's backward is no kernel).
class OtherKernels {
public:
  OtherKernels(int64_t tokens, int64_t dim)
      : N_(tokens), H_(dim), x_(Buffer<float>::random({N_, H_}, 1)),
        dy_(Buffer<float>::random({N_, H_}, 2)),
        gamma_(Buffer<float>::random({H_}, 3)),
        beta_(Buffer<float>::random({H_}, 4)),
        y_(Buffer<float>::zeros({N_, H_})), g_(Buffer<float>::zeros({N_, H_})),
        dx_(Buffer<float>::zeros({N_, H_})),
        dg_(Buffer<float>::zeros({N_, H_})),
        sum_(Buffer<float>::zeros({N_, H_})), mean_(Buffer<float>::zeros({N_})),
        rstd_(Buffer<float>::zeros({N_})), dgamma_(Buffer<double>::zeros({H_})),
        dbeta_(Buffer<double>::zeros({H_})) {}

  /// All of them as one call: FLOPs per element, as NNCost.cpp counts
  /// them, layer_norm 5 + 10, gelu 8 + 16, add 1.
  Timed sequence() const {
    constexpr double kFlopsPerElement = 5 + 10 + 8 + 16 + 1;
    return {
        kFlopsPerElement * static_cast<double>(N_) * H_, [this] {
          const int64_t n = N_ * H_;
          bp_check(bp_layer_norm_fwd(x_.get(), gamma_.get(), beta_.get(),
                                     y_.get(), mean_.get(), rstd_.get(), N_, H_,
                                     1e-5f),
                   "layer_norm_fwd");
          bp_check(bp_layer_norm_bwd_g64(dy_.get(), x_.get(), gamma_.get(),
                                         mean_.get(), rstd_.get(), dx_.get(),
                                         dgamma_.get(), dbeta_.get(), N_, H_),
                   "layer_norm_bwd_g64");
          bp_check(bp_gelu_fwd(y_.get(), g_.get(), n), "gelu_fwd");
          bp_check(bp_gelu_bwd(dy_.get(), y_.get(), dg_.get(), n), "gelu_bwd");
          bp_check(bp_add_fwd(x_.get(), g_.get(), sum_.get(), n), "add_fwd");
        }};
  }

private:
  int64_t N_, H_;
  Buffer<float> x_, dy_, gamma_, beta_, y_, g_, dx_, dg_, sum_, mean_, rstd_;
  Buffer<double> dgamma_, dbeta_;
};

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
  Job(JobTable &table, int64_t index, double minTime)
      : table_(table), index_(index), minTime_(minTime) {}

  /// Times each of \p kernels, all jobs starting it together; returns
  /// their rates, the jobs' mean, once every job has measured them.
  std::vector<double> measure(const std::vector<Timed> &kernels) {
    const size_t first = next_;
    for (const Timed &k : kernels) {
      table_.sync();
      table_.record(index_, next_++, k.flops / medianSeconds(k.call, minTime_));
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
  size_t next_ = 0;
};

void runJob(const Options &o, Job &job) {
  cpu::setKernelThreads(static_cast<int>(o.threads));
  for (const LinearShape &s : linearGrid(o)) {
    LinearLayer layer(s);
    std::vector<double> r = job.measure(layer.kernels());
    if (job.reports())
      std::fprintf(stderr,
                   "linear tokens=%lld in=%lld out=%lld: forward %.3g, "
                   "input_grad %.3g, weight_grad %.3g FLOP/s\n",
                   static_cast<long long>(s.tokens),
                   static_cast<long long>(s.in), static_cast<long long>(s.out),
                   r[0], r[1], r[2]);
  }
  for (const AttentionShape &s : attentionGrid(o)) {
    AttentionLayer layer(s, o.batch, o.heads);
    std::vector<double> r = job.measure(layer.kernels());
    if (job.reports())
      std::fprintf(stderr,
                   "attention seq_len=%lld head_dim=%lld causal=%s: forward "
                   "%.3g, backward %.3g FLOP/s\n",
                   static_cast<long long>(s.seqLen),
                   static_cast<long long>(s.headDim),
                   s.causal ? "true" : "false", r[0], r[1]);
  }
  OtherKernels other(o.otherTokens, o.otherDim);
  std::vector<double> r = job.measure({other.sequence()});
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
  std::fflush(nullptr); // or the children would print it again
  for (int64_t j = 0; j < o.jobs && result.isOk(); ++j) {
    const pid_t pid = fork();
    if (pid == 0) {
      Job job(table, j, o.minTime);
      runJob(o, job);
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

/// /proc/cpuinfo's first "model name".
std::string cpuModel() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0)
      if (size_t colon = line.find(':'); colon != std::string::npos) {
        size_t begin = line.find_first_not_of(" \t", colon + 1);
        if (begin != std::string::npos)
          return line.substr(begin);
      }
  return "an unknown CPU";
}

std::string utcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", &utc);
  return text;
}

std::string measuredLine(const Options &o) {
  return formatString(
      "%s (%lld thread%s, %lld job%s at once, rates the mean over the jobs; "
      "attention on %lld sequences of %lld heads; other = layer_norm, gelu "
      "and add on [%lld, %lld]) on %s, %s",
      commandOf(o).c_str(), static_cast<long long>(o.threads),
      o.threads == 1 ? "" : "s", static_cast<long long>(o.jobs),
      o.jobs == 1 ? "" : "s", static_cast<long long>(o.batch),
      static_cast<long long>(o.heads), static_cast<long long>(o.otherTokens),
      static_cast<long long>(o.otherDim), cpuModel().c_str(), utcNow().c_str());
}

/// Rates in JSON: four significant digits, more than a run repeats to.
std::string rate(double r) { return formatString("%.4g", r); }

/// The kernel_rates object of the jobs' mean rates.
Expected<std::string> kernelRatesJson(const Options &o, const JobTable &table) {
  for (size_t i = 0; i < rateCount(o); ++i)
    if (!(std::isfinite(table.mean(i)) && table.mean(i) > 0))
      return Status::error(
          ErrorCode::FormatError,
          formatString("rate %zu came out as %g; expected a positive, finite "
                       "number (a call too short for the clock?)",
                       i, table.mean(i)));
  size_t next = 0;
  std::string json =
      "{\n  \"measured\": " + jsonQuote(measuredLine(o)) + ",\n  \"linear\": [";
  const char *separator = "\n";
  for (const LinearShape &s : linearGrid(o)) {
    json += formatString(
        "%s    { \"tokens\": %lld, \"in\": %lld, \"out\": %lld, ", separator,
        static_cast<long long>(s.tokens), static_cast<long long>(s.in),
        static_cast<long long>(s.out));
    json += "\"forward\": " + rate(table.mean(next)) +
            ", \"input_grad\": " + rate(table.mean(next + 1)) +
            ", \"weight_grad\": " + rate(table.mean(next + 2)) + " }";
    next += 3;
    separator = ",\n";
  }
  json += "\n  ],\n  \"attention\": [";
  separator = "\n";
  for (const AttentionShape &s : attentionGrid(o)) {
    json += formatString(
        "%s    { \"seq_len\": %lld, \"head_dim\": %lld, \"causal\": %s, ",
        separator, static_cast<long long>(s.seqLen),
        static_cast<long long>(s.headDim), s.causal ? "true" : "false");
    json += "\"forward\": " + rate(table.mean(next)) +
            ", \"backward\": " + rate(table.mean(next + 1)) + " }";
    next += 2;
    separator = ",\n";
  }
  json += "\n  ],\n  \"other\": " + rate(table.mean(next)) + "\n}\n";
  return json;
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
    std::printf("usage: %s [flags]\nMeasures the CPU kernels' FLOP rates by "
                "shape; prints a cluster file's kernel_rates object.\n%s",
                kProgram, flags.help().c_str());
    return 0;
  }
  std::fprintf(stderr,
               "%s: %zu linear shapes, %zu attention shapes and the other "
               "kernels; %lld thread(s), %lld job(s) at once\n",
               kProgram, linearGrid(o).size(), attentionGrid(o).size(),
               static_cast<long long>(o.threads),
               static_cast<long long>(o.jobs));
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
