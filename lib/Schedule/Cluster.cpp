//===- Cluster.cpp - Cluster descriptions and link costs ------------------===//
//
// The file format and the cost formulas are documented in docs/clusters.md.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Cluster.h"

#include "bitpipe/base/JsonTree.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace bitpipe::sched {

using json::JsonValue;

ComputeTimes Cluster::computeTimes(const ComputeWork &work,
                                   bool splitBackward) const {
  if (kernelRates) {
    ComputeTimes t = kernelRates->timesOf(work);
    if (splitBackward) {
      t.inputGrad /= kernelRates->splitFraction;
      t.weightGrad /= kernelRates->splitFraction;
    }
    return t;
  }
  const double rate = achievableFlops();
  return {work.forwardFlops() / rate, work.inputGradFlops() / rate,
          work.weightGradFlops() / rate};
}
LinkClass Cluster::linkBetween(int a, int b) const {
  if (a == b)
    return LinkClass::Local;
  return nodeOf(a) == nodeOf(b) ? LinkClass::IntraNode : LinkClass::InterNode;
}

LinkCost Cluster::interNode() const {
  return {interNodeLatency, interNodeBandwidthPerNode / gpusPerNode};
}

LinkCost Cluster::cost(LinkClass link) const {
  switch (link) {
  case LinkClass::Local:
    break;
  case LinkClass::IntraNode:
    return intraNode;
  case LinkClass::InterNode:
    return interNode();
  }
  // Free: a latency of 0 and an infinite bandwidth.
  return {0, HUGE_VAL};
}

const char *linkClassName(LinkClass link) {
  switch (link) {
  case LinkClass::Local:
    return "local";
  case LinkClass::IntraNode:
    return "intra_node";
  case LinkClass::InterNode:
    return "inter_node";
  }
  return "?";
}

double transferTime(const Cluster &cluster, double bytes, int srcWorld,
                    int dstWorld) {
  LinkClass link = cluster.linkBetween(srcWorld, dstWorld);
  return link == LinkClass::Local ? 0.0 : cluster.cost(link).time(bytes);
}

LinkClass groupSpan(const Cluster &cluster,
                    const std::vector<int> &worldRanks) {
  if (worldRanks.size() <= 1)
    return LinkClass::Local;
  for (int r : worldRanks)
    if (cluster.nodeOf(r) != cluster.nodeOf(worldRanks.front()))
      return LinkClass::InterNode;
  return LinkClass::IntraNode;
}

double ringAllReduceTime(const Cluster &cluster, double bytes,
                         const std::vector<int> &worldRanks) {
  int n = static_cast<int>(worldRanks.size());
  if (n <= 1)
    return 0.0;
  LinkCost link = cluster.cost(groupSpan(cluster, worldRanks));
  return 2.0 * (n - 1) * (link.latency + bytes / (n * link.bandwidth));
}

std::string Deployment::check(int pipelineRanks) const {
  if (world.pipelineDevices != pipelineRanks)
    return "the deployment's world has " +
           std::to_string(world.pipelineDevices) +
           " pipeline ranks, the schedule " + std::to_string(pipelineRanks);
  if (world.dataParallel < 1)
    return "the deployment's world has " + std::to_string(world.dataParallel) +
           " data-parallel copies, expected at least 1";
  if (copy < 0 || copy >= world.dataParallel)
    return "the deployment's copy is " + std::to_string(copy) +
           ", expected 0 to " + std::to_string(world.dataParallel - 1);
  if (world.size() > cluster.size())
    return "the world has " + std::to_string(world.size()) +
           " ranks, but cluster " + cluster.name + " has " +
           std::to_string(cluster.size()) + " GPUs (" +
           std::to_string(cluster.nodes) +
           (cluster.nodes == 1 ? " node x " : " nodes x ") +
           std::to_string(cluster.gpusPerNode) + ")";
  return "";
}

namespace {

/// The values a numeric field may take: what a machine can physically
/// have, so that a typo or a wrong unit (1e400 read as infinity, a
/// bandwidth of 1e-300) is refused where it is read instead of turning
/// predictions into inf or NaN. docs/clusters.md lists them.
struct FieldRange {
  double min, max;
  bool minExclusive; // (min, max] rather than [min, max]
  const char *what;  // "a number of bytes", "an integer"

