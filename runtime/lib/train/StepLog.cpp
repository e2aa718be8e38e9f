//===- StepLog.cpp - The per-step log line and progress bar -----*- C++ -*-===//

#include "StepLog.h"

#include "OptimizerSettings.h"

#include "bitpipe/base/AtomicFile.h"
#include "bitpipe/base/OutputDestination.h"
#include "comm/Communicator.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace bitpipe::runtime {

std::string formatStepLine(const StepStats &s) {
  double tokPerSec = s.seconds > 0 ? s.tokens / s.seconds : 0;
  std::string line = formatString(
      "step %lld | loss %.4f | %.0f tok/s | %.3f s",
      static_cast<long long>(s.step), s.loss, tokPerSec, s.seconds);
  if (s.lr >= 0)
    line += formatString(" | lr %.3g", s.lr);
  if (!s.bubble.empty()) {
    line += " | bubble";
    for (size_t r = 0; r < s.bubble.size(); ++r)
      line += formatString(" r%zu %.2f", r, s.bubble[r]);
  }
  return line;
}

/// The time in [startUs, endUs) that the union of \p events matching
/// \p counts covers: nested scopes (a stage's forward around its kernels)
/// must not count twice.
template <typename Predicate>
static double coveredUs(const std::vector<TraceEvent> &events, double startUs,
                        double endUs, Predicate counts) {
  std::vector<std::pair<double, double>> spans;
  for (const TraceEvent &e : events) {
    if (!counts(e))
      continue;
    double b = std::max(e.startUs, startUs);
    double f = std::min(e.startUs + e.durationUs, endUs);
    if (f > b)
      spans.push_back({b, f});
  }
  std::sort(spans.begin(), spans.end());
  double total = 0, curB = 0, curF = -1;
  for (const auto &iv : spans) {
    if (iv.first > curF) {
      if (curF > curB)
        total += curF - curB;
      curB = iv.first;
      curF = iv.second;
    } else {
      curF = std::max(curF, iv.second);
    }
  }
  if (curF > curB)
    total += curF - curB;
  return total;
}

std::string formatMetricsLine(const MetricsLine &m) {
  namespace key = metrics_key;
  auto number = [](double x) {
    return std::isfinite(x) ? formatString("%.9g", x) : std::string("null");
  };
  std::string bubbles;
  for (double b : m.bubble)
    bubbles += formatString("%s%.4f", bubbles.empty() ? "" : ",", b);
  std::string out = formatString(
      "{\"%s\":%lld,\"%s\":%s,\"%s\":%s,\"%s\":%s,\"%s\":%.6g,"
      "\"%s\":%.6g,\"%s\":[%s]",
      key::kStep, static_cast<long long>(m.step), key::kLoss,
      number(m.loss).c_str(), key::kGradNorm, number(m.gradNorm).c_str(),
      key::kLr, settingText(m.lr).c_str(), key::kTokensPerSecond,
      m.tokensPerSecond, key::kSeconds, m.seconds, key::kBubble,
      bubbles.c_str());
  if (m.evalLoss)
    out +=
        formatString(",\"%s\":%s", key::kEvalLoss, number(*m.evalLoss).c_str());
  return out + "}";
}

double bubbleFraction(const std::vector<TraceEvent> &events, double startUs,
                      double endUs) {
  double window = endUs - startUs;
  if (window <= 0)
    return 0;
  double busy = coveredUs(events, startUs, endUs, [](const TraceEvent &e) {
    return isComputeCategory(e.category);
  });
  return std::clamp(1.0 - busy / window, 0.0, 1.0);
}

