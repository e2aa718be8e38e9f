//===- Checkpoint.cpp - Training checkpoints in safetensors -----*- C++ -*-===//

#include "Checkpoint.h"

#include "Safetensors.h"
#include "core/Random.h"
#include "core/Tensor.h"

#include <cerrno>
#include <cstdlib>

namespace bitpipe::runtime {

static const char *const kFormat = "bitpipe-v1";

std::string modelFingerprint(const std::vector<CheckpointParam> &params) {
  uint64_t h = hashName("bitpipe-model");
  for (const CheckpointParam &p : params) {
    h = mix64(h ^ hashName(p.name));
    h = mix64(h ^ p.shape.size());
    for (int64_t d : p.shape)
      h = mix64(h ^ static_cast<uint64_t>(d));
  }
  return formatString("%016llx", static_cast<unsigned long long>(h));
}

Status saveCheckpoint(const std::string &path,
                      const std::vector<CheckpointParam> &params,
                      const CheckpointInfo &info) {
  std::vector<SafetensorsTensor> tensors;
  for (const CheckpointParam &p : params)
    tensors.push_back({p.name, p.param, p.shape});
  for (const CheckpointParam &p : params)
    tensors.push_back({"optim.m." + p.name, p.m, p.shape});
  for (const CheckpointParam &p : params)
    tensors.push_back({"optim.v." + p.name, p.v, p.shape});
  std::map<std::string, std::string> meta = {
      {"format", kFormat},
      {"step", std::to_string(info.step)},
      {"seed", std::to_string(info.seed)},
      {"fingerprint", info.fingerprint},
  };
  return writeSafetensors(path, tensors, meta);
}

static bool parseUnsigned(const std::string &s, uint64_t *out) {
  if (s.empty() || s[0] < '0' || s[0] > '9')
    return false;
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  *out = v;
  return true;
}

Status loadCheckpoint(const std::string &path,
                      const std::vector<CheckpointParam> &params,
                      const std::string &expectedFingerprint,
                      CheckpointInfo *info) {
  Expected<std::unique_ptr<SafetensorsReader>> r =
      SafetensorsReader::open(path);
  if (!r.isOk())
    return r.status();
  const SafetensorsReader &reader = **r;
  auto bad = [&](const std::string &what) {
    return Status::error(ErrorCode::FormatError,
                         "checkpoint '" + path + "': " + what);
  };
  const std::string *fp = reader.metadataValue("fingerprint");
  const std::string *step = reader.metadataValue("step");
  const std::string *seed = reader.metadataValue("seed");
  if (!fp || !step || !seed)
    return bad("__metadata__ lacks fingerprint, step or seed (not written "
               "by bitpipe?)");
  if (!expectedFingerprint.empty() && *fp != expectedFingerprint)
    return bad("it was written for model fingerprint " + *fp +
               ", but this model's fingerprint is " + expectedFingerprint +
               " (another model, or another partition of it)");
  CheckpointInfo loaded;
  uint64_t stepValue = 0;
  if (!parseUnsigned(*step, &stepValue) ||
      !parseUnsigned(*seed, &loaded.seed))
    return bad("step '" + *step + "' or seed '" + *seed +
               "' is not a non-negative integer");
  loaded.step = static_cast<int64_t>(stepValue);
  loaded.fingerprint = *fp;
  for (const CheckpointParam &p : params) {
    Status s = reader.readF32(p.name, p.shape, p.param);
    if (s.isOk())
      s = reader.readF32("optim.m." + p.name, p.shape, p.m);
    if (s.isOk())
      s = reader.readF32("optim.v." + p.name, p.shape, p.v);
    if (!s.isOk())
      return s;
  }
  if (info)
    *info = loaded;
  return Status::ok();
}

} // namespace bitpipe::runtime