  bool contains(double x) const {
    return (minExclusive ? x > min : x >= min) && x <= max;
  }
  std::string expected() const {
    return std::string(what) + (minExclusive ? " above " : " from ") +
           format(min) + (minExclusive ? ", at most " : " to ") + format(max);
  }
  static std::string format(double x) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", x);
    return text;
  }
};

// One definition per field.
constexpr FieldRange kNodes{1, kMaxNodes, false, "an integer"};
constexpr FieldRange kGpusPerNode{1, kMaxGpusPerNode, false, "an integer"};
constexpr FieldRange kMemoryBytes{1 << 20, 1e15, false, "a number of bytes"};
constexpr FieldRange kPeakFlops{1e6, 1e18, false,
                                "a number of FLOP per second"};
constexpr FieldRange kAchievableFraction{0, 1, true, "a fraction"};
constexpr FieldRange kLatency{0, 10, false, "a number of seconds"};
// Up to 1e20: "ideal" links stand for free ones (a100-4x8-ideal-links.json).
constexpr FieldRange kGpuBandwidth{
    1e3, 1e20, false, "a number of bytes per second (per GPU, per direction)"};
constexpr FieldRange kNodeBandwidth{
    1e3, 1e20, false,
    "a number of bytes per second (a node's NICs together, per direction)"};
// kernel_rates: shapes are whole numbers of elements; rates a machine's
// (a kernel's FLOP/s, from a slow CPU core's memory-bound loops to a
// GPU's peak).
constexpr FieldRange kShapeSize{1, 1e9, false, "an integer"};
constexpr FieldRange kRate{1e3, 1e18, false, "a number of FLOP per second"};
constexpr FieldRange kFraction{0, 1, true, "a fraction"};

/// Reads the members of one JSON object, each exactly once, and reports
/// missing, ill-typed and unknown members by their dotted path.
class Fields {
public:
  Fields(const std::string &file, std::string path, const JsonValue &object,
         std::string &error)
      : file_(file), path_(std::move(path)), object_(object), error_(error) {}

  /// A number `accept` takes; `expected` says which, for the message.
  template <class Accept>
  double number(const char *key, const std::string &expected, Accept accept) {
    const JsonValue *v = member(key, expected);
    if (!v)
      return 0;
    if (v->kind != JsonValue::Kind::Number || !accept(v->number))
      fail(key, expected, v->str());
    return v->number;
  }

  /// A number of \p range.
  double ranged(const char *key, const FieldRange &range) {
    return number(key, range.expected(),
                  [&](double x) { return range.contains(x); });
  }

  /// An integer from 1 to \p range's maximum.
  int count(const char *key, const FieldRange &range) {
    double x = number(key, range.expected(), [&](double x) {
      return range.contains(x) && std::floor(x) == x;
    });
    return error_.empty() ? static_cast<int>(x) : 0;
  }

  std::string string(const char *key) {
    const JsonValue *v = member(key, "a string");
    if (!v)
      return "";
    if (v->kind != JsonValue::Kind::String)
      fail(key, "a string", v->str());
    return v->string;
  }

  /// An optional string that, when given, says something: "" when absent.
  std::string optionalText(const char *key) {
    if (!has(key)) {
      expectOptional(key);
      return "";
    }
    std::string text = string(key);
    if (error_.empty() && text.find_first_not_of(" \t\n") == std::string::npos)
      fail(key, "a non-empty string", "\"" + text + "\"");
    return text;
  }

  /// The member object `key`, or null (with the error set).
  const JsonValue *object(const char *key) {
    const JsonValue *v = member(key, "an object");
    if (v && v->kind != JsonValue::Kind::Object) {
      fail(key, "an object", v->str());
      return nullptr;
    }
    return v;
  }

  bool boolean(const char *key) {
    const JsonValue *v = member(key, "true or false");
    if (!v)
      return false;
    if (v->kind != JsonValue::Kind::Bool)
      fail(key, "true or false", v->str());
    return v->boolean;
  }

