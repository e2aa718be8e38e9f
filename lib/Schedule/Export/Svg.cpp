//===- Svg.cpp - Simulated timeline as an SVG picture ---------------------===//
//
// Drawn like the BitPipe paper's schedule figures: ranks top to bottom, time
// left to right, a box per action labelled with its micro-batch, the two
// directions in two colour families.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Export.h"

#include "ExportUtil.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bitpipe::sched {

using detail::formatNumber;
using detail::pipelineOf;
using detail::xmlEscape;

namespace {

constexpr int kLeft = 56; // Room for "P3" labels.
constexpr int kTop = 52;  // Room for the title and the time axis.
constexpr int kRight = 16;
// The widest legend: F, B and W swatches for two directions, and all-reduce.
constexpr int kLegendWidth = 520;
constexpr int kGap = 6; // Between ranks.
constexpr const char *kAllReduceColour = "#8e6bbf";

// Pipeline 0 ("down") in blues, pipeline 1 ("up") in oranges, further
// pipelines in greens; forward light, weight gradient medium, backward dark.
const char *colour(int pipeline, ActionKind kind) {
  static const char *table[3][3] = {{"#b8d4f0", "#5b9bd5", "#1f4e89"},
                                    {"#fcd2a6", "#f59a4a", "#b5520f"},
                                    {"#c7e6c0", "#74c476", "#2f7d32"}};
  int row = std::clamp(pipeline, 0, 2);
  int col = kind == ActionKind::Forward      ? 0
            : kind == ActionKind::WeightGrad ? 1
                                             : 2;
  return table[row][col];
}

bool darkBox(ActionKind kind) { return kind == ActionKind::Backward; }

/// A round step (1, 2 or 5 times a power of ten) that puts about 8 ticks
/// on [0, span].
double tickStep(double span) {
  double raw = span / 8;
  double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * power >= raw)
      return m * power;
  return 10 * power;
}

} // namespace

double svgPixelsPerUnit(const SimResult &sim, const SvgOptions &options) {
  if (options.pixelsPerUnit > 0)
    return options.pixelsPerUnit;
  constexpr double kShortest = 24, kMinPlot = 600, kMaxPlot = 4000;
  double shortest = 0;
  for (const TimelineEvent &e : sim.timeline)
    if (e.lane == Lane::Compute && e.end > e.start &&
        (shortest == 0 || e.end - e.start < shortest))
      shortest = e.end - e.start;
  if (sim.makespan <= 0 || shortest <= 0)
    return 24;
  return std::clamp(kShortest / shortest, kMinPlot / sim.makespan,
                    kMaxPlot / sim.makespan);
}

