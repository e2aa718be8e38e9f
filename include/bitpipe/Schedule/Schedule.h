//===- Schedule.h - Pipeline placements and per-rank programs ---*- C++ -*-===//
//
// The core vocabulary of the schedule library. Plain C++ with no MLIR
// dependency: passes call it, GoogleTest tests it directly.
//
// A model is cut into `numStages` stages s0..s(S-1). A *pipeline* maps every
// stage to the device that runs it; most schedules have one pipeline, the
// bidirectional ones (Chimera, BitPipe) have two ("down" and "up") that hold
// the same stages in mirrored order. Each micro-batch travels through exactly
// one pipeline. A *schedule* is, for every rank, the ordered list of actions
// that rank runs.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_SCHEDULE_H
#define BITPIPE_SCHEDULE_SCHEDULE_H

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::sched {

/// How stages are laid out on devices: the one definition of the kinds
/// (#bitpipe.placement and bitpipe-place spell them with
/// placementKindName()).
enum class PlacementKind {
  Loop,           ///< "loop": stage s on device s mod D.
  V,              ///< "v": down then back up the devices (ZB-V, DualPipeV).
  Bidirectional,  ///< "bidirectional": Chimera's two mirrored pipelines.
  BidirectionalV, ///< "bidirectional-v": BitPipe's two mirrored V's.
};

/// One pipeline: stageDevice[s] is the device that runs stage s.
struct Pipeline {
  std::vector<int> stageDevice;

  bool operator==(const Pipeline &o) const {
    return stageDevice == o.stageDevice;
  }
  bool operator!=(const Pipeline &o) const { return !(*this == o); }
};

/// Which device runs which stage, for every pipeline.
struct Placement {
  PlacementKind kind = PlacementKind::Loop;
  int numDevices = 0;
  int numStages = 0;
  std::vector<Pipeline> pipelines;

  /// Same kind and the same device for every stage of every pipeline.
  bool operator==(const Placement &o) const {
    return kind == o.kind && numDevices == o.numDevices &&
           numStages == o.numStages && pipelines == o.pipelines;
  }
  bool operator!=(const Placement &o) const { return !(*this == o); }

  /// The device that runs `stage` in `pipeline`.
  int device(int pipeline, int stage) const {
    return pipelines[pipeline].stageDevice[stage];
  }
  /// For every stage, the sorted distinct devices that hold a copy of it.
  /// Devices in one group all-reduce that stage's gradients.
  std::vector<std::vector<int>> replicaGroups() const;
};

enum class ActionKind {
  Forward,        ///< "F": forward of one stage for one micro-batch.
  Backward,       ///< "B": backward (the whole of it, or the input gradient
                  ///< when the schedule splits backward).
  WeightGrad,     ///< "W": weight-gradient half of a split backward.
  AllReduce,      ///< "AR": start the gradient all-reduce of `stages`.
};

/// One step of a rank's program.
struct Action {
  ActionKind kind;
  int microbatch = -1;       ///< F, B, W.
  int stage = -1;            ///< F, B, W.
  std::vector<int> stages;   ///< AR: the stages whose gradients it carries, sorted.

  static Action forward(int mb, int stage) { return {ActionKind::Forward, mb, stage, {}}; }
  static Action backward(int mb, int stage) { return {ActionKind::Backward, mb, stage, {}}; }
  static Action weightGrad(int mb, int stage) { return {ActionKind::WeightGrad, mb, stage, {}}; }
  static Action allReduce(std::vector<int> stages) {
    return {ActionKind::AllReduce, -1, -1, std::move(stages)};
  }
  bool operator==(const Action &o) const {
    return kind == o.kind && microbatch == o.microbatch && stage == o.stage &&
           stages == o.stages;
  }
  /// "F3.s1", "B0.s7", "W2.s4", "AR(4,7)".
  std::string str() const;
};

/// Where one action runs: rank and position in that rank's list.
struct ActionSite {
  int rank = -1;
  int index = -1;
  bool found() const { return rank >= 0; }
};

/// The per-rank programs of one training step.
struct Schedule {
  std::string name;              ///< Generator name, e.g. "bitpipe".
  Placement placement;
  int numMicrobatches = 0;
  /// microbatchPipeline[m]: the pipeline micro-batch m travels through.
  std::vector<int> microbatchPipeline;
  /// True when backward is split into B (input gradient) and W (weights).
  bool splitBackward = false;
  /// ranks[r]: the actions of rank r, in execution order.
  std::vector<std::vector<Action>> ranks;
  /// How the schedule was built when it departs from the textbook form
  /// (e.g. N not a multiple of D). Empty otherwise.
  std::string note;

  int numRanks() const { return static_cast<int>(ranks.size()); }
};

/// The most stashes a rank holds at once over its `actions`, in program
/// order: each forward's, until the step that frees it (W when the
/// backward is split, B otherwise).
int peakStashes(const std::vector<Action> &actions, bool splitBackward);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_SCHEDULE_H
