//===- ChromeTrace.cpp - Simulated timeline as a Chrome trace -------------===//
//
// The Trace Event Format's JSON object form: {"traceEvents": [...]}, with
// metadata events naming processes/threads and "X" (complete) events.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Export.h"

#include "ExportUtil.h"

#include "bitpipe/base/JsonTree.h"

#include <set>

namespace bitpipe::sched {

using detail::directionName;
using detail::formatNumber;
using json::quote;
using detail::pipelineOf;

namespace {

// Threads of a rank's process. P2P threads are per channel end so that the
// FIFO channel keeps events of one thread from overlapping.
constexpr int kComputeTid = 0;
constexpr int kAllReduceTid = 1;
int sendTid(int peer) { return 100 + peer; }
int recvTid(int numRanks, int peer) { return 100 + numRanks + peer; }

const char *passName(ActionKind kind) {
  switch (kind) {
  case ActionKind::Forward:
    return "forward";
  case ActionKind::Backward:
    return "backward";
  case ActionKind::WeightGrad:
    return "weight";
  case ActionKind::AllReduce:
    return "allreduce";
  }
  return "?";
}

std::string metadata(const char *what, int pid, int tid,
                     const std::string &name) {
  return std::string("{\"name\":\"") + what +
         "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" +
         quote(name) + "}}";
}

std::string sortIndex(const char *what, int pid, int tid, int index) {
  return std::string("{\"name\":\"") + what +
         "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) +
         ",\"tid\":" + std::to_string(tid) +
         ",\"args\":{\"sort_index\":" + std::to_string(index) + "}}";
}

} // namespace

std::string toChromeTrace(const Schedule &schedule, const SimResult &sim,
                          const ChromeTraceOptions &options) {
  const int numRanks = schedule.numRanks();
  const double scale = options.microsecondsPerUnit;
  std::vector<std::string> events;

  std::set<std::pair<int, int>> p2pThreads; // (rank, tid)
  for (const TimelineEvent &e : sim.timeline) {
    std::string name, cat, args;
    int tid = kComputeTid;
    switch (e.lane) {
    case Lane::Compute: {
      int pipeline = pipelineOf(schedule, e.action.microbatch);
      name = e.action.str();
      cat = passName(e.action.kind);
      args = "\"microbatch\":" + std::to_string(e.action.microbatch) +
             ",\"stage\":" + std::to_string(e.action.stage) + ",\"pass\":\"" +
             cat + "\",\"pipeline\":" + std::to_string(pipeline) +
             ",\"direction\":\"" + directionName(schedule, pipeline) + "\"";
      break;
    }
    case Lane::P2P: {
      CommAction c;
      c.kind = e.kind;
      c.action = e.action;
      c.peer = e.peer;
      name = c.str();
      cat = "p2p";
      bool send = e.kind == CommKind::SendF || e.kind == CommKind::SendB;
      tid = send ? sendTid(e.peer) : recvTid(numRanks, e.peer);
      p2pThreads.insert({e.rank, tid});
      int pipeline = pipelineOf(schedule, e.action.microbatch);
      args = "\"microbatch\":" + std::to_string(e.action.microbatch) +
             ",\"stage\":" + std::to_string(e.action.stage) + ",\"pass\":\"" +
             passName(e.action.kind) + "\",\"peer\":" + std::to_string(e.peer) +
             ",\"bytes\":" + formatNumber(e.bytes) +
             ",\"pipeline\":" + std::to_string(pipeline) + ",\"direction\":\"" +
             directionName(schedule, pipeline) + "\"";
      break;
    }
    case Lane::AllReduce: {
      name = e.action.str();
      cat = "allreduce";
      tid = kAllReduceTid;
      std::string stages;
      for (size_t i = 0; i < e.action.stages.size(); ++i)
        stages += (i ? "," : "") + std::to_string(e.action.stages[i]);
      args = "\"stages\":[" + stages + "],\"bytes\":" + formatNumber(e.bytes);
      break;
    }
    }
    events.push_back("{\"name\":" + quote(name) + ",\"cat\":\"" + cat +
                     "\",\"ph\":\"X\",\"pid\":" + std::to_string(e.rank) +
                     ",\"tid\":" + std::to_string(tid) +
                     ",\"ts\":" + formatNumber(e.start * scale) +
                     ",\"dur\":" + formatNumber((e.end - e.start) * scale) +
                     ",\"args\":{" + args + "}}");
  }

  std::vector<std::string> meta;
  for (int r = 0; r < numRanks; ++r) {
    meta.push_back(metadata("process_name", r, 0, "rank " + std::to_string(r)));
    meta.push_back(sortIndex("process_sort_index", r, 0, r));
    meta.push_back(metadata("thread_name", r, kComputeTid, "compute"));
    meta.push_back(metadata("thread_name", r, kAllReduceTid, "all-reduce"));
  }
  for (auto [rank, tid] : p2pThreads) {
    bool send = tid < 100 + numRanks;
    int peer = send ? tid - 100 : tid - 100 - numRanks;
    meta.push_back(
        metadata("thread_name", rank, tid,
                 (send ? "send to P" : "recv from P") + std::to_string(peer)));
  }

  std::string out =
      "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"schedule\":" +
      quote(schedule.name) +
      ",\"devices\":" + std::to_string(schedule.placement.numDevices) +
      ",\"microbatches\":" + std::to_string(schedule.numMicrobatches) +
      ",\"makespan\":" + formatNumber(sim.makespan) +
      ",\"bubble_ratio\":" + formatNumber(sim.bubbleRatio) +
      "},\"traceEvents\":[\n";
  bool first = true;
  for (const std::vector<std::string> *list : {&meta, &events})
    for (const std::string &e : *list) {
      out += (first ? "" : ",\n") + e;
      first = false;
    }
  out += "\n]}\n";
  return out;
}

} // namespace bitpipe::sched
