//===- VerifyPrograms.h - Checking per-rank programs ------------*- C++ -*-===//
//
// The check bitpipe-verify runs, as a function: the lowering to the runtime
// calls it before it changes anything, so that per-rank programs the
// verifier rejects never become an executable, whichever way the lowering
// is invoked (docs/models.md, "Limits").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_DIALECT_BITPIPE_PROGRAMS_VERIFYPROGRAMS_H
#define BITPIPE_DIALECT_BITPIPE_PROGRAMS_VERIFYPROGRAMS_H

#include "bitpipe/Schedule/Transport.h"

#include "mlir/IR/BuiltinOps.h"

namespace bitpipe {

/// Checks that the bound per-rank programs of `module` can run as one
/// training step: matching transfers in order, agreeing all-reduce groups
/// (required for every replicated stage when `requireAllReduce`), no
/// deadlock when the transfers run under `transport`'s rules (NCCL's: as
/// the module's `bitpipe.transfer_streams` lays them out), the schedule's
/// steps. Reports each finding at its op; a deadlock with the per-rank
/// grid and its cycle of waits.
mlir::LogicalResult verifyRankPrograms(mlir::ModuleOp module,
                                       bool requireAllReduce,
                                       sched::Transport transport);

} // namespace bitpipe

#endif // BITPIPE_DIALECT_BITPIPE_PROGRAMS_VERIFYPROGRAMS_H