  /// The member array `key` of objects, or null (with the error set).
  const JsonValue *arrayOfObjects(const char *key) {
    const JsonValue *v = member(key, "an array of objects");
    if (!v)
      return nullptr;
    bool ok = v->kind == JsonValue::Kind::Array;
    for (size_t i = 0; ok && i < v->array.size(); ++i)
      ok = v->array[i].kind == JsonValue::Kind::Object;
    if (!ok) {
      fail(key, "an array of objects", v->str());
      return nullptr;
    }
    return v;
  }

  bool has(const char *key) const { return object_.get(key) != nullptr; }
  /// Lets finish() accept `key` without reading it here.
  void expectOptional(const char *key) { known_.push_back(key); }
  std::string pathOf(const char *key) const { return join(key); }

  /// Reports the first member that no call above asked for.
  void finish() {
    for (const auto &[key, value] : object_.object) {
      if (std::count(known_.begin(), known_.end(), key))
        continue;
      std::string list;
      for (size_t i = 0; i < known_.size(); ++i)
        list += (i == 0 ? "" : i + 1 == known_.size() ? " or " : ", ") +
                known_[i];
      setError(join(key), "one of " + list, "the unknown field \"" + key + "\"");
      return;
    }
  }

private:
  std::string join(const std::string &key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  const JsonValue *member(const char *key, const std::string &expected) {
    known_.push_back(key);
    const JsonValue *v = object_.get(key);
    if (!v)
      setError(join(key), expected, "nothing (the field is missing)");
    return error_.empty() ? v : nullptr;
  }

  void fail(const char *key, const std::string &expected,
            const std::string &got) {
    setError(join(key), expected, got);
  }

  void setError(const std::string &path, const std::string &expected,
                const std::string &got) {
    if (error_.empty())
      error_ = file_ + ": " + path + ": expected " + expected + ", got " + got;
  }

  const std::string &file_;
  std::string path_;
  const JsonValue &object_;
  std::string &error_;
  std::vector<std::string> known_;
};

/// `kernel_rates` (docs/clusters.md, "Compute rates by kernel shape").
std::optional<KernelRates> parseKernelRates(const std::string &file,
                                            const JsonValue &object,
                                            std::string &error) {
  namespace k = kernel_rates_field;
  const std::string path = k::kObject;
  Fields f(file, path, object, error);
  std::string measured = f.optionalText(k::kMeasured);
  std::vector<LinearRate> linear;
  if (const JsonValue *entries = f.arrayOfObjects(k::kLinear))
    for (size_t i = 0; i < entries->array.size() && error.empty(); ++i) {
      Fields e(file, path + "." + k::kLinear + "[" + std::to_string(i) + "]",
               entries->array[i], error);
      LinearRate r;
      r.shape.tokens = e.count(k::kTokens, kShapeSize);
      r.shape.in = e.count(k::kIn, kShapeSize);
      r.shape.out = e.count(k::kOut, kShapeSize);
      r.forward = e.ranged(k::kForward, kRate);
      r.inputGrad = e.ranged(k::kInputGrad, kRate);
      r.weightGrad = e.ranged(k::kWeightGrad, kRate);
      e.finish();
      linear.push_back(r);
    }
  std::vector<AttentionRate> attention;
  if (const JsonValue *entries = f.arrayOfObjects(k::kAttention))
    for (size_t i = 0; i < entries->array.size() && error.empty(); ++i) {
      Fields e(file, path + "." + k::kAttention + "[" + std::to_string(i) + "]",
               entries->array[i], error);
      AttentionRate r;
      r.shape.seqLen = e.count(k::kSeqLen, kShapeSize);
      r.shape.headDim = e.count(k::kHeadDim, kShapeSize);
      r.shape.causal = e.boolean(k::kCausal);
      r.forward = e.ranged(k::kForward, kRate);
      r.backward = e.ranged(k::kBackward, kRate);
      e.finish();
      attention.push_back(r);
    }
  const double other = f.ranged(k::kOther, kRate);
  double runFraction = 1, splitFraction = 1;
  if (f.has(k::kRunFraction))
    runFraction = f.ranged(k::kRunFraction, kFraction);
  else
    f.expectOptional(k::kRunFraction);
  if (f.has(k::kSplitFraction))
    splitFraction = f.ranged(k::kSplitFraction, kFraction);
  else
    f.expectOptional(k::kSplitFraction);
  f.finish();
  if (!error.empty())
    return std::nullopt;
  Result<KernelRates> rates =
      KernelRates::create(std::move(linear), std::move(attention), other,
                          std::move(measured), file + ": " + path);
  if (!rates) {
    error = rates.error;
    return std::nullopt;
  }
  rates->runFraction = runFraction;
  rates->splitFraction = splitFraction;
  return std::move(*rates);
}

} // namespace

