//===- GeneratorUtil.h - Helpers shared by the generators -------*- C++ -*-===//
//
// Private to lib/Schedule: argument checks, the empty schedule every
// generator fills in, the micro-batch-to-pipeline rule of the bidirectional
// schedules, AR placement and a small greedy list scheduler used where no
// closed-form order exists. Playing a list (is it deadlock-free, when does
// each action start) is the simulator's job.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_SCHEDULE_GENERATORS_GENERATORUTIL_H
#define BITPIPE_LIB_SCHEDULE_GENERATORS_GENERATORUTIL_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace bitpipe::sched::detail {

/// Empty when the registry's entry `schedule` accepts D, N, v and the cap on
/// micro-batches in flight (given explicitly: no defaults; no cap: empty),
/// else validate()'s message. Every generator
/// checks its arguments here, so that a direct call and a request through
/// the registry are refused alike, by one definition of each rule.
/// Defined in Registry.cpp.
std::string checkArguments(const std::string &schedule, int devices,
                           int microbatches, int chunksPerDevice,
                           std::optional<int> maxInFlight = std::nullopt);

/// An empty schedule `name` of N micro-batches, which its generator fills
/// in: on the placement the registry's entry names (a loop one of
/// `chunksPerDevice` chunks), every micro-batch on the one pipeline, or on
/// two by bidirectionalMicrobatchPipelines, and no action on any rank yet.
/// Fails like checkArguments (with `maxInFlight`, for 1f1b's cap), and only
/// when that passes like the placement's factory, so that every generator
/// refuses a request with the same message.
Result<Schedule> emptySchedule(const std::string &name, int devices,
                               int microbatches, int chunksPerDevice,
                               std::optional<int> maxInFlight = std::nullopt);

/// The bidirectional rule: micro-batch m is in unit m div D; the first D/2 of
/// a full unit go down (0), the others up (1). A final partial unit of n
/// micro-batches sends its first ceil(n/2) down and the rest up, so the two
/// directions stay balanced.
std::vector<int> bidirectionalMicrobatchPipelines(int devices,
                                                  int microbatches);

/// For every group of stages, inserts AR(group) on every rank right after
/// that rank's last B or W of any stage of the group. `groupsOfRank(r)`
/// lists the groups rank r all-reduces.
///
/// The simulator matches the k-th AR of a replica group on one member with
/// the k-th on every other, so all members must issue the group's ARs in
/// the same order. That order is agreed from the whole schedule: the order
/// in which the groups' gradients become final on every holder (unit costs,
/// free communication), ties by stage list. A rank keeps it even when its
/// own backwards end in another order (it then delays an AR), and a rank
/// that ran no backward of a group (no micro-batch took that direction
/// through it; its replica still needs the partner's gradient) issues that
/// AR just before its next AR of the same replica group, or at the end.
void insertAllReducesAfterLastBackward(
    Schedule &schedule,
    const std::function<std::vector<std::vector<int>>(int rank)> &groupsOfRank);

/// The all-reduces of a rank of the bidirectional-V placement, as
/// insertAllReducesAfterLastBackward takes them: the stages it holds of the
/// second halves of the two pipelines (nearest the losses, final first),
/// then those of the first halves. Each rank holds one stage of each half
/// of each pipeline, shared with its mirror D-1-r.
std::function<std::vector<std::vector<int>>(int rank)>
bitPipeSyncGroups(const Placement &placement);

/// Greedy list scheduling of the forwards and (unsplit) backwards of
/// `microbatches` under unit costs F=1, B=2 and free communication, with the
/// dependencies of Dependencies.h: whenever
/// a rank is idle it starts the ready action that ranks first by (backward
/// before forward, earliest ready, lowest micro-batch, stage). Appends to
/// `ranks`. The result is deadlock-free by construction because it is the
/// record of a dependency-respecting execution.
void appendListSchedule(const Schedule &shape,
                        const std::vector<int> &microbatches,
                        std::vector<std::vector<Action>> &ranks);

/// The (sender, receiver) channels of a generator that places actions one
/// at a time. A channel carries its sender's outputs in the order they were
/// produced, and a consumer may take its input only when that input is the
/// oldest one the channel has not delivered: the channel order that the
/// verifier checks and that NCCL and MPI need (sched::checkChannels).
class ChannelOrder {
public:
  explicit ChannelOrder(int ranks)
      : ranks_(ranks), queues_(static_cast<size_t>(ranks) * ranks) {}

  /// `producer` ran on `src`, and its output goes to `dst`.
  void send(int src, int dst, const Action &producer) {
    queues_[index(src, dst)].push_back(producer);
  }
  /// Whether `producer`'s output is the next one `src` -> `dst` delivers.
  bool isNext(int src, int dst, const Action &producer) const {
    const std::deque<Action> &q = queues_[index(src, dst)];
    return !q.empty() && q.front() == producer;
  }
  /// The next output of `src` -> `dst` was taken.
  void deliver(int src, int dst) { queues_[index(src, dst)].pop_front(); }

private:
  size_t index(int src, int dst) const {
    return static_cast<size_t>(src) * ranks_ + dst;
  }
  int ranks_;
  std::vector<std::deque<Action>> queues_;
};

} // namespace bitpipe::sched::detail

#endif // BITPIPE_LIB_SCHEDULE_GENERATORS_GENERATORUTIL_H
