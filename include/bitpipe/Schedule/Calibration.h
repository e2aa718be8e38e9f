//===- Calibration.h - The cost model fitted to a real run ------*- C++ -*-===//
//-*-===//
//
// A compiled executable's Chrome trace (--trace; runtime/lib/train/Trace.h)
// records, per rank on one clock, every compute step ("F3.s2", "B3.s2",
// "W3.s2"), every transfer it posts ("send r<peer> t<tag>"), every wait
// for a received tensor ("recv r<peer> t<tag>"), and every gradient
// all-reduce's post and wait ("allreduce b<bucket>", "allreduce.wait
// b<bucket>"). This file measures a run from its trace (step time, bubbles)
// and fits the simulator's cost model to it: each stage's F/B/W time, the
// time a point-to-point transfer takes from its post to the data being
// there, and the time an all-reduce takes from its last post to the sum.
// Simulating a schedule with a model fitted on another run predicts that run's
// step time; the difference is the prediction error (docs/calibration.md).
//
// Plain C++, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_CALIBRATION_H
#define BITPIPE_SCHEDULE_CALIBRATION_H

#include "bitpipe/Schedule/CostModel.h"
#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"
#include "bitpipe/Schedule/Simulator.h"

#include <string>
#include <vector>

namespace bitpipe::sched {

/// One timed span of a real run (microseconds; one clock for every rank).
struct RunEvent {
  int rank = 0;
  std::string name;
  double start = 0, duration = 0;
  /// The rank's row: 0 the host's, others a device stream's
  /// (bitpipe/base/TraceFormat.h).
  int row = 0;
  double end() const { return start + duration; }
};

/// The events of a trace that nothing reads, and why: a tool reports them
/// instead of fitting on what is left in silence (docs/calibration.md).
struct UnusedEvents {
  /// Events that are neither complete spans ("ph": "X") nor metadata
  /// ("M"): begin/end pairs, instants, counters.
  size_t notSpans = 0;
  std::string firstNotSpan; ///< Its "ph".
  /// Complete spans whose name neither a run's trace
  /// (bitpipe/base/TraceFormat.h) nor the simulator's (CommAction names
  /// such as "F3.s2", "AR(0,1)", "SEND_F3.s2->P1") uses.
  size_t unknownNames = 0;
  std::string firstUnknownName;

