//===- Simulate.cpp - The bitpipe-simulate pass ---------------------------===//
//
// Measures the schedule the IR holds. The order comes from the programs
// (ScheduleFromIR), never from the schedule's name, so a pass that reorders
// the programs is measured as it is; the verifier, the simulator and the
// exporters are the schedule library's. What the pass adds is the bridge
// from the IR to the library's CostModel: times from `nn.cost` FLOPs and
// sizes from tensor types.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/Programs/CostsFromIR.h"
#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Schedule/Cluster.h"
#include "bitpipe/Schedule/Export.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Placement.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"
#include "bitpipe/Transforms/Passes.h"

#include "PassOptionUtil.h"
#include "bitpipe/base/AtomicFile.h"

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatAdapters.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <tuple>

namespace bitpipe {
#define GEN_PASS_DEF_SIMULATE
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;

namespace {

/// A number as the summary prints it: integers without decimals ("28"),
/// others with up to four significant decimals.
std::string num(double value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  if (value == static_cast<double>(static_cast<long long>(value)))
    os << static_cast<long long>(value);
  else
    os << llvm::format("%.4g", value);
  return text;
}

std::string ratio(double value) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.4f", value);
  return text;
}

struct SimulatePass : public bitpipe::impl::SimulateBase<SimulatePass> {
  using SimulateBase::SimulateBase;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      return signalPassFailure();
    markAllAnalysesPreserved();
  }

  LogicalResult run(ModuleOp module) {
    // Times in units or milliseconds: positive step costs, non-negative
    // latencies, a device speed up to an exaflop; each bounded so that the
    // simulator's sums over every action stay finite (docs/models.md,
    // "Limits").
    constexpr double kMaxTime = 1e9, kMaxTflops = 1e6;
    for (auto [name, value, range] :
         {std::tuple<StringRef, double, OptionRange>{
              "f-cost", forwardCost, {0, true, kMaxTime}},
          {"b-cost", backwardCost, {0, true, kMaxTime}},
          {"w-cost", weightGradCost, {0, true, kMaxTime}},
          {"p2p-latency", p2pLatency, {0, false, kMaxTime}},
          {"ar-latency", allReduceLatency, {0, false, kMaxTime}},
          {"tflops", tflops, {0, false, kMaxTflops}}})
      if (std::optional<std::string> error =
              checkOptionRange("bitpipe-simulate", name, value, range))
        return module.emitError() << *error;
    if (costs != "unit" && costs != "ir")
      return module.emitError() << "bitpipe-simulate: unknown costs=" << costs
                                << "; expected unit or ir";
    if (!cluster.empty() && costs != "ir")
      return module.emitError()
             << "bitpipe-simulate: cluster= times the stages' work: it "
                "needs costs=ir, got costs="
             << costs;
    if (!cluster.empty() && tflops > 0)
      return module.emitError() << "bitpipe-simulate: cluster= and tflops= "
                                   "both set the compute rate; give one";

    FailureOr<ProgramsFromIR> programs = readProgramsFromIR(module);
    if (failed(programs))
      return failure();
    const sched::Schedule *schedule = &programs->schedule;

    // Bound programs carry their transfers (bitpipe-insert-transfers):
    // measure those, as the IR says them. Unbound ones leave them to the
    // library, which derives them as insert-transfers would.
    std::optional<IRCommProgram> irComms;
    if (hasBoundPrograms(module)) {
      FailureOr<IRCommProgram> read = readCommProgramFromIR(module, *programs);
      if (failed(read))
        return failure();
      irComms = std::move(*read);
    }

    // A schedule the verifier rejects would simulate to a deadlock or to
    // numbers that mean nothing: report the verifier's finding instead.
    std::vector<sched::Diagnostic> problems =
        irComms ? sched::verify(*schedule, irComms->program)
              : sched::verify(*schedule);
    if (!problems.empty())
      return module.emitError()
             << "the per-rank programs are not a valid schedule:\n"
             << sched::formatDiagnostics(problems);

    FailureOr<sched::CostModel> cost = buildCostModel(module, *schedule);
    if (failed(cost))
      return failure();
    sched::Result<sched::SimResult> sim =
        irComms ? sched::simulate(*schedule, irComms->program, *cost)
              : sched::simulate(*schedule, *cost);
    if (!sim)
      return module.emitError() << "cannot simulate: " << sim.error;
    if (sim->deadlocked)
      return module.emitError() << sim->deadlockReport();

    llvm::raw_ostream &os = llvm::outs();
    if (grid)
      os << sched::formatGrid(*schedule);
    if (comms) {
      if (irComms) {
        os << irComms->program.format();
      } else {
        sched::Result<sched::CommProgram> lowered =
            sched::lowerComms(*schedule);
        if (!lowered)
          return module.emitError() << "cannot lower: " << lowered.error;
        os << lowered->format();
      }
    }
    printSummary(os, *schedule, *sim);
    // readScheduleFromIR has checked that every copy runs copy 0's
    // programs: one copy is the whole timeline.
    if (FailureOr<sched::World> world = readWorld(module);
        succeeded(world) && world->dataParallel > 1)
      os << "data parallel: " << world->dataParallel << " copies of the "
         << world->pipelineDevices << " ranks above (" << world->size()
         << " ranks), one simulated\n";
    os.flush();

    sched::SvgOptions picture;
    picture.timeUnit = timeUnit();
    if (!timeline.empty() &&
        failed(write(module, timeline, sched::toSvg(*schedule, *sim, picture))))
      return failure();
    if (!trace.empty() &&
        failed(write(module, trace, sched::toChromeTrace(*schedule, *sim))))
      return failure();
    if (!torchCsv.empty() &&
        failed(write(module, torchCsv, sched::toTorchCsv(*schedule))))
      return failure();
    return success();
  }

