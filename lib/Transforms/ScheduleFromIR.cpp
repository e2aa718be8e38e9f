//===- ScheduleFromIR.cpp - The schedule library's view of the IR ---------===//

#include "bitpipe/Transforms/ScheduleFromIR.h"

#include "bitpipe/Dialect/BitPipe/IR/BitPipeDialect.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace mlir;
using namespace bitpipe;

FailureOr<SmallVector<func::FuncOp>>
bitpipe::collectStageFunctions(ModuleOp module) {
  SmallVector<func::FuncOp> stages;
  for (auto fn : module.getOps<func::FuncOp>()) {
    auto attr = fn->getAttrOfType<IntegerAttr>(kStageAttrName);
    if (!attr)
      continue;
    int64_t stage = attr.getInt();
    if (stage < 0)
      return fn.emitError()
             << "'" << kStageAttrName
             << "' expects a non-negative stage number, got " << stage;
    if (static_cast<int64_t>(stages.size()) <= stage)
      stages.resize(stage + 1);
    if (stages[stage]) {
      InFlightDiagnostic diag = fn.emitError()
                                << "is stage " << stage << ", but @"
                                << stages[stage].getSymName()
                                << " already is; expected one function per "
                                   "stage";
      diag.attachNote(stages[stage].getLoc()) << "stage " << stage << " here";
      return diag;
    }
    stages[stage] = fn;
  }
  for (auto [s, fn] : llvm::enumerate(stages))
    if (!fn)
      return module.emitError()
             << "has stage functions up to stage " << stages.size() - 1
             << " but none for stage " << s << "; expected stages 0.."
             << stages.size() - 1 << " each once";
  return stages;
}

bp::PlacementAttr bitpipe::toPlacementAttr(Location loc,
                                           const sched::Placement &placement) {
  std::optional<bp::PlacementKind> kind =
      bp::symbolizePlacementKind(placement.kind);
  if (!kind) {
    emitError(loc) << "the schedule library's placement kind '"
                   << placement.kind << "' has no #bitpipe.placement spelling";
    return {};
  }
  MLIRContext *context = loc.getContext();
  SmallVector<DenseI64ArrayAttr> pipelines;
  for (const sched::Pipeline &pipe : placement.pipelines)
    pipelines.push_back(DenseI64ArrayAttr::get(
        context, SmallVector<int64_t>(pipe.stageDevice.begin(),
                                      pipe.stageDevice.end())));
  return bp::PlacementAttr::get(context, *kind, placement.numDevices,
                                pipelines);
}

sched::Placement bitpipe::toSchedPlacement(bp::PlacementAttr attr) {
  sched::Placement p;
  p.kind = bp::stringifyPlacementKind(attr.getKind()).str();
  p.numDevices = attr.getDevices();
  p.numStages = attr.getNumStages();
  for (DenseI64ArrayAttr pipe : attr.getPipelines())
    p.pipelines.push_back(
        {std::vector<int>(pipe.asArrayRef().begin(), pipe.asArrayRef().end())});
  return p;
}

bool bitpipe::samePlacement(const sched::Placement &a,
                            const sched::Placement &b) {
  if (a.kind != b.kind || a.numDevices != b.numDevices ||
      a.numStages != b.numStages || a.pipelines.size() != b.pipelines.size())
    return false;
  for (size_t p = 0; p < a.pipelines.size(); ++p)
    if (a.pipelines[p].stageDevice != b.pipelines[p].stageDevice)
      return false;
  return true;
}

DictionaryAttr bitpipe::toScheduleAttr(MLIRContext *context,
                                       const sched::Schedule &schedule) {
  Builder b(context);
  SmallVector<NamedAttribute> fields = {
      b.getNamedAttr("name", b.getStringAttr(schedule.name)),
      b.getNamedAttr("microbatches",
                     b.getI64IntegerAttr(schedule.numMicrobatches)),
      b.getNamedAttr("microbatch_pipelines",
                     b.getDenseI64ArrayAttr(SmallVector<int64_t>(
                         schedule.microbatchPipeline.begin(),
                         schedule.microbatchPipeline.end()))),
      b.getNamedAttr("split_backward", b.getBoolAttr(schedule.splitBackward)),
  };
  if (!schedule.note.empty())
    fields.push_back(b.getNamedAttr("note", b.getStringAttr(schedule.note)));
  return b.getDictionaryAttr(fields);
}

