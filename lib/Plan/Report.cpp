//===- Report.cpp - The planner's answer, for people and scripts ----------===//

#include "bitpipe/Plan/Report.h"

#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/base/JsonTree.h"
#include "bitpipe/base/RunFlags.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iterator>
#include <vector>

namespace bitpipe::plan {

namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

std::string format(const char *fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof text, fmt, value);
  return text;
}

/// `arg` as one word of a POSIX shell.
std::string shellWord(const std::string &arg) {
  bool plain = !arg.empty();
  for (char c : arg)
    plain = plain && (std::isalnum(static_cast<unsigned char>(c)) ||
                      std::string("-_./=:+,@%").find(c) != std::string::npos);
  if (plain)
    return arg;
  std::string out = "'";
  for (char c : arg)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string padLeft(const std::string &s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}
std::string padRight(const std::string &s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

double commBytes(const Estimate &e) { return e.p2pBytes + e.allReduceBytes; }

} // namespace

std::string formatBytes(double bytes) {
  static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (u + 1 < 6 && bytes >= 1024) {
    bytes /= 1024;
    ++u;
  }
  return format("%.2f ", bytes) + units[u];
}

std::string formatFlops(double flops) {
  static const char *units[] = {"FLOP",  "kFLOP", "MFLOP", "GFLOP",
                                "TFLOP", "PFLOP", "EFLOP"};
  int u = 0;
  while (u + 1 < 7 && flops >= 1000) {
    flops /= 1000;
    ++u;
  }
  return format("%.2f ", flops) + units[u];
}

std::string compileCommand(const PlanConfig &c, const CommandContext &ctx) {
  std::string base = ctx.modelName.empty() ? "model" : ctx.modelName;
  // A configuration takes another micro-batch size as a flag (bitpipe-compile
  // builds its IR at that size); model IR fixes it, and the search kept it.
  std::string cmd = "bitpipe-compile " + shellWord(ctx.modelPath);
  if (ctx.modelIsConfig && c.microbatchSize != ctx.modelMicrobatchSize)
    cmd += " --microbatch-size " + std::to_string(c.microbatchSize);
  cmd += std::string(" --") + sched::option::kSchedule + " " + c.schedule +
         " --" + sched::option::kDevices + " " + std::to_string(c.devices) +
         " --" + sched::option::kMicrobatches + " " +
         std::to_string(c.microbatches);
  if (c.chunks)
    cmd += std::string(" --") + sched::option::kChunksPerDevice + " " +
           std::to_string(c.chunks);
  cmd += std::string(" --") + sched::option::kDataParallel + " " +
         std::to_string(c.dataParallel);
  if (c.recompute != sched::Recompute::None)
    cmd += std::string(" --recompute ") + sched::recomputeName(c.recompute);
  if (c.units != sched::PartitionUnits::Layers)
    cmd += std::string(" --units ") + sched::partitionUnitsName(c.units);
  if (ctx.gradientSync != sched::GradientSync::Hierarchical)
    cmd += std::string(" --gradient-sync ") +
           sched::gradientSyncName(ctx.gradientSync);
  cmd += " --target " + ctx.target + " --precision " + ctx.precision;
  return cmd + " -o " + shellWord(base + "_train");
}

std::string runFlags(const CommandContext &ctx) {
  return ctx.shardOptimizer ? base::run_flag::kShardOptimizer : "";
}

namespace {

/// The table's columns; `vs_best` only in the best of each schedule.
struct Column {
  const char *name;
  size_t width;
};
constexpr Column kColumns[] = {
    {"rank", 4},    {"schedule", 16}, {"D", 4},         {"dp", 4},
    {"v", 3},       {"mb", 4},        {"N", 6},         {"split", 5},
    {"step_s", 10}, {"tokens/s", 11}, {"tok/s/GPU", 9}, {"MFU", 5},
    {"bubble", 7},  {"peak_GiB", 9},  {"comm_GiB", 10}, {"vs_best", 7}};
constexpr size_t kTableColumns = std::size(kColumns) - 1;

/// The schedule column (1) is as wide as its widest cell: a name that
/// carries its recomputation ("interleaved-1f1b+recompute=selective") is
/// longer than the column's default.
std::string tableRow(const std::vector<std::string> &cells,
                     size_t scheduleWidth) {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i)
      line += " ";
    line += i == 1 ? padRight(cells[i], scheduleWidth)
                   : padLeft(cells[i], kColumns[i].width);
  }
  while (!line.empty() && line.back() == ' ')
    line.pop_back();
  return line + "\n";
}

