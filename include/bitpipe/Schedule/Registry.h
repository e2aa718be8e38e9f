//===- Registry.h - Every schedule, in one table ----------------*- C++ -*-===//
//
// The one definition of what a schedule name means: its placement, its
// generator, whether it splits the backward, what it needs of D, N and the
// chunks per device, and its default N. Every front end (the bitpipe-schedule
// and bitpipe-pipeline pass options, bitpipe-compile's flags, the bench
// drivers) fills a ScheduleOptions and hands it to validate(), so that
// defaults and the checks of a request, and their messages, exist once.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_REGISTRY_H
#define BITPIPE_SCHEDULE_REGISTRY_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"

#include <optional>
#include <string>
#include <vector>

namespace bitpipe::sched {

/// The name every front end gives each field of a request (pass options;
/// bitpipe-compile's and the bench drivers' flags, with "--"), and that
/// validate() uses in its messages. bitpipe-schedule's options in
/// Passes.td spell the same names.
namespace option {
inline constexpr char kSchedule[] = "schedule";
inline constexpr char kDevices[] = "devices";
inline constexpr char kMicrobatches[] = "microbatches";
inline constexpr char kChunksPerDevice[] = "chunks-per-device";
inline constexpr char kDataParallel[] = "dp";
inline constexpr char kSplitBackward[] = "split-backward";
inline constexpr char kMaxInFlight[] = "max-in-flight";
} // namespace option

/// The largest request the registry accepts. A schedule holds one action
/// list per rank and about 3 * N * v actions per device (forward, backward,
/// weight gradient of every micro-batch and chunk), and the simulator, the
/// verifier and the per-rank programs each hold a copy, so the limits keep
/// every request within memory and seconds (docs/models.md, "Limits"):
/// they are far above any machine bitpipe runs on.
namespace limit {
inline constexpr int kMaxDevices = 4096;
inline constexpr int kMaxMicrobatches = 1 << 16;
inline constexpr int kMaxChunksPerDevice = 64;
inline constexpr int kMaxDataParallel = 1 << 16;
/// D * dp, the ranks.
inline constexpr int64_t kMaxRanks = 1 << 20;
/// N * D * v, the (micro-batch, stage) pairs of one pipeline copy.
inline constexpr int64_t kMaxMicrobatchStages = int64_t(1) << 24;
} // namespace limit

/// A schedule request: what to run, on how many ranks. Fields left empty
/// take the registry's default.
struct ScheduleOptions {
  std::string schedule;               ///< A name of schedules().
  int devices = 0;                    ///< D, the pipeline ranks.
  std::optional<int> microbatches;    ///< N per step and copy; default:
                                      ///< the entry's.
  std::optional<int> chunksPerDevice; ///< v of a loop placement; default:
                                      ///< the entry's.
  int dataParallel = 1;               ///< K copies of the pipeline
                                      ///< (sched::World).
  /// Split every backward into input- and weight-gradient halves. Only a
  /// schedule with weight-gradient steps (splitsBackward) can run them, and
  /// it splits without being asked.
  bool splitBackward = false;
  /// The most micro-batches a rank may hold in flight (forward done,
  /// backward not: the activations it stashes), for a schedule that takes
  /// the cap (capsInFlight: 1f1b). 1..D; default, and the completed value
  /// of such a schedule: D, its uncapped order (1F1B holds D - r on rank r).
  /// Left empty for the others, which refuse it (docs/schedules.md,
  /// "Fewer micro-batches in flight").
  std::optional<int> maxInFlight;
};

/// One row of the registry.
struct ScheduleInfo {
  const char *name;
  const char *summary; ///< One line, for help texts.
  PlacementKind placement;
  /// Its steps include W (weight gradient): stage backwards must be split.
  bool splitsBackward;
  /// D must be even (the two pipelines pair device r with device D-1-r).
  bool evenDevices;
  /// Chunks per device of the loop placement it runs on, [min, max], and
  /// the default; all 0 when the placement fixes them (not a loop).
  int minChunks, maxChunks, defaultChunks;
  /// The least N it schedules, and the default N = this times D.
  int minMicrobatches;
  int defaultMicrobatchesPerDevice;
  /// It takes ScheduleOptions::maxInFlight, a cap on each rank's
  /// micro-batches in flight, in 1..D.
  bool capsInFlight;
  /// Builds the schedule from a request validate() has completed.
  Result<Schedule> (*generate)(const ScheduleOptions &completed);

  /// It runs on a loop placement, whose chunk count it constrains.
  bool takesChunks() const { return maxChunks > 0; }
  /// It runs with more than one chunk count (interleaved-1f1b).
  bool choosesChunks() const { return maxChunks > minChunks; }
};

/// Every schedule, in the order help texts and tables list them.
const std::vector<ScheduleInfo> &schedules();
/// The entry of `name`, or null.
const ScheduleInfo *findSchedule(const std::string &name);
/// The names of schedules(), in order.
const std::vector<std::string> &scheduleNames();
/// "gpipe, 1f1b, ..., zb-h1": for messages.
const std::string &scheduleNameList();
/// The help text of every front end's schedule option (the names, and that
/// it is required).
const std::string &scheduleOptionHelp();

/// The one check of a request: checks the counts against `limit`, fills the
/// defaults (N = the entry's default per device times D; v = the entry's;
/// the cap on micro-batches in flight of a schedule that takes one = D),
/// then checks every field against the entry and the limits. The error names
/// the option, as `flagPrefix` + its name (pass "--" for command-line flags),
/// the value and what was expected, e.g. "devices must be even for bitpipe
/// (...), got 3". Returns the completed request. It does not generate: a
/// generator may still refuse an N where its order cannot run
/// (interleaved-1f1b), saying why.
Result<ScheduleOptions> validate(const ScheduleOptions &request,
                                 const char *flagPrefix = "");

/// The check of the counts a placement takes (D >= 1, 1 <= v, 1 <= dp,
/// each within `limit`), for a front end that places without a schedule
/// (bitpipe-place); empty when they pass. Messages as validate()'s.
std::string checkPlacementCounts(int devices, int chunksPerDevice,
                                 int dataParallel, const char *flagPrefix = "");

/// The placement the requested schedule runs on, from its entry, without
/// generating it: lets a caller that holds a placement (bitpipe-schedule)
/// say "needs another placement" before looking at N, and one that builds
/// the passes (bitpipe-pipeline) know the stage count. Fails as validate().
/// Equal to generateSchedule(request)->placement whenever that succeeds.
Result<Placement> schedulePlacement(const ScheduleOptions &request);

/// validate(), then the entry's generator.
Result<Schedule> generateSchedule(const ScheduleOptions &request);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_REGISTRY_H