namespace {

/// One schedule's picture without its root element: what toSvg wraps and
/// toSvgStack stacks.
struct Picture {
  std::string body;
  int width = 0, height = 0;
};

Picture drawPicture(const Schedule &schedule, const SimResult &sim,
                    const SvgOptions &options) {
  const int numRanks = schedule.numRanks();
  const double ppu = svgPixelsPerUnit(sim, options);
  const std::string unit =
      options.timeUnit.empty() ? std::string("units") : options.timeUnit;
  const int rowH = options.computeRowHeight;
  const int arH = options.allReduceRowHeight;
  const int rankH = rowH + arH + kGap;
  const double plotW = std::max(1.0, sim.makespan * ppu);
  const int legendTop = kTop + numRanks * rankH + 14;
  const int legendH = 44;
  const int height = legendTop + legendH;

  std::string title = (schedule.name.empty() ? "schedule" : schedule.name) +
                      "  D=" + std::to_string(schedule.placement.numDevices) +
                      "  N=" + std::to_string(schedule.numMicrobatches) +
                      "  makespan " + formatNumber(sim.makespan) + " " + unit +
                      "  bubble " + formatNumber(sim.bubbleRatio * 100) + "%";
  // Wide enough for the plot, and for the title and the legend of a short
  // plot (bold 15 px text is about 9 px a character).
  const int width =
      std::max({kLeft + static_cast<int>(plotW + 0.999) + kRight,
                kLeft + 9 * static_cast<int>(title.size()) + kRight,
                kLeft + kLegendWidth + kRight});

  std::string out;
  out += "<title>" + xmlEscape(title) + "</title>\n";
  out += "<text x=\"" + std::to_string(kLeft) +
         "\" y=\"24\" font-size=\"15\" font-weight=\"bold\">" +
         xmlEscape(title) + "</text>\n";

  // The time axis, above the ranks, in the simulator's unit.
  if (sim.makespan > 0) {
    double step = tickStep(sim.makespan);
    for (int k = 0; k * step <= sim.makespan * (1 + 1e-9); ++k) {
      double x = kLeft + k * step * ppu;
      out += "<line class=\"tick\" x1=\"" + formatNumber(x) + "\" y1=\"" +
             std::to_string(kTop - 4) + "\" x2=\"" + formatNumber(x) +
             "\" y2=\"" + std::to_string(kTop) +
             "\" stroke=\"#888888\" stroke-width=\"1\"/>\n";
      out += "<text class=\"tick\" x=\"" + formatNumber(x) + "\" y=\"" +
             std::to_string(kTop - 7) +
             "\" font-size=\"10\" text-anchor=\"middle\" fill=\"#555555\">" +
             formatNumber(k * step) + (k == 0 ? " " + xmlEscape(unit) : "") +
             "</text>\n";
    }
  }

  // Rank labels and lane guides: idle time is what stays empty.
  for (int r = 0; r < numRanks; ++r) {
    int y = kTop + r * rankH;
    out += "<text x=\"8\" y=\"" + std::to_string(y + rowH / 2 + 5) +
           "\" font-size=\"13\">P" + std::to_string(r) + "</text>\n";
    out += "<line x1=\"" + std::to_string(kLeft) + "\" y1=\"" +
           std::to_string(y + rowH + arH / 2) + "\" x2=\"" +
           formatNumber(kLeft + plotW) + "\" y2=\"" +
           std::to_string(y + rowH + arH / 2) +
           "\" stroke=\"#dddddd\" stroke-width=\"1\"/>\n";
  }

  for (const TimelineEvent &e : sim.timeline) {
    if (e.lane == Lane::P2P)
      continue;
    int y = kTop + e.rank * rankH;
    double x = kLeft + e.start * ppu;
    double w = (e.end - e.start) * ppu;
    if (e.lane == Lane::AllReduce) {
      // Free all-reduces still get a visible marker.
      w = std::max(w, 3.0);
      out += "<rect class=\"action\" x=\"" + formatNumber(x) + "\" y=\"" +
             std::to_string(y + rowH + 1) + "\" width=\"" + formatNumber(w) +
             "\" height=\"" + std::to_string(arH - 2) + "\" fill=\"" +
             kAllReduceColour + "\" stroke=\"black\" stroke-width=\"0.5\">" +
             "<title>" + xmlEscape(e.action.str()) + " [" +
             formatNumber(e.start) + ", " + formatNumber(e.end) +
             "]</title></rect>\n";
      continue;
    }
    const Action &a = e.action;
    int pipeline = pipelineOf(schedule, a.microbatch);
    out += "<rect class=\"action\" x=\"" + formatNumber(x) + "\" y=\"" +
           std::to_string(y) + "\" width=\"" + formatNumber(w) +
           "\" height=\"" + std::to_string(rowH) + "\" fill=\"" +
           colour(pipeline, a.kind) +
           "\" stroke=\"black\" stroke-width=\"0.5\"><title>" +
           xmlEscape(a.str()) + " [" + formatNumber(e.start) + ", " +
           formatNumber(e.end) + "]</title></rect>\n";
    // A label only where it fits (11 px digits are about 7 px wide): a
    // cheap stage's narrow boxes stay readable as colour alone.
    std::string label = std::to_string(a.microbatch);
    if (w < 7.0 * label.size() + 2)
      continue;
    out += "<text x=\"" + formatNumber(x + w / 2) + "\" y=\"" +
           std::to_string(y + rowH / 2 + 4) +
           "\" font-size=\"11\" text-anchor=\"middle\" fill=\"" +
           (darkBox(a.kind) ? "white" : "black") + "\">" + label +
           "</text>\n";
  }

  // Legend: one swatch per colour in use.
  struct Entry {
    std::string fill, label;
  };
  std::vector<Entry> legend;
  size_t numPipelines =
      std::max<size_t>(1, schedule.placement.pipelines.size());
  for (size_t k = 0; k < std::min<size_t>(numPipelines, 3); ++k) {
    std::string dir = detail::directionName(schedule, static_cast<int>(k));
    legend.push_back({colour(k, ActionKind::Forward), "F " + dir});
    legend.push_back({colour(k, ActionKind::Backward), "B " + dir});
    if (schedule.splitBackward)
      legend.push_back({colour(k, ActionKind::WeightGrad), "W " + dir});
  }
  legend.push_back({kAllReduceColour, "all-reduce"});
  int x = kLeft;
  for (const Entry &entry : legend) {
    out += "<rect class=\"legend\" x=\"" + std::to_string(x) + "\" y=\"" +
           std::to_string(legendTop) + "\" width=\"14\" height=\"14\" fill=\"" +
           entry.fill + "\" stroke=\"black\" stroke-width=\"0.5\"/>\n";
    out += "<text x=\"" + std::to_string(x + 18) + "\" y=\"" +
           std::to_string(legendTop + 12) + "\" font-size=\"12\">" +
           xmlEscape(entry.label) + "</text>\n";
    x += 34 + 7 * static_cast<int>(entry.label.size());
  }
  out += "<text x=\"" + std::to_string(kLeft) + "\" y=\"" +
         std::to_string(legendTop + 34) +
         "\" font-size=\"11\" fill=\"#555555\">time runs left to right; empty "
         "space is idle; numbers are micro-batches</text>\n";
  return {std::move(out), width, height};
}

/// The root element around \p body.
std::string document(const std::string &body, int width, int height) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
         std::to_string(width) + "\" height=\"" + std::to_string(height) +
         "\" viewBox=\"0 0 " + std::to_string(width) + " " +
         std::to_string(height) +
         "\" font-family=\"Helvetica, Arial, sans-serif\">\n"
         "<rect class=\"background\" x=\"0\" y=\"0\" width=\"100%\" "
         "height=\"100%\" fill=\"white\"/>\n" +
         body + "</svg>\n";
}

} // namespace

