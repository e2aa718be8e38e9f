//===- ExportUtil.h - Text helpers shared by the exporters ------*- C++ -*-===//
//
// Private to lib/Schedule/Export.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_SCHEDULE_EXPORT_EXPORTUTIL_H
#define BITPIPE_LIB_SCHEDULE_EXPORT_EXPORTUTIL_H

#include "bitpipe/Schedule/Schedule.h"

#include <string>

namespace bitpipe::sched::detail {

/// Shortest of "%.3f" without trailing zeros: 28 -> "28", 0.5 -> "0.5".
std::string formatNumber(double value);
std::string xmlEscape(const std::string &text);
/// The pipeline micro-batch `m` travels, or 0 when the schedule lacks it.
int pipelineOf(const Schedule &schedule, int microbatch);
/// "down"/"up" for two-pipeline schedules, else "pipeline k".
std::string directionName(const Schedule &schedule, int pipeline);

} // namespace bitpipe::sched::detail

#endif // BITPIPE_LIB_SCHEDULE_EXPORT_EXPORTUTIL_H
