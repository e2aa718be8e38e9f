//===- BaselinesTable.h - The baselines at their best -----------*- C++ -*-===//
//
// bench-schedules --baselines: the table of bench/results-log.md,
// "Baselines at their best" (its D = 8 rows: bench/RESULTS.md, "Schedules
// on paper").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BENCH_SCHEDULES_BASELINESTABLE_H
#define BITPIPE_BENCH_SCHEDULES_BASELINESTABLE_H

namespace bitpipe::bench {

/// Prints the table (Markdown); false if a schedule failed to generate,
/// verify or simulate (the row says "failed" and stderr why).
bool printBaselinesTable();

} // namespace bitpipe::bench

#endif // BITPIPE_BENCH_SCHEDULES_BASELINESTABLE_H
