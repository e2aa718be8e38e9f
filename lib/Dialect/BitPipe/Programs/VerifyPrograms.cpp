//===- VerifyPrograms.cpp - Can these per-rank programs run together? ----===//
//
// The check of bitpipe-verify, kept with the program reader so that the
// lowering to the runtime runs it too without depending on the passes
// (docs/architecture.md, "Layers").
//
// Whole-module validation of bound per-rank programs, in the spirit of
// shardy MPMD's validation passes: op verifiers see one op in one program,
// this check sees all programs together and answers "can these run as one
// training step?". Every finding is an error at the op it is about, naming
// the rank, the step and the micro-batch in words; channel order and
// deadlock are the schedule library's findings (checkChannels, the
// simulator, the verifier), read through ScheduleFromIR so that the IR is
// judged by the same code as the schedules the generators produce.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/Programs/VerifyPrograms.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"
#include "bitpipe/Schedule/Comms.h"
#include "bitpipe/Schedule/CostModel.h"
#include "bitpipe/Schedule/Describe.h"
#include "bitpipe/Schedule/GridText.h"
#include "bitpipe/Schedule/Simulator.h"
#include "bitpipe/Schedule/Verifier.h"

#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Support/DiagnosticText.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

#include <map>
#include <vector>

using namespace mlir;
using namespace bitpipe;
using bitpipe::detail::formatList;
using bitpipe::detail::formatTypes;

namespace {

std::string rankName(int64_t rank) { return "rank " + std::to_string(rank); }

/// "the activation of stage 0 micro-batch 1", what a transfer carries.
std::string carried(const sched::Transfer &t) {
  return std::string(t.gradient ? "the gradient" : "the activation") +
         " of stage " + std::to_string(t.fromStage) + " micro-batch " +
         std::to_string(t.microbatch) + " (" + t.producer().str() + ")";
}

SmallVector<Type> typesOf(ArrayRef<Operation *> ops, bool sent) {
  SmallVector<Type> types;
  for (Operation *op : ops)
    types.push_back(sent ? op->getOperand(0).getType()
                         : op->getResult(0).getType());
  return types;
}

class ModuleVerifier {
public:
  ModuleVerifier(ModuleOp module, const sched::Schedule &schedule,
                 const IRCommProgram &comms, sched::VerifyOptions options)
      : module(module), schedule(schedule), comms(comms), options_(options) {}

  /// Every check; stops after a kind of finding that later checks would
  /// only repeat.
  LogicalResult run();

private:
  void checkMatching();
  void checkAllReduceAgreement();
  void checkGradientsInFlight();
  void checkChannelOrder();
  void checkDeadlock();
  void checkSchedule();

  /// The op of step `index` on `rank`, or the module when there is none.
  Operation *stepOp(int rank, int index) {
    if (rank >= 0 && index >= 0 &&
        rank < static_cast<int>(comms.steps.size()) &&
        index < static_cast<int>(comms.steps[rank].size()))
      return comms.steps[rank][index];
    // A finding about a rank as a whole: its program.
    if (rank >= 0 && rank < static_cast<int>(comms.steps.size()) &&
        !comms.steps[rank].empty())
      return comms.steps[rank].front()->getParentOp();
    return module;
  }
  InFlightDiagnostic error(Operation *op) {
    failed = true;
    return op->emitError();
  }

