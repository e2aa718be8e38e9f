//===- StepGraph.h - A rank's training step as one CUDA graph ---*- C++ -*-===//
//
// --cuda-graphs (docs/launching.md, "CUDA graphs"). A steady-state step
// issues the same launches every time: hundreds of kernels, copies and
// NCCL operations, each paying the host's launch cost and, when the host
// falls behind, leaving the device idle. So once the steps are steady, one
// is captured into a CUDA graph from the compute stream, and later steps
// launch that graph instead of running the rank program: one launch from
// the host for the whole step.
//
// What the graph holds: everything the step enqueues from its start to its
// optimizer step, which is where the host must look at results (the
// gradient norm's read-back and its MPI all-reduce): the input copies from
// pinned staging, the stage calls' kernels (and the events that time them,
// recorded as external event nodes, so their spans come back on replay),
// the losses' copies into pinned slots, and the NCCL sends, receives and
// all-reduces, whose streams are forked into the capture and joined back
// (comm/nccl/NcclCommunicator.h). The optimizer step, and everything after
// it, runs eagerly on every step. On replay the executor writes the step's
// inputs into the same staging slices before the launch (the graph copies
// them from there), and queues the losses the graph copies.
//
// Conditions, each checked, not assumed:
//  - the run (StepGraphPolicy.h, stepGraphsUnusableReason): no --trace, no
//    BITPIPE_CUDA_SYNC=1, an NCCL and a driver that capture;
//  - steadiness: the capture comes after eager steps, the last of which
//    took no new memory from CUDA for the pool and made no cuDNN plan, so
//    that no first-use work (allocation, plan building, NCCL connection)
//    happens inside the capture. A block the pool must still get from CUDA
//    while capturing comes from cudaMalloc outside the graph (cuda.h, "The
//    pool's blocks");
//  - addresses: the pool records what it hands out while capturing, and
//    before each replay GraphFootprint checks that none of those blocks,
//    nor of those held when the capture began, is held by another owner
//    now or gone back to CUDA. The parameter arrays, the pinned staging and
//    loss slots are allocated once at start-up;
//  - the program: device work after its optimizer step is not in the
//    graph, so the capture is discarded (discard) and graphs go off;
//  - agreement: a graph holding NCCL operations must be captured and
//    launched by every rank of them together, so before each training step
//    the ranks agree (an all-reduce over MPI of one int32 per rank) on the
//    worst of their verdicts, and all take the same mode.
// A condition that fails before a step makes that step eager, drops the
// graph and captures again later (or, after StepGraphSettings's limits,
// turns graphs off), with a line on stderr from the lowest rank that found
// it. A CUDA error while capturing, instantiating or launching is the
// step's error (the executor stops the job): the message names the step
// and the call.
//
// Waiting: the capture's and each replay's launch is handed to the NCCL
// communicator as a device wait (graphLaunched), so that the step's end
// polls it with the deadline and NCCL's asynchronous errors: a dead peer
// is a timeout naming the graph, as it would be eagerly.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_BACKEND_STEPGRAPH_H
#define BITPIPE_RUNTIME_CUDA_BACKEND_STEPGRAPH_H

#include "Backend.h"
#include "GraphFootprint.h"
#include "StepGraphPolicy.h"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::runtime {

class Communicator;
class NcclCommunicator;

class StepGraph {
public:
  explicit StepGraph(StepGraphSettings settings = {}) : policy_(settings) {}
  ~StepGraph();
  StepGraph(const StepGraph &) = delete;
  StepGraph &operator=(const StepGraph &) = delete;

  /// After the backend's configure(): asks for graphs on \p stream, with
  /// what the run brings. Graphs stay off without \p enabled.
  void configure(bool enabled, const StepGraphRunFacts &facts,
                 cudaStream_t stream, int rank);
  /// The communicator the ranks agree over and whose operations a graph
  /// holds (more than one rank); none for one rank.
  void useCommunicator(NcclCommunicator *nccl) { nccl_ = nccl; }

  /// Whether training steps go through beginTrainingStep at all.
  bool enabled() const { return enabled_; }
  bool capturing() const { return capturing_; }

  /// Before training step \p step (1-based), after the step's start event:
  /// collective over the world while graphs are in use. Capture begins the
  /// capture of the compute stream here.
  Expected<StepMode> beginTrainingStep(int64_t step);
  /// Capture: an error once a call that a capture cannot hold has
  /// invalidated it (the caller names the call).
  Status checkCapture() const;
  /// Capture: ends the capture, instantiates the graph and launches it.
  Status endCapture();
  /// Replay: launches the graph.
  Status replay();
  /// Capture: the step did what the graph cannot stand for; graphs go off
  /// at the next step, on every rank.
  void discard(const std::string &why);
  /// After the training step's work is done (the backend's endStep):
  /// whether it was steady, and the captured graph's footprint.
  void endTrainingStep();

  /// The graph's node count, for the words.
  size_t nodes() const { return nodes_; }

private:
  Status beginCapture();
  Status launch();
  void dropGraph();
  /// "bitpipe: CUDA graphs: step S: rank R: WHY; CHANGE" from the lowest
  /// rank with the worst verdict.
  void report(GraphVerdict agreed, GraphVerdict mine,
              const std::vector<int32_t> &verdicts, const StepGraphFacts &facts,
              const std::string &change) const;

  StepGraphPolicy policy_;
  bool enabled_ = false;
  cudaStream_t stream_ = nullptr;
  int rank_ = 0;
  NcclCommunicator *nccl_ = nullptr;
  /// Why graphs cannot be used (the run's reason, or a discarded capture).
  std::string unusable_;

  // The step in flight.
  int64_t step_ = 0;
  StepMode mode_ = StepMode::Eager;
  bool capturing_ = false;
  int64_t reservedAtStart_ = 0;
  int32_t plansAtStart_ = 0;
  // The last eager training step: steady, or why not.
  bool lastStepSteady_ = false;
  std::string unsteady_ = "no eager step has run yet";

  // The graph held, and what its capture used of the pool.
  cudaGraphExec_t exec_ = nullptr;
  size_t nodes_ = 0;
  double instantiateMs_ = 0;
  std::vector<PoolBlock> heldAtStart_, handedOut_;
  GraphFootprint footprint_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CUDA_BACKEND_STEPGRAPH_H
