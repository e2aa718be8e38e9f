//===- Export.h - Timelines and schedules for other tools -------*- C++ -*-===//
//
// Writers that turn a schedule (and its simulation) into files people and
// other tools read: a Chrome trace (Perfetto, chrome://tracing), an SVG
// timeline in the style of the BitPipe paper's figures, and the CSV that
// torch.distributed.pipelining loads. Every writer returns a string, which
// its caller writes as every output is written (docs/files.md).
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_EXPORT_H
#define BITPIPE_SCHEDULE_EXPORT_H

#include "bitpipe/Schedule/Error.h"
#include "bitpipe/Schedule/Schedule.h"
#include "bitpipe/Schedule/Simulator.h"

#include <cstddef>
#include <string>
#include <vector>

namespace bitpipe::sched {

struct ChromeTraceOptions {
  /// Simulator time unit in microseconds (ts and dur are in microseconds).
  double microsecondsPerUnit = 1000.0;
};

/// Chrome trace JSON object: one process per rank ("rank r"), compute on
/// thread 0, the rank's all-reduces on thread 1, and one thread per p2p
/// channel end ("send to P2", "recv from P0"), so that no two complete
/// ("ph":"X") events of one thread overlap.
std::string toChromeTrace(const Schedule &schedule, const SimResult &sim,
                          const ChromeTraceOptions &options = {});

struct SvgOptions {
  /// Horizontal scale; 0: fitted to the timeline's own time range (the
  /// shortest compute action 24 px wide, the plot 600 to 4000 px), so that
  /// a step of milliseconds draws as well as one of unit slots.
  double pixelsPerUnit = 0;
  /// What the simulator's times are in ("ms"; "" for the unit costs'
  /// slots): the title's makespan and the time axis say it.
  std::string timeUnit;
  int computeRowHeight = 26;
  int allReduceRowHeight = 10;
};

/// The horizontal scale toSvg draws \p sim at: \p options' pixelsPerUnit,
/// or the fitted one.
double svgPixelsPerUnit(const SimResult &sim, const SvgOptions &options);

/// A standalone SVG: one row per rank (compute lane plus a thin all-reduce
/// lane), one <rect class="action"> per F/B/W/AR with the micro-batch number
/// in it, colour by pipeline (down: blues, up: oranges; F light, B dark, W
/// between) and all-reduces in purple. Empty space is idle time. Title and
/// legend state the schedule name, D, N, makespan (with its unit) and
/// bubble ratio; an axis above the ranks marks the time.
std::string toSvg(const Schedule &schedule, const SimResult &sim,
                  const SvgOptions &options = {});

/// One schedule's picture in a stack.
struct SvgPanel {
  const Schedule *schedule = nullptr;
  const SimResult *sim = nullptr;
};

/// toSvg's pictures of \p panels one above the other in one SVG, all at one
/// horizontal scale (options' pixelsPerUnit, or the finest fitted one that
/// keeps every plot in its bounds), so that their lengths compare: the
/// picture of a comparison between schedules.
std::string toSvgStack(const std::vector<SvgPanel> &panels,
                       const SvgOptions &options = {});

/// torch.distributed.pipelining's compute_only CSV: row r lists rank r's
/// actions as `{stage}{F|B|I|W}{microbatch}` ("0F0" = forward of stage 0,
/// micro-batch 0). Full backward is "B"; with split backward, B is written
/// "I" (input gradient) and W "W". All-reduces are not compute actions in
/// that format and are left out. Stage numbers are global; torch infers one
/// rank per stage, so bidirectional schedules (a stage on two ranks) export
/// faithfully but do not load into torch's single-direction runtime.
std::string toTorchCsv(const Schedule &schedule);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_EXPORT_H
