//===- Checkpoint.cpp - Training checkpoints in safetensors -----*- C++ -*-===//

#include "Checkpoint.h"

#include "Safetensors.h"
#include "core/Crc32c.h"
#include "core/Random.h"
#include "core/Tensor.h"

#include <cmath>
#include <cstdlib>

namespace bitpipe::runtime {

const char *const kCheckpointFormat = "bitpipe-v2";
// Written before checksums existed: read without verification, with a
// warning (docs/runtime-abi.md, "Checkpoints").
static const char *const kFormatV1 = "bitpipe-v1";
// Metadata key prefix of the checksums: "crc32c.<tensor>", and
// "crc32c.__metadata__" for the other metadata (no tensor can be named
// "__metadata__").
static const std::string kCrcPrefix = "crc32c.";
static const std::string kMetadataCrcKey = kCrcPrefix + "__metadata__";
// Metadata key prefix of the optimizer's settings: "optimizer.lr", ...
static const std::string kOptimizerPrefix = "optimizer.";

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

std::string stateTensorName(const std::string &param, StateArray array) {
  switch (array) {
  case StateArray::Weights:
    return param;
  case StateArray::FirstMoments:
    return "optim.m." + param;
  case StateArray::SecondMoments:
    return "optim.v." + param;
  }
  return param;
}

std::optional<InvalidState> firstInvalidState(const float *w, const float *m,
                                              const float *v, int64_t n) {
  for (auto [array, data] : {std::pair{StateArray::Weights, w},
                             std::pair{StateArray::FirstMoments, m},
                             std::pair{StateArray::SecondMoments, v}})
    for (int64_t i = 0; i < n; ++i)
      if (!isCheckpointValue(data[i], array))
        return InvalidState{array, i, data[i]};
  return std::nullopt;
}

Status invalidStateError(const std::string &param, const InvalidState &bad) {
  return Status::error(
      ErrorCode::FormatError,
      formatString("tensor '%s' element %lld is %g, expected a finite "
                   "value%s",
                   stateTensorName(param, bad.array).c_str(),
                   static_cast<long long>(bad.index),
                   static_cast<double>(bad.value),
                   bad.array == StateArray::SecondMoments
                       ? " >= 0 (a second moment)"
                       : ""));
}

Status checkCheckpointValues(const CheckpointParam &p) {
  if (std::optional<InvalidState> bad =
          firstInvalidState(p.param, p.m, p.v, numElements(p.shape)))
    return invalidStateError(p.name, *bad);
  return Status::ok();
}

/// CRC-32C of the metadata entries other than the checksums, each as
/// key NUL value NUL, in key order (std::map's).
static uint32_t metadataCrc(const std::map<std::string, std::string> &meta) {
  uint32_t crc = 0;
  for (const auto &[key, value] : meta) {
    if (key.compare(0, kCrcPrefix.size(), kCrcPrefix) == 0)
      continue;
    crc = crc32c(key.c_str(), key.size() + 1, crc);
    crc = crc32c(value.c_str(), value.size() + 1, crc);
  }
  return crc;
}

Status saveCheckpoint(const std::string &path,
                      const std::vector<CheckpointParam> &params,
                      const CheckpointInfo &info) {
  auto refuse = [&](const std::string &why) {
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("checkpoint '%s' (step %lld): refusing "
                                      "to save: ",
                                      path.c_str(),
                                      static_cast<long long>(info.step)) +
                             why + "; the file was not written");
  };
  if (info.step < 0 || info.step > kMaxCheckpointStep)
    return refuse(formatString("step %lld is outside [0, 2^62]",
                               static_cast<long long>(info.step)));
  // A checkpoint holds only state that training could continue from
  // (docs/training-semantics.md, "Non-finite values").
  for (const CheckpointParam &p : params) {
    Status s = checkCheckpointValues(p);
    if (!s.isOk())
      return refuse(s.message());
  }
  std::vector<SafetensorsTensor> tensors;
  for (const CheckpointParam &p : params)
    tensors.push_back({p.name, p.param, p.shape});
  for (const CheckpointParam &p : params)
    tensors.push_back(
        {stateTensorName(p.name, StateArray::FirstMoments), p.m, p.shape});
  for (const CheckpointParam &p : params)
    tensors.push_back(
        {stateTensorName(p.name, StateArray::SecondMoments), p.v, p.shape});
  std::map<std::string, std::string> meta = {
      {"format", kCheckpointFormat},
      {"step", std::to_string(info.step)},
      {"seed", std::to_string(info.seed)},
      {"fingerprint", info.fingerprint},
  };
  if (info.optimizer)
    forEachOptimizerSetting(
        *info.optimizer, [&](const char *name, const char *, auto &value) {
          meta[kOptimizerPrefix + name] = settingText(value);
        });
  meta[kMetadataCrcKey] = crc32cHex(metadataCrc(meta));
  for (const SafetensorsTensor &t : tensors)
    meta[kCrcPrefix + t.name] = crc32cHex(crc32c(
        t.data, static_cast<size_t>(numElements(t.shape)) * sizeof(float)));
  return writeSafetensors(path, tensors, meta);
}

