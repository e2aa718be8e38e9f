//===- StraightProgram.h - A rank program before it is written --*- C++ -*-===//
//
// The passes that write rank programs (bitpipe-schedule,
// bitpipe-insert-transfers) and bitpipe-reroll all end the same way: a
// straight list of steps becomes a `bitpipe.program` whose repeated runs are
// `bitpipe.repeat`s (docs/repetition.md). A StraightProgram describes that
// list without ops, so that writeProgram creates an op only for what the
// rolled program keeps: the straight steps and one body per run. Creating
// the ops of every repetition first and rolling them afterwards would cost
// what the loops are there to save.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_PROGRAMS_STRAIGHTPROGRAM_H
#define BITPIPE_DIALECT_BITPIPE_PROGRAMS_STRAIGHTPROGRAM_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"

#include "mlir/IR/Builders.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace bitpipe::bp {

/// An operand of a step: result `result` of step `step` (an earlier one).
struct StepOperand {
  size_t step;
  unsigned result;
};

/// A straight rank program, step by step (every step an op of the program's
/// body once written). Implementations describe ops that exist (the reroll
/// pass) or ops a pass is about to create.
class StraightProgram {
public:
  virtual ~StraightProgram() = default;

  virtual size_t size() const = 0;
  /// The op step `i` is (its name, for the writer's final check).
  virtual mlir::OperationName name(size_t i) const = 0;
  /// Appends everything about step `i` that a repetition keeps besides its
  /// operands and its two numbers: its callee, stage, peer, kinds, result
  /// types. Two steps with equal descriptions differ only in their numbers.
  virtual void describe(size_t i, std::vector<int64_t> &shape) const = 0;
  /// False for what runs once per training step (all-reduces, their waits,
  /// the optimizer step), which no repeat may hold.
  virtual bool repeatable(size_t i) const = 0;
  /// The numbers that progress between repetitions.
  virtual std::optional<int64_t> microbatch(size_t i) const = 0;
  virtual std::optional<int64_t> batch(size_t i) const = 0;
  virtual llvm::ArrayRef<StepOperand> operands(size_t i) const = 0;
  virtual mlir::TypeRange resultTypes(size_t i) const = 0;
  /// Creates step `i` at `b`'s insertion point with `operands`, numbered as
  /// the straight program numbers it (the writer sets a body op's steps).
  virtual mlir::Operation *build(mlir::OpBuilder &b, size_t i,
                                 mlir::ValueRange operands) const = 0;
};

struct RerollOptions {
  /// A run becomes a repeat only with at least this many repetitions...
  int64_t minRepetitions = 4;
  /// ...and when it saves at least this many ops, so that short programs
  /// (those of most tests) stay straight and easy to read.
  int64_t minOpsSaved = 64;
  /// False: write every step (the `loops=false` of the passes).
  bool loops = true;
};

struct RerollStats {
  size_t opsBefore = 0, opsAfter = 0, repeats = 0;
};

/// Appends the steps of `straight` to the body of `program` (before its
/// terminator, if any), each repeated run that a short window of carried
/// values can express as a `bitpipe.repeat`. Fails, with an error at the
/// program, only on an internal inconsistency: the written program does not
/// run the steps of `straight`.
mlir::FailureOr<RerollStats> writeProgram(ProgramOp program,
                                          const StraightProgram &straight,
                                          const RerollOptions &options);

} // namespace bitpipe::bp

#endif // BITPIPE_DIALECT_BITPIPE_PROGRAMS_STRAIGHTPROGRAM_H