FailureOr<sched::World> bitpipe::readWorld(ModuleOp module) {
  auto placement = module->getAttrOfType<bp::PlacementAttr>(
      bp::BitPipeDialect::kPlacementAttrName);
  if (!placement)
    return module.emitError()
           << "has no '" << bp::BitPipeDialect::kPlacementAttrName
           << "'; run bitpipe-place first";
  sched::World world;
  world.pipelineDevices = placement.getDevices();
  if (auto copies = module->getAttrOfType<IntegerAttr>(
          bp::BitPipeDialect::kDataParallelAttrName))
    world.dataParallel = copies.getInt();
  // The dialect verifier checks the two agree when both are there; a world
  // size without a copy count must still be one copy.
  if (auto size = module->getAttrOfType<IntegerAttr>(
          bp::BitPipeDialect::kWorldSizeAttrName);
      size && size.getInt() != world.size())
    return module.emitError()
           << "has '" << bp::BitPipeDialect::kWorldSizeAttrName
           << "' = " << size.getInt() << ", but " << world.dataParallel
           << " cop" << (world.dataParallel == 1 ? "y" : "ies") << " of "
           << world.pipelineDevices << " devices make " << world.size()
           << " ranks; set '" << bp::BitPipeDialect::kDataParallelAttrName
           << "' (bitpipe-place dp=K)";
  return world;
}

FailureOr<ProgramSteps>
bitpipe::readProgramSteps(bp::ProgramOp program,
                          const sched::Placement &placement) {
  ProgramSteps steps;
  std::vector<std::vector<int>> groups = placement.replicaGroups();
  // The open run of bucketed all-reduces: replica group -> its AR step.
  std::map<std::vector<int>, size_t> run;
  auto push = [&](sched::Action action, Operation *op) {
    steps.actions.push_back(std::move(action));
    steps.ops.push_back(op);
  };
  for (Operation &op : program.getBody().front()) {
    auto ar = dyn_cast<bp::AllReduceStartOp>(op);
    if (!ar || !ar.isBucketed()) {
      // Only compute steps and markers end a run of buckets: transfers,
      // waits and inputs between two buckets do not make a new sync point.
      if (isa<bp::ForwardOp, bp::BackwardOp, bp::WeightGradOp,
              bp::AllReduceStartOp>(op))
        run.clear();
    }
    LogicalResult read =
        llvm::TypeSwitch<Operation *, LogicalResult>(&op)
            .Case([&](bp::ForwardOp f) {
              push(sched::Action::forward(f.getMicrobatch(), f.getStage()),
                   f);
              return success();
            })
            .Case([&](bp::BackwardOp b) {
              push(sched::Action::backward(b.getMicrobatch(), b.getStage()),
                   b);
              return success();
            })
            .Case([&](bp::WeightGradOp w) {
              push(sched::Action::weightGrad(w.getMicrobatch(), w.getStage()),
                   w);
              return success();
            })
            .Case([&](bp::AllReduceStartOp start) -> LogicalResult {
              ArrayRef<int64_t> stages = start.getStages();
              if (!start.isBucketed()) {
                push(sched::Action::allReduce(
                         std::vector<int>(stages.begin(), stages.end())),
                     start);
                return success();
              }
              for (int64_t stage : stages) {
                if (stage >= placement.numStages)
                  return start.emitOpError()
                         << "names stage " << stage << ", but the placement "
                         << "has " << placement.numStages << " stages";
                auto [it, fresh] =
                    run.try_emplace(groups[stage], steps.actions.size());
                if (fresh)
                  push(sched::Action::allReduce({}), start);
                std::vector<int> &have = steps.actions[it->second].stages;
                auto pos = std::lower_bound(have.begin(), have.end(), stage);
                if (pos == have.end() || *pos != stage)
                  have.insert(pos, static_cast<int>(stage));
              }
              return success();
            })
            // Not steps of the schedule: data movement and the end of
            // the step, derived from it by later passes.
            .Case<bp::LoadInputOp, bp::SendOp, bp::RecvOp, bp::LocalCopyOp,
                  bp::AllReduceWaitOp, bp::OptimizerStepOp>(
                [](Operation *) { return success(); })
            .Default([](Operation *other) {
              return other->emitError()
                     << "cannot be read as a step of the schedule";
            });
    if (failed(read))
      return failure();
  }
  return steps;
}

