//===- bitpipe-compare.cpp - Are two training results the same? -----------===//
//
//   bitpipe-compare [--rtol R] [--atol A] [--update-from INIT]
//                   --reference REFERENCE.safetensors RANK.safetensors...
//   bitpipe-compare [--rtol R] --metrics CANDIDATE.jsonl REFERENCE.jsonl
//
// The check behind the end-to-end tests: a pipeline-parallel run must reach
// the parameters and losses of a reference (a one-process run, or the
// independent float64 reference), up to the reordering of floating-point
// sums.
//
// Parameters: the candidate is the whole model, given as the parameter
// dumps of every rank of one run. Together they must hold every tensor of
// the reference, and nothing else: a tensor missing from all ranks, a
// tensor the reference lacks, a shape that differs or a dump that holds no
// tensor at all is a difference. A tensor held by several ranks (BitPipe's
// replica pairs, data-parallel copies) must be bit for bit the same on all
// of them: replicas apply the same summed gradient, so any difference is a
// fault. Each tensor then satisfies
//     max |c - r|  <=  rtol * max |r| + atol               (per tensor)
// The bound is per tensor rather than element-wise: reordered sums perturb
// every element by about the same absolute amount, so an element-wise bound
// would fail on elements that happen to be near 0.
// With --update-from INIT (the parameters both runs started from), the
// bound is on the update instead, in the L2 norm over the tensor:
//     || c - r ||_2  <=  rtol * || r - INIT ||_2 + atol
// This is the bound for a float32 run against a float64 reference after
// AdamW steps: AdamW divides each element's gradient by its own running
// magnitude, so an element whose gradient is as small as the float32
// rounding of the sums that form it (the attention's key bias, zero in
// exact arithmetic; a weight of a GELU unit that barely fires) may move by
// up to lr per step differently in the two precisions. An element-wise
// bound would have to allow lr x steps, and would then pass a run whose
// optimizer did nothing; over a whole tensor those elements are few, and
// the norm of the update's error stays far below the norm of the update.
//
// Metrics: the JSON lines the executables write with --metrics; every step
// of the reference must be in the candidate, its "loss" within
// |c - r| <= rtol * |r|, its "grad_norm", when the reference has one,
// within --grad-norm-rtol (default: rtol), its "eval_loss", when the
// reference has one, within rtol, and its "lr", when the reference has one,
// within 1e-12 (the learning rate is formed in double on both sides and
// written to the digits that read back exactly).
//
// Exit status: 0 equal, 1 different (each difference is printed), 2 usage or
// unreadable input.
//
//===----------------------------------------------------------------------===//

#include "core/Flags.h"
#include "core/Json.h"
#include "core/Tensor.h"
#include "train/Safetensors.h"
#include "train/StepLog.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace bitpipe::runtime;