std::string tableHeader(size_t columns, size_t scheduleWidth) {
  std::vector<std::string> header;
  for (size_t i = 0; i < columns; ++i)
    header.push_back(kColumns[i].name);
  return tableRow(header, scheduleWidth);
}

size_t scheduleWidth(const std::vector<std::vector<std::string>> &rows) {
  size_t width = kColumns[1].width;
  for (const std::vector<std::string> &cells : rows)
    width = std::max(width, cells[1].size());
  return width;
}

/// The cells of ranked[index], rank index + 1.
std::vector<std::string> tableCells(const PlanResult &result, size_t index) {
  const Estimate &e = result.ranked[index];
  const PlanConfig &c = e.config;
  // A configuration that recomputes, or is cut from half layers, says so
  // after its schedule's name.
  std::string schedule = c.schedule;
  if (c.recompute != sched::Recompute::None)
    schedule += std::string("+recompute=") + sched::recomputeName(c.recompute);
  if (c.units != sched::PartitionUnits::Layers)
    schedule += std::string("+units=") + sched::partitionUnitsName(c.units);
  return {std::to_string(index + 1),
          schedule,
          std::to_string(c.devices),
          std::to_string(c.dataParallel),
          c.chunks ? std::to_string(c.chunks) : "-",
          std::to_string(c.microbatchSize),
          std::to_string(c.microbatches),
          c.splitBackward ? "yes" : "no",
          format("%.4f", e.stepTime),
          format("%.0f", e.tokensPerSecond),
          format("%.0f", e.tokensPerSecondPerGpu()),
          format("%.3f", e.mfu),
          format("%.4f", e.bubble),
          format("%.2f", e.peakMemory.total() / kGiB),
          format("%.2f", commBytes(e) / kGiB)};
}

/// "memory 20, schedule 4; e.g. EXAMPLE": a schedule's rejections, the
/// commonest's example.
std::string whyNoneFits(const ScheduleOutcome &outcome) {
  std::vector<const RejectionCount *> reasons;
  for (const RejectionCount &r : outcome.rejections)
    if (r.count)
      reasons.push_back(&r);
  // Commonest first; ties in Rejection's order (the checks' order).
  std::stable_sort(reasons.begin(), reasons.end(),
                   [](const RejectionCount *a, const RejectionCount *b) {
                     return a->count > b->count;
                   });
  std::string out;
  for (const RejectionCount *r : reasons)
    out += std::string(out.empty() ? "" : ", ") + rejectionName(r->reason) +
           " " + std::to_string(r->count);
  return reasons.empty() ? out
                         : out + "; e.g. " + reasons.front()->example + " (" +
                               rejectionMeaning(reasons.front()->reason) + ")";
}

} // namespace

std::string formatTable(const PlanResult &result, int topK) {
  size_t shown = topK > 0 ? std::min<size_t>(topK, result.ranked.size())
                          : result.ranked.size();
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < shown; ++i)
    rows.push_back(tableCells(result, i));
  const size_t width = scheduleWidth(rows);
  std::string out = tableHeader(kTableColumns, width);
  for (const std::vector<std::string> &cells : rows)
    out += tableRow(cells, width);
  return out;
}

