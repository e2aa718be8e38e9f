//===- ScheduleFromIR.h - The schedule library's view of the IR -*- C++ -*-===//
//
// After bitpipe-schedule the per-rank `bitpipe.program`s are the source of
// truth for the order of a training step; passes that measure or check that
// order (bitpipe-simulate, bitpipe-insert-transfers, bitpipe-verify) and the
// lowering to the runtime read it back into a `sched::Schedule` here and
// hand it to the schedule library, instead of regenerating it from a name.
//
// A library of its own (BitPipePrograms), apart from the passes, so
// that the conversions can read the programs without linking every pass.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_PROGRAMS_SCHEDULEFROMIR_H
#define BITPIPE_DIALECT_BITPIPE_PROGRAMS_SCHEDULEFROMIR_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/IR/ProgramTrace.h"
#include "bitpipe/Dialect/BitPipe/IR/StageAttrNames.h"
#include "bitpipe/Schedule/Comms.h"
#include "bitpipe/Schedule/GradientSync.h"
#include "bitpipe/Schedule/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

namespace bitpipe {

/// The functions of `module` that carry `bitpipe.stage`, indexed by stage.
/// Fails, with an error at the offending function, when a stage number is
/// negative, repeated, or leaves a gap; returns an empty list when the
/// module has no stage function.
mlir::FailureOr<llvm::SmallVector<mlir::func::FuncOp>>
collectStageFunctions(mlir::ModuleOp module);

/// The module's `bitpipe.schedule` (the dialect has verified it). Fails,
/// with an error at the module, when it is absent.
mlir::FailureOr<bp::ScheduleAttr> readScheduleAttr(mlir::ModuleOp module);

/// The world of `module`: the placement's D devices times
/// `bitpipe.data_parallel` copies (1 when absent). Fails, with an error,
/// without a placement, when `bitpipe.world_size` is not D * K, or on a
/// module that holds one copy written out for reading
/// (`bitpipe.data_parallel_copy`), which no pass takes.
mlir::FailureOr<sched::World> readWorld(mlir::ModuleOp module);

/// Reads the module's `bitpipe.placement`, `bitpipe.schedule` and per-rank
/// programs back into a schedule of one pipeline copy (D ranks): F/B/W from
/// bitpipe.forward / backward / weight_grad (bound or not), AR from
/// bitpipe.allreduce_start, in program order. A marker all-reduce is one AR
/// step; a run of consecutive bucketed ones (bitpipe-insert-allreduce) is
/// one AR step per pipeline replica group of their stages, with the union
/// of the stages, so that the library sees each sync point once however
/// many buckets it has. A bucket that shares no stage with the open step
/// of its group starts the next one: two sync points that meet on one rank
/// stay two, as on the partner where they are apart. Transfers, inputs,
/// waits and the optimizer step are not schedule actions and are skipped.
///
/// The module holds one program per pipeline rank, which every
/// data-parallel copy runs (docs/data-parallel.md).
///
/// Fails, with an error naming what is missing or inconsistent, when an
/// attribute is absent, the programs do not cover the pipeline ranks
/// exactly once, or a program holds an op the reader does not know. It does not
/// verify the schedule: that is sched::verify's job.
mlir::FailureOr<sched::Schedule> readScheduleFromIR(mlir::ModuleOp module);

/// The steps of one program, as readScheduleFromIR reads them, with the op
/// each step came from (for bucketed all-reduce runs, the run's first op).
/// A repeat's body is read once per repetition (ProgramTrace.h): `ops`
/// then names the body's op and `repetitions` which repetition it is.
struct ProgramSteps {
  std::vector<sched::Action> actions;
  llvm::SmallVector<mlir::Operation *> ops;
  std::vector<int64_t> repetitions;
  /// Where each step stands in the trace it was read from.
  std::vector<size_t> traceIndices;
};

/// What readScheduleFromIR reads, kept for a caller that goes on to walk
/// the programs (their transfers, their buckets): each pipeline rank's
/// program, its trace and its steps. The straight programs of a large
/// pipeline hold hundreds of thousands of steps, so a pass reads them once
/// rather than once per question.
struct ProgramsFromIR {
  sched::Schedule schedule;
  /// By pipeline rank.
  llvm::SmallVector<bp::ProgramOp> programs;
  /// By pipeline rank: every repetition listed (bp::Repetitions::All).
  std::vector<bp::ProgramTrace> traces;
  /// By pipeline rank, read from traces[rank]; their actions are
  /// schedule.ranks[rank] (moved there, so empty here).
  std::vector<ProgramSteps> steps;
};
/// readScheduleFromIR, keeping the programs as read.
mlir::FailureOr<ProgramsFromIR> readProgramsFromIR(mlir::ModuleOp module);
mlir::FailureOr<ProgramSteps>
readProgramSteps(bp::ProgramOp program, const sched::Placement &placement);
/// Same, from the program's trace, for a caller that walks the trace too.
mlir::FailureOr<ProgramSteps>
readProgramSteps(const bp::ProgramTrace &trace,
                 const sched::Placement &placement);
/// How the module's transfers are laid on streams: its
/// `bitpipe.transfer_streams`, or `shared` when it has none.
sched::TransferStreams readTransferStreams(mlir::ModuleOp module);
/// How the module's gradient groups sum across copies: its
/// `bitpipe.gradient_sync`, or `flat` when it has none.
sched::GradientSync readGradientSync(mlir::ModuleOp module);

/// True once bitpipe-insert-transfers has bound the programs: some compute
/// op names its callee. Bound programs carry their transfers; unbound ones
/// leave them to the library (sched::lowerComms).
bool hasBoundPrograms(mlir::ModuleOp module);

/// The transfers the programs hold, as the schedule library sees them, and
/// the op behind every step, so that a finding of the library can be
/// reported at the op it is about.
struct IRCommProgram {
  sched::CommProgram program;
  /// ops[r][k]: the op of program.ranks[r][k]; for a hand-off of several
  /// tensors (consecutive ops of one transfer), the first of them.
  std::vector<std::vector<mlir::Operation *>> ops;
  /// steps[r][i]: the op of schedule.ranks[r][i].
  std::vector<std::vector<mlir::Operation *>> steps;
  /// Per transfer: the ops on the producer's side (sends, or the local
  /// copies) and on the consumer's side (receives, or the local copies).
  /// Empty when the IR lacks that side.
  std::vector<llvm::SmallVector<mlir::Operation *, 1>> sendOps, recvOps;
};

/// Reads the sends, receives and local copies of the programs of `module`
/// (as readProgramsFromIR read them) in program order,
/// each send and receive with its batch, and the module's stream layout
/// (readTransferStreams).
/// A transfer is identified by (kind, stage, micro-batch, sender,
/// receiver); its producer and consumer are the compute steps that define
/// the sent value and use the received one (data flow, not position). A
/// transfer that is missing one side is kept, for sched::checkChannels and
/// the verifier to report. Fails, at the op, on a transfer of a stage or
/// micro-batch that does not exist, or a receive that no step follows.
/// Ranks and peers are pipeline ranks (every data-parallel copy runs these
/// programs among its own ranks); a peer that is not one fails.
mlir::FailureOr<IRCommProgram>
readCommProgramFromIR(mlir::ModuleOp module, const ProgramsFromIR &programs);

} // namespace bitpipe

#endif // BITPIPE_DIALECT_BITPIPE_PROGRAMS_SCHEDULEFROMIR_H