namespace {

int usage() {
  std::fprintf(
      stderr,
      "usage: bitpipe-compare [--rtol R] [--atol A] [--update-from INIT]\n"
      "                       --reference REFERENCE.safetensors "
      "RANK.safetensors...\n"
      "       bitpipe-compare [--rtol R] [--grad-norm-rtol G] --metrics "
      "CANDIDATE.jsonl REFERENCE.jsonl\n");
  return 2;
}

int unreadable(const Status &status) {
  std::fprintf(stderr, "bitpipe-compare: %s\n", status.message().c_str());
  return 2;
}

struct Tolerance {
  double rtol = 1e-5;
  double atol = 0;
  double gradNormRtol = -1; // < 0: rtol
};

size_t elementCount(const std::vector<int64_t> &shape) {
  size_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<size_t>(d);
  return n;
}

/// The parameter dumps of one run, opened, and which of them holds each
/// tensor.
struct Dumps {
  std::vector<std::string> paths;
  std::vector<std::unique_ptr<SafetensorsReader>> readers;
  std::map<std::string, std::vector<size_t>> holders;
};

/// Opens every dump; counts each problem with their contents (no tensor,
/// a tensor that is not F32) in \p problems.
Expected<Dumps> openDumps(const std::vector<std::string> &paths,
                          int &problems) {
  Dumps dumps;
  dumps.paths = paths;
  for (size_t i = 0; i < paths.size(); ++i) {
    Expected<std::unique_ptr<SafetensorsReader>> r =
        SafetensorsReader::open(paths[i]);
    if (!r.isOk())
      return r.status();
    dumps.readers.push_back(r.take());
    const std::vector<SafetensorsEntry> &tensors =
        dumps.readers.back()->tensors();
    if (tensors.empty()) {
      std::printf("%s: holds no tensors (an empty dump covers nothing)\n",
                  paths[i].c_str());
      ++problems;
    }
    for (const SafetensorsEntry &e : tensors) {
      if (e.dtype != "F32") {
        std::printf("%s: %s is %s; parameters are F32\n", paths[i].c_str(),
                    e.name.c_str(), e.dtype.c_str());
        ++problems;
        continue;
      }
      dumps.holders[e.name].push_back(i);
    }
  }
  return dumps;
}

Status readTensor(const SafetensorsReader &reader,
                  const SafetensorsEntry &entry, std::vector<float> &out) {
  out.resize(elementCount(entry.shape));
  return reader.readF32(entry.name, entry.shape, out.data());
}

/// Every holder of \p name must have the reference's shape and the same
/// values as the first holder, bit for bit.
Expected<bool> replicasAgree(const Dumps &dumps, const std::string &name,
                             const SafetensorsEntry &ref,
                             std::vector<float> &first) {
  const std::vector<size_t> &holders = dumps.holders.at(name);
  bool agree = true;
  std::vector<float> other;
  for (size_t k = 0; k < holders.size(); ++k) {
    const SafetensorsReader &reader = *dumps.readers[holders[k]];
    const SafetensorsEntry *e = reader.find(name);
    if (e->shape != ref.shape) {
      std::printf("%s: %s is %s; the reference's is %s\n",
                  dumps.paths[holders[k]].c_str(), name.c_str(),
                  shapeToString(e->shape).c_str(),
                  shapeToString(ref.shape).c_str());
      agree = false;
      continue;
    }
    Status s = readTensor(reader, *e, k == 0 ? first : other);
    if (!s.isOk())
      return s;
    if (k == 0 || std::memcmp(first.data(), other.data(),
                              first.size() * sizeof(float)) == 0)
      continue;
    size_t at = 0;
    while (at < first.size() &&
           std::memcmp(&first[at], &other[at], sizeof(float)) == 0)
      ++at;
    std::printf("%s: replicas differ: %s has %.9g at element %zu, %s has "
                "%.9g\n",
                name.c_str(), dumps.paths[holders[0]].c_str(), first[at], at,
                dumps.paths[holders[k]].c_str(), other[at]);
    agree = false;
  }
  return agree;
}

/// How far a candidate tensor is from the reference's, and the scale the
/// tolerance is relative to.
struct Deviation {
  double error = 0;
  double scale = 0;
  size_t at = 0; // the element that differs most
};

/// max |c - r| against max |r|.
Deviation valueDeviation(const std::vector<float> &c,
                         const std::vector<float> &r) {
  Deviation d;
  for (size_t i = 0; i < r.size(); ++i) {
    double e = std::fabs(double(c[i]) - double(r[i]));
    if (!(e <= d.error)) { // NaN sticks
      d.error = std::isnan(e) ? INFINITY : e;
      d.at = i;
    }
    d.scale = std::fmax(d.scale, std::fabs(double(r[i])));
  }
  return d;
}

/// ||c - r||_2 against ||r - r0||_2.
Deviation updateDeviation(const std::vector<float> &c,
                          const std::vector<float> &r,
                          const std::vector<float> &r0) {
  Deviation d;
  double worst = -1, sumErr = 0, sumUpdate = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    double e = double(c[i]) - double(r[i]);
    double u = double(r[i]) - double(r0[i]);
    sumErr += e * e;
    sumUpdate += u * u;
    if (!(std::fabs(e) <= worst)) {
      worst = std::isnan(e) ? INFINITY : std::fabs(e);
      d.at = i;
    }
  }
  d.error = std::sqrt(sumErr);
  d.scale = std::sqrt(sumUpdate);
  return d;
}

