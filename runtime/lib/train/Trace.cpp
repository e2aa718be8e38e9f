//===- Trace.cpp - Chrome trace of the real execution -----------*- C++ -*-===//

#include "Trace.h"

#include "bitpipe/base/AtomicFile.h"
#include "comm/Communicator.h"
#include "core/Json.h"

#include <cstdlib>

namespace bitpipe::runtime {

static const TraceCategory kAllCategories[] = {
    TraceCategory::Forward,   TraceCategory::Backward,
    TraceCategory::Send,      TraceCategory::Recv,
    TraceCategory::AllReduce, TraceCategory::Optimizer,
    TraceCategory::Other,     TraceCategory::Device,
};

const char *traceCategoryName(TraceCategory c) {
  switch (c) {
  case TraceCategory::Forward:
    return "forward";
  case TraceCategory::Backward:
    return "backward";
  case TraceCategory::Send:
    return "send";
  case TraceCategory::Recv:
    return "recv";
  case TraceCategory::AllReduce:
    return "allreduce";
  case TraceCategory::Optimizer:
    return "optimizer";
  case TraceCategory::Other:
    return "other";
  case TraceCategory::Device:
    return "device";
  }
  return "other";
}

const char *traceRowName(int row) {
  switch (row) {
  case kHostRow:
    return "host";
  case kComputeStreamRow:
    return "device: compute stream";
  case kPointToPointStreamRow:
    return "device: point-to-point stream";
  case kAllReduceStreamRow:
    return "device: all-reduce stream";
  case kStepRow:
    return "steps";
  }
  return "?";
}

void recordDeviceSpans(TraceRecorder &trace, double stepStartUs,
                       const std::vector<DeviceSpan> &spans) {
  std::vector<std::string> bucketNames;
  int bucket;
  for (const TraceEvent &e : trace.events())
    if (e.row == kHostRow && e.category == TraceCategory::AllReduce &&
        e.startUs >= stepStartUs &&
        trace::parseSpan(e.name, trace::kAllReducePostFormat, bucket))
      bucketNames.push_back(e.name);
  size_t allReduces = 0;
  for (const DeviceSpan &s : spans) {
    std::string name = s.name;
    if (s.category == TraceCategory::AllReduce &&
        allReduces < bucketNames.size())
      name = bucketNames[allReduces++];
    trace.record(std::move(name), s.category, stepStartUs + 1000.0 * s.startMs,
                 1000.0 * s.durationMs, s.row);
  }
}

bool isComputeCategory(TraceCategory c) {
  // The optimizer step is work every rank must do, not pipeline idleness;
  // communication and waiting are what the bubble is made of.
  return c == TraceCategory::Forward || c == TraceCategory::Backward ||
         c == TraceCategory::Optimizer;
}

std::string serializeTraceEvents(const std::vector<TraceEvent> &events) {
  std::string out;
  for (const TraceEvent &e : events) {
    // Hex floats round-trip exactly; the name goes last so it may hold
    // spaces. Newlines in names would break the framing: replace them.
    std::string name = e.name;
    for (char &c : name)
      if (c == '\n')
        c = ' ';
    out += formatString("%d %d %a %a %s\n", static_cast<int>(e.category),
                        e.row, e.startUs, e.durationUs, name.c_str());
  }
  return out;
}

Expected<std::vector<TraceEvent>>
deserializeTraceEvents(const std::string &text) {
  std::vector<TraceEvent> events;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos)
      return Status::error(ErrorCode::FormatError,
                           "trace: an event record lacks its newline");
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const char *p = line.c_str();
    char *end = nullptr;
    long cat = std::strtol(p, &end, 10);
    if (end == p || cat < 0 ||
        cat >= static_cast<long>(sizeof(kAllCategories) /
                                 sizeof(kAllCategories[0])))
      return Status::error(ErrorCode::FormatError,
                           "trace: bad event category in '" + line + "'");
    TraceEvent e;
    e.category = kAllCategories[cat];
    p = end;
    long row = std::strtol(p, &end, 10);
    if (end == p || row < kHostRow || row > kLastRow)
      return Status::error(ErrorCode::FormatError,
                           "trace: bad row in '" + line + "' (expected " +
                               formatString("%d to %d", kHostRow, kLastRow) +
                               ")");
    e.row = static_cast<int>(row);
    p = end;
    e.startUs = std::strtod(p, &end);
    if (end == p)
      return Status::error(ErrorCode::FormatError,
                           "trace: bad start time in '" + line + "'");
    p = end;
    e.durationUs = std::strtod(p, &end);
    if (end == p || *end != ' ')
      return Status::error(ErrorCode::FormatError,
                           "trace: bad duration in '" + line + "'");
    e.name = end + 1;
    events.push_back(std::move(e));
  }
  return events;
}

/// The event's row; a Device event made without one is the compute
/// stream's (TraceRecorder::record sets it, an aggregate may not).
static int rowOf(const TraceEvent &e) {
  return e.row == kHostRow && e.category == TraceCategory::Device
             ? kComputeStreamRow
             : e.row;
}

std::string
chromeTraceJson(const std::vector<std::vector<TraceEvent>> &perRank) {
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[";
  bool first = true;
  auto sep = [&] {
    if (!first)
      out += ",\n";
    first = false;
  };
  for (size_t rank = 0; rank < perRank.size(); ++rank) {
    // Metadata events name the process row "rank N" in the viewer.
    sep();
    out += formatString("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%zu,"
                        "\"tid\":0,\"args\":{\"name\":\"rank %zu\"}}",
                        rank, rank);
    // Every row in use is named: the host's calls, the device streams
    // (CUDA) and the steps.
    bool used[kLastRow + 1] = {};
    for (const TraceEvent &e : perRank[rank])
      if (rowOf(e) >= kHostRow && rowOf(e) <= kLastRow)
        used[rowOf(e)] = true;
    for (int row = kHostRow; row <= kLastRow; ++row) {
      if (!used[row])
        continue;
      sep();
      out += formatString("{\"name\":\"thread_name\",\"ph\":\"M\","
                          "\"pid\":%zu,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                          rank, row, traceRowName(row));
    }
    for (const TraceEvent &e : perRank[rank]) {
      sep();
      out += "{\"name\":" + jsonQuote(e.name) + ",\"cat\":\"" +
             traceCategoryName(e.category) + "\",\"ph\":\"X\"" +
             formatString(",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%zu,\"tid\":%d}",
                          e.startUs, e.durationUs, rank, rowOf(e));
    }
  }
  out += "]}\n";
  return out;
}

Status writeChromeTrace(const std::string &path,
                        const std::vector<std::vector<TraceEvent>> &perRank) {
  std::string json = chromeTraceJson(perRank);
  return base::writeFileAtomically(path, json.data(), json.size());
}

Status gatherAndWriteChromeTrace(Communicator &comm,
                                 const TraceRecorder &recorder,
                                 const std::string &path) {
  std::vector<std::string> all;
  Status s = comm.gatherBytes(serializeTraceEvents(recorder.events()), 0, &all);
  if (!s.isOk() || comm.rank() != 0)
    return s;
  std::vector<std::vector<TraceEvent>> perRank;
  for (size_t r = 0; r < all.size(); ++r) {
    Expected<std::vector<TraceEvent>> events = deserializeTraceEvents(all[r]);
    if (!events.isOk())
      return Status::error(events.status().code(),
                           formatString("rank %zu: ", r) +
                               events.status().message());
    perRank.push_back(events.take());
  }
  return writeChromeTrace(path, perRank);
}

} // namespace bitpipe::runtime
