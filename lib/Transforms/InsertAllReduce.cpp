//===- InsertAllReduce.cpp - The bitpipe-insert-allreduce pass ------------===//
//
// Gradient synchronisation as the PyTorch DDP paper does it, on per-rank
// programs. The decisions are the schedule library's (GradientSync.h): where
// gradients become final (sync points), who holds a replica of a stage, and
// how gradients are packed into buckets. This pass supplies what only the
// IR knows (which gradients a stage's backward produces, in which order, and
// how large they are) and writes the result as asynchronous all-reduces:
//
//   plan    every rank's buckets, from the programs read back and the
//           backward functions; nothing is changed yet;
//   check   every member of a group issues the same buckets in the same
//           order (a mismatch would hang the collective at run time);
//   rewrite replace the schedule's markers, start each bucket right after
//           its sync point, wait right before the optimizer step;
//   verify  the library's verifier on the programs read back, requiring
//           every replicated stage to be all-reduced once on every holder.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeTypes.h"
#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/Verifier.h"
#include "bitpipe/Support/TensorBytes.h"
#include "bitpipe/Transforms/Passes.h"
#include "bitpipe/Transforms/Pipeline.h"

#include "PassOptionUtil.h"

#include "bitpipe/Dialect/BitPipe/Programs/Repeats.h"
#include "bitpipe/Dialect/BitPipe/Programs/ScheduleFromIR.h"
#include "bitpipe/Support/DiagnosticText.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

namespace bitpipe {
#define GEN_PASS_DEF_INSERTALLREDUCE
#include "bitpipe/Transforms/Passes.h.inc"
} // namespace bitpipe

using namespace mlir;
using namespace bitpipe;
using bitpipe::detail::formatList;
using bitpipe::detail::quotedList;