int compareParameters(const std::vector<std::string> &candidatePaths,
                      const std::string &referencePath,
                      const std::string &initPath, Tolerance tol) {
  int differences = 0;
  Expected<Dumps> dumps = openDumps(candidatePaths, differences);
  if (!dumps.isOk())
    return unreadable(dumps.status());
  auto reference = SafetensorsReader::open(referencePath);
  if (!reference.isOk())
    return unreadable(reference.status());
  std::unique_ptr<SafetensorsReader> init;
  if (!initPath.empty()) {
    auto opened = SafetensorsReader::open(initPath);
    if (!opened.isOk())
      return unreadable(opened.status());
    init = opened.take();
  }

  for (const auto &[name, holders] : dumps->holders)
    if (!(*reference)->find(name)) {
      std::printf("%s: in %s, absent from the reference\n", name.c_str(),
                  candidatePaths[holders[0]].c_str());
      ++differences;
    }

  size_t compared = 0;
  double worst = 0;
  std::string worstName;
  std::vector<float> c, r, r0;
  for (const SafetensorsEntry &ref : (*reference)->tensors()) {
    // Every tensor of the reference is compared or is a difference: one
    // left out would let a run pass on the rest.
    if (ref.dtype != "F32") {
      std::printf("%s: the reference's is %s; parameters are F32\n",
                  ref.name.c_str(), ref.dtype.c_str());
      ++differences;
      continue;
    }
    if (!dumps->holders.count(ref.name)) {
      std::printf("%s: held by no rank (%zu dumps)\n", ref.name.c_str(),
                  candidatePaths.size());
      ++differences;
      continue;
    }
    Expected<bool> agree = replicasAgree(*dumps, ref.name, ref, c);
    if (!agree.isOk())
      return unreadable(agree.status());
    if (!*agree) {
      ++differences;
      continue;
    }
    Status s = readTensor(**reference, ref, r);
    if (!s.isOk())
      return unreadable(s);
    if (init) {
      const SafetensorsEntry *e = init->find(ref.name);
      if (!e || e->shape != ref.shape) {
        std::printf("%s: %s in --update-from %s\n", ref.name.c_str(),
                    e ? "another shape" : "absent", initPath.c_str());
        ++differences;
        continue;
      }
      s = readTensor(*init, *e, r0);
      if (!s.isOk())
        return unreadable(s);
    }
    Deviation dev = init ? updateDeviation(c, r, r0) : valueDeviation(c, r);
    ++compared;
    double bound = tol.rtol * dev.scale + tol.atol;
    double rel = dev.error / std::fmax(bound, 1e-300);
    if (!(rel <= worst)) {
      worst = rel;
      worstName = ref.name;
    }
    if (!(dev.error <= bound)) { // also catches NaN
      std::printf("%s: %s = %.3g (worst at element %zu: c = %.9g, r = "
                  "%.9g); allowed %.3g (rtol %.3g x %s %.3g + atol %.3g)\n",
                  ref.name.c_str(), init ? "||c - r||_2" : "max |c - r|",
                  dev.error, dev.at, c[dev.at], r[dev.at], bound, tol.rtol,
                  init ? "||r - init||_2" : "max |r|", dev.scale, tol.atol);
      ++differences;
    }
  }
  std::printf("%zu file(s) against %s: %zu tensors compared, worst "
              "%.3g of its allowance (%s): %s\n",
              candidatePaths.size(), referencePath.c_str(), compared, worst,
              worstName.empty() ? "-" : worstName.c_str(),
              differences ? "DIFFERENT" : "equal");
  return differences ? 1 : 0;
}

/// One step of a --metrics file; grad_norm, lr and eval_loss are NaN when
/// the line has none.
struct StepMetrics {
  double loss = 0;
  double gradNorm = NAN;
  double lr = NAN;
  double evalLoss = NAN;
};