FailureOr<sched::Schedule> bitpipe::readScheduleFromIR(ModuleOp module) {
  // The dialect's attribute verifier has checked the shapes of both
  // attributes; here only their presence matters.
  auto placement = module->getAttrOfType<bp::PlacementAttr>(
      bp::BitPipeDialect::kPlacementAttrName);
  if (!placement)
    return module.emitError()
           << "has no '" << bp::BitPipeDialect::kPlacementAttrName
           << "'; run bitpipe-place and bitpipe-schedule first";
  auto info = module->getAttrOfType<DictionaryAttr>(
      bp::BitPipeDialect::kScheduleAttrName);
  if (!info)
    return module.emitError()
           << "has no '" << bp::BitPipeDialect::kScheduleAttrName
           << "'; run bitpipe-schedule first";
  FailureOr<sched::World> world = readWorld(module);
  if (failed(world))
    return failure();

  sched::Schedule schedule;
  schedule.name = info.getAs<StringAttr>("name").str();
  schedule.placement = toSchedPlacement(placement);
  schedule.numMicrobatches = info.getAs<IntegerAttr>("microbatches").getInt();
  ArrayRef<int64_t> pipelines =
      info.getAs<DenseI64ArrayAttr>("microbatch_pipelines").asArrayRef();
  schedule.microbatchPipeline.assign(pipelines.begin(), pipelines.end());
  schedule.splitBackward = info.getAs<BoolAttr>("split_backward").getValue();
  if (auto note = info.getAs<StringAttr>("note"))
    schedule.note = note.str();

  // One program per rank of the world (the program verifier rejects
  // duplicates and ranks beyond bitpipe.world_size).
  const int ranks = world->size();
  SmallVector<bp::ProgramOp> programs(ranks);
  for (auto program : module.getOps<bp::ProgramOp>()) {
    int64_t rank = program.getRank();
    if (rank >= ranks)
      return program.emitError()
             << "has rank " << rank << ", but the world has " << ranks
             << " ranks (" << world->dataParallel << " x "
             << world->pipelineDevices << " devices)";
    programs[rank] = program;
  }
  for (auto [rank, program] : llvm::enumerate(programs))
    if (!program)
      return module.emitError()
             << "has no bitpipe.program for rank " << rank << " of the "
             << "world's " << ranks << " ranks (" << world->dataParallel
             << " x " << world->pipelineDevices << " devices)";

  schedule.ranks.resize(world->pipelineDevices);
  for (auto [rank, program] : llvm::enumerate(programs)) {
    FailureOr<ProgramSteps> steps =
        readProgramSteps(program, schedule.placement);
    if (failed(steps))
      return failure();
    int device = world->device(rank);
    if (world->copy(rank) == 0) {
      schedule.ranks[device] = std::move(steps->actions);
      continue;
    }
    // Copies run their device's program; anything else is another
    // schedule, which the one-copy view would hide.
    const std::vector<sched::Action> &want = schedule.ranks[device];
    size_t n = std::min(want.size(), steps->actions.size());
    size_t k = 0;
    while (k < n && want[k] == steps->actions[k])
      ++k;
    if (k == n && want.size() == steps->actions.size())
      continue;
    InFlightDiagnostic diag = program.emitError();
    diag << "is rank " << rank << ", device " << device << " of data-parallel "
         << "copy " << world->copy(rank) << ", but its ";
    if (k < n)
      diag << "step " << k << " is " << steps->actions[k].str()
           << " where rank " << device << " runs " << want[k].str();
    else
      diag << "program has " << steps->actions.size() << " steps where rank "
           << device << "'s has " << want.size();
    diag << "; expected every copy to run its device's program";
    return diag;
  }
  return schedule;
}

