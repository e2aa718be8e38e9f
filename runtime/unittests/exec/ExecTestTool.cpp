//===- ExecTestTool.cpp - Data and comparisons for the executor tests -----===//
//
//   ExecTestTool make-data PATH COUNT VOCAB [BAD_POSITION]
//       writes COUNT uint16 tokens below VOCAB (a fixed pseudo-random
//       sequence), with the id VOCAB at BAD_POSITION if given;
//   ExecTestTool compare-tensors REF OTHER RTOL [--atol X] [--same-set]
//                                [--meta KEY]...
//       every tensor of OTHER must be in REF with the same shape and
//       |a - b| <= RTOL * max(|a|, |b|) + X elementwise (RTOL 0 and no
//       --atol: bit-equal);
//       --same-set: and REF has no other tensors; --meta KEY: the metadata
//       values of KEY agree;
//   ExecTestTool compare-metrics REF OTHER RTOL
//       the two --metrics files list the same steps with losses within RTOL;
//   ExecTestTool other-model-checkpoint PATH
//       writes a valid bitpipe checkpoint of another model (one parameter
//       "other.weight" [4, 4]): loading it must be refused.
//
// Exit code 0 when the check holds; otherwise 1 and the first difference.
//
//===----------------------------------------------------------------------===//

#include "core/Json.h"
#include "core/Random.h"
#include "core/Tensor.h"
#include "train/Checkpoint.h"
#include "train/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

using namespace bitpipe::runtime;

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "ExecTestTool: %s\n", message.c_str());
  return 1;
}

int makeData(int argc, char **argv) {
  if (argc < 5)
    return fail("make-data PATH COUNT VOCAB [BAD_POSITION]");
  long long count = std::atoll(argv[3]), vocab = std::atoll(argv[4]);
  long long bad = argc > 5 ? std::atoll(argv[5]) : -1;
  std::vector<uint16_t> tokens(static_cast<size_t>(count));
  for (long long i = 0; i < count; ++i)
    tokens[i] = static_cast<uint16_t>(randomBelow(7, 1, i, vocab));
  if (bad >= 0 && bad < count)
    tokens[bad] = static_cast<uint16_t>(vocab);
  std::FILE *f = std::fopen(argv[2], "wb");
  if (!f)
    return fail(std::string("cannot write ") + argv[2]);
  std::fwrite(tokens.data(), sizeof(uint16_t), tokens.size(), f);
  std::fclose(f);
  return 0;
}

