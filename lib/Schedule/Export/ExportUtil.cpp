//===- ExportUtil.cpp - Text helpers shared by the exporters --------------===//

#include "ExportUtil.h"

#include <cstdio>

namespace bitpipe::sched::detail {

std::string formatNumber(double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.3f", value);
  std::string s(buf);
  while (!s.empty() && s.back() == '0')
    s.pop_back();
  if (!s.empty() && s.back() == '.')
    s.pop_back();
  return s == "-0" ? "0" : s;
}

std::string xmlEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

int pipelineOf(const Schedule &schedule, int microbatch) {
  if (microbatch < 0 ||
      microbatch >= static_cast<int>(schedule.microbatchPipeline.size()))
    return 0;
  return schedule.microbatchPipeline[microbatch];
}

std::string directionName(const Schedule &schedule, int pipeline) {
  if (schedule.placement.pipelines.size() == 2)
    return pipeline == 0 ? "down" : "up";
  return "pipeline " + std::to_string(pipeline);
}

} // namespace bitpipe::sched::detail
