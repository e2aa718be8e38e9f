//===- Trace.h - Chrome trace of the real execution -------------*- C++ -*-===//
//
// Each rank records the operations it runs (forward, backward, send, recv,
// all-reduce, optimizer) with their start and duration; at the end rank 0
// gathers every rank's events and writes one Chrome trace JSON file
// (chrome://tracing, Perfetto) with pid = rank, so the real timeline can be
// laid beside the simulator's. On CUDA a rank has a row (tid) per stream
// as well (TraceRow): spans measured with CUDA events, placed on the
// host's clock from the step's start event. A span's category, its row and
// a device's span are core/TraceSpan.h's, which the communicators below
// train/ hand their spans up in.
//
// Clocks: times are microseconds since the recorder's epoch. Call
// TraceRecorder::resetEpoch() right after a barrier on every rank; on one
// node all ranks then share a time base (steady_clock is system-wide); across
// nodes they agree to within the barrier's skew, which is enough to see
// bubbles.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_TRAIN_TRACE_H
#define BITPIPE_RUNTIME_TRAIN_TRACE_H

#include "core/Status.h"
#include "core/TraceSpan.h"

#include <chrono>
#include <string>
#include <vector>

namespace bitpipe::runtime {

class Communicator;

const char *traceCategoryName(TraceCategory c);
/// The viewer's name of a TraceRow.
const char *traceRowName(int row);
/// True for the categories that count as busy time in the bubble fraction.
bool isComputeCategory(TraceCategory c);

struct TraceEvent {
  std::string name; // e.g. "F3.s2" (micro-batch 3, stage 2)
  TraceCategory category = TraceCategory::Other;
  double startUs = 0;
  double durationUs = 0;
  /// kHostRow, or a stream's row (Device events: the compute stream's).
  int row = kHostRow;
};

class TraceRecorder {
public:
  TraceRecorder() { resetEpoch(); }

  void resetEpoch() { epoch_ = std::chrono::steady_clock::now(); }
  /// Microseconds since the epoch.
  double nowUs() const {
    return std::chrono::duration<double, std::micro>(
               std::chrono::steady_clock::now() - epoch_)
        .count();
  }

  void record(std::string name, TraceCategory category, double startUs,
              double durationUs, int row = kHostRow) {
    if (category == TraceCategory::Device && row == kHostRow)
      row = kComputeStreamRow;
    events_.push_back({std::move(name), category, startUs, durationUs, row});
  }

  /// Records the lifetime of the scope as one event.
  class Scope {
  public:
    Scope(TraceRecorder &r, std::string name, TraceCategory c)
        : r_(r), name_(std::move(name)), c_(c), start_(r.nowUs()) {}
    ~Scope() { r_.record(std::move(name_), c_, start_, r_.nowUs() - start_); }
    Scope(const Scope &) = delete;
    Scope &operator=(const Scope &) = delete;

  private:
    TraceRecorder &r_;
    std::string name_;
    TraceCategory c_;
    double start_;
  };

  const std::vector<TraceEvent> &events() const { return events_; }
  void clear() { events_.clear(); }

private:
  std::chrono::steady_clock::time_point epoch_;
  std::vector<TraceEvent> events_;
};

/// Records \p spans, measured from the step's start event, on the host's
/// clock: that event was recorded at \p stepStartUs. An all-reduce span
/// (category AllReduce, named "allreduce" by the communicator, which does
/// not know buckets) takes the name of the host's span of the same
/// all-reduce, "allreduce bN": the k-th of the step's host spans so named
/// (each encloses one start, in posting order; exec/Executor.cpp).
void recordDeviceSpans(TraceRecorder &trace, double stepStartUs,
                       const std::vector<DeviceSpan> &spans);

/// A compact text form of \p events for the gather (one event per line).
std::string serializeTraceEvents(const std::vector<TraceEvent> &events);
Expected<std::vector<TraceEvent>>
deserializeTraceEvents(const std::string &text);

/// The Chrome trace JSON of \p perRank (index = rank = pid).
std::string
chromeTraceJson(const std::vector<std::vector<TraceEvent>> &perRank);

/// Writes chromeTraceJson(perRank) to \p path atomically.
Status writeChromeTrace(const std::string &path,
                        const std::vector<std::vector<TraceEvent>> &perRank);

/// Collective: gathers every rank's events to rank 0, which writes \p path.
Status gatherAndWriteChromeTrace(Communicator &comm,
                                 const TraceRecorder &recorder,
                                 const std::string &path);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_TRAIN_TRACE_H
