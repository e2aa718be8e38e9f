//===- TraceFormat.h - The spans a run's Chrome trace holds -----*- C++ -*-===//
//
// The contract between the runtime, which writes a run's trace
// (runtime/lib/train/Trace.h, exec/Executor.cpp, comm/nccl), and the
// schedule library's calibration, which reads it
// (include/bitpipe/Schedule/Calibration.h): the rows a rank's spans go to,
// how each kind of span is named, and how a name is read back. Header only,
// in the base library, which both sides link: both include this one file.
//
// A rank is a Chrome "pid"; its rows are "tid"s. On the CPU every span is
// on the host row. On CUDA the host row holds what the host did (a stage
// call's span there is the time to enqueue its kernels) and each device
// stream has a row of its own, timed with CUDA events: the compute
// stream's stage calls, the NCCL transfers and the NCCL all-reduces
// (docs/calibration.md, "GPU traces").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_TRACEFORMAT_H
#define BITPIPE_BASE_TRACEFORMAT_H

#include <cstdio>
#include <string>

namespace bitpipe::trace {

/// A rank's rows in the Chrome trace (its tids). NCCL gives each
/// communicator a stream of its own (comm/nccl/NcclCommunicator.h), but the
/// trace keeps one row for all transfer streams and one for all
/// all-reduce streams: spans of different channels (or groups) may
/// overlap on their row.
enum TraceRow : int {
  kHostRow = 0,
  kComputeStreamRow = 1,      // stage calls, as the device ran them
  kPointToPointStreamRow = 2, // NCCL sends and receives
  kAllReduceStreamRow = 3,    // NCCL all-reduces
  kStepRow = 4,               // one span per training step (kStepFormat)
  kLastRow = kStepRow,
};

/// A stage call: F, B or W, the micro-batch, the stage ("F3.s2"), as the
/// schedule library's text grid spells actions (GridText.h).
inline constexpr const char *kStageCallFormat = "%c%lld.s%d";
/// A send to / the wait for a receive from a peer rank, with the tag both
/// ends agree on ("send r1 t5", "recv r0 t5"). On a device row: the NCCL
/// kernel's span, from its launch to the data having moved.
inline constexpr const char *kSendFormat = "send r%d t%d";
inline constexpr const char *kRecvFormat = "recv r%d t%d";
/// A gradient all-reduce of a bucket: its post ("allreduce b3"; on the
/// all-reduce stream's row, the collective itself) and the host's wait for
/// its sum ("allreduce.wait b3").
inline constexpr const char *kAllReducePostFormat = "allreduce b%d";
inline constexpr const char *kAllReduceWaitFormat = "allreduce.wait b%d";
/// The optimizer step.
inline constexpr const char *kOptimizer = "optimizer";
/// A whole training step, on kStepRow: where each step begins and ends
/// ("step 3", counted from 1 as the step lines count).
inline constexpr const char *kStepFormat = "step %d";

/// True when `name` is exactly `format` (one of the above with one or two
/// integer fields) with its fields filled in, which are stored.
inline bool parseSpan(const std::string &name, const char *format, int &first) {
  // A trailing %c that matches nothing: the name ends where the format does.
  char tail = 0;
  return std::sscanf(name.c_str(), (std::string(format) + "%c").c_str(), &first,
                     &tail) == 1;
}
inline bool parseSpan(const std::string &name, const char *format, int &first,
                      int &second) {
  char tail = 0;
  return std::sscanf(name.c_str(), (std::string(format) + "%c").c_str(), &first,
                     &second, &tail) == 2;
}

/// True when `name` is one of the spans above: a name a run's trace holds.
inline bool isRunSpanName(const std::string &name) {
  int first = 0, second = 0;
  long long microbatch = 0;
  char kind = 0, tail = 0;
  if (std::sscanf(name.c_str(), (std::string(kStageCallFormat) + "%c").c_str(),
                  &kind, &microbatch, &first, &tail) == 3)
    return kind == 'F' || kind == 'B' || kind == 'W';
  return parseSpan(name, kSendFormat, first, second) ||
         parseSpan(name, kRecvFormat, first, second) ||
         parseSpan(name, kAllReducePostFormat, first) ||
         parseSpan(name, kAllReduceWaitFormat, first) ||
         parseSpan(name, kStepFormat, first) || name == kOptimizer;
}

} // namespace bitpipe::trace

#endif // BITPIPE_BASE_TRACEFORMAT_H
