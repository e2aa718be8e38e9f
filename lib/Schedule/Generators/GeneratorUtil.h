//===- GeneratorUtil.h - Helpers shared by the generators -------*- C++ -*-===//
//
// Private to lib/Schedule: argument checks, the micro-batch-to-pipeline rule
// of the bidirectional schedules, AR placement, an untimed deadlock check
// and a small greedy list scheduler used where no closed-form order exists.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_SCHEDULE_GENERATORS_GENERATORUTIL_H
#define BITPIPE_LIB_SCHEDULE_GENERATORS_GENERATORUTIL_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <functional>
#include <string>
#include <vector>

namespace bitpipe::sched::detail {

/// Empty when D >= 1 and N >= 1, else a message naming `schedule`.
std::string checkCounts(const std::string &schedule, int devices,
                        int microbatches);

/// Empty when D is even, else "<schedule> needs an even number of devices".
std::string checkEvenDevices(const std::string &schedule, int devices);

/// The bidirectional rule: micro-batch m is in unit m div D; the first D/2 of
/// a full unit go down (0), the others up (1). A final partial unit of n
/// micro-batches sends its first ceil(n/2) down and the rest up, so the two
/// directions stay balanced.
std::vector<int> bidirectionalMicrobatchPipelines(int devices,
                                                  int microbatches);

/// For every group of stages, inserts AR(group) on every rank right after
/// that rank's last B or W of any stage of the group; at the end of the list
/// when the rank ran no backward of the group (no micro-batch took that
/// direction), since its replica still needs the partner's gradient.
/// `groupsOfRank(r)` lists rank r's groups, in the order ties are kept.
void insertAllReducesAfterLastBackward(
    Schedule &schedule,
    const std::function<std::vector<std::vector<int>>(int rank)> &groupsOfRank);

/// Plays the per-rank lists without timing: a rank runs its next action when
/// its dependencies are done (F(m,s) after F(m,s-1); B(m,s) after F(m,s) and
/// B(m,s+1); W(m,s) after B(m,s); AR after nothing). Returns an empty
/// string when every list runs to its end, else a description of the stuck
/// ranks.
std::string findDeadlock(const Schedule &schedule);

/// Start times of every action of every rank when the lists are played with
/// costs F=costF, B=costB, W=costW, AR=0 and free communication (a rank
/// starts its next action when it is free and the inputs are done). Returns
/// false if the lists deadlock.
bool playTimes(const Schedule &schedule, int costF, int costB, int costW,
               std::vector<std::vector<int>> &start);

/// Greedy list scheduling of the forwards and (unsplit) backwards of
/// `microbatches` under unit costs F=1, B=2 and free communication: whenever
/// a rank is idle it starts the ready action that ranks first by (backward
/// before forward, earliest ready, lowest micro-batch, stage). Appends to
/// `ranks`. The result is deadlock-free by construction because it is the
/// record of a dependency-respecting execution.
void appendListSchedule(const Schedule &shape,
                        const std::vector<int> &microbatches,
                        std::vector<std::vector<Action>> &ranks);

} // namespace bitpipe::sched::detail

#endif // BITPIPE_LIB_SCHEDULE_GENERATORS_GENERATORUTIL_H
