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

/// Which repetitions of each bitpipe.repeat a trace lists.
enum class Repetitions {
  /// Every one: the straight program the repeats unroll to.
  All,
  /// The first W and the last W (all when there are fewer), in order, W
  /// being 2 plus the most repetitions a carried value travels before it
  /// is used. Every number a repetition's step carries is affine in its
  /// repetition k, and each repetition is the same ops, so a check that
  /// compares consecutive steps (within a repetition, across two, or
  /// across the repeat's ends) or follows a value from the repetition that
  /// made it to those that use it holds for every repetition once it holds
  /// for these: a linear condition holds on a range of k when it holds at
  /// the range's ends, and the uses of one repetition's values all fall in
  /// the first W (docs/repetition.md). O(ops * W) however many repetitions
  /// there are.
  Ends,
};

class ProgramTrace {
public:
  /// Lists the steps of `program` in the order they run: O(steps) with
  /// Repetitions::All.
  explicit ProgramTrace(ProgramOp program,
                        Repetitions repetitions = Repetitions::All);

  llvm::ArrayRef<TracedStep> steps() const { return steps_; }
  /// True when the program keeps a run as a bitpipe.repeat.
  bool hasRepeats() const { return hasRepeats_; }
  size_t size() const { return steps_.size(); }
  const TracedStep &operator[](size_t i) const { return steps_[i]; }

  /// The index of `op` running in repetition `k` (k = 0 outside a repeat);
  /// none when the trace does not list that repetition.
  std::optional<size_t> indexOf(mlir::Operation *op, int64_t k = 0) const;
  /// Whether the trace lists repetition `k` of step op `op` (always for an
  /// op outside a repeat). Arithmetic on the repeat's count: no index of
  /// the steps is built for it.
  bool lists(mlir::Operation *op, int64_t k) const;

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

  /// The step (an op and its repetition) that defined what `value` holds
  /// when a step of repetition `k` uses it, whether or not the trace lists
  /// it. Repetitions of a repeat whose count the value's walk leaves are
  /// not checked against the count.
  static std::optional<TracedStep> definingSite(mlir::Value value,
                                                int64_t k = 0);

private:
  /// Where an op's steps are: step first + k * period in repetition k
  /// (Repetitions::All).
  struct Placement {
    size_t first;
    size_t period;
  };
  /// Built on the first indexOf/definingStep: a verifier of a straight
  /// program that only walks the steps never pays for it.
  void place() const;

  /// The repetitions of one repeat that the trace lists: all of [0, count)
  /// with Repetitions::All; with Repetitions::Ends those below `window`
  /// and from count - window on.
  struct Listed {
    int64_t count;
    int64_t window;
  };

  mutable ProgramOp program_; // Op handles have non-const accessors.
  Repetitions repetitions_;
  bool hasRepeats_ = false;
  /// The step ops of the program, each counted once.
  size_t numOps_ = 0;
  std::vector<TracedStep> steps_;
  llvm::SmallDenseMap<mlir::Operation *, Listed, 4> listed_;
  mutable llvm::DenseMap<mlir::Operation *, Placement> placement_;
  /// Repetitions::Ends: the index of each listed (op, repetition).
  mutable llvm::DenseMap<std::pair<mlir::Operation *, int64_t>, size_t>
      stepIndex_;
  mutable bool placed_ = false;
};

} // namespace bitpipe::bp

#endif // BITPIPE_DIALECT_BITPIPE_IR_PROGRAMTRACE_H
