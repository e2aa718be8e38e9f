//===- KernelRates.cpp - Compute rates measured by kernel shape ----------===//
//
// The grids and their interpolation (KernelRates.h); the file format is
// docs/clusters.md's, parsed in Cluster.cpp.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/KernelRates.h"

#include "bitpipe/base/JsonTree.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace bitpipe::sched {

namespace {

using Grid = KernelRates::Grid;

std::string formatPoint(const std::vector<double> &point,
                        const std::vector<const char *> &names) {
  std::string text;
  for (size_t i = 0; i < point.size(); ++i) {
    char value[32];
    std::snprintf(value, sizeof value, "%g", point[i]);
    text += (i ? ", " : "") + std::string(names[i]) + " " + value;
  }
  return text;
}

/// The grid that \p points (one per entry) span, or an error naming a
/// combination of the axes' values that no entry has, or one that two have.
Result<Grid> makeGrid(const std::vector<std::vector<double>> &points,
                      const std::vector<const char *> &names,
                      const std::string &path) {
  Grid g;
  const size_t dims = names.size();
  g.axes.resize(dims);
  for (const std::vector<double> &p : points)
    for (size_t d = 0; d < dims; ++d)
      g.axes[d].push_back(p[d]);
  size_t cells = 1;
  for (std::vector<double> &axis : g.axes) {
    std::sort(axis.begin(), axis.end());
    axis.erase(std::unique(axis.begin(), axis.end()), axis.end());
    cells *= axis.size();
  }
  std::map<std::vector<double>, size_t> byPoint;
  for (size_t e = 0; e < points.size(); ++e)
    if (!byPoint.emplace(points[e], e).second)
      return Result<Grid>::failure(path +
                                   ": expected one entry per shape, "
                                   "got two of " +
                                   formatPoint(points[e], names));
  g.entryAt.resize(cells);
  std::vector<size_t> index(dims, 0);
  for (size_t cell = 0; cell < cells; ++cell) {
    std::vector<double> point(dims);
    for (size_t d = 0; d < dims; ++d)
      point[d] = g.axes[d][index[d]];
    auto it = byPoint.find(point);
    if (it == byPoint.end())
      return Result<Grid>::failure(
          path + ": expected a full grid of shapes (every combination of " +
          "the values that occur), got none for " + formatPoint(point, names));
    g.entryAt[cell] = it->second;
    for (size_t d = dims; d-- > 0;) {
      if (++index[d] < g.axes[d].size())
        break;
      index[d] = 0;
    }
  }
  return Result<Grid>::success(std::move(g));
}

/// Multilinear interpolation of value(entry) at \p point, in the
/// logarithms of the coordinates, clamped to the grid's edges.
template <class Value>
double interpolate(const Grid &g, const std::vector<double> &point,
                   Value value) {
  const size_t dims = g.axes.size();
  std::vector<size_t> lo(dims);
  std::vector<double> t(dims);
  for (size_t d = 0; d < dims; ++d) {
    const std::vector<double> &axis = g.axes[d];
    const double x = point[d];
    if (axis.size() == 1 || x <= axis.front()) {
      lo[d] = 0;
      t[d] = 0;
    } else if (x >= axis.back()) {
      lo[d] = axis.size() - 2;
      t[d] = 1;
    } else {
      size_t i = std::upper_bound(axis.begin(), axis.end(), x) - axis.begin();
      lo[d] = i - 1;
      t[d] = std::log(x / axis[i - 1]) / std::log(axis[i] / axis[i - 1]);
    }
  }
  // Sum over the 2^dims corners of the cell.
  double sum = 0;
  for (size_t corner = 0; corner < (size_t(1) << dims); ++corner) {
    double weight = 1;
    size_t cell = 0;
    for (size_t d = 0; d < dims; ++d) {
      const bool high = (corner >> d) & 1;
      if (high && g.axes[d].size() == 1) {
        weight = 0;
        break;
      }
      weight *= high ? t[d] : 1 - t[d];
      cell = cell * g.axes[d].size() + lo[d] + (high ? 1 : 0);
    }
    if (weight > 0)
      sum += weight * value(g.entryAt[cell]);
  }
  return sum;
}

bool positive(double x) { return std::isfinite(x) && x > 0; }

} // namespace