bool bitpipe::hasBoundPrograms(ModuleOp module) {
  for (auto program : module.getOps<bp::ProgramOp>())
    for (Operation &op : program.getBody().front())
      if (op.getAttrOfType<FlatSymbolRefAttr>("callee") &&
          isa<bp::ForwardOp, bp::BackwardOp, bp::WeightGradOp>(op))
        return true;
  return false;
}

namespace {

/// What a transfer op says about the hand-off it carries.
struct TransferKey {
  bool gradient;
  int64_t microbatch, stage, src, dst;
  auto tie() const {
    return std::make_tuple(gradient, microbatch, stage, src, dst);
  }
  bool operator<(const TransferKey &o) const { return tie() < o.tie(); }
};

/// Builds the library's CommProgram of one module, program by program.
class CommReader {
public:
  CommReader(const sched::Schedule &schedule) : schedule(schedule) {
    result.program.ranks.resize(schedule.numRanks());
    result.ops.resize(schedule.numRanks());
    result.steps.resize(schedule.numRanks());
  }

  /// Reads the program of device `rank` of a pipeline copy whose ranks start
  /// at `offset` (peers are translated to the copy's device numbers).
  LogicalResult read(int rank, bp::ProgramOp program, int offset);
  IRCommProgram take() { return std::move(result); }

private:
  /// The transfer `key` names, created on first sight; fails at `op` when
  /// its stage or micro-batch does not exist.
  FailureOr<int> transferOf(Operation *op, const TransferKey &key);
  /// The step of `rank` that uses a value `op` defines: the first user
  /// among the steps, or else the first step after `op`.
  FailureOr<int> consumerStep(int rank, Operation *op);

