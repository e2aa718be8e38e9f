//===- Report.cpp - The planner's answer, for people and scripts ----------===//

#include "bitpipe/Plan/Report.h"

#include "bitpipe/Schedule/Registry.h"
#include "bitpipe/base/JsonTree.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
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

std::string compileCommand(const PlanConfig &c, const CommandContext &ctx) {
  std::string base = ctx.modelName.empty() ? "model" : ctx.modelName;
  std::string model = ctx.modelPath, prefix;
  if (ctx.modelIsConfig && c.microbatchSize != ctx.modelMicrobatchSize) {
    model = base + "-mb" + std::to_string(c.microbatchSize) + ".mlir";
    prefix = "bitpipe-import --config " + shellWord(ctx.modelPath) +
             " --microbatch-size " + std::to_string(c.microbatchSize) + " -o " +
             shellWord(model) + " && ";
  }
  std::string cmd = prefix + "bitpipe-compile " + shellWord(model) + " --" +
                    sched::option::kSchedule + " " + c.schedule + " --" +
                    sched::option::kDevices + " " + std::to_string(c.devices) +
                    " --" + sched::option::kMicrobatches + " " +
                    std::to_string(c.microbatches);
  if (c.chunks)
    cmd += std::string(" --") + sched::option::kChunksPerDevice + " " +
           std::to_string(c.chunks);
  cmd += std::string(" --") + sched::option::kDataParallel + " " +
         std::to_string(c.dataParallel);
  cmd += " --target " + ctx.target + " --precision " + ctx.precision;
  return cmd + " -o " + shellWord(base + "_train");
}

std::string formatTable(const PlanResult &result, int topK) {
  static const struct {
    const char *name;
    size_t width;
  } columns[] = {{"rank", 4},      {"schedule", 16}, {"D", 4},
                 {"dp", 4},        {"v", 3},         {"mb", 4},
                 {"N", 6},         {"split", 5},     {"step_s", 10},
                 {"tokens/s", 11}, {"bubble", 7},    {"peak_GiB", 9},
                 {"comm_GiB", 10}};
  auto row = [&](const std::vector<std::string> &cells) {
    std::string line;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (i)
        line += " ";
      line += i == 1 ? padRight(cells[i], columns[i].width)
                     : padLeft(cells[i], columns[i].width);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    return line + "\n";
  };
  std::vector<std::string> header;
  for (const auto &c : columns)
    header.push_back(c.name);
  std::string out = row(header);
  size_t shown = topK > 0 ? std::min<size_t>(topK, result.ranked.size())
                          : result.ranked.size();
  for (size_t i = 0; i < shown; ++i) {
    const Estimate &e = result.ranked[i];
    const PlanConfig &c = e.config;
    out +=
        row({std::to_string(i + 1), c.schedule, std::to_string(c.devices),
             std::to_string(c.dataParallel),
             c.chunks ? std::to_string(c.chunks) : "-",
             std::to_string(c.microbatchSize), std::to_string(c.microbatches),
             c.splitBackward ? "yes" : "no", format("%.4f", e.stepTime),
             format("%.0f", e.tokensPerSecond), format("%.4f", e.bubble),
             format("%.2f", e.peakMemory.total() / kGiB),
             format("%.2f", commBytes(e) / kGiB)});
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
                       const std::string &clusterName,
                       const CommandContext &ctx) {
  using json::quote;
  auto num = [](double v) { return format("%.17g", v); };
  std::string out = "{\n";
  out += "  \"model\": " + quote(ctx.modelName) + ",\n";
  out += "  \"cluster\": " + quote(clusterName) + ",\n";
  out += "  \"gpus\": " + std::to_string(result.gpus) + ",\n";
  out += "  \"global_batch\": " + std::to_string(request.globalBatch) + ",\n";
  out += "  \"seq_len\": " + std::to_string(result.seqLen) + ",\n";
  out += "  \"memory_cap_bytes\": " + num(result.memoryCapBytes) + ",\n";
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
  out += "\n  },\n  \"plans\": [";
  size_t shown = topK > 0 ? std::min<size_t>(topK, result.ranked.size())
                          : result.ranked.size();
  for (size_t i = 0; i < shown; ++i) {
    const Estimate &e = result.ranked[i];
    const PlanConfig &c = e.config;
    const sched::RankMemory &m = e.peakMemory;
    out += std::string(i ? "," : "") +
           "\n    {\"rank\": " + std::to_string(i + 1) +
           ", \"schedule\": " + quote(c.schedule) +
           ", \"devices\": " + std::to_string(c.devices) +
           ", \"dp\": " + std::to_string(c.dataParallel) +
           ", \"chunks_per_device\": " + std::to_string(c.chunks) +
           ", \"microbatch_size\": " + std::to_string(c.microbatchSize) +
           ", \"microbatches\": " + std::to_string(c.microbatches) +
           ", \"split_backward\": " + (c.splitBackward ? "true" : "false") +
           ", \"stages\": " + std::to_string(c.stages) +
           ", \"step_time_s\": " + num(e.stepTime) +
           ", \"tokens_per_s\": " + num(e.tokensPerSecond) +
           ", \"bubble\": " + num(e.bubble) +
           ", \"peak_memory_bytes\": " + num(m.total()) +
           ", \"peak_rank\": " + std::to_string(e.peakRank) +
           ", \"memory\": {\"weights\": " + num(m.weights) +
           ", \"gradients\": " + num(m.gradients) +
           ", \"optimizer\": " + num(m.optimizer) +
           ", \"activations\": " + num(m.activations) +
           ", \"communication\": " + num(m.communication) + "}" +
           ", \"p2p_bytes\": " + num(e.p2pBytes) +
           ", \"allreduce_bytes\": " + num(e.allReduceBytes) +
           ", \"allreduce_overlap\": " + num(e.allReduceOverlap) +
           ", \"compile_command\": " + quote(compileCommand(c, ctx)) + "}";
  }
  out += std::string(shown ? "\n  " : "") + "]\n}\n";
  return out;
}

} // namespace bitpipe::plan