  FailureOr<sched::CostModel> buildCostModel(ModuleOp module,
                                             const sched::Schedule &schedule) {
    sched::CostModel cost;
    cost.unitForward = forwardCost;
    cost.unitBackward = backwardCost;
    cost.unitWeightGrad = weightGradCost;
    cost.p2pLatency = p2pLatency;
    cost.allReduceLatency = allReduceLatency;
    cost.transport = transport;
    if (!cluster.empty()) {
      sched::Result<sched::Cluster> read = sched::readCluster(cluster);
      if (!read)
        return module.emitError() << "bitpipe-simulate: " << read.error;
      cluster_ = std::move(*read);
      FailureOr<sched::World> world = readWorld(module);
      if (failed(world))
        return failure();
      sched::Deployment deployment{*cluster_, *world, 0};
      if (std::string misfit = deployment.check(schedule.placement.numDevices);
          !misfit.empty())
        return module.emitError() << "bitpipe-simulate: " << misfit;
      cost.deployment = std::move(deployment);
      // The scheme the runtime will run (docs/data-parallel.md).
      gradientSync_ = readGradientSync(module);
      cost.gradientSync = gradientSync_;
      return costModelFromIR(module, schedule, cost, StageTimes::Cluster, 0,
                             &*cluster_);
    }
    return costModelFromIR(module, schedule, cost,
                           costs == "ir" ? StageTimes::Flops : StageTimes::Unit,
                           tflops > 0 ? tflops * 1e9 : 0);
  }

  /// What the simulated times are in: milliseconds with `tflops`, else
  /// slots ("" here; the SVG says "units").
  std::string timeUnit() const {
    if (cluster_)
      return "s";
    return costs == "ir" && tflops > 0 ? "ms" : "";
  }

  /// The unit after a time in the summary.
  std::string unitSuffix() const {
    return timeUnit().empty() ? " units" : " " + timeUnit();
  }

  void printSummary(llvm::raw_ostream &os, const sched::Schedule &schedule,
                    const sched::SimResult &sim) {
    const sched::Placement &p = schedule.placement;
    os << "schedule " << schedule.name << ": " << p.numDevices << " devices, "
       << sched::placementKindName(p.kind) << " placement, " << p.numStages
       << " stages, " << schedule.numMicrobatches
       << " micro-batches, costs=" << costs << "\n";
    if (!schedule.note.empty())
      os << "note: " << schedule.note << "\n";
    if (transport == sched::Transport::Nccl)
      os << "transfers: under NCCL's rules\n";
    os << "makespan: " << num(sim.makespan) << unitSuffix() << "\n";
    os << "bubble ratio: " << ratio(sim.bubbleRatio) << "\n";
    auto row = [&](ArrayRef<std::string> cells) {
      static constexpr unsigned widths[] = {4, 8, 8, 10, 12, 12, 10, 10};
      for (auto [i, cell] : llvm::enumerate(cells))
        os << (i ? " " : "") << llvm::right_justify(cell, widths[i]);
      os << "\n";
    };
    row({"rank", "busy", "bubble", "in-flight", "act-bytes", "sent-bytes",
         "ar-time", "ar-hidden"});
    for (auto [r, st] : llvm::enumerate(sim.ranks))
      row({"P" + std::to_string(r), num(st.busy), ratio(st.bubbleRatio),
           std::to_string(st.peakInFlight), num(st.peakInFlightBytes),
           num(st.bytesSent), num(st.allReduceTime), num(st.allReduceHidden)});
    os << "bytes sent: " << num(sim.totalBytesSent) << "\n";
    os << "all-reduce: time " << num(sim.allReduceTime) << unitSuffix()
       << ", overlap " << ratio(sim.allReduceOverlap) << "\n";
    if (cluster_) {
      // Across copies the sums cross nodes: what a two-level sync saves.
      double interNode = 0;
      for (const sched::RankStats &st : sim.ranks)
        interNode = std::max(interNode, st.allReduceInterNodeBytes);
      os << "gradient sync: " << sched::gradientSyncName(gradientSync_)
         << ", at most " << num(interNode)
         << " all-reduce bytes a rank sends across nodes\n";
    }
    os << "time unit: ";
    if (costs == "unit")
      os << "one slot per forward of any stage, whatever its size (f-cost, "
            "b-cost, w-cost); makespans compare only between schedules "
            "with the same "
         << p.numStages
         << " stages; the bubble ratio compares any two, costs=ir their "
            "times\n";
    else if (cluster_)
      os << "seconds on cluster " << cluster_->name << " ("
         << (cluster_->kernelRates ? "its rates by kernel shape"
                                   : "its one achievable rate")
         << ", its links)\n";
    else if (tflops > 0)
      os << "milliseconds, the stages' nn.cost FLOPs at " << num(tflops)
         << " TFLOP/s\n";
    else
      os << "the cheapest stage's forward (its nn.cost FLOPs); tflops=X "
            "gives milliseconds\n";
  }

  /// cluster=, once read.
  std::optional<sched::Cluster> cluster_;
  /// The module's bitpipe.gradient_sync, charged with a cluster.
  sched::GradientSync gradientSync_ = sched::GradientSync::Flat;

  /// Written as every tool writes its outputs (docs/files.md): replaced
  /// only by a complete file, never through a link or over a directory.
  LogicalResult write(ModuleOp module, StringRef path,
                      const std::string &contents) {
    base::Status written =
        base::writeFileAtomically(path.str(), contents.data(), contents.size());
    if (!written.isOk())
      return module.emitError()
             << "cannot write '" << path << "': " << written.message();
    return success();
  }
};

} // namespace
