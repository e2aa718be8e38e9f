//===- TraceSpan.h - What a span of a run's trace is ------------*- C++ -*-===//
//
// The words a span of the Chrome trace is made of, below the recorder that
// keeps them (train/Trace.h): its category, its row, and a span measured
// on a device stream. The layers that time work without recording it
// themselves, the NCCL communicator (comm/nccl) and the CUDA backend, hand
// their spans up in these terms, so that they need nothing of train/,
// which sits above comm/. The rows and span names are the base library's
// (bitpipe/base/TraceFormat.h), shared with the calibration that reads a
// trace back.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_TRACESPAN_H
#define BITPIPE_RUNTIME_CORE_TRACESPAN_H

#include "bitpipe/base/TraceFormat.h"

#include <string>

namespace bitpipe::runtime {

enum class TraceCategory {
  Forward,
  Backward,
  Send,
  Recv,
  AllReduce,
  Optimizer,
  Other,
  /// Work on a device (a stage call's kernels, timed by CUDA events): not
  /// host time, so not in the bubble fraction.
  Device,
};

/// A rank's rows in the Chrome trace (its tids): the host's calls, then
/// one per device stream (CUDA only). Device spans overlap the host's,
/// which only enqueue the work, and each other across streams.
using trace::kAllReduceStreamRow;
using trace::kComputeStreamRow;
using trace::kHostRow;
using trace::kLastRow;
using trace::kPointToPointStreamRow;
using trace::kStepRow;
using trace::TraceRow;

/// An operation timed on a device stream by a pair of events: start and
/// duration in milliseconds from the step's start event.
struct DeviceSpan {
  std::string name;
  TraceCategory category = TraceCategory::Other;
  int row = kHostRow;
  float startMs = 0;
  float durationMs = 0;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_TRACESPAN_H
