//===- ProgramTrace.h - A program as the steps it runs ----------*- C++ -*-===//
//
// A `bitpipe.program` with `bitpipe.repeat`s is read as the straight program
// it unrolls to, without unrolling the IR: the trace lists every step the
// program runs (an op and the repetition it runs in) and resolves a value
// that a step uses to the step that defined it, through the repeats'
// carried values. The verifiers, the readers of the schedule library
// (ScheduleFromIR.h) and the lowering see one program whatever its form
// (docs/repetition.md).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_IR_PROGRAMTRACE_H
#define BITPIPE_DIALECT_BITPIPE_IR_PROGRAMTRACE_H

#include "bitpipe/Dialect/BitPipe/IR/BitPipeOps.h"

#include "llvm/ADT/DenseMap.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace bitpipe::bp {

/// One step a program runs: an op of the program, or an op of a repeat's
/// body in repetition `repetition` (0 outside a repeat). Repeats and yields
/// are not steps.
struct TracedStep {
  mlir::Operation *op;
  int64_t repetition;
};

/// The micro-batch of a step op (load_input, forward, backward,
/// weight_grad, send, recv, local_copy) in repetition `k`; none for others.
std::optional<int64_t> microbatchAt(mlir::Operation *op, int64_t k);
/// The transfer batch of a send or receive in repetition `k`, if it has one.
std::optional<int64_t> batchAt(mlir::Operation *op, int64_t k);
/// True when `op` advances a number per repetition (`step` present).
bool hasStep(mlir::Operation *op);

class ProgramTrace {
public:
  /// Lists the steps of `program` in the order they run: O(steps).
  explicit ProgramTrace(ProgramOp program);

  llvm::ArrayRef<TracedStep> steps() const { return steps_; }
  /// True when the program keeps a run as a bitpipe.repeat.
  bool hasRepeats() const { return hasRepeats_; }
  size_t size() const { return steps_.size(); }
  const TracedStep &operator[](size_t i) const { return steps_[i]; }

  /// The index of `op` running in repetition `k` (k = 0 outside a repeat).
  std::optional<size_t> indexOf(mlir::Operation *op, int64_t k = 0) const;

  /// The step that defined what `value` holds when a step of repetition
  /// `k` uses it (k = 0 outside a repeat): a value carried by a repeat's
  /// argument or result is followed back through the yields and the
  /// inits. None for a value no step defined (a program has none).
  std::optional<size_t> definingStep(mlir::Value value, int64_t k = 0) const;

  /// definingStep of operand `operand` of step `index`.
  std::optional<size_t> operandStep(size_t index, unsigned operand) const {
    const TracedStep &s = steps_[index];
    return definingStep(s.op->getOperand(operand), s.repetition);
  }

private:
  /// Where an op's steps are: step first + k * period in repetition k.
  struct Placement {
    size_t first;
    size_t period;
  };
  /// Built on the first indexOf/definingStep: a verifier of a straight
  /// program that only walks the steps never pays for it.
  void place() const;

  mutable ProgramOp program_; // Op handles have non-const accessors.
  bool hasRepeats_ = false;
  std::vector<TracedStep> steps_;
  mutable llvm::DenseMap<mlir::Operation *, Placement> placement_;
  mutable bool placed_ = false;
};

} // namespace bitpipe::bp

#endif // BITPIPE_DIALECT_BITPIPE_IR_PROGRAMTRACE_H
