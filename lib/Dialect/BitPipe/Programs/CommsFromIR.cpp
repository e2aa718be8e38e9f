//===- CommsFromIR.cpp - The transfers of the programs, for the library ---===//
//
// readCommProgramFromIR: the sends, receives and local copies of bound
// programs as the schedule library's CommProgram, with the op behind every
// item, so that the library's findings (unmatched or misordered channels,
// deadlocks) are reported at the ops they are about.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/Hashing.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <tuple>
#include <unordered_map>

using namespace mlir;
using namespace bitpipe;

namespace {

/// What a transfer op says about the hand-off it carries.
struct TransferKey {
  bool gradient;
  int64_t microbatch, stage, src, dst;
  auto tie() const {
    return std::make_tuple(gradient, microbatch, stage, src, dst);
  }
  bool operator==(const TransferKey &o) const { return tie() == o.tie(); }
};

struct TransferKeyHash {
  size_t operator()(const TransferKey &k) const {
    return llvm::hash_combine(k.gradient, k.microbatch, k.stage, k.src, k.dst);
  }
};

/// Builds the library's CommProgram of one module, program by program.
class CommReader {
public:
  CommReader(const sched::Schedule &schedule)
      : schedule(schedule), numStages(schedule.placement.numStages) {
    result.program.ranks.resize(schedule.numRanks());
    result.ops.resize(schedule.numRanks());
    result.steps.resize(schedule.numRanks());
    // Every hand-off of the schedule, once: what well-formed programs hold.
    size_t handOffs = 2 * static_cast<size_t>(schedule.numMicrobatches) *
                      std::max(0, numStages - 1);
    result.program.transfers.reserve(handOffs);
    result.sendOps.reserve(handOffs);
    result.recvOps.reserve(handOffs);
    firstTransfer.assign(
        2 * static_cast<size_t>(schedule.numMicrobatches) * numStages, -1);
  }

  /// Reads the program of pipeline rank `rank`, from its trace and the
  /// steps read from it.
  LogicalResult read(int rank, const bp::ProgramTrace &programTrace,
                     const ProgramSteps &programSteps);
  void setStreams(sched::TransferStreams streams) {
    result.program.streams = streams;
  }
  IRCommProgram take() { return std::move(result); }

private:
  /// The transfer `key` names, created on first sight; fails at `op` when
  /// its stage or micro-batch does not exist.
  FailureOr<int> transferOf(Operation *op, const TransferKey &key);
  /// The step of `rank` that uses the value trace step `index` defines:
  /// the first user among the steps, or else the first step after it.
  FailureOr<int> consumerStep(int rank, size_t index);