bool readMetrics(const std::string &path,
                 std::map<int64_t, StepMetrics> &steps) {
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
    const JsonValue *step =
        value.isOk() ? value->get(metrics_key::kStep) : nullptr;
    const JsonValue *loss =
        value.isOk() ? value->get(metrics_key::kLoss) : nullptr;
    const JsonValue *norm =
        value.isOk() ? value->get(metrics_key::kGradNorm) : nullptr;
    const JsonValue *lr = value.isOk() ? value->get(metrics_key::kLr) : nullptr;
    const JsonValue *eval =
        value.isOk() ? value->get(metrics_key::kEvalLoss) : nullptr;
    auto optionalNumber = [](const JsonValue *v) {
      return !v || v->kind == JsonValue::Kind::Number;
    };
    if (!step || !loss || !step->isInteger ||
        loss->kind != JsonValue::Kind::Number || !optionalNumber(norm) ||
        !optionalNumber(lr) || !optionalNumber(eval)) {
      std::fprintf(stderr,
                   "bitpipe-compare: %s:%d: expected a JSON object with an "
                   "integer \"step\", a number \"loss\" and optionally "
                   "numbers \"grad_norm\", \"lr\" and \"eval_loss\"\n",
                   path.c_str(), lineNo);
      return false;
    }
    steps[step->integer] = {loss->number, norm ? norm->number : NAN,
                            lr ? lr->number : NAN, eval ? eval->number : NAN};
  }
  return true;
}

/// Compares one quantity of one step; prints it; true when within rtol.
bool sameQuantity(int64_t step, const char *what, double c, double r,
                  double rtol) {
  double rel = std::fabs(c - r) / std::fmax(std::fabs(r), 1e-30);
  bool same = rel <= rtol; // false for NaN
  std::printf("step %lld: %s %.9g vs %.9g (rel %.3g)%s\n", (long long)step,
              what, c, r, rel, same ? "" : " DIFFERENT");
  return same;
}

int compareMetrics(const std::string &candidatePath,
                   const std::string &referencePath, Tolerance tol) {
  double rtol = tol.rtol;
  double normRtol = tol.gradNormRtol >= 0 ? tol.gradNormRtol : tol.rtol;
  std::map<int64_t, StepMetrics> candidate, reference;
  if (!readMetrics(candidatePath, candidate) ||
      !readMetrics(referencePath, reference))
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
    if (!sameQuantity(step, metrics_key::kLoss, it->second.loss, r.loss, rtol))
      ++differences;
    if (!std::isnan(r.gradNorm) &&
        !sameQuantity(step, metrics_key::kGradNorm, it->second.gradNorm,
                      r.gradNorm, normRtol))
      ++differences;
    if (!std::isnan(r.lr) &&
        !sameQuantity(step, metrics_key::kLr, it->second.lr, r.lr, 1e-12))
      ++differences;
    if (!std::isnan(r.evalLoss) &&
        !sameQuantity(step, metrics_key::kEvalLoss, it->second.evalLoss,
                      r.evalLoss, rtol))
      ++differences;
  }
  // Steps past the reference's are not compared; say how many.
  size_t beyond = 0;
  for (const auto &entry : candidate)
    beyond += !reference.count(entry.first);
  std::string extra = beyond ? " (" + std::to_string(beyond) + " more in " +
                                   candidatePath +
                                   ", not in the reference, not compared)"
                             : "";
  std::printf("%s: %zu steps against %s%s, tolerance %.3g: %s\n",
              candidatePath.c_str(), reference.size(), referencePath.c_str(),
              extra.c_str(), rtol, differences ? "DIFFERENT" : "equal");
  return differences ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  Tolerance tol;
  bool metrics = false;
  std::string referencePath, initPath;
  std::vector<std::string> files;
  FlagSet flags;
  flags.number("--rtol", "R", "relative tolerance", &tol.rtol, 0, false)
      .number("--grad-norm-rtol", "G",
              "relative tolerance of gradient norms (default: --rtol)",
              &tol.gradNormRtol, 0, false)
      .number("--atol", "A", "absolute tolerance", &tol.atol, 0, false)
      .text("--reference", "REFERENCE.safetensors", "the reference",
            &referencePath)
      .text("--update-from", "INIT",
            "compare updates from these parameters, not values", &initPath)
      .toggle("--metrics", "compare two metrics files instead", &metrics);
  Status parsed = flags.parse(argc, argv, &files);
  if (!parsed.isOk()) {
    std::fprintf(stderr, "bitpipe-compare: %s\n", parsed.message().c_str());
    return usage();
  }
  if (metrics) {
    if (files.size() != 2 || !referencePath.empty() || !initPath.empty())
      return usage();
    return compareMetrics(files[0], files[1], tol);
  }
  if (referencePath.empty() || files.empty())
    return usage();
  return compareParameters(files, referencePath, initPath, tol);
}