std::string formatBestPerSchedule(const PlanResult &result) {
  if (result.schedules.size() < 2)
    return "";
  std::vector<std::vector<std::string>> rows;
  for (const ScheduleOutcome &o : result.schedules)
    if (o.best >= 0)
      rows.push_back(tableCells(result, o.best));
  const size_t width = scheduleWidth(rows);
  std::string out = "best of each schedule (rank: its place in the whole "
                    "ranking; vs_best: its tokens/s over the best's):\n" +
                    tableHeader(kTableColumns + 1, width);
  for (const ScheduleOutcome &o : result.schedules) {
    if (o.best >= 0) {
      std::vector<std::string> cells = tableCells(result, o.best);
      cells.push_back(
          format("%.3f", result.ranked[o.best].tokensPerSecond /
                             result.ranked.front().tokensPerSecond));
      out += tableRow(cells, width);
    } else if (o.considered == 0) {
      out += padLeft("-", kColumns[0].width) + " " + o.schedule +
             ": no configuration to consider\n";
    } else {
      out += padLeft("-", kColumns[0].width) + " " + o.schedule +
             ": none of its " + std::to_string(o.considered) +
             " configurations fits: " + whyNoneFits(o) + "\n";
    }
  }
  return out;
}

std::string formatRejections(const PlanResult &result) {
  std::string out = "rejected: " + std::to_string(result.rejected()) + " of " +
                    std::to_string(result.considered) +
                    " configurations considered\n";
  for (const RejectionCount &r : result.rejections)
    if (r.count)
      out += "  " + padRight(rejectionName(r.reason), 14) +
             padLeft(std::to_string(r.count), 6) + "  " +
             rejectionMeaning(r.reason) + "; e.g. " + r.example + "\n";
  return out;
}