  const sched::Schedule &schedule;
  IRCommProgram result;
  std::map<TransferKey, int> transfers;
  llvm::DenseMap<Operation *, int> stepIndex;
};

FailureOr<int> CommReader::transferOf(Operation *op, const TransferKey &key) {
  auto [it, inserted] = transfers.try_emplace(key, -1);
  if (!inserted)
    return it->second;
  const int numStages = schedule.placement.numStages;
  int64_t to = key.gradient ? key.stage - 1 : key.stage + 1;
  if (key.microbatch >= schedule.numMicrobatches || key.stage >= numStages ||
      to < 0 || to >= numStages)
    return op->emitOpError()
           << "moves the " << (key.gradient ? "gradient" : "activation")
           << " of stage " << key.stage << " micro-batch " << key.microbatch
           << ", but no such hand-off exists between the schedule's "
           << numStages << " stages and " << schedule.numMicrobatches
           << " micro-batches";
  sched::Transfer t;
  t.gradient = key.gradient;
  t.microbatch = key.microbatch;
  t.fromStage = key.stage;
  t.toStage = to;
  t.src = key.src;
  t.dst = key.dst;
  it->second = static_cast<int>(result.program.transfers.size());
  result.program.transfers.push_back(t);
  result.sendOps.emplace_back();
  result.recvOps.emplace_back();
  return it->second;
}

FailureOr<int> CommReader::consumerStep(int rank, Operation *op) {
  std::optional<int> first;
  for (Operation *user : op->getUsers())
    if (auto it = stepIndex.find(user); it != stepIndex.end())
      first = first ? std::min(*first, it->second) : it->second;
  if (first)
    return *first;
  for (Operation *next = op->getNextNode(); next; next = next->getNextNode())
    if (auto it = stepIndex.find(next); it != stepIndex.end())
      return it->second;
  return op->emitOpError() << "on rank " << rank
                           << " has no compute step after it to receive for";
}

LogicalResult CommReader::read(int rank, bp::ProgramOp program, int offset) {
  Block &body = program.getBody().front();
  int numDevices = schedule.numRanks();
  // The steps as readScheduleFromIR counts them: a run of bucketed
  // all-reduces is one step, named by its first op.
  FailureOr<ProgramSteps> programSteps =
      readProgramSteps(program, schedule.placement);
  if (failed(programSteps))
    return failure();
  for (auto [index, op] : llvm::enumerate(programSteps->ops)) {
    stepIndex[op] = static_cast<int>(index);
    result.steps[rank].push_back(op);
  }
  // A transfer's peer, as a device of this copy.
  auto devicePeer = [&](Operation *op, int64_t peer) -> FailureOr<int> {
    int64_t device = peer - offset;
    if (device < 0 || device >= numDevices)
      return op->emitOpError()
             << "on rank " << rank + offset << " talks to rank " << peer
             << ", outside its pipeline copy (ranks " << offset << ".."
             << offset + numDevices - 1 << ")";
    return static_cast<int>(device);
  };
  std::vector<sched::CommAction> &items = result.program.ranks[rank];
  std::vector<Operation *> &ops = result.ops[rank];
  int lastStep = -1;
  // Appends a transfer item, or folds a further tensor of the hand-off the
  // previous item carries into it.
  auto addTransfer = [&](Operation *op, sched::CommKind kind, int id,
                         int actionIndex, int peer) {
    if (!items.empty() && items.back().transfer == id &&
        items.back().kind == kind)
      return;
    sched::CommAction item;
    item.kind = kind;
    item.action = result.program.transfers[id].producer();
    item.actionIndex = actionIndex;
    item.transfer = id;
    item.peer = peer;
    items.push_back(item);
    ops.push_back(op);
  };
  // The step that defines `value`, or else the last step before the use.
  auto producerStep = [&](Value value) {
    if (Operation *def = value.getDefiningOp())
      if (auto it = stepIndex.find(def); it != stepIndex.end())
        return it->second;
    return lastStep;
  };

  for (Operation &op : body) {
    if (auto it = stepIndex.find(&op); it != stepIndex.end()) {
      lastStep = it->second;
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
          send, {gradient, send.getMicrobatch(), send.getStage(), rank, *peer});
      if (failed(id))
        return failure();
      int producer = producerStep(send.getValue());
      sched::Transfer &t = result.program.transfers[*id];
      t.producerIndex = producer;
      result.sendOps[*id].push_back(send);
      addTransfer(send,
                  gradient ? sched::CommKind::SendB : sched::CommKind::SendF,
                  *id, producer, *peer);
    } else if (auto recv = dyn_cast<bp::RecvOp>(op)) {
      bool gradient = recv.getKind() == bp::TransferKind::Gradient;
      FailureOr<int> peer = devicePeer(recv, recv.getPeer());
      if (failed(peer))
        return failure();
      FailureOr<int> id = transferOf(
          recv, {gradient, recv.getMicrobatch(), recv.getStage(), *peer, rank});
      if (failed(id))
        return failure();
      FailureOr<int> consumer = consumerStep(rank, recv);
      if (failed(consumer))
        return failure();
      result.program.transfers[*id].consumerIndex = *consumer;
      result.recvOps[*id].push_back(recv);
      addTransfer(recv,
                  gradient ? sched::CommKind::RecvB : sched::CommKind::RecvF,
                  *id, *consumer, *peer);
    } else if (auto copy = dyn_cast<bp::LocalCopyOp>(op)) {
      bool gradient = copy.getKind() == bp::TransferKind::Gradient;
      FailureOr<int> id = transferOf(
          copy, {gradient, copy.getMicrobatch(), copy.getStage(), rank, rank});
      if (failed(id))
        return failure();
      FailureOr<int> consumer = consumerStep(rank, copy);
      if (failed(consumer))
        return failure();
      int producer = producerStep(copy.getValue());
      sched::Transfer &t = result.program.transfers[*id];
      t.producerIndex = producer;
      t.consumerIndex = *consumer;
      result.sendOps[*id].push_back(copy);
      result.recvOps[*id].push_back(copy);
      addTransfer(copy,
                  gradient ? sched::CommKind::LocalCopyB
                           : sched::CommKind::LocalCopyF,
                  *id, producer, -1);
    }
  }
  return success();
}

} // namespace

FailureOr<IRCommProgram>
bitpipe::readCommProgramFromIR(ModuleOp module,
                               const sched::Schedule &schedule, int copy) {
  CommReader reader(schedule);
  int numDevices = schedule.numRanks();
  int offset = copy * numDevices;
  // readScheduleFromIR has checked that the ranks cover the world.
  for (auto program : module.getOps<bp::ProgramOp>()) {
    int64_t rank = program.getRank();
    if (rank < offset || rank >= offset + numDevices)
      continue;
    if (failed(reader.read(static_cast<int>(rank - offset), program, offset)))
      return failure();
  }
  return reader.take();
}
