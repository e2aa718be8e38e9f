//===- StepLog.h - The per-step log line and progress bar -------*- C++ -*-===//
//
//   step 12 | loss 4.1234 | 15234 tok/s | 0.512 s | bubble r0 0.21 r1 0.18
//
// The bubble fraction of a rank is its idle time over the step time, where
// busy time is the union of its compute events (forward, backward, optimizer;
// Trace.h) inside the step's window: what the simulator predicts, measured.
// Each rank computes its own; gatherBubbleFractions() brings them to rank 0,
// which prints the line.
//
// A progress bar follows the line only when the output is a terminal, so
// logs redirected to a file stay one clean line per step.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_STEPLOG_H
#define BITPIPE_RUNTIME_TRAIN_STEPLOG_H

#include "Trace.h"
#include "core/Status.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace bitpipe::runtime {

class Communicator;

struct StepStats {
  int64_t step = 0;
  double loss = 0;
  int64_t tokens = 0;  // tokens processed in the step (all replicas)
  double seconds = 0;  // wall time of the step
  double lr = -1;      // the step's learning rate; < 0: not shown
  std::vector<double> bubble; // per rank, in [0, 1]; may be empty
};

std::string formatStepLine(const StepStats &stats);

/// idle / (end - start) of the events in [startUs, endUs): 1 minus the
/// union of compute events clipped to the window, over its length.
double bubbleFraction(const std::vector<TraceEvent> &events, double startUs,
                      double endUs);

/// Where a rank's step went: shares of its wall time in [startUs, endUs).
/// compute is 1 - bubbleFraction (stage calls and the optimizer); the
/// others are what the bubble is made of: the host's waits for receives,
/// its sends, its all-reduce posts and waits, its other spans, and the
/// time no span covers (the executor's own work: inputs, scheduling,
/// bookkeeping).
struct StepShares {
  double compute = 0, recv = 0, send = 0, allReduce = 0, other = 0,
         untracked = 0;

  StepShares &operator+=(const StepShares &o) {
    compute += o.compute;
    recv += o.recv;
    send += o.send;
    allReduce += o.allReduce;
    other += o.other;
    untracked += o.untracked;
    return *this;
  }
};
StepShares stepShares(const std::vector<TraceEvent> &events, double startUs,
                      double endUs);

/// Collective: rank 0 gets every rank's \p local fraction in \p perRank.
Status gatherBubbleFractions(Communicator &comm, double local,
                             std::vector<double> *perRank);

class StepLogger {
public:
  /// \p totalSteps sizes the progress bar. The bar is drawn iff \p out is a
  /// TTY (isatty), unless \p forceProgress is 0 (never) or 1 (always).
  StepLogger(std::FILE *out, int64_t totalSteps, int forceProgress = -1);
  ~StepLogger();

  void log(const StepStats &stats);
  /// Clears the progress bar, leaving only the log lines.
  void finish();

  bool showsProgress() const { return progress_; }

private:
  std::FILE *out_;
  int64_t totalSteps_;
  bool progress_;
  bool barDrawn_ = false;
};

/// The keys of a --metrics line: written here (formatMetricsLine), read by
/// bitpipe-compare.
namespace metrics_key {
inline constexpr const char *kStep = "step";
inline constexpr const char *kLoss = "loss";
inline constexpr const char *kGradNorm = "grad_norm";
inline constexpr const char *kLr = "lr";
inline constexpr const char *kTokensPerSecond = "tokens_per_s";
inline constexpr const char *kSeconds = "seconds";
inline constexpr const char *kBubble = "bubble";
inline constexpr const char *kEvalLoss = "eval_loss";
} // namespace metrics_key

/// One step's --metrics line.
struct MetricsLine {
  int64_t step = 0;
  double loss = 0, gradNorm = 0, lr = 0, tokensPerSecond = 0, seconds = 0;
  std::vector<double> bubble; // per rank
  /// The evaluation after the step, when one ran.
  std::optional<double> evalLoss;
};

/// The line as JSON, without its newline. JSON has no NaN or Inf: a
/// non-finite loss, norm or evaluation loss (the step that stops training)
/// is written as null; the learning rate with the digits that read back
/// exactly.
std::string formatMetricsLine(const MetricsLine &line);

/// --metrics: one JSON line per step, appended as the step ends.
///
/// Appended, not written to a temporary and renamed at the end like the
/// other outputs (bitpipe/base/AtomicFile.h): users tail it while the job
/// trains, and a run that dies keeps the lines of the steps it finished. So
/// each line is one checked write(2) straight to the file, with no stdio
/// buffer in between: a full disk is an error at the step that hit it,
/// naming the file, not an empty file and exit 0. close() fsyncs (a network
/// file system may report a failed write only then) and is checked. The
/// destination follows the rule of every output
/// (bitpipe/base/OutputDestination.h, docs/files.md): a directory or a
/// symbolic link is refused, a device or a FIFO is written into. A fresh run
/// starts the file anew; a resumed run (--load) appends to the log of the
/// run it continues.
class MetricsLog {
public:
  static Expected<std::unique_ptr<MetricsLog>> open(const std::string &path,
                                                    bool append);
  ~MetricsLog();

  /// Writes \p line and a newline.
  Status append(const std::string &line);
  /// fsync (regular files) and close, both checked.
  Status close();

private:
  MetricsLog(std::string path, int fd, bool regular)
      : path_(std::move(path)), fd_(fd), regular_(regular) {}

  std::string path_;
  int fd_;
  bool regular_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_STEPLOG_H
