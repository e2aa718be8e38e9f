//===- ZeroBubbleFill.h - Placing split backwards under unit costs -*- C++
//-*-===//
//
// Private to lib/Schedule: the two ways the zero-bubble generators
// (bitpipe-zb, zbv) place weight-gradient steps, both by playing the step
// under the zero-bubble papers' unit costs F = B = W = 1 with free
// communication and recording what each rank runs (docs/zero-bubble.md).
// A recorded run respects every dependency of Dependencies.h, so the lists
// are deadlock-free whatever the real costs.
//
// Memory is counted as the stash a (micro-batch, stage) holds from its F to
// its W: the weight half of a split backward reads the saved activations
// (bp_rt_weight_grad takes the forward's handle, docs/runtime-abi.md), so a
// deferred W keeps them. `liveCap` bounds that count per rank.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_SCHEDULE_GENERATORS_ZEROBUBBLEFILL_H
#define BITPIPE_LIB_SCHEDULE_GENERATORS_ZEROBUBBLEFILL_H

#include "bitpipe/Schedule/Schedule.h"

#include <vector>

namespace bitpipe::sched::detail {

/// `unsplit`'s per-rank F/B order (all-reduces dropped), each B now the
/// input-gradient half, with the W halves added: a rank whose next F or B
/// is not ready yet runs its oldest waiting W instead of idling; before an
/// F that would hold more than liveCap[r] stashes it runs waiting W's
/// first; the W's still waiting at the end close the list. With unit costs
/// a W run while the next step is not ready never delays it (that step
/// cannot become ready sooner than one slot later), so the F/B timing is
/// that of `unsplit` with B = 1, except where the cap forces a W.
std::vector<std::vector<Action>>
splitAndFillWeightGrads(const Schedule &unsplit,
                        const std::vector<int> &liveCap);

/// Greedy list scheduling of every F, B and W of `shape` (placement and
/// microbatchPipeline set): whenever a rank is free it runs, in this order
/// of preference, a ready B; a ready F; its oldest waiting W. Each stage
/// takes its micro-batches in order; B's go to the chunk furthest along
/// its pipeline first, F's too until the rank's first B, then to the one
/// nearest the start. A consumer whose input crosses ranks waits until that
/// input is the oldest undelivered message of its (src, dst) channel, so
/// that both ends order every channel alike. Memory is granted per
/// micro-batch: its first F runs only when every rank can reserve one stash
/// per stage it holds of it within `liveCap` (each W returns one), so an
/// admitted micro-batch never waits for memory. Should nothing be able to
/// run while work is left (a cap below the stages a rank holds), a
/// micro-batch is admitted over the cap and `capExceeded` says so.
std::vector<std::vector<Action>>
listScheduleSplit(const Schedule &shape, int liveCap, bool &capExceeded);

} // namespace bitpipe::sched::detail

#endif // BITPIPE_LIB_SCHEDULE_GENERATORS_ZEROBUBBLEFILL_H