StepShares stepShares(const std::vector<TraceEvent> &events, double startUs,
                      double endUs) {
  StepShares shares;
  double window = endUs - startUs;
  if (window <= 0)
    return shares;
  auto share = [&](auto counts) {
    return std::clamp(coveredUs(events, startUs, endUs, counts) / window, 0.0,
                      1.0);
  };
  // The host's own spans: on CUDA the device rows' spans overlap them.
  auto host = [](const TraceEvent &e, TraceCategory c) {
    return e.row == kHostRow && e.category == c;
  };
  shares.compute = 1.0 - bubbleFraction(events, startUs, endUs);
  shares.recv =
      share([&](const TraceEvent &e) { return host(e, TraceCategory::Recv); });
  shares.send =
      share([&](const TraceEvent &e) { return host(e, TraceCategory::Send); });
  shares.allReduce = share(
      [&](const TraceEvent &e) { return host(e, TraceCategory::AllReduce); });
  shares.other =
      share([&](const TraceEvent &e) { return host(e, TraceCategory::Other); });
  shares.untracked =
      std::max(0.0, 1.0 - shares.compute - shares.recv - shares.send -
                        shares.allReduce - shares.other);
  return shares;
}

Status gatherBubbleFractions(Communicator &comm, double local,
                             std::vector<double> *perRank) {
  std::string bytes(sizeof(double), '\0');
  std::memcpy(bytes.data(), &local, sizeof(double));
  std::vector<std::string> all;
  Status s = comm.gatherBytes(bytes, 0, &all);
  if (!s.isOk())
    return s;
  perRank->clear();
  for (const std::string &b : all) {
    double v = 0;
    if (b.size() == sizeof(double))
      std::memcpy(&v, b.data(), sizeof(double));
    perRank->push_back(v);
  }
  return Status::ok();
}

StepLogger::StepLogger(std::FILE *out, int64_t totalSteps, int forceProgress)
    : out_(out), totalSteps_(totalSteps),
      progress_(forceProgress < 0 ? ::isatty(::fileno(out)) != 0
                                  : forceProgress != 0) {}

StepLogger::~StepLogger() { finish(); }

void StepLogger::log(const StepStats &stats) {
  if (barDrawn_)
    std::fputs("\r\033[K", out_); // erase the bar; the line takes its place
  std::fprintf(out_, "%s\n", formatStepLine(stats).c_str());
  if (progress_ && totalSteps_ > 0) {
    const int width = 30;
    int64_t done = std::min<int64_t>(stats.step, totalSteps_);
    int filled = static_cast<int>(width * done / totalSteps_);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(width - filled), '.');
    std::fprintf(out_, "[%s] %lld/%lld", bar.c_str(),
                 static_cast<long long>(done),
                 static_cast<long long>(totalSteps_));
    barDrawn_ = true;
  }
  std::fflush(out_);
}

void StepLogger::finish() {
  if (barDrawn_) {
    std::fputs("\r\033[K", out_);
    std::fflush(out_);
    barDrawn_ = false;
  }
}

Expected<std::unique_ptr<MetricsLog>> MetricsLog::open(const std::string &path,
                                                       bool append) {
  Expected<base::OutputKind> kind = base::checkOutputDestination(path);
  if (!kind.isOk())
    return kind.status();
  if (*kind == base::OutputKind::Stream) {
    Expected<int> stream = base::openOutputStream(path);
    if (!stream.isOk())
      return stream.status();
    return std::unique_ptr<MetricsLog>(new MetricsLog(path, *stream, false));
  }
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC |
                      (append ? O_APPEND : O_TRUNC),
                  0666);
  if (fd < 0)
    return Status::error(ErrorCode::IoError, "cannot open '" + path +
                                                 "': " + std::strerror(errno));
  return std::unique_ptr<MetricsLog>(new MetricsLog(path, fd, true));
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0)
    ::close(fd_);
}

Status MetricsLog::append(const std::string &line) {
  if (fd_ < 0)
    return Status::error(ErrorCode::IoError,
                         "cannot write '" + path_ + "': it is closed");
  std::string withNewline = line + "\n";
  return base::writeAll(fd_, withNewline.data(), withNewline.size(), path_);
}

Status MetricsLog::close() {
  int fd = fd_;
  fd_ = -1;
  if (fd < 0)
    return Status::ok();
  if (regular_ && ::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return Status::error(ErrorCode::IoError, "cannot write '" + path_ +
                                                 "': fsync failed: " +
                                                 std::strerror(err));
  }
  if (::close(fd) != 0)
    return Status::error(ErrorCode::IoError, "cannot write '" + path_ +
                                                 "': close failed: " +
                                                 std::strerror(errno));
  return Status::ok();
}

} // namespace bitpipe::runtime