/// A decimal integer in [0, max]: digits only (no sign, space or hex), no
/// wrap-around ("18446744073709551616" is out of range, not 0).
static bool parseDecimal(const std::string &s, uint64_t max, uint64_t *out) {
  if (s.empty() || s.size() > 20)
    return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10)
      return false;
    v = v * 10 + d;
  }
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
  const std::string known = std::string(kCheckpointFormat) + ", " + kFormatV1;
  const std::string *format = reader.metadataValue("format");
  if (!format)
    return bad("__metadata__ has no \"format\" (expected one of: " + known +
               "; not written by bitpipe?)");
  const bool checksummed = *format == kCheckpointFormat;
  if (!checksummed && *format != kFormatV1)
    return bad("unknown format '" + *format + "' (this build reads: " + known +
               ")");
  const std::string *metaCrc = reader.metadataValue(kMetadataCrcKey);
  if (checksummed) {
    if (!metaCrc)
      return bad("__metadata__ has no \"" + kMetadataCrcKey +
                 "\" (a bitpipe-v2 file always has one: the file is "
                 "corrupt)");
    std::string computed = crc32cHex(metadataCrc(reader.metadata()));
    if (*metaCrc != computed)
      return bad("__metadata__ fails its CRC-32C check (stored " + *metaCrc +
                 ", computed " + computed + "): the file is corrupt");
  } else if (metaCrc) {
    // A v1 file has no checksums: this one's format field was changed.
    return bad("format '" + *format +
               "' has no checksums, but this file "
               "carries them: the format field is corrupt");
  }
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
  if (!parseDecimal(*step, static_cast<uint64_t>(kMaxCheckpointStep),
                    &stepValue))
    return bad("__metadata__ step '" + *step +
               "' is not a decimal integer in [0, 2^62]");
  if (!parseDecimal(*seed, UINT64_MAX, &loaded.seed))
    return bad("__metadata__ seed '" + *seed +
               "' is not a decimal integer in [0, 2^64 - 1]");
  loaded.step = static_cast<int64_t>(stepValue);
  loaded.fingerprint = *fp;
  // All of the optimizer's settings or none (an older file).
  if (reader.metadataValue(kOptimizerPrefix + "lr")) {
    OptimizerSettings settings;
    std::string missing;
    forEachOptimizerSetting(settings, [&](const char *name, const char *,
                                          auto &value) {
      const std::string *text = reader.metadataValue(kOptimizerPrefix + name);
      if (missing.empty() && (!text || !parseSetting(*text, &value)))
        missing =
            kOptimizerPrefix + name +
            (text ? " '" + *text + "' is not a valid value" : " is missing");
    });
    if (!missing.empty())
      return bad("__metadata__ " + missing +
                 " (the optimizer's settings are stored whole)");
    loaded.optimizer = settings;
  }
  if (!checksummed)
    loaded.unverifiedReason =
        "checkpoint '" + path + "' is in format " + kFormatV1 +
        ", which has no checksums: its data is loaded unverified (save it "
        "again to add them)";

  auto readVerified = [&](const std::string &name,
                          const std::vector<int64_t> &shape, float *out) {
    BP_TRY(reader.readF32(name, shape, out));
    if (!checksummed)
      return Status::ok();
    const std::string *stored = reader.metadataValue(kCrcPrefix + name);
    if (!stored)
      return bad("tensor '" + name + "' has no checksum (\"" + kCrcPrefix +
                 name +
                 "\" is missing from __metadata__): the file is "
                 "corrupt");
    std::string computed = crc32cHex(
        crc32c(out, static_cast<size_t>(numElements(shape)) * sizeof(float)));
    if (*stored != computed)
      return bad("tensor '" + name + "' fails its CRC-32C check (stored " +
                 *stored + ", computed " + computed +
                 "): the file is "
                 "corrupt");
    return Status::ok();
  };
  for (const CheckpointParam &p : params) {
    BP_TRY(readVerified(p.name, p.shape, p.param));
    BP_TRY(readVerified(stateTensorName(p.name, StateArray::FirstMoments),
                        p.shape, p.m));
    BP_TRY(readVerified(stateTensorName(p.name, StateArray::SecondMoments),
                        p.shape, p.v));
    Status values = checkCheckpointValues(p);
    if (!values.isOk())
      return bad(values.message());
  }
  if (info)
    *info = loaded;
  return Status::ok();
}

} // namespace bitpipe::runtime
