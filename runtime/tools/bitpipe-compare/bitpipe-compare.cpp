//===- bitpipe-compare.cpp - Are two training results the same? -----------===//
//
//   bitpipe-compare [--rtol R] CANDIDATE.safetensors REFERENCE.safetensors
//   bitpipe-compare [--rtol R] --metrics CANDIDATE.jsonl REFERENCE.jsonl
//
// The check behind the end-to-end equivalence tests: a pipeline-parallel run
// must reach the parameters and losses of a one-process run, up to the
// reordering of floating-point sums.
//
// Parameters: every F32 tensor of the candidate (one rank's parameters) must
// exist in the reference with the same shape and satisfy
//     max |c - r|  <=  rtol * max |r|        (per tensor)
// The bound is relative to the tensor's scale rather than element-wise:
// reordered sums perturb every element by about the same absolute amount,
// so an element-wise bound would fail on elements that happen to be near 0.
//
// Metrics: the JSON lines the executables write with --metrics; the "loss"
// of every step of the reference must be matched, |c - r| <= rtol * |r|.
//
// Exit status: 0 equal, 1 different (each difference is printed), 2 usage or
// unreadable input.
//
//===----------------------------------------------------------------------===//

#include "core/Tensor.h"
#include "train/Json.h"
#include "train/Safetensors.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace bitpipe::runtime;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: bitpipe-compare [--rtol R] CANDIDATE.safetensors "
               "REFERENCE.safetensors\n"
               "       bitpipe-compare [--rtol R] --metrics CANDIDATE.jsonl "
               "REFERENCE.jsonl\n");
  return 2;
}

int unreadable(const Status &status) {
  std::fprintf(stderr, "bitpipe-compare: %s\n", status.message().c_str());
  return 2;
}

int compareParameters(const std::string &candidatePath,
                      const std::string &referencePath, double rtol) {
  auto candidate = SafetensorsReader::open(candidatePath);
  if (!candidate.isOk())
    return unreadable(candidate.status());
  auto reference = SafetensorsReader::open(referencePath);
  if (!reference.isOk())
    return unreadable(reference.status());

  int differences = 0;
  double worst = 0;
  std::string worstName;
  for (const SafetensorsEntry &entry : (*candidate)->tensors()) {
    if (entry.dtype != "F32")
      continue;
    const SafetensorsEntry *ref = (*reference)->find(entry.name);
    if (!ref || ref->shape != entry.shape) {
      std::printf("%s: %s in the candidate, %s in the reference\n",
                  entry.name.c_str(), shapeToString(entry.shape).c_str(),
                  ref ? shapeToString(ref->shape).c_str() : "absent");
      ++differences;
      continue;
    }
    size_t n = 1;
    for (int64_t d : entry.shape)
      n *= static_cast<size_t>(d);
    std::vector<float> c(n), r(n);
    Status s = (*candidate)->readF32(entry.name, entry.shape, c.data());
    if (!s.isOk())
      return unreadable(s);
    s = (*reference)->readF32(entry.name, entry.shape, r.data());
    if (!s.isOk())
      return unreadable(s);
    double maxDiff = 0, scale = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; ++i) {
      double d = std::fabs(double(c[i]) - double(r[i]));
      if (!(d <= maxDiff)) { // also catches NaN
        maxDiff = std::isnan(d) ? INFINITY : d;
        at = i;
      }
      scale = std::fmax(scale, std::fabs(double(r[i])));
    }
    double rel = scale > 0 ? maxDiff / scale : maxDiff;
    if (rel > worst) {
      worst = rel;
      worstName = entry.name;
    }
    if (rel > rtol) {
      std::printf("%s: max |c - r| = %.3g at element %zu (c = %.9g, r = "
                  "%.9g), %.3g of max |r| = %.3g\n",
                  entry.name.c_str(), maxDiff, at, c[at], r[at], rel, scale);
      ++differences;
    }
  }
  std::printf("%s: %zu tensors against %s, worst %.3g (%s), tolerance %.3g: "
              "%s\n",
              candidatePath.c_str(), (*candidate)->tensors().size(),
              referencePath.c_str(), worst,
              worstName.empty() ? "-" : worstName.c_str(), rtol,
              differences ? "DIFFERENT" : "equal");
  return differences ? 1 : 0;
}

/// step -> loss of a --metrics file.
bool readLosses(const std::string &path, std::map<int64_t, double> &losses) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "bitpipe-compare: cannot read %s\n", path.c_str());
    return false;
  }
  std::string line;
  int lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    if (line.empty())
      continue;
    auto value = parseJson(line);
    const JsonValue *step = value.isOk() ? value->get("step") : nullptr;
    const JsonValue *loss = value.isOk() ? value->get("loss") : nullptr;
    if (!step || !loss || !step->isInteger ||
        loss->kind != JsonValue::Kind::Number) {
      std::fprintf(stderr,
                   "bitpipe-compare: %s:%d: expected a JSON object with an "
                   "integer \"step\" and a number \"loss\"\n",
                   path.c_str(), lineNo);
      return false;
    }
    losses[step->integer] = loss->number;
  }
  return true;
}

int compareMetrics(const std::string &candidatePath,
                   const std::string &referencePath, double rtol) {
  std::map<int64_t, double> candidate, reference;
  if (!readLosses(candidatePath, candidate) ||
      !readLosses(referencePath, reference))
    return 2;
  if (reference.empty()) {
    std::fprintf(stderr, "bitpipe-compare: %s has no steps\n",
                 referencePath.c_str());
    return 2;
  }
  int differences = 0;
  for (const auto &[step, r] : reference) {
    auto it = candidate.find(step);
    if (it == candidate.end()) {
      std::printf("step %lld: missing from %s\n", (long long)step,
                  candidatePath.c_str());
      ++differences;
      continue;
    }
    double rel = std::fabs(it->second - r) / std::fmax(std::fabs(r), 1e-30);
    std::printf("step %lld: loss %.9g vs %.9g (rel %.3g)\n", (long long)step,
                it->second, r, rel);
    if (!(rel <= rtol))
      ++differences;
  }
  std::printf("%s: %zu steps against %s, tolerance %.3g: %s\n",
              candidatePath.c_str(), reference.size(), referencePath.c_str(),
              rtol, differences ? "DIFFERENT" : "equal");
  return differences ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  double rtol = 1e-5;
  bool metrics = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--rtol" && i + 1 < argc) {
      char *end = nullptr;
      rtol = std::strtod(argv[++i], &end);
      if (*end || !(rtol >= 0))
        return usage();
    } else if (arg == "--metrics") {
      metrics = true;
    } else if (!arg.empty() && arg[0] == '-') {
      return usage();
    } else {
      files.push_back(arg);
    }
  }
  if (files.size() != 2)
    return usage();
  return metrics ? compareMetrics(files[0], files[1], rtol)
                 : compareParameters(files[0], files[1], rtol);
}