  ModuleOp module;
  const sched::Schedule &schedule;
  const IRCommProgram &comms;
  sched::VerifyOptions options_;
  bool failed = false;
};

void ModuleVerifier::checkMatching() {
  const sched::CommProgram &program = comms.program;
  for (auto [id, t] : llvm::enumerate(program.transfers)) {
    if (t.local())
      continue;
    ArrayRef<Operation *> sends = comms.sendOps[id];
    ArrayRef<Operation *> recvs = comms.recvOps[id];
    StringRef kind = t.gradient ? "gradient" : "activation";
    if (sends.empty()) {
      error(recvs.front()) << rankName(t.dst) << " receives " << carried(t)
                           << " from " << rankName(t.src) << ", but "
                           << rankName(t.src)
                           << " has no matching send (bitpipe.send " << kind
                           << " to " << t.dst << " stage " << t.fromStage
                           << " microbatch " << t.microbatch << ")";
      continue;
    }
    if (recvs.empty()) {
      error(sends.front()) << rankName(t.src) << " sends " << carried(t)
                           << " to " << rankName(t.dst) << ", but "
                           << rankName(t.dst)
                           << " has no matching receive (bitpipe.recv " << kind
                           << " from " << t.src << " stage " << t.fromStage
                           << " microbatch " << t.microbatch << ")";
      continue;
    }
    SmallVector<Type> sent = typesOf(sends, /*sent=*/true);
    SmallVector<Type> received = typesOf(recvs, /*sent=*/false);
    if (sent == received)
      continue;
    InFlightDiagnostic diag = error(recvs.front())
                              << rankName(t.dst) << " receives " << carried(t)
                              << " as " << formatTypes(received) << ", but "
                              << rankName(t.src) << " sends "
                              << formatTypes(sent);
    diag.attachNote(sends.front()->getLoc()) << "send here";
  }
}

void ModuleVerifier::checkAllReduceAgreement() {
  // group -> rank -> that rank's all-reduces with the group, in order.
  std::map<std::vector<int64_t>,
           std::map<int64_t, SmallVector<bp::AllReduceStartOp>>>
      byGroup;
  for (auto program : module.getOps<bp::ProgramOp>())
    for (auto start :
         program.getBody().front().getOps<bp::AllReduceStartOp>()) {
      ArrayRef<int64_t> group = start.getGroup();
      byGroup[std::vector<int64_t>(group.begin(), group.end())]
             [program.getRank()]
                 .push_back(start);
    }

  // Attributes that describe what an all-reduce moves, when the op has
  // them (bitpipe-insert-allreduce's buckets): members must agree on them.
  static constexpr StringLiteral kSizeAttrs[] = {"grads", "bytes"};
  for (const auto &[group, perRank] : byGroup) {
    int64_t ref = group.front();
    static const SmallVector<bp::AllReduceStartOp> none;
    auto refIt = perRank.find(ref);
    ArrayRef<bp::AllReduceStartOp> refSeq =
        refIt == perRank.end() ? ArrayRef<bp::AllReduceStartOp>(none)
                               : ArrayRef<bp::AllReduceStartOp>(refIt->second);
    for (int64_t other : group) {
      if (other == ref)
        continue;
      auto it = perRank.find(other);
      ArrayRef<bp::AllReduceStartOp> seq =
          it == perRank.end() ? ArrayRef<bp::AllReduceStartOp>(none)
                              : ArrayRef<bp::AllReduceStartOp>(it->second);
      bool reported = false;
      for (size_t k = 0; k < std::min(refSeq.size(), seq.size()) && !reported;
           ++k) {
        bp::AllReduceStartOp mine = seq[k], theirs = refSeq[k];
        std::string head = rankName(other) + "'s " + sched::ordinal(k + 1) +
                           " all-reduce with group " + formatList(group) +
                           " (bucket " + std::to_string(mine.getBucket()) + ")";
        // A bucket names its gradients: members must agree on those. Its
        // stages may differ: each member of a tied embedding's group
        // contributes the share of the stage it holds. A schedule marker
        // has only its stages.
        bool buckets = mine.getGrads() && theirs.getGrads();
        if (!buckets && mine.getStages() != theirs.getStages()) {
          error(mine) << head << " carries stages "
                      << formatList(mine.getStages()) << ", but "
                      << rankName(ref) << "'s carries stages "
                      << formatList(theirs.getStages())
                      << "; members must start the same all-reduces in the "
                         "same order";
          reported = true;
          continue;
        }
        for (StringLiteral name : kSizeAttrs) {
          Attribute a = mine->getAttr(name), b = theirs->getAttr(name);
          if (!a || !b || a == b)
            continue;
          InFlightDiagnostic diag =
              error(mine) << head << " has " << name << " " << a << ", but "
                          << rankName(ref) << "'s has " << name << " " << b
                          << "; members must all-reduce buffers of "
                             "the same size";
          diag.attachNote(theirs.getLoc())
              << rankName(ref) << "'s all-reduce here";
          reported = true;
          break;
        }
      }
      if (reported || refSeq.size() == seq.size())
        continue;
      bool refLonger = refSeq.size() > seq.size();
      int64_t longRank = refLonger ? ref : other;
      int64_t shortRank = refLonger ? other : ref;
      ArrayRef<bp::AllReduceStartOp> longer = refLonger ? refSeq : seq;
      size_t n = std::min(refSeq.size(), seq.size());
      bp::AllReduceStartOp extra = longer[n];
      error(extra) << rankName(longRank) << " starts " << longer.size()
                   << " all-reduces with group " << formatList(group) << ", "
                   << rankName(shortRank) << " " << n << ": its "
                   << sched::ordinal(n + 1) << " (stages "
                   << formatList(extra.getStages()) << ") has no partner on "
                   << rankName(shortRank);
    }
  }
}

void ModuleVerifier::checkGradientsInFlight() {
  for (auto program : module.getOps<bp::ProgramOp>()) {
    // stage -> the all-reduce of its gradients that has started and not
    // been waited for.
    llvm::DenseMap<int64_t, bp::AllReduceStartOp> inFlight;
    // A repeat by its first and last repetitions: each repetition starts
    // and waits for the same stages, so the set in flight after one is the
    // set after any later one (Repetitions::Ends).
    bp::ProgramTrace trace(program, bp::Repetitions::Ends);
    for (const bp::TracedStep &step : trace.steps()) {
      Operation &op = *step.op;
      if (auto start = dyn_cast<bp::AllReduceStartOp>(op)) {
        for (int64_t s : start.getStages())
          inFlight[s] = start;
        continue;
      }
      if (auto wait = dyn_cast<bp::AllReduceWaitOp>(op)) {
        if (auto start = wait.getToken().getDefiningOp<bp::AllReduceStartOp>())
          for (int64_t s : start.getStages())
            inFlight.erase(s);
        continue;
      }
      int64_t stage, microbatch;
      StringRef what;
      if (auto b = dyn_cast<bp::BackwardOp>(op)) {
        stage = b.getStage(), microbatch = b.microbatchAt(step.repetition);
        what = "backward";
      } else if (auto w = dyn_cast<bp::WeightGradOp>(op)) {
        stage = w.getStage(), microbatch = w.microbatchAt(step.repetition);
        what = "weight gradient";
      } else {
        continue;
      }
      auto it = inFlight.find(stage);
      if (it == inFlight.end())
        continue;
      InFlightDiagnostic diag =
          error(&op) << rankName(program.getRank()) << ": the " << what
                     << " of stage " << stage << " micro-batch " << microbatch
                     << " adds to the gradients of stage " << stage
                     << " while their all-reduce (bucket "
                     << it->second.getBucket()
                     << ") is in flight; expected every backward of the stage "
                        "before its allreduce_start";
      diag.attachNote(it->second.getLoc()) << "all-reduce started here";
    }
  }
}

void ModuleVerifier::checkChannelOrder() {
  const sched::CommProgram &program = comms.program;
  for (const sched::ChannelMismatch &mm : sched::checkChannels(program)) {
    std::string channel =
        "channel " + rankName(mm.src) + " -> " + rankName(mm.dst) + ": ";
    std::string pos = sched::ordinal(mm.position + 1);
    Operation *send =
        mm.sendItem >= 0 ? comms.ops[mm.src][mm.sendItem] : nullptr;
    Operation *recv =
        mm.recvItem >= 0 ? comms.ops[mm.dst][mm.recvItem] : nullptr;
    // Matching has reported one-sided transfers; what is left is order.
    if (!send || !recv)
      continue;
    InFlightDiagnostic diag =
        error(recv) << channel << rankName(mm.dst) << "'s " << pos
                    << " receive expects "
                    << carried(program.transfers[mm.recvTransfer]) << ", but "
                    << rankName(mm.src) << "'s " << pos << " send carries "
                    << carried(program.transfers[mm.sendTransfer])
                    << "; the two ranks order this channel differently";
    diag.attachNote(send->getLoc())
        << rankName(mm.src) << "'s " << pos << " send on the channel";
  }
}

void ModuleVerifier::checkDeadlock() {
  // Whether the programs run, not how: no timeline.
  sched::SimulateOptions options;
  options.recordTimeline = false;
  sched::CostModel unit;
  unit.transport = options_.transport;
  sched::Result<sched::SimResult> sim =
      sched::simulate(schedule, comms.program, unit, options);
  if (!sim) {
    error(module) << "the programs cannot be run under "
                  << sched::transportName(options_.transport)
                  << "'s rules: " << sim.error;
    return;
  }
  if (!sim->deadlocked)
    return;
  // The error sits where the cycle (or else the first blocked rank) starts
  // and carries the whole grid with every step involved marked; each wait
  // is a note at its own op.
  const std::vector<sched::BlockedRank> &waits =
      sim->cycle.empty() ? sim->blocked : sim->cycle;
  std::vector<sched::ActionSite> marks;
  for (const sched::BlockedRank &b : sim->cycle)
    marks.push_back({b.rank, b.actionIndex});
  for (const sched::BlockedRank &b : sim->blocked)
    marks.push_back({b.rank, b.actionIndex});
  const sched::BlockedRank &first = waits.front();
  InFlightDiagnostic diag = error(stepOp(first.rank, first.actionIndex));
  diag << "deadlock under " << sched::transportName(options_.transport)
       << "'s rules";
  if (options_.transport == sched::Transport::Nccl)
    diag << " (transfers on "
         << sched::transferStreamsName(comms.program.streams) << " streams)";
  diag << ": no rank can make progress; ";
  if (sim->cycle.empty())
    diag << sched::quantity(static_cast<int>(sim->blocked.size()), "rank waits",
                            "ranks wait")
         << " (see the notes)";
  else
    diag << "a cycle of "
         << sched::quantity(static_cast<int>(sim->cycle.size()), "wait",
                            "waits")
         << ", each on the next and the last on the first (see the notes)";
  diag << "\n" << sched::formatGrid(schedule, marks);
  for (const sched::BlockedRank &b : waits)
    diag.attachNote(stepOp(b.rank, b.actionIndex)->getLoc()) << b.reason;
  // Then where every blocked rank stands, if the cycle did not say it.
  if (!sim->cycle.empty())
    for (const sched::BlockedRank &b : sim->blocked)
      diag.attachNote(stepOp(b.rank, b.actionIndex)->getLoc())
          << "blocked: " << b.reason;
}

void ModuleVerifier::checkSchedule() {
  // Channel order and deadlock were checked above, on the same program.
  sched::VerifyOptions rest = options_;
  rest.checkExecution = false;
  for (const sched::Diagnostic &d :
       sched::verify(schedule, comms.program, rest))
    error(stepOp(d.rank, d.actionIndex)) << d.str();
}

LogicalResult ModuleVerifier::run() {
  // Local findings first: each names its own op. Channel order and deadlock
  // would only repeat an unmatched transfer; the library's verifier would
  // repeat those.
  checkMatching();
  checkAllReduceAgreement();
  checkGradientsInFlight();
  if (failed)
    return failure();
  checkChannelOrder();
  if (failed)
    return failure();
  checkDeadlock();
  if (failed)
    return failure();
  checkSchedule();
  return failure(failed);
}

} // namespace

LogicalResult bitpipe::verifyRankPrograms(ModuleOp module,
                                          bool requireAllReduce,
                                          sched::Transport transport) {
  sched::VerifyOptions options;
  options.requireAllReduce = requireAllReduce;
  options.transport = transport;
  FailureOr<ProgramsFromIR> programs = readProgramsFromIR(module);
  if (failed(programs))
    return failure();
  if (!hasBoundPrograms(module))
    return module.emitError()
           << "bitpipe-verify checks bound programs with their transfers; "
              "run bitpipe-insert-transfers first";
  // One program per pipeline rank, which every data-parallel copy runs
  // among its own ranks: checking them checks every copy.
  FailureOr<IRCommProgram> comms = readCommProgramFromIR(module, *programs);
  if (failed(comms))
    return failure();
  return ModuleVerifier(module, programs->schedule, *comms, options).run();
}