std::string formatJson(const PlanResult &result, int topK,
                       const PlanRequest &request,
                       const sched::Cluster &cluster,
                       const CommandContext &ctx) {
  using json::quote;
  auto num = [](double v) { return format("%.17g", v); };
  std::string out = "{\n";
  out += "  \"model\": " + quote(ctx.modelName) + ",\n";
  auto calibration = [&](const std::string &text) {
    return std::string("{\"calibrated\": ") +
           (text.empty() ? "false" : "true") +
           ", \"calibration\": " + quote(text);
  };
  out += "  \"cluster\": " + quote(cluster.name) + ",\n";
  out += "  \"nodes\": " + std::to_string(cluster.nodes) + ",\n";
  out += "  \"gpus_per_node\": " + std::to_string(cluster.gpusPerNode) + ",\n";
  out += "  \"gpus\": " + std::to_string(result.gpus) + ",\n";
  out += "  \"global_batch\": " + std::to_string(request.globalBatch) + ",\n";
  out += "  \"seq_len\": " + std::to_string(result.seqLen) + ",\n";
  out += "  \"memory_cap_bytes\": " + num(result.memoryCapBytes) + ",\n";
  out +=
      "  \"memory_headroom_bytes\": " + num(result.memoryHeadroomBytes) + ",\n";
  out +=
      "  \"memory_budget_bytes\": " + num(result.memoryBudgetBytes()) + ",\n";
  out +=
      "  \"model_flops_per_token\": " + num(result.modelFlopsPerToken) + ",\n";
  out += "  \"compute\": " + calibration(cluster.computeCalibration) +
         ", \"peak_flops_per_gpu\": " + num(cluster.peakBf16Flops) +
         ", \"achievable_fraction\": " + num(cluster.achievableFraction) +
         ", \"sustained_flops_per_gpu\": " + num(cluster.achievableFlops()) +
         ", \"rates_by_kernel_shape\": " +
         (cluster.kernelRates ? quote(cluster.kernelRates->measured())
                              : std::string("null")) +
         "},\n";
  out += "  \"links\": " + calibration(cluster.linkCalibration) + "},\n";
  // ranked[i] as an object, its rank i + 1.
  auto plan = [&](size_t i) {
    const Estimate &e = result.ranked[i];
    const PlanConfig &c = e.config;
    const sched::RankMemory &m = e.peakMemory;
    return "{\"rank\": " + std::to_string(i + 1) +
           ", \"schedule\": " + quote(c.schedule) +
           ", \"devices\": " + std::to_string(c.devices) +
           ", \"dp\": " + std::to_string(c.dataParallel) +
           ", \"chunks_per_device\": " + std::to_string(c.chunks) +
           ", \"microbatch_size\": " + std::to_string(c.microbatchSize) +
           ", \"microbatches\": " + std::to_string(c.microbatches) +
           ", \"split_backward\": " + (c.splitBackward ? "true" : "false") +
           ", \"recompute\": " + quote(sched::recomputeName(c.recompute)) +
           ", \"units\": " + quote(sched::partitionUnitsName(c.units)) +
           ", \"stages\": " + std::to_string(c.stages) +
           ", \"step_time_s\": " + num(e.stepTime) +
           ", \"tokens_per_s\": " + num(e.tokensPerSecond) +
           ", \"tokens_per_s_per_gpu\": " + num(e.tokensPerSecondPerGpu()) +
           ", \"mfu\": " + num(e.mfu) + ", \"bubble\": " + num(e.bubble) +
           ", \"peak_memory_bytes\": " + num(m.total()) +
           ", \"peak_rank\": " + std::to_string(e.peakRank) +
           ", \"memory\": {\"weights\": " + num(m.weights) +
           ", \"gradients\": " + num(m.gradients) +
           ", \"optimizer\": " + num(m.optimizer) +
           ", \"activations\": " + num(m.activations) +
           ", \"communication\": " + num(m.communication) + "}" +
           ", \"p2p_bytes\": " + num(e.p2pBytes) +
           ", \"allreduce_bytes\": " + num(e.allReduceBytes) +
           ", \"allreduce_inter_node_bytes_per_rank\": " +
           num(e.allReduceInterNodeBytesPerRank) +
           ", \"allreduce_overlap\": " + num(e.allReduceOverlap) +
           ", \"compile_command\": " + quote(compileCommand(c, ctx)) +
           ", \"run_flags\": " + quote(runFlags(ctx)) + "}";
  };
  out += "  \"considered\": " + std::to_string(result.considered) + ",\n";
  out += "  \"feasible\": " + std::to_string(result.ranked.size()) + ",\n";
  out += "  \"rejected\": {";
  for (size_t i = 0; i < result.rejections.size(); ++i) {
    const RejectionCount &r = result.rejections[i];
    out += std::string(i ? "," : "") + "\n    " +
           quote(rejectionName(r.reason)) +
           ": {\"count\": " + std::to_string(r.count) +
           ", \"example\": " + quote(r.example) + "}";
  }
  out += "\n  },\n  \"by_schedule\": [";
  for (size_t i = 0; i < result.schedules.size(); ++i) {
    const ScheduleOutcome &o = result.schedules[i];
    out += std::string(i ? "," : "") +
           "\n    {\"schedule\": " + quote(o.schedule) +
           ", \"considered\": " + std::to_string(o.considered) +
           ", \"best\": " + (o.best >= 0 ? plan(o.best) : "null") +
           ", \"rejected\": {";
    bool first = true;
    for (const RejectionCount &r : o.rejections)
      if (r.count) {
        out += std::string(first ? "" : ", ") + quote(rejectionName(r.reason)) +
               ": {\"count\": " + std::to_string(r.count) +
               ", \"example\": " + quote(r.example) + "}";
        first = false;
      }
    out += "}}";
  }
  out += std::string(result.schedules.empty() ? "" : "\n  ") +
         "],\n  \"plans\": [";
  size_t shown = topK > 0 ? std::min<size_t>(topK, result.ranked.size())
                          : result.ranked.size();
  for (size_t i = 0; i < shown; ++i)
    out += std::string(i ? "," : "") + "\n    " + plan(i);
  out += std::string(shown ? "\n  " : "") + "]\n}\n";
  return out;
}

} // namespace bitpipe::plan