int compareTensors(int argc, char **argv) {
  if (argc < 5)
    return fail("compare-tensors REF OTHER RTOL [--atol X] [--same-set] "
                "[--meta KEY]...");
  double rtol = std::atof(argv[4]), atol = 0;
  bool sameSet = false;
  std::vector<std::string> metaKeys;
  for (int i = 5; i < argc; ++i) {
    if (std::strcmp(argv[i], "--same-set") == 0)
      sameSet = true;
    else if (std::strcmp(argv[i], "--atol") == 0 && i + 1 < argc)
      atol = std::atof(argv[++i]);
    else if (std::strcmp(argv[i], "--meta") == 0 && i + 1 < argc)
      metaKeys.push_back(argv[++i]);
    else
      return fail(std::string("unknown option ") + argv[i]);
  }
  auto ref = SafetensorsReader::open(argv[2]);
  auto other = SafetensorsReader::open(argv[3]);
  if (!ref.isOk())
    return fail(ref.status().message());
  if (!other.isOk())
    return fail(other.status().message());
  if (sameSet && (*ref)->tensors().size() != (*other)->tensors().size())
    return fail(formatString("%s has %zu tensors, %s has %zu", argv[2],
                             (*ref)->tensors().size(), argv[3],
                             (*other)->tensors().size()));
  for (const std::string &key : metaKeys) {
    const std::string *a = (*ref)->metadataValue(key);
    const std::string *b = (*other)->metadataValue(key);
    if (!a || !b || *a != *b)
      return fail("metadata '" + key + "' differs: '" + (a ? *a : "(none)") +
                  "' vs '" + (b ? *b : "(none)") + "'");
  }
  size_t checked = 0;
  for (const SafetensorsEntry &e : (*other)->tensors()) {
    const SafetensorsEntry *r = (*ref)->find(e.name);
    if (!r)
      return fail("tensor '" + e.name + "' of " + argv[3] + " is not in " +
                  argv[2]);
    if (r->shape != e.shape)
      return fail("tensor '" + e.name + "': shape " + shapeToString(e.shape) +
                  " vs " + shapeToString(r->shape));
    std::vector<float> a(static_cast<size_t>(numElements(e.shape))),
        b(a.size());
    Status s = (*ref)->readF32(e.name, e.shape, a.data());
    if (s.isOk())
      s = (*other)->readF32(e.name, e.shape, b.data());
    if (!s.isOk())
      return fail(s.message());
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      double x = a[i], y = b[i];
      double scale = std::max(std::fabs(x), std::fabs(y));
      bool ok = rtol == 0 && atol == 0
                    ? std::memcmp(&a[i], &b[i], sizeof(float)) == 0
                    : std::fabs(x - y) <= rtol * scale + atol;
      if (!ok)
        return fail(formatString("tensor '%s' element %zu: %.9g vs %.9g "
                                 "(rtol %g, atol %g)",
                                 e.name.c_str(), i, x, y, rtol, atol));
      if (scale > 0)
        worst = std::max(worst, std::fabs(x - y) / scale);
    }
    std::printf("%s: %zu elements, max relative difference %.3g\n",
                e.name.c_str(), a.size(), worst);
    ++checked;
  }
  if (checked == 0)
    return fail(std::string(argv[3]) + " has no tensors");
  return 0;
}

/// step -> loss of a --metrics file.
bool readMetrics(const char *path, std::map<long long, double> *out) {
  std::ifstream in(path);
  if (!in)
    return false;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    Expected<JsonValue> j = parseJson(line);
    if (!j.isOk() || !j->get("step") || !j->get("loss"))
      return false;
    (*out)[j->get("step")->integer] = j->get("loss")->number;
  }
  return true;
}

int compareMetrics(int argc, char **argv) {
  if (argc < 5)
    return fail("compare-metrics REF OTHER RTOL");
  double rtol = std::atof(argv[4]);
  std::map<long long, double> a, b;
  if (!readMetrics(argv[2], &a) || !readMetrics(argv[3], &b))
    return fail("cannot read the metrics files");
  if (a.empty() || a.size() != b.size())
    return fail(formatString("%zu steps vs %zu", a.size(), b.size()));
  for (const auto &[step, loss] : a) {
    auto it = b.find(step);
    if (it == b.end())
      return fail(formatString("step %lld missing", step));
    double scale = std::max(std::fabs(loss), std::fabs(it->second));
    if (std::fabs(loss - it->second) > rtol * scale)
      return fail(formatString("step %lld: loss %.9g vs %.9g", step, loss,
                               it->second));
    std::printf("step %lld: loss %.9g vs %.9g\n", step, loss, it->second);
  }
  return 0;
}

int otherModelCheckpoint(int argc, char **argv) {
  if (argc < 3)
    return fail("other-model-checkpoint PATH");
  std::vector<float> w(16, 0.5f), m(16, 0.0f), v(16, 0.0f);
  std::vector<CheckpointParam> params = {
      {"other.weight", {4, 4}, w.data(), m.data(), v.data()}};
  Status s = saveCheckpoint(argv[2], params,
                            {3, 0, modelFingerprint(params)});
  return s.isOk() ? 0 : fail(s.message());
}

} // namespace

int main(int argc, char **argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "make-data")
    return makeData(argc, argv);
  if (cmd == "compare-tensors")
    return compareTensors(argc, argv);
  if (cmd == "compare-metrics")
    return compareMetrics(argc, argv);
  if (cmd == "other-model-checkpoint")
    return otherModelCheckpoint(argc, argv);
  return fail("usage: make-data | compare-tensors | compare-metrics | "
              "other-model-checkpoint");
}
