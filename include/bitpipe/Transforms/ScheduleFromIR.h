//===- ScheduleFromIR.h - The schedule library's view of the IR -*- C++ -*-===//
//
// After bitpipe-schedule the per-rank `bitpipe.program`s are the source of
// truth for the order of a training step; passes that measure or check that
// order (bitpipe-simulate, and later transfer and all-reduce insertion) read
// it back into a `sched::Schedule` here and hand it to the schedule library,
// instead of regenerating it from a name. The conversions between the
// library's `sched::Placement` and `#bitpipe.placement` live here too, so
// that the library stays the one definition of every placement.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_TRANSFORMS_SCHEDULEFROMIR_H
#define BITPIPE_TRANSFORMS_SCHEDULEFROMIR_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeAttrs.h"
#include "bitpipe/Schedule/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"

namespace bitpipe {

/// On a stage function: its stage number (written by bitpipe-partition).
inline constexpr llvm::StringLiteral kStageAttrName = "bitpipe.stage";
/// On a stage function: the sorted devices that hold a replica of it
/// (written by bitpipe-place).
inline constexpr llvm::StringLiteral kDevicesAttrName = "bitpipe.devices";
/// On a stage function argument: a training input, "tokens" or "labels".
inline constexpr llvm::StringLiteral kInputArgAttrName = "nn.input";
/// On a stage function argument: a parameter, by name.
inline constexpr llvm::StringLiteral kParamArgAttrName = "nn.param";

/// The functions of `module` that carry `bitpipe.stage`, indexed by stage.
/// Fails, with an error at the offending function, when a stage number is
/// negative, repeated, or leaves a gap; returns an empty list when the
/// module has no stage function.
mlir::FailureOr<llvm::SmallVector<mlir::func::FuncOp>>
collectStageFunctions(mlir::ModuleOp module);

/// `#bitpipe.placement` of a library placement. Returns null (after an
/// error at `loc`) when the kind has no dialect spelling.
bp::PlacementAttr toPlacementAttr(mlir::Location loc,
                                  const sched::Placement &placement);
/// The library placement of `#bitpipe.placement`.
sched::Placement toSchedPlacement(bp::PlacementAttr attr);
/// True when both map every stage of every pipeline to the same device.
bool samePlacement(const sched::Placement &a, const sched::Placement &b);

/// `bitpipe.schedule`'s value for `schedule` (everything the programs do
/// not say: name, micro-batch count and pipelines, split backward, note).
mlir::DictionaryAttr toScheduleAttr(mlir::MLIRContext *context,
                                    const sched::Schedule &schedule);

/// Reads the module's `bitpipe.placement`, `bitpipe.schedule` and per-rank
/// programs back into a schedule: F/B/W from bitpipe.forward / backward /
/// weight_grad (bound or not), AR from bitpipe.allreduce_start, in program
/// order. Transfers, inputs, waits and the optimizer step are not schedule
/// actions and are skipped. Fails, with an error naming what is missing or
/// inconsistent, when an attribute is absent, the programs do not cover
/// ranks 0..D-1 of the placement exactly once, or a program holds an op the
/// reader does not know. It does not verify the schedule: that is
/// sched::verify's job.
mlir::FailureOr<sched::Schedule> readScheduleFromIR(mlir::ModuleOp module);

} // namespace bitpipe

#endif // BITPIPE_TRANSFORMS_SCHEDULEFROMIR_H
