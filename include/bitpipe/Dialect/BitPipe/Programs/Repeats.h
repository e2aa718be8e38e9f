//===- Repeats.h - Writing and removing bitpipe.repeat ----------*- C++ -*-===//
//
// A rank program's steady state repeats (docs/repetition.md). rerollProgram
// finds the repeated runs of a straight program with the schedule library's
// segmentRepetitions and keeps each as one `bitpipe.repeat`; unrollRepeats
// is the inverse. Both keep the program's steps, in order, exactly: the
// trace of the rolled program (ProgramTrace.h) is the straight program.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_PROGRAMS_REPEATS_H
#define BITPIPE_DIALECT_BITPIPE_PROGRAMS_REPEATS_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"
#include "bitpipe/Dialect/BitPipe/Programs/StraightProgram.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"

#include <cstddef>
#include <cstdint>

namespace bitpipe::bp {

/// Sets the numbers of step op `op` to those of repetition `k` and drops
/// its `step`s, as the op runs once outside the repeat.
void setRepetition(mlir::Operation *op, int64_t k);

/// The inverse, for an op that becomes a repeat's body: its micro-batch
/// (and, for a transfer with a batch, its batch) advance by these per
/// repetition; a step of 0 is left out.
void setSteps(mlir::Operation *op, int64_t microbatchStep, int64_t batchStep);

/// Keeps the first `keep` repetitions of `repeat` as a repeat and writes
/// the others out after it, in place; with fewer than 2 kept, all of them.
/// What a step holds in repetition k stays the same.
void peelRepetitions(RepeatOp repeat, int64_t keep);
/// Replaces `repeat` by `count` copies of its body, in place.
void unrollRepeat(RepeatOp repeat);
/// Unrolls every repeat of `program`.
void unrollRepeats(ProgramOp program);

/// Rolls the repeated runs of `program` into repeats (a program that
/// already has some is unrolled first): writeProgram over its own ops. A run
/// whose values cannot be carried by a short window (a value used far later)
/// stays straight. Fails, with an error at the program, only on an internal
/// inconsistency: the rolled program does not run the steps the straight one
/// ran.
mlir::FailureOr<RerollStats> rerollProgram(ProgramOp program,
                                           const RerollOptions &options);

} // namespace bitpipe::bp

#endif // BITPIPE_DIALECT_BITPIPE_PROGRAMS_REPEATS_H