namespace {

/// One parameter gradient a stage's backward produces.
struct StageGradient {
  std::string name;
  int64_t bytes = 0;
};

/// The bytes of a gradient tensor, or failure for a type without a static
/// size that fits in int64 (a bucket must be laid out before the step runs).
FailureOr<int64_t> gradientBytes(func::FuncOp fn, unsigned result) {
  std::optional<int64_t> bytes = staticTensorBytes(fn.getResultTypes()[result]);
  if (!bytes)
    return fn.emitError() << "returns gradient #" << result << " as "
                          << fn.getResultTypes()[result]
                          << "; expected a statically shaped tensor of ints "
                             "or floats, whose size a bucket can hold";
  return *bytes;
}

/// The parameter gradients `backward` returns, in the order its body
/// finishes them: by the position of the op producing each (a declaration,
/// as in hand-written tests, in result order).
FailureOr<SmallVector<StageGradient>> gradientsOf(func::FuncOp backward) {
  llvm::DenseMap<Operation *, unsigned> position;
  Operation *terminator = nullptr;
  if (!backward.isExternal()) {
    backward.walk([&](Operation *op) { position[op] = position.size(); });
    terminator = backward.getBody().back().getTerminator();
  }
  SmallVector<std::pair<unsigned, unsigned>> order; // (position, result)
  for (unsigned i = 0, e = backward.getNumResults(); i < e; ++i) {
    if (!backward.getResultAttr(i, nn::attr::kParam))
      continue;
    unsigned at = i;
    if (terminator) {
      Operation *def = terminator->getOperand(i).getDefiningOp();
      at = def ? position.lookup(def) : 0;
    }
    order.push_back({at, i});
  }
  llvm::stable_sort(order, [](auto a, auto b) { return a.first < b.first; });

  SmallVector<StageGradient> grads;
  for (auto [at, i] : order) {
    auto name = backward.getResultAttrOfType<StringAttr>(i, nn::attr::kParam);
    if (!name)
      return backward.emitError()
             << "result #" << i << " has a non-string '" << nn::attr::kParam
             << "'; expected the parameter's name";
    FailureOr<int64_t> bytes = gradientBytes(backward, i);
    if (failed(bytes))
      return failure();
    grads.push_back({name.str(), *bytes});
  }
  return grads;
}

/// A stage's gradients in completion order: its backward's, or with a split
/// backward the input half's then the weight half's (W runs after B). A
/// parameter's gradient that both halves add into is final after the
/// later.
FailureOr<SmallVector<StageGradient>> stageGradients(func::FuncOp stage,
                                                     SymbolTable &symbols) {
  SmallVector<StringLiteral, 2> attrs;
  if (stage->hasAttr(attr::kBackward))
    attrs = {attr::kBackward};
  else if (stage->hasAttr(attr::kBackwardInput))
    attrs = {attr::kBackwardInput, attr::kBackwardWeight};
  else
    return stage.emitError()
           << "has no backward function ('" << attr::kBackward << "' or '"
           << attr::kBackwardInput << "'); run bitpipe-generate-backward "
           << "before bitpipe-insert-allreduce";

  SmallVector<StageGradient> grads;
  for (StringLiteral attr : attrs) {
    auto ref = stage->getAttrOfType<FlatSymbolRefAttr>(attr);
    auto fn = ref ? symbols.lookup<func::FuncOp>(ref.getValue()) : nullptr;
    if (!fn)
      return stage.emitError()
             << "names " << (ref ? ref : Attribute()) << " in '" << attr
             << "', expected a func.func in the module";
    FailureOr<SmallVector<StageGradient>> part = gradientsOf(fn);
    if (failed(part))
      return failure();
    for (StageGradient &g : *part) {
      llvm::erase_if(grads,
                     [&](const StageGradient &o) { return o.name == g.name; });
      grads.push_back(std::move(g));
    }
  }
  return grads;
}

/// One all-reduce a rank will start.
struct PlannedBucket {
  SmallVector<int64_t> ranks; ///< The group, as pipeline ranks.
  SmallVector<int64_t> stages;
  SmallVector<std::string> grads;
  int64_t bytes = 0;
  int syncPoint = -1;
};

/// What the pass does to one rank's program.
struct RankPlan {
  bp::ProgramOp program;
  /// Per sync point, the op after which its buckets start (null: at the
  /// start of the program).
  SmallVector<Operation *> startAfter;
  std::vector<PlannedBucket> buckets;
};

/// The last of the ops right after gradient step `op` that hand its
/// results on (the next stage is waiting for those; the all-reduce is
/// not), or `op` itself.
Operation *handOff(Operation *op) {
  Operation *at = op;
  while (Operation *next = at->getNextNode()) {
    if (!llvm::any_of(next->getOperands(),
                      [&](Value v) { return v.getDefiningOp() == op; }))
      break;
    at = next;
  }
  return at;
}

struct InsertAllReducePass
    : public bitpipe::impl::InsertAllReduceBase<InsertAllReducePass> {
  using InsertAllReduceBase::InsertAllReduceBase;

  void runOnOperation() override {
    if (failed(run(getOperation())))
      signalPassFailure();
  }

  LogicalResult run(ModuleOp module) {
    for (auto [name, value, range] :
         {std::tuple<StringRef, double, OptionRange>{
              "bucket-mb", bucketMb, {0, true, kMaxBucketMb}},
          {"bucket-bytes",
           static_cast<double>(bucketBytes),
           {0, false, kMaxBucketMb * 1024 * 1024}}})
      if (std::optional<std::string> error =
              checkOptionRange("bitpipe-insert-allreduce", name, value, range))
        return module.emitError() << *error;
    // bucket-bytes=0 (its default) leaves the size to bucket-mb.
    int64_t capBytes =
        bucketBytes > 0
            ? static_cast<int64_t>(bucketBytes)
            : static_cast<int64_t>(std::llround(bucketMb * 1024.0 * 1024.0));
    if (capBytes <= 0)
      return module.emitError()
             << "bitpipe-insert-allreduce needs a bucket of at least one "
                "byte; bucket-mb="
             << bucketMb.getValue() << " gives " << capBytes << " bytes";

    // The buckets are laid out from the schedule's markers: buckets already
    // there mean the pass ran, and a second run would reduce twice.
    WalkResult bucketed = module.walk([](bp::AllReduceStartOp start) {
      if (!start.isBucketed())
        return WalkResult::advance();
      start.emitOpError() << "is a gradient bucket already; "
                             "bitpipe-insert-allreduce runs once, on the "
                             "programs of bitpipe-schedule";
      return WalkResult::interrupt();
    });
    if (bucketed.wasInterrupted())
      return failure();

    FailureOr<ProgramsFromIR> read = readProgramsFromIR(module);
    if (failed(read))
      return failure();
    const sched::Schedule *schedule = &read->schedule;
    FailureOr<sched::World> world = readWorld(module);
    if (failed(world))
      return failure();
    const sched::Placement &placement = schedule->placement;

    FailureOr<SmallVector<func::FuncOp>> stageFns =
        collectStageFunctions(module);
    if (failed(stageFns))
      return failure();
    if (static_cast<int>(stageFns->size()) != placement.numStages)
      return module.emitError() << "has " << stageFns->size()
                                << " stage functions, but the placement has "
                                << placement.numStages << " stages";
    SymbolTable symbols(module);
    SmallVector<SmallVector<StageGradient>> gradients;
    // Parameter name -> the stages whose backward produces its gradient.
    llvm::StringMap<SmallVector<int>> holders;
    for (auto [stage, fn] : llvm::enumerate(*stageFns)) {
      FailureOr<SmallVector<StageGradient>> grads = stageGradients(fn, symbols);
      if (failed(grads))
        return failure();
      for (const StageGradient &g : *grads)
        holders[g.name].push_back(stage);
      gradients.push_back(std::move(*grads));
    }

    // One program per pipeline rank; its groups name pipeline ranks and
    // stand for them in every copy (docs/data-parallel.md).
    std::vector<RankPlan> plans(world->pipelineDevices);
    for (int rank = 0; rank < world->pipelineDevices; ++rank) {
      plans[rank].program = read->programs[rank];
      if (failed(planRank(plans[rank], rank, *schedule,
                          std::move(read->steps[rank]), *world, gradients,
                          holders, capBytes)))
        return failure();
    }
    if (failed(checkGroupsAgree(plans)))
      return failure();
    for (RankPlan &plan : plans)
      if (failed(rewrite(plan, schedule->numMicrobatches *
                                   static_cast<int64_t>(world->dataParallel))))
        return failure();
    module->setAttr(bp::BitPipeDialect::kGradientSyncAttrName,
                    bp::GradientSyncAttr::get(module.getContext(), sync));

    // The library's verifier on the result: every replicated stage
    // all-reduced on each holder, every all-reduce after the last gradient
    // step of each stage it carries, in the same order on every member,
    // and the step still free of deadlock. A failure here is a bug of this
    // pass. A pipeline that verifies at its end skips it.
    if (!checkResult)
      return success();
    FailureOr<sched::Schedule> after = readScheduleFromIR(module);
    if (failed(after))
      return failure();
    sched::VerifyOptions required;
    required.requireAllReduce = true;
    std::vector<sched::Diagnostic> problems = sched::verify(*after, required);
    if (!problems.empty())
      return module.emitError()
             << "internal error: the programs with gradient all-reduces do "
                "not verify:\n"
             << sched::formatDiagnostics(problems);
    return success();
  }

  /// Lays out the buckets of one rank and finds where they start; `read`
  /// is its program's steps as readProgramsFromIR read them.
  LogicalResult planRank(RankPlan &plan, int rank,
                         const sched::Schedule &schedule, ProgramSteps read,
                         const sched::World &world,
                         ArrayRef<SmallVector<StageGradient>> gradients,
                         const llvm::StringMap<SmallVector<int>> &holders,
                         int64_t capBytes) {
    const sched::Placement &placement = schedule.placement;
    const int device = world.device(rank);
    std::vector<sched::SyncPoint> points =
        sched::gradientSyncPoints(schedule, device);
    // A bucket starts right after its sync point's step and the transfers
    // that hand the step's result on. When a repeat runs that step, its
    // repetitions from that one on are written out, unless the step is the
    // last repetition's and only those transfers follow it in the body:
    // then the bucket starts right after the repeat.
    FailureOr<ProgramSteps> steps = std::move(read);
    auto peelOne = [&] {
      for (const sched::SyncPoint &point : points) {
        Operation *op = steps->ops[point.afterAction];
        auto repeat = dyn_cast<bp::RepeatOp>(op->getParentOp());
        int64_t repetition = steps->repetitions[point.afterAction];
        if (!repeat || (repetition + 1 == repeat.getCount() &&
                        isa<bp::YieldOp>(handOff(op)->getNextNode())))
          continue;
        bp::peelRepetitions(repeat, repetition);
        return true;
      }
      return false;
    };
    while (peelOne()) {
      // Read again: the peeled repetitions are ops of their own now.
      steps = readProgramSteps(plan.program, placement);
      if (failed(steps))
        return failure();
    }
    for (const sched::SyncPoint &point : points) {
      Operation *op = steps->ops[point.afterAction];
      if (isa<bp::AllReduceStartOp>(op))
        plan.startAfter.push_back(op->getPrevNode()); // In place of a marker.
      else if (isa<bp::RepeatOp>(op->getParentOp()))
        plan.startAfter.push_back(op->getParentOp());
      else
        plan.startAfter.push_back(handOff(op));
    }
    std::map<int, int> pointOfStage;
    for (auto [p, point] : llvm::enumerate(points))
      for (int stage : point.stages)
        pointOfStage[stage] = static_cast<int>(p);

    // The rank's gradients, by sync point, and within one from the last
    // stage to the first (the order a micro-batch's backward visits them;
    // every member of a group holds the same stages, so lists them alike).
    std::vector<int> held;
    for (int s = placement.numStages - 1; s >= 0; --s)
      for (const sched::Pipeline &pipe : placement.pipelines)
        if (pipe.stageDevice[s] == device) {
          held.push_back(s);
          break;
        }
    auto syncOf = [&](int stage) {
      auto it = pointOfStage.find(stage);
      return it == pointOfStage.end() ? -1 : it->second;
    };
    std::stable_sort(held.begin(), held.end(),
                     [&](int a, int b) { return syncOf(a) < syncOf(b); });

    std::vector<sched::GradientTensor> tensors; // reduced with their stage
    std::vector<sched::GradientBucket> tied;    // reduced with a wider group
    // tensors[t] sums the contributions of these stages on this rank (more
    // than its own for a tied parameter).
    std::map<int, std::vector<int>> contributors;
    for (int stage : held) {
      for (const StageGradient &g : gradients[stage]) {
        ArrayRef<int> owners = holders.find(g.name)->second;
        if (owners.size() == 1) {
          tensors.push_back({g.name, stage, g.bytes});
          continue;
        }
        // A parameter of several stages (the tied embedding): one buffer
        // on this rank, summed locally over its stages here and final at
        // the latest of their sync points; reduced over the holders of all
        // of them.
        int latest = stage;
        for (int other : owners)
          if (llvm::is_contained(held, other) &&
              std::make_pair(syncOf(other), other) >
                  std::make_pair(syncOf(latest), latest))
            latest = other;
        if (latest != stage)
          continue; // Listed with the stage that finishes it.
        for (int other : owners)
          if (llvm::is_contained(held, other))
            contributors[static_cast<int>(tensors.size())].push_back(other);
        std::set<int> group;
        for (int other : owners) {
          std::vector<int> ranks =
              sched::stageReplicaRanks(placement, other, world);
          group.insert(ranks.begin(), ranks.end());
        }
        std::vector<int> ranks(group.begin(), group.end());
        if (ranks == sched::stageReplicaRanks(placement, stage, world)) {
          tensors.push_back({g.name, stage, g.bytes});
          continue;
        }
        tied.push_back({ranks,
                        {static_cast<int>(tensors.size())},
                        g.bytes,
                        syncOf(stage)});
        tensors.push_back({g.name, stage, g.bytes});
      }
    }

    // planGradientBuckets groups by stage; the tied tensors have their own
    // group, so they are left out of its input and added after it.
    std::vector<sched::GradientTensor> own;
    std::vector<int> ownIndex; // index in `own` -> index in `tensors`
    for (auto [t, tensor] : llvm::enumerate(tensors))
      if (llvm::none_of(tied, [&](const sched::GradientBucket &b) {
            return b.tensors.front() == static_cast<int>(t);
          })) {
        own.push_back(tensor);
        ownIndex.push_back(static_cast<int>(t));
      }
    sched::Result<std::vector<sched::GradientBucket>> buckets =
        sched::planGradientBuckets(own, points, placement, world, rank,
                                   capBytes);
    if (!buckets)
      return plan.program.emitError()
             << "rank " << rank
             << ": cannot bucket its gradients: " << buckets.error;
    for (sched::GradientBucket &b : *buckets)
      for (int &t : b.tensors)
        t = ownIndex[t];
    for (sched::GradientBucket &b : tied) {
      if (b.syncPoint < 0)
        return plan.program.emitError()
               << "rank " << rank << ": gradient '"
               << tensors[b.tensors.front()].name << "' of stage "
               << tensors[b.tensors.front()].stage
               << " has no sync point; expected a backward of that stage "
                  "on this rank";
      if (b.ranks.size() > 1)
        buckets->push_back(std::move(b));
    }
    std::stable_sort(
        buckets->begin(), buckets->end(),
        [](const auto &a, const auto &b) { return a.syncPoint < b.syncPoint; });

    for (const sched::GradientBucket &b : *buckets) {
      PlannedBucket &out = plan.buckets.emplace_back();
      std::vector<int> members = sched::pipelineGroup(b.ranks, world);
      out.ranks.assign(members.begin(), members.end());
      out.bytes = b.bytes;
      out.syncPoint = b.syncPoint;
      std::set<int64_t> stages;
      for (int t : b.tensors) {
        out.grads.push_back(tensors[t].name);
        stages.insert(tensors[t].stage);
        if (auto it = contributors.find(t); it != contributors.end())
          stages.insert(it->second.begin(), it->second.end());
      }
      out.stages.assign(stages.begin(), stages.end());
    }
    return success();
  }

  /// Every member of a group must start the same buckets, in the same
  /// order: the k-th all-reduce of a group on one rank meets the k-th on
  /// every other, and a mismatch hangs or corrupts the step.
  LogicalResult checkGroupsAgree(MutableArrayRef<RankPlan> plans) {
    // group -> rank -> its buckets with that group, in start order.
    std::map<SmallVector<int64_t>, std::map<int, SmallVector<int>>> byGroup;
    for (auto [rank, plan] : llvm::enumerate(plans))
      for (auto [b, bucket] : llvm::enumerate(plan.buckets))
        byGroup[bucket.ranks][rank].push_back(static_cast<int>(b));

    for (const auto &[group, perRank] : byGroup) {
      int ref = static_cast<int>(group.front());
      static const SmallVector<int> none;
      auto seqOf = [&](int rank) -> const SmallVector<int> & {
        auto it = perRank.find(rank);
        return it == perRank.end() ? none : it->second;
      };
      const SmallVector<int> &refSeq = seqOf(ref);
      for (int64_t other : group) {
        const SmallVector<int> &seq = seqOf(other);
        for (size_t k = 0; k < std::max(refSeq.size(), seq.size()); ++k) {
          const PlannedBucket *mine =
              k < seq.size() ? &plans[other].buckets[seq[k]] : nullptr;
          const PlannedBucket *theirs =
              k < refSeq.size() ? &plans[ref].buckets[refSeq[k]] : nullptr;
          if (mine && theirs && mine->grads == theirs->grads &&
              mine->bytes == theirs->bytes)
            continue;
          auto describe = [](const PlannedBucket *b) {
            if (!b)
              return std::string("nothing");
            return quotedList(b->grads) + " (" + std::to_string(b->bytes) +
                   " bytes)";
          };
          InFlightDiagnostic diag =
              plans[other].program.emitError()
              << "rank " << other << ": its all-reduce #" << k << " with group "
              << formatList(group) << " carries " << describe(mine)
              << ", but rank " << ref << "'s carries " << describe(theirs)
              << "; expected every member of a group to all-reduce the same "
                 "gradients in the same order";
          diag.attachNote(plans[ref].program.getLoc())
              << "rank " << ref << "'s program";
          return diag;
        }
      }
    }
    return success();
  }

  /// Writes one rank's plan: buckets after their sync points (markers
  /// replaced), waits before the optimizer step, the averaging factor.
  LogicalResult rewrite(RankPlan &plan, int64_t microbatches) {
    Block &body = plan.program.getBody().front();
    SmallVector<bp::OptimizerStepOp> steps(body.getOps<bp::OptimizerStepOp>());
    if (steps.size() != 1)
      return plan.program.emitError()
             << "rank " << plan.program.getRank() << " has " << steps.size()
             << " bitpipe.optimizer_step ops; expected exactly one, at the "
                "end of the step";
    bp::OptimizerStepOp step = steps.front();

    OpBuilder b(plan.program.getContext());
    Location loc = plan.program.getLoc();
    SmallVector<Operation *> cursor(plan.startAfter);
    SmallVector<Value> tokens;
    for (auto [index, bucket] : llvm::enumerate(plan.buckets)) {
      Operation *&after = cursor[bucket.syncPoint];
      if (after)
        b.setInsertionPointAfter(after);
      else
        b.setInsertionPointToStart(&body);
      auto start = b.create<bp::AllReduceStartOp>(
          loc, bp::TokenType::get(b.getContext()), bucket.stages, bucket.ranks,
          static_cast<int64_t>(index),
          b.getStrArrayAttr(
              SmallVector<StringRef>(bucket.grads.begin(), bucket.grads.end())),
          b.getI64IntegerAttr(bucket.bytes));
      after = start;
      tokens.push_back(start.getToken());
    }

    // The markers and their waits go: the buckets replace them.
    for (auto marker :
         llvm::make_early_inc_range(body.getOps<bp::AllReduceStartOp>())) {
      if (marker.isBucketed())
        continue;
      for (Operation *user : llvm::make_early_inc_range(marker->getUsers()))
        user->erase();
      marker->erase();
    }

    // Waiting any earlier would stall the backward that is still running;
    // the optimizer is the first to read the summed gradients.
    b.setInsertionPoint(step);
    for (Value token : tokens)
      b.create<bp::AllReduceWaitOp>(loc, token);
    step.setMicrobatchesAttr(b.getI64IntegerAttr(microbatches));
    return success();
  }
};

} // namespace
