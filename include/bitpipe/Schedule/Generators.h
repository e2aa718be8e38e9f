//===- Generators.h - Pipeline schedule generators --------------*- C++ -*-===//
//
// Each generator returns the per-rank programs of one training step for D
// devices and N micro-batches, or an error that says what it requires. The
// registry (Registry.h) names them, says what each needs of its arguments
// (every generator checks its arguments against its entry there), and
// dispatches by the name a user writes.
//
// Conventions shared by all generators:
//  - Actions only reference stages their rank holds in the placement.
//  - Bidirectional schedules (chimera, bitpipe) group micro-batches in units
//    of D: in unit m div D, the first D/2 go down (pipeline 0), the others
//    up (pipeline 1). Schedule::microbatchPipeline records the choice.
//  - Only the replicated schedules (chimera, bitpipe) carry AR actions: a
//    rank's AR of a stage comes after its last backward of that stage. The
//    single-replica schedules leave data-parallel all-reduce to a pass.
//  - When a schedule departs from its textbook form (N not a multiple of
//    what it wants), Schedule::note says how it was built.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_GENERATORS_H
#define BITPIPE_SCHEDULE_GENERATORS_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <optional>
#include <string>
#include <vector>

namespace bitpipe::sched {

/// All forwards, then all backwards (Huang et al. 2019). Any D >= 1, N >= 1.
Result<Schedule> generateGPipe(int devices, int microbatches);

/// PipeDream-flush / DAPPLE 1F1B: rank r runs min(D-1-r, N) warm-up
/// forwards, then alternates one forward and one backward. Any D, N >= 1.
/// With `maxInFlight` = k in 1..D-1, the memory-saving variant: rank r
/// holds at most min(k, D - r) micro-batches in flight (1F1B holds D - r),
/// in a list order (F=1, B=2) whose makespan stays within one round trip
/// (3D slots) of ceil(N / k) * 3D (docs/schedules.md, "Fewer micro-batches
/// in flight"). k = D (or none) is 1F1B itself.
Result<Schedule>
generateOneFOneB(int devices, int microbatches,
                 std::optional<int> maxInFlight = std::nullopt);

/// Megatron-LM's interleaved 1F1B on loopPlacement(D, v): micro-batches
/// advance through the v chunks in groups of D. v >= 2 and N a multiple of D
/// is the textbook form; other N >= D use a final, smaller group when the
/// result is deadlock-free (see the note), else an error.
Result<Schedule> generateInterleaved1F1B(int devices, int microbatches,
                                         int chunksPerDevice);

/// The per-rank orders Chimera's generator knows (docs/bitpipe-order.md,
/// "Chimera"). Best is what the registry's `chimera` runs.
enum class ChimeraOrder {
  /// The two streams take alternate slots on every rank: optimal for F=B
  /// (2N+D-2) and for one unit with B=2F; at most D chunks in flight.
  Alternating,
  /// Cost-aware list scheduling (B=2F) with at most D micro-batches of each
  /// direction in flight: optimal or near it for N >= 2D, up to 2D chunks.
  CriticalPath,
  /// The faster of the two under F=1, B=2 (Alternating on ties).
  Best,
};

/// Chimera (Li & Hoefler 2021) on bidirectionalPlacement(D), D even: units of
/// D micro-batches (D/2 down, D/2 up) concatenated with overlap (the next
/// unit's forwards fill the previous unit's drain), in `order`. Any N >= 1.
Result<Schedule> generateChimera(int devices, int microbatches,
                                 ChimeraOrder order = ChimeraOrder::Best);

/// BitPipe on bidirectionalVPlacement(D), D even: exactly the reference
/// per-rank order of docs/bitpipe-order.md when N is a multiple of D.
Result<Schedule> generateBitPipe(int devices, int microbatches);

/// bitpipe-periodic on bidirectionalVPlacement(D), D even: one steady state
/// in which every rank repeats a 12-slot pattern per (down, up) pair of
/// micro-batches (F = 1, B = 2), so that its bubble falls with N as 1F1B's
/// does, no rank holding more stashes than the reference order's busiest
/// (2D); eager all-reduces after each rank's last backwards. Any N >= 1
/// (docs/bitpipe-order.md, "The periodic order").
Result<Schedule> generateBitPipePeriodic(int devices, int microbatches);

/// ZB-H1 (Qi et al. 2023): 1F1B with backward split into B (input gradient)
/// and W (weight gradient); W passes are deferred to fill the cool-down
/// bubble, with 1F1B's number of in-flight forwards.
Result<Schedule> generateZeroBubbleH1(int devices, int microbatches);

/// bitpipe-zb on bidirectionalVPlacement(D), D even: BitPipe's order with
/// the backward split, each W filling a slot where BitPipe's rank waits,
/// holding no more stashes (F to W) than BitPipe holds (F to B); eager
/// all-reduces after the last W. Any N >= 1 (docs/zero-bubble.md).
Result<Schedule> generateBitPipeZeroBubble(int devices, int microbatches);

/// bitpipe-periodic-zb: bitpipe-periodic's order split and filled as
/// bitpipe-zb splits the reference's, under the same cap.
Result<Schedule> generateBitPipePeriodicZeroBubble(int devices,
                                                   int microbatches);

/// ZB-V on vPlacement(D): one V-shaped pipeline, backward split, list-
/// scheduled under F = B = W = 1 with at most 2D stashes (1F1B's memory)
/// per rank. Any D, N >= 1 (docs/zero-bubble.md).
Result<Schedule> generateZeroBubbleV(int devices, int microbatches);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_GENERATORS_H