  const sched::Schedule &schedule;
  const int numStages;
  IRCommProgram result;
  /// By (kind, micro-batch, stage): the first transfer seen of that
  /// hand-off, or -1. Well-formed programs name each hand-off with one pair
  /// of ranks; any other pair (a program that sends it elsewhere, for the
  /// checks to report) is a transfer of its own, kept in `otherTransfers`.
  std::vector<int> firstTransfer;
  std::unordered_map<TransferKey, int, TransferKeyHash> otherTransfers;
  /// Of the program being read: per trace step, its schedule step (or -1),
  /// and the first schedule step that uses a value it defines (or -1).
  std::vector<int> stepIndex, firstUser;
  const bp::ProgramTrace *trace = nullptr;
};

FailureOr<int> CommReader::transferOf(Operation *op, const TransferKey &key) {
  int64_t to = key.gradient ? key.stage - 1 : key.stage + 1;
  if (key.microbatch < 0 || key.microbatch >= schedule.numMicrobatches ||
      key.stage < 0 || key.stage >= numStages || to < 0 || to >= numStages)
    return op->emitOpError()
           << "moves the " << (key.gradient ? "gradient" : "activation")
           << " of stage " << key.stage << " micro-batch " << key.microbatch
           << ", but no such hand-off exists between the schedule's "
           << numStages << " stages and " << schedule.numMicrobatches
           << " micro-batches";
  int &first = firstTransfer[(static_cast<size_t>(key.gradient) *
                                  schedule.numMicrobatches +
                              key.microbatch) *
                                 numStages +
                             key.stage];
  int *id = &first;
  if (first >= 0) {
    const sched::Transfer &seen = result.program.transfers[first];
    if (seen.src == key.src && seen.dst == key.dst)
      return first;
    auto [it, inserted] = otherTransfers.try_emplace(key, -1);
    if (!inserted)
      return it->second;
    id = &it->second;
  }
  sched::Transfer t;
  t.gradient = key.gradient;
  t.microbatch = key.microbatch;
  t.fromStage = key.stage;
  t.toStage = to;
  t.src = key.src;
  t.dst = key.dst;
  *id = static_cast<int>(result.program.transfers.size());
  result.program.transfers.push_back(t);
  result.sendOps.emplace_back();
  result.recvOps.emplace_back();
  return *id;
}

FailureOr<int> CommReader::consumerStep(int rank, size_t index) {
  if (firstUser[index] >= 0)
    return firstUser[index];
  for (size_t next = index + 1; next < stepIndex.size(); ++next)
    if (stepIndex[next] >= 0)
      return stepIndex[next];
  return (*trace)[index].op->emitOpError()
         << "on rank " << rank << " has no compute step after it to receive "
         << "for";
}

LogicalResult CommReader::read(int rank, const bp::ProgramTrace &programTrace,
                               const ProgramSteps &programSteps) {
  int numDevices = schedule.numRanks();
  // The program as it runs, repeats unrolled (ProgramTrace.h), and its
  // steps as readScheduleFromIR counts them: a run of bucketed all-reduces
  // is one step, named by its first op.
  trace = &programTrace;
  stepIndex.assign(programTrace.size(), -1);
  firstUser.assign(programTrace.size(), -1);
  for (auto [index, at] : llvm::enumerate(programSteps.traceIndices))
    stepIndex[at] = static_cast<int>(index);
  result.steps[rank].assign(programSteps.ops.begin(), programSteps.ops.end());
  for (size_t user = 0; user < programTrace.size(); ++user) {
    if (stepIndex[user] < 0)
      continue;
    for (unsigned n = 0; n < programTrace[user].op->getNumOperands(); ++n)
      if (std::optional<size_t> def = programTrace.operandStep(user, n))
        if (firstUser[*def] < 0)
          firstUser[*def] = stepIndex[user];
  }
  // A transfer's peer: a pipeline rank, since every data-parallel copy
  // runs these programs among its own ranks (docs/data-parallel.md).
  auto devicePeer = [&](Operation *op, int64_t peer) -> FailureOr<int> {
    if (peer < 0 || peer >= numDevices)
      return op->emitOpError()
             << "on rank " << rank << " talks to rank " << peer
             << ", which is not a pipeline rank (0.." << numDevices - 1
             << "); a module holds the programs of one pipeline, which "
                "every data-parallel copy runs among its own ranks";
    return static_cast<int>(peer);
  };
  std::vector<sched::CommAction> &items = result.program.ranks[rank];
  std::vector<Operation *> &ops = result.ops[rank];
  // At most one item per step of the trace.
  items.reserve(programTrace.size());
  ops.reserve(programTrace.size());
  int lastStep = -1;
  // Appends a transfer item, or folds a further tensor of the hand-off the
  // previous item carries into it.
  auto addTransfer = [&](Operation *op, sched::CommKind kind, int id,
                         int actionIndex, int peer, int64_t repetition) {
    if (!items.empty() && items.back().transfer == id &&
        items.back().kind == kind)
      return;
    sched::CommAction item;
    item.kind = kind;
    item.action = result.program.transfers[id].producer();
    item.actionIndex = actionIndex;
    item.transfer = id;
    item.peer = peer;
    // The program verifier keeps batch numbers in int range in practice;
    // one beyond it is no batch the simulator can name.
    std::optional<int64_t> batch = bp::batchAt(op, repetition);
    item.batch = batch && *batch <= std::numeric_limits<int>::max()
                     ? static_cast<int>(*batch)
                     : -1;
    items.push_back(item);
    ops.push_back(op);
  };
  // The step that defines operand 0 of trace step `index`, or else the
  // last step before it.
  auto producerStep = [&](size_t index) {
    if (std::optional<size_t> def = programTrace.operandStep(index, 0))
      if (stepIndex[*def] >= 0)
        return stepIndex[*def];
    return lastStep;
  };

  for (size_t index = 0; index < programTrace.size(); ++index) {
    Operation &op = *programTrace[index].op;
    const int64_t k = programTrace[index].repetition;
    if (stepIndex[index] >= 0) {
      lastStep = stepIndex[index];
      const sched::Action &action = schedule.ranks[rank][lastStep];
      sched::CommAction item;
      item.kind = action.kind == sched::ActionKind::AllReduce
                      ? sched::CommKind::AllReduce
                      : sched::CommKind::Compute;
      item.action = action;
      item.actionIndex = lastStep;
      items.push_back(item);
      ops.push_back(&op);
      continue;
    }
    if (auto send = dyn_cast<bp::SendOp>(op)) {
      bool gradient = send.getKind() == bp::TransferKind::Gradient;
      FailureOr<int> peer = devicePeer(send, send.getPeer());
      if (failed(peer))
        return failure();
      FailureOr<int> id = transferOf(
          send, {gradient, send.microbatchAt(k), send.getStage(), rank, *peer});
      if (failed(id))
        return failure();
      int producer = producerStep(index);
      sched::Transfer &t = result.program.transfers[*id];
      t.producerIndex = producer;
      result.sendOps[*id].push_back(send);
      addTransfer(send,
                  gradient ? sched::CommKind::SendB : sched::CommKind::SendF,
                  *id, producer, *peer, k);
    } else if (auto recv = dyn_cast<bp::RecvOp>(op)) {
      bool gradient = recv.getKind() == bp::TransferKind::Gradient;
      FailureOr<int> peer = devicePeer(recv, recv.getPeer());
      if (failed(peer))
        return failure();
      FailureOr<int> id = transferOf(
          recv, {gradient, recv.microbatchAt(k), recv.getStage(), *peer, rank});
      if (failed(id))
        return failure();
      FailureOr<int> consumer = consumerStep(rank, index);
      if (failed(consumer))
        return failure();
      result.program.transfers[*id].consumerIndex = *consumer;
      result.recvOps[*id].push_back(recv);
      addTransfer(recv,
                  gradient ? sched::CommKind::RecvB : sched::CommKind::RecvF,
                  *id, *consumer, *peer, k);
    } else if (auto copy = dyn_cast<bp::LocalCopyOp>(op)) {
      bool gradient = copy.getKind() == bp::TransferKind::Gradient;
      FailureOr<int> id = transferOf(
          copy, {gradient, copy.microbatchAt(k), copy.getStage(), rank, rank});
      if (failed(id))
        return failure();
      FailureOr<int> consumer = consumerStep(rank, index);
      if (failed(consumer))
        return failure();
      int producer = producerStep(index);
      sched::Transfer &t = result.program.transfers[*id];
      t.producerIndex = producer;
      t.consumerIndex = *consumer;
      result.sendOps[*id].push_back(copy);
      result.recvOps[*id].push_back(copy);
      addTransfer(copy,
                  gradient ? sched::CommKind::LocalCopyB
                           : sched::CommKind::LocalCopyF,
                  *id, producer, -1, k);
    }
  }
  return success();
}

} // namespace

FailureOr<IRCommProgram>
bitpipe::readCommProgramFromIR(ModuleOp module,
                               const ProgramsFromIR &programs) {
  CommReader reader(programs.schedule);
  reader.setStreams(readTransferStreams(module));
  // readProgramsFromIR has checked that the programs are the pipeline
  // ranks', once each. Read in the module's order, which numbers the
  // transfers.
  for (auto program : module.getOps<bp::ProgramOp>()) {
    size_t rank = program.getRank();
    if (failed(reader.read(static_cast<int>(rank), programs.traces[rank],
                           programs.steps[rank])))
      return failure();
  }
  return reader.take();
}