  bool empty() const { return notSpans == 0 && unknownNames == 0; }
  /// "3 of 40 events unused: 2 not complete spans (first "ph" "B"), 1 span
  /// with a name no bitpipe trace writes (first 'fwd0.s0')".
  std::string describe(size_t events) const;
};

/// A Chrome trace as the calibration reads it.
struct ChromeTrace {
  /// The complete spans, in the file's order.
  std::vector<RunEvent> events;
  size_t totalEvents = 0; ///< Every entry of "traceEvents".
  UnusedEvents unused;
};

/// The complete ("ph": "X") events of a Chrome trace's "traceEvents", with
/// "pid" as the rank and "tid" as the row, and a count of what is left
/// out. Fails, saying where, on text that is not such a trace.
///
/// A trace with stage calls on a device's compute-stream row (the CUDA
/// target's) is read from its device rows: the stage calls as the device
/// ran them, the NCCL transfers and all-reduces on their streams' rows; the
/// host's spans of the same work, which only enqueue it, are left out
/// (docs/calibration.md, "GPU traces").
Result<ChromeTrace> readChromeTrace(const std::string &text);

/// A run measured from its trace.
struct MeasuredRun {
  int stepsUsed = 0; ///< Complete steps measured (after the skipped ones).
  /// Mean step: first compute start to the latest end of a compute or of
  /// an all-reduce wait (the simulator's makespan).
  double stepTime = 0;
  double bubble = 0; ///< Mean of the ranks' bubbles.
  /// 1 - compute time / step, per rank; compute is the stage calls.
  std::vector<double> rankBubble;
};

/// Cuts each rank's compute events into steps by the schedule's compute
/// actions and measures steps [skip, complete steps). Fails when the trace
/// names a rank or stage the schedule lacks, or holds no more than `skip`
/// complete steps.
Result<MeasuredRun> measureRun(const Schedule &schedule,
                               const std::vector<RunEvent> &events, int skip);

/// Every measured time of each stage's forward, backward and weight
/// gradient, by stage: what the cost model's means average.
struct StageSamples {
  std::vector<std::vector<double>> forward, backward, weightGrad;
  /// The training step each of those times was measured in, in the same
  /// layout; empty for samples made by hand (SpreadDraws::ByStep needs it).
  std::vector<std::vector<int>> forwardStep, backwardStep, weightGradStep;
};

/// How predictWithSpread draws the calls' times.
enum class SpreadDraws {
  /// Each call's time independently, from all of its stage's times.
  Independent,
  /// Each simulation replays one measured training step, drawn at random:
  /// the k-th call of a stage takes the k-th time that stage had in that
  /// step (cycling when the schedule has more calls), so that a slowdown
  /// the ranks shared (another job on the host) stays shared.
  ByStep,
};

/// The cost model a run implies.
struct Calibration {
  /// forward/backward/weightGrad: each stage's mean time (microseconds);
  /// p2pLatency: the median time from a send's post to its data being
  /// there, over the transfers whose receiver was already waiting (the
  /// others only bound it); allReduceLatency: under MPI an all-reduce runs
  /// in its members' waits after their last compute, one after another
  /// (allReduceAfterCompute, set): the median over steps of the time from
  /// the members' last compute to their last wait's end, over the
  /// collectives each posted, when every all-reduce of the schedule spans
  /// one group (BitPipe and Chimera at D = 2), measured from the later of
  /// the last compute and the last post; allReducePostTime: the median
  /// time a rank spends in an all-reduce's post ("allreduce b<bucket>"),
  /// which MPI runs on the rank's core. The trace does not say a bucket's
  /// bytes, so the all-reduce's time is one number, like a transfer's.
  /// Unit costs and bandwidths are left alone.
  CostModel cost;
  /// Read from a GPU trace's device rows (readChromeTrace): the transfers
  /// are timed from both ends' launch and the all-reduce from its last
  /// member's start, per collective, beside compute (CostModel::transport
  /// Nccl, allReduceAfterCompute not, no post time); allReduceSamples
  /// counts collectives, not steps.
  bool fromDevice = false;
  /// Each rank's compute time relative to the ranks' mean, from the stages
  /// that ran on more than one rank (a mirrored placement: BitPipe,
  /// Chimera): a core or device slower than the others in this run. Empty
  /// when every stage ran on one rank, where a rank's speed and its stages'
  /// costs cannot be told apart. Not part of `cost`: which rank is slow is
  /// the run's machine, not the schedule (docs/calibration.md).
  std::vector<double> rankComputeScale;
  int computeSamples = 0;
  int transferSamples = 0;  ///< Transfers that measured p2pLatency.
  int allReduceSamples = 0; ///< Steps that measured allReduceLatency.
  int allReducePostSamples = 0; ///< Posts that measured allReducePostTime.
  StageSamples samples;
};

/// Fits the cost model to steps [skip, ...) of a run of `schedule`.
Result<Calibration> calibrate(const Schedule &schedule,
                              const std::vector<RunEvent> &events, int skip);

/// A run against what the simulator predicts for it under `cost`.
struct Prediction {
  MeasuredRun measured;
  double simulatedStep = 0, simulatedBubble = 0;
  /// predictAtRunSpeed: the factor each rank's compute times were scaled
  /// by (CostModel::rankComputeScale); empty otherwise.
  std::vector<double> rankComputeScale;
  /// (simulated - measured) / measured.
  double stepError() const {
    return measured.stepTime > 0
               ? (simulatedStep - measured.stepTime) / measured.stepTime
               : 0;
  }
};

Result<Prediction> predict(const Schedule &schedule, const CostModel &cost,
                           const std::vector<RunEvent> &events, int skip);

/// As predict, with each rank's compute times scaled by one factor so that
/// every simulated rank computes as long per step as it did in the run
/// (Prediction::rankComputeScale): the error left is the schedule's (its
/// waits, its transfers), not kernels that ran faster or slower as a whole
/// in that run, nor a rank slower than its partner. A diagnostic for
/// held-out runs on a machine whose speed drifts between runs and between
/// its cores; it reads the run's own compute time per rank.
Result<Prediction> predictAtRunSpeed(const Schedule &schedule,
                                     const CostModel &cost,
                                     const std::vector<RunEvent> &events,
                                     int skip);

/// As predict, with the measured spread: each compute step of the schedule
/// takes a time drawn from its stage's `samples` (`how`; with replacement;
/// a stage without samples keeps `cost`'s time), and the step and bubble
/// are the means over `draws` simulations from `seed`. Where a schedule
/// leaves no slack, a rank waits for its partner's slower calls, which mean
/// times cannot show (docs/calibration.md). ByStep fails on samples without
/// their training steps.
Result<Prediction> predictWithSpread(
    const Schedule &schedule, const CostModel &cost,
    const StageSamples &samples, const std::vector<RunEvent> &events, int skip,
    int draws, unsigned seed = 1, SpreadDraws how = SpreadDraws::Independent);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_CALIBRATION_H
