//===- CheckpointIntegrityTest.cpp - Checksums and values of checkpoints --===//
//
// docs/runtime-abi.md, "Checkpoints": what a checkpoint carries to prove
// itself whole (CRC-32C per tensor and of the metadata, the format), and
// what it may hold (finite weights and moments, second moments >= 0, a step
// in [0, 2^62], a uint64 seed), both at save and at load.
//
//===----------------------------------------------------------------------===//

#include "TempDir.h"
#include "core/Crc32c.h"
#include "train/Checkpoint.h"
#include "train/Safetensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace bitpipe::runtime;
using bitpipe::runtime::testing::readBytes;
using bitpipe::runtime::testing::TempDir;
using bitpipe::runtime::testing::writeBytes;

namespace {

void expectRefused(const Status &s, const std::string &needle) {
  ASSERT_FALSE(s.isOk()) << "expected an error containing: " << needle;
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message: " << s.message() << "\nexpected: " << needle;
}

/// Two parameters with their moments; load() reads a file into a copy.
struct Model {
  std::vector<float> w{0.5f, -1.f, 2.f, 0.25f, 3.f, -0.5f},
      mw{0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f},
      vw{1e-4f, 2e-4f, 3e-4f, 4e-4f, 5e-4f, 6e-4f}, b{1.f, -1.f},
      mb{0.01f, 0.02f}, vb{0.f, 1e-6f};
  std::vector<CheckpointParam> params() {
    return {{"h.0.w", {2, 3}, w.data(), mw.data(), vw.data()},
            {"h.0.b", {2}, b.data(), mb.data(), vb.data()}};
  }
  std::string fingerprint() { return modelFingerprint(params()); }
  Status save(const std::string &path, int64_t step = 17) {
    return saveCheckpoint(path, params(), {step, 1234, fingerprint()});
  }
  Status load(const std::string &path, CheckpointInfo *info = nullptr) {
    Model into;
    return loadCheckpoint(path, into.params(), fingerprint(), info);
  }
};

/// Rewrites the file at \p path with its metadata changed by \p edit
/// (without fixing any checksum).
void editMetadata(
    const std::string &path,
    const std::function<void(std::map<std::string, std::string> &)> &edit) {
  std::map<std::string, std::string> meta;
  std::vector<SafetensorsEntry> entries;
  std::vector<std::vector<float>> data;
  {
    auto r = SafetensorsReader::open(path);
    ASSERT_TRUE(r.isOk()) << r.status().message();
    meta = (*r)->metadata();
    entries = (*r)->tensors();
    for (const SafetensorsEntry &e : entries) {
      data.emplace_back((e.end - e.begin) / 4);
      ASSERT_TRUE((*r)->readF32(e.name, e.shape, data.back().data()).isOk());
    }
  }
  std::vector<SafetensorsTensor> tensors;
  for (size_t i = 0; i < data.size(); ++i)
    tensors.push_back({entries[i].name, data[i].data(), entries[i].shape});
  edit(meta);
  ASSERT_TRUE(writeSafetensors(path, tensors, meta).isOk());
}

TEST(CheckpointIntegrityTest, RoundTripWritesAndVerifiesChecksums) {
  TempDir dir;
  Model m;
  std::string path = dir.file("ck.safetensors");
  ASSERT_TRUE(m.save(path).isOk());
  auto r = SafetensorsReader::open(path);
  ASSERT_TRUE(r.isOk());
  EXPECT_EQ(*(*r)->metadataValue("format"), "bitpipe-v2");
  ASSERT_NE((*r)->metadataValue("crc32c.__metadata__"), nullptr);
  EXPECT_EQ(*(*r)->metadataValue("crc32c.h.0.w"),
            crc32cHex(crc32c(m.w.data(), m.w.size() * sizeof(float))));
  for (const char *t : {"crc32c.optim.m.h.0.w", "crc32c.optim.v.h.0.b"})
    EXPECT_NE((*r)->metadataValue(t), nullptr) << t;

  Model into;
  CheckpointInfo info;
  Status s = loadCheckpoint(path, into.params(), m.fingerprint(), &info);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(info.step, 17);
  EXPECT_EQ(info.seed, 1234u);
  EXPECT_TRUE(info.unverifiedReason.empty());
  EXPECT_EQ(into.w, m.w);
  EXPECT_EQ(into.vb, m.vb);
}

// Every single-byte change anywhere in the file (length, header, padding,
// data) is refused: by the checksums, or by the header's own checks.
TEST(CheckpointIntegrityTest, EveryByteFlipIsRefused) {
  TempDir dir;
  Model m;
  std::string path = dir.file("ck.safetensors");
  ASSERT_TRUE(m.save(path).isOk());
  const std::string good = readBytes(path);
  size_t accepted = 0;
  for (unsigned char mask : {0x01, 0x40}) {
    for (size_t i = 0; i < good.size(); ++i) {
      std::string bad = good;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      writeBytes(path, bad.data(), bad.size());
      if (m.load(path).isOk()) {
        ++accepted;
        ADD_FAILURE() << "byte " << i << " ^ " << int(mask) << " loaded";
      }
    }
  }
  EXPECT_EQ(accepted, 0u);
}

TEST(CheckpointIntegrityTest, AFlippedDataByteNamesTheTensor) {
  TempDir dir;
  Model m;
  std::string path = dir.file("ck.safetensors");
  ASSERT_TRUE(m.save(path).isOk());
  std::string bytes = readBytes(path);
  // The data of "optim.m.h.0.b" is the 5th tensor: 6+2+6 floats precede it.
  size_t dataStart = bytes.size() - (6 + 2) * 3 * sizeof(float);
  bytes[dataStart + (6 + 2 + 6) * 4 + 1] ^= 0x10;
  writeBytes(path, bytes.data(), bytes.size());
  Status s = m.load(path);
  expectRefused(s, "checkpoint '" + path +
                       "': tensor 'optim.m.h.0.b' fails its CRC-32C check "
                       "(stored ");
  expectRefused(s, "): the file is corrupt");
}

TEST(CheckpointIntegrityTest, ChangedMetadataFailsItsChecksum) {
  TempDir dir;
  Model m;
  std::string path = dir.file("ck.safetensors");
  ASSERT_TRUE(m.save(path).isOk());
  editMetadata(path, [](auto &meta) { meta["step"] = "18"; });
  expectRefused(m.load(path), "__metadata__ fails its CRC-32C check");
}

TEST(CheckpointIntegrityTest, UnknownFormatIsRefusedListingTheKnownOnes) {
  TempDir dir;
  Model m;
  std::string path = dir.file("ck.safetensors");
  ASSERT_TRUE(m.save(path).isOk());
  editMetadata(path, [](auto &meta) { meta["format"] = "bitpipe-v9"; });
  expectRefused(m.load(path), "checkpoint '" + path +
                                  "': unknown format 'bitpipe-v9' (this "
                                  "build reads: bitpipe-v2, bitpipe-v1)");
  editMetadata(path, [](auto &meta) { meta.erase("format"); });
  expectRefused(m.load(path), "__metadata__ has no \"format\" (expected one "
                              "of: bitpipe-v2, bitpipe-v1");
}

// Files from before checksums still load, with the reason they are not
// verified; a v2 file whose format was changed to v1 does not.
TEST(CheckpointIntegrityTest, VersionOneFilesLoadUnverified) {
  TempDir dir;
  Model m;
  std::string path = dir.file("v1.safetensors");
  ASSERT_TRUE(m.save(path).isOk());
  editMetadata(path, [](auto &meta) { meta["format"] = "bitpipe-v1"; });
  expectRefused(m.load(path), "format 'bitpipe-v1' has no checksums, but "
                              "this file carries them");
  editMetadata(path, [](auto &meta) {
    for (auto it = meta.begin(); it != meta.end();)
      it = it->first.rfind("crc32c.", 0) == 0 ? meta.erase(it) : ++it;
  });
  CheckpointInfo info;
  Status s = m.load(path, &info);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(info.step, 17);
  EXPECT_NE(info.unverifiedReason.find("is in format bitpipe-v1, which has "
                                       "no checksums"),
            std::string::npos)
      << info.unverifiedReason;
  // Its values are still checked.
  Model nan;
  nan.w[1] = std::nanf("");
  std::vector<SafetensorsTensor> tensors;
  for (const CheckpointParam &p : nan.params()) {
    tensors.push_back({p.name, p.param, p.shape});
    tensors.push_back({"optim.m." + p.name, p.m, p.shape});
    tensors.push_back({"optim.v." + p.name, p.v, p.shape});
  }
  ASSERT_TRUE(writeSafetensors(path, tensors,
                               {{"format", "bitpipe-v1"},
                                {"step", "3"},
                                {"seed", "1"},
                                {"fingerprint", m.fingerprint()}})
                  .isOk());
  expectRefused(m.load(path), "tensor 'h.0.w' element 1 is nan");
}

TEST(CheckpointIntegrityTest, NonFiniteOrNegativeStateIsRefusedAtLoad) {
  TempDir dir;
  std::string path = dir.file("ck.safetensors");
  struct Case {
    std::function<void(Model &)> spoil;
    std::string message;
  };
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<Case> cases = {
      {[](Model &m) { m.w[4] = std::nanf(""); },
       "tensor 'h.0.w' element 4 is nan, expected a finite value"},
      {[&](Model &m) { m.b[1] = -inf; },
       "tensor 'h.0.b' element 1 is -inf, expected a finite value"},
      {[](Model &m) { m.mw[0] = std::nanf(""); },
       "tensor 'optim.m.h.0.w' element 0 is nan"},
      {[](Model &m) { m.vb[1] = -0.5f; },
       "tensor 'optim.v.h.0.b' element 1 is -0.5, expected a finite value "
       ">= 0 (a second moment)"},
      {[&](Model &m) { m.vw[5] = inf; },
       "tensor 'optim.v.h.0.w' element 5 is inf"},
  };
  for (const Case &c : cases) {
    Model good;
    ASSERT_TRUE(good.save(path).isOk());
    // The spoilt values go in through the writer with valid checksums: what
    // a buggy or hostile tool could write.
    Model bad;
    c.spoil(bad);
    std::vector<SafetensorsTensor> tensors;
    std::map<std::string, std::string> meta;
    {
      auto r = SafetensorsReader::open(path);
      ASSERT_TRUE(r.isOk());
      meta = (*r)->metadata();
    }
    for (const CheckpointParam &p : bad.params()) {
      tensors.push_back({p.name, p.param, p.shape});
      tensors.push_back({"optim.m." + p.name, p.m, p.shape});
      tensors.push_back({"optim.v." + p.name, p.v, p.shape});
    }
    for (const SafetensorsTensor &t : tensors)
      meta["crc32c." + t.name] = crc32cHex(
          crc32c(t.data, static_cast<size_t>(t.shape.size() == 2 ? 6 : 2) *
                             sizeof(float)));
    ASSERT_TRUE(writeSafetensors(path, tensors, meta).isOk());
    expectRefused(good.load(path), "checkpoint '" + path + "': " + c.message);
  }
}

TEST(CheckpointIntegrityTest, StepAndSeedMustBeInRange) {
  TempDir dir;
  Model m;
  std::string path = dir.file("ck.safetensors");
  // With a valid metadata checksum: what another tool could write.
  auto withMeta = [&](const std::string &key, const std::string &value) {
    ASSERT_TRUE(m.save(path).isOk());
    editMetadata(path, [&](std::map<std::string, std::string> &meta) {
      meta[key] = value;
      meta.erase("crc32c.__metadata__");
      uint32_t crc = 0;
      for (const auto &[k, v] : meta)
        if (k.rfind("crc32c.", 0) != 0) {
          crc = crc32c(k.c_str(), k.size() + 1, crc);
          crc = crc32c(v.c_str(), v.size() + 1, crc);
        }
      meta["crc32c.__metadata__"] = crc32cHex(crc);
    });
  };
  for (const char *step :
       {"9223372036854775808", "18446744073709551615", "4611686018427387905",
        "-1", "+3", " 3", "3x", "0x10", ""}) {
    withMeta("step", step);
    expectRefused(m.load(path), "__metadata__ step '" + std::string(step) +
                                    "' is not a decimal integer in [0, "
                                    "2^62]");
  }
  withMeta("step", "4611686018427387904");
  CheckpointInfo info;
  ASSERT_TRUE(m.load(path, &info).isOk());
  EXPECT_EQ(info.step, int64_t(1) << 62);
  for (const char *seed : {"18446744073709551616", "-1", "1e3"}) {
    withMeta("seed", seed);
    expectRefused(m.load(path), "__metadata__ seed '" + std::string(seed) +
                                    "' is not a decimal integer in [0, "
                                    "2^64 - 1]");
  }
  withMeta("seed", "18446744073709551615");
  ASSERT_TRUE(m.load(path, &info).isOk());
  EXPECT_EQ(info.seed, UINT64_MAX);
}

TEST(CheckpointIntegrityTest, NonFiniteStateIsNeverSavedAndTheOldFileStays) {
  TempDir dir;
  Model good;
  std::string path = dir.file("ck.safetensors");
  ASSERT_TRUE(good.save(path).isOk());
  const std::string before = readBytes(path);
  Model bad;
  bad.mb[1] = std::numeric_limits<float>::infinity();
  Status s = bad.save(path, 9);
  expectRefused(s, "checkpoint '" + path +
                       "' (step 9): refusing to save: tensor 'optim.m.h.0.b' "
                       "element 1 is inf, expected a finite value; the file "
                       "was not written");
  EXPECT_EQ(readBytes(path), before);
  expectRefused(good.save(path, (int64_t(1) << 62) + 1),
                "refusing to save: step 4611686018427387905 is outside "
                "[0, 2^62]");
  EXPECT_EQ(readBytes(path), before);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"ck.safetensors"});
}

} // namespace