Result<Cluster> parseCluster(std::string_view text,
                             const std::string &fileName) {
  JsonValue root;
  json::JsonError bad;
  if (!json::readJson(text, root, bad)) {
    auto [line, column] = json::lineAndColumn(text, bad.offset);
    return Result<Cluster>::failure(fileName + ": line " +
                                    std::to_string(line) + ", column " +
                                    std::to_string(column) + ": " + bad.what);
  }
  if (root.kind != JsonValue::Kind::Object)
    return Result<Cluster>::failure(
        fileName + ": expected an object at the top level, got " +
        root.kindName());

  std::string error;
  Cluster c;
  Fields top(fileName, "", root, error);
  c.name = top.string("name");
  c.description = top.string("description");
  c.nodes = top.count("nodes", kNodes);
  c.gpusPerNode = top.count("gpus_per_node", kGpusPerNode);
  if (const JsonValue *gpu = top.object("gpu")) {
    Fields g(fileName, "gpu", *gpu, error);
    c.gpuMemoryBytes = g.ranged("memory_bytes", kMemoryBytes);
    c.peakBf16Flops = g.ranged("peak_bf16_flops", kPeakFlops);
    c.achievableFraction = g.ranged("achievable_fraction", kAchievableFraction);
    g.finish();
  }
  if (const JsonValue *links = top.object("links")) {
    Fields l(fileName, "links", *links, error);
    if (const JsonValue *intra = l.object("intra_node")) {
      Fields f(fileName, "links.intra_node", *intra, error);
      c.intraNode.latency = f.ranged("latency", kLatency);
      c.intraNode.bandwidth = f.ranged("bandwidth", kGpuBandwidth);
      f.finish();
    }
    // A single node has no network to describe; more than one must say
    // what theirs is.
    if (error.empty() && c.nodes == 1 && l.has("inter_node"))
      error = fileName + ": " + l.pathOf("inter_node") +
              ": expected no inter_node link on a cluster of 1 node, got one";
    if (error.empty() && c.nodes > 1) {
      if (const JsonValue *inter = l.object("inter_node")) {
        Fields f(fileName, "links.inter_node", *inter, error);
        c.interNodeLatency = f.ranged("latency", kLatency);
        c.interNodeBandwidthPerNode =
            f.ranged("bandwidth_per_node", kNodeBandwidth);
        f.finish();
      }
    } else if (c.nodes == 1) {
      l.expectOptional("inter_node");
    }
    l.finish();
  }
  // Optional: which numbers were fitted on real runs (docs/calibration.md);
  // without it they are assumed, and tools that predict from them say so.
  if (top.has("calibration")) {
    if (const JsonValue *cal = top.object("calibration")) {
      Fields f(fileName, "calibration", *cal, error);
      c.computeCalibration = f.optionalText("compute");
      c.linkCalibration = f.optionalText("links");
      f.finish();
    }
  } else {
    top.expectOptional("calibration");
  }
  // Optional: rates measured by kernel shape; without them every FLOP runs
  // at gpu.peak_bf16_flops x achievable_fraction.
  if (top.has(kernel_rates_field::kObject)) {
    if (const JsonValue *rates = top.object(kernel_rates_field::kObject))
      c.kernelRates = parseKernelRates(fileName, *rates, error);
  } else {
    top.expectOptional(kernel_rates_field::kObject);
  }
  top.finish();
  if (!error.empty())
    return Result<Cluster>::failure(error);
  return Result<Cluster>::success(std::move(c));
}

Result<Cluster> readCluster(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Result<Cluster>::failure(
        path + ": cannot be read: expected a cluster description (JSON, "
               "docs/clusters.md)");
  std::ostringstream text;
  text << in.rdbuf();
  return parseCluster(text.str(), path);
}

} // namespace bitpipe::sched