Result<KernelRates> KernelRates::create(std::vector<LinearRate> linear,
                                        std::vector<AttentionRate> attention,
                                        double other, std::string measured,
                                        const std::string &path) {
  KernelRates r;
  for (size_t e = 0; e < linear.size(); ++e)
    if (!positive(linear[e].forward) || !positive(linear[e].inputGrad) ||
        !positive(linear[e].weightGrad))
      return Result<KernelRates>::failure(
          path + ".linear[" + std::to_string(e) +
          "]: expected positive rates (FLOP per second)");
  for (size_t e = 0; e < attention.size(); ++e)
    if (!positive(attention[e].forward) || !positive(attention[e].backward))
      return Result<KernelRates>::failure(
          path + ".attention[" + std::to_string(e) +
          "]: expected positive rates (FLOP per second)");
  if (linear.empty())
    return Result<KernelRates>::failure(
        path + ".linear: expected at least one shape, got none");
  std::vector<std::vector<double>> points;
  for (const LinearRate &l : linear)
    points.push_back(
        {double(l.shape.tokens), double(l.shape.in), double(l.shape.out)});
  Result<Grid> grid =
      makeGrid(points, {"tokens", "in", "out"}, path + ".linear");
  if (!grid)
    return Result<KernelRates>::failure(grid.error);
  r.linearGrid_ = std::move(*grid);
  for (bool causal : {false, true}) {
    points.clear();
    std::vector<size_t> entries;
    for (size_t e = 0; e < attention.size(); ++e)
      if (attention[e].shape.causal == causal) {
        points.push_back({double(attention[e].shape.seqLen),
                          double(attention[e].shape.headDim)});
        entries.push_back(e);
      }
    const std::string where =
        path + ".attention (causal " + (causal ? "true" : "false") + ")";
    if (points.empty())
      return Result<KernelRates>::failure(
          where + ": expected at least one shape, got none");
    Result<Grid> g = makeGrid(points, {"seq_len", "head_dim"}, where);
    if (!g)
      return Result<KernelRates>::failure(g.error);
    // The grid indexes this variant's entries: map them to attention's.
    for (size_t &e : g->entryAt)
      e = entries[e];
    r.attentionGrid_[causal] = std::move(*g);
  }
  if (!positive(other))
    return Result<KernelRates>::failure(
        path + ".other: expected a positive number of FLOP per second");
  r.linear_ = std::move(linear);
  r.attention_ = std::move(attention);
  r.other_ = other;
  r.measured_ = std::move(measured);
  return Result<KernelRates>::success(std::move(r));
}

LinearRate KernelRates::linear(const LinearShape &shape) const {
  const std::vector<double> point = {double(shape.tokens), double(shape.in),
                                     double(shape.out)};
  LinearRate rate;
  rate.shape = shape;
  rate.forward = interpolate(linearGrid_, point,
                             [&](size_t e) { return linear_[e].forward; });
  rate.inputGrad = interpolate(linearGrid_, point,
                               [&](size_t e) { return linear_[e].inputGrad; });
  rate.weightGrad = interpolate(
      linearGrid_, point, [&](size_t e) { return linear_[e].weightGrad; });
  return rate;
}

AttentionRate KernelRates::attention(const AttentionShape &shape) const {
  const Grid &g = attentionGrid_[shape.causal];
  const std::vector<double> point = {double(shape.seqLen),
                                     double(shape.headDim)};
  AttentionRate rate;
  rate.shape = shape;
  rate.forward =
      interpolate(g, point, [&](size_t e) { return attention_[e].forward; });
  rate.backward =
      interpolate(g, point, [&](size_t e) { return attention_[e].backward; });
  return rate;
}

ComputeTimes KernelRates::timesOf(const ComputeWork &work) const {
  ComputeTimes t;
  for (const LinearWork &l : work.linears) {
    const double flops = l.count * l.shape.productFlops();
    const LinearRate rate = linear(l.shape);
    t.forward += flops / rate.forward;
    t.inputGrad += flops / rate.inputGrad;
    t.weightGrad += flops / rate.weightGrad;
  }
  for (const AttentionWork &a : work.attentions) {
    const AttentionRate rate = attention(a.shape);
    t.forward += a.forwardFlops / rate.forward;
    t.inputGrad += 2 * a.forwardFlops / rate.backward;
  }
  t.forward += work.otherForwardFlops / other_;
  t.inputGrad += work.otherBackwardFlops / other_;
  t.weightGrad += work.otherWeightGradFlops / other_;
  t.forward /= runFraction;
  t.inputGrad /= runFraction;
  t.weightGrad /= runFraction;
  return t;
}

namespace {

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

std::string field(const char *name, const std::string &value) {
  return json::quote(name) + ": " + value;
}

} // namespace

std::string KernelRates::toJson() const {
  namespace f = kernel_rates_field;
  std::string out = "{\n  " + field(f::kMeasured, json::quote(measured_)) +
                    ",\n  " + json::quote(f::kLinear) + ": [";
  const char *separator = "\n    ";
  for (const LinearRate &r : linear_) {
    out += separator;
    out += "{ " + field(f::kTokens, std::to_string(r.shape.tokens)) + ", " +
           field(f::kIn, std::to_string(r.shape.in)) + ", " +
           field(f::kOut, std::to_string(r.shape.out)) + ", " +
           field(f::kForward, number(r.forward)) + ", " +
           field(f::kInputGrad, number(r.inputGrad)) + ", " +
           field(f::kWeightGrad, number(r.weightGrad)) + " }";
    separator = ",\n    ";
  }
  out += "\n  ],\n  " + json::quote(f::kAttention) + ": [";
  separator = "\n    ";
  for (const AttentionRate &r : attention_) {
    out += separator;
    out += "{ " + field(f::kSeqLen, std::to_string(r.shape.seqLen)) + ", " +
           field(f::kHeadDim, std::to_string(r.shape.headDim)) + ", " +
           field(f::kCausal, r.shape.causal ? "true" : "false") + ", " +
           field(f::kForward, number(r.forward)) + ", " +
           field(f::kBackward, number(r.backward)) + " }";
    separator = ",\n    ";
  }
  out += "\n  ],\n  " + field(f::kOther, number(other_));
  if (runFraction != 1)
    out += ",\n  " + field(f::kRunFraction, number(runFraction));
  if (splitFraction != 1)
    out += ",\n  " + field(f::kSplitFraction, number(splitFraction));
  return out + "\n}\n";
}

} // namespace bitpipe::sched