std::string toSvg(const Schedule &schedule, const SimResult &sim,
                  const SvgOptions &options) {
  Picture picture = drawPicture(schedule, sim, options);
  return document(picture.body, picture.width, picture.height);
}

std::string toSvgStack(const std::vector<SvgPanel> &panels,
                       const SvgOptions &options) {
  // One scale for all, so that lengths compare: the finest that keeps
  // every panel's plot within the fitted bounds.
  SvgOptions shared = options;
  if (shared.pixelsPerUnit <= 0) {
    for (const SvgPanel &panel : panels) {
      double ppu = svgPixelsPerUnit(*panel.sim, options);
      shared.pixelsPerUnit =
          shared.pixelsPerUnit > 0 ? std::min(shared.pixelsPerUnit, ppu) : ppu;
    }
  }
  std::string body;
  int width = 0, height = 0;
  for (const SvgPanel &panel : panels) {
    Picture picture = drawPicture(*panel.schedule, *panel.sim, shared);
    body += "<g class=\"panel\" transform=\"translate(0," +
            std::to_string(height) + ")\">\n" + picture.body + "</g>\n";
    width = std::max(width, picture.width);
    height += picture.height + 12;
  }
  return document(body, std::max(width, 1), std::max(height, 1));
}

} // namespace bitpipe::sched
