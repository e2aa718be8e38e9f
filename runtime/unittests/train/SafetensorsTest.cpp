//===- SafetensorsTest.cpp - safetensors files, JSON, checkpoints ---------===//

#include "train/Safetensors.h"
#include "TempDir.h"
#include "core/Json.h"
#include "train/Checkpoint.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;
using bitpipe::runtime::testing::readBytes;
using bitpipe::runtime::testing::safetensorsBytes;
using bitpipe::runtime::testing::TempDir;
using bitpipe::runtime::testing::writeBytes;

namespace {

/// Little-endian bytes of the given floats, spelt out by hand so the test
/// does not depend on the host's memcpy of a float.
const std::string kOneTwo("\x00\x00\x80\x3f\x00\x00\x00\x40", 8); // 1, 2
const std::string kHalfThree("\x00\x00\x00\xbf\x00\x00\x40\x40",
                             8); // -0.5, 3

void expectContains(const Status &s, const std::string &needle) {
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message: " << s.message() << "\nexpected to contain: " << needle;
}

TEST(SafetensorsTest, WriterProducesTheExactBytesOfTheFormat) {
  TempDir dir;
  float w[2] = {1.0f, 2.0f};
  ASSERT_TRUE(writeSafetensors(dir.file("w.safetensors"), {{"w", w, {2}}},
                               {{"step", "3"}})
                  .isOk());
  std::string header = "{\"__metadata__\":{\"step\":\"3\"},\"w\":{\"dtype\":"
                       "\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
  ASSERT_EQ(header.size(), 82u);
  header += "      "; // padded to 88: data starts 8-byte aligned
  EXPECT_EQ(readBytes(dir.file("w.safetensors")), safetensorsBytes(header, kOneTwo));
  // Atomic write: no temporary left behind.
  EXPECT_EQ(dir.list(), std::vector<std::string>{"w.safetensors"});
}

TEST(SafetensorsTest, ReadsAFileWrittenByAnotherTool) {
  // Members out of data order, metadata last with extra keys, no padding.
  TempDir dir;
  std::string header =
      "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]},"
      "\"a\":{\"dtype\":\"F32\",\"shape\":[1,2],\"data_offsets\":[0,8]},"
      "\"__metadata__\":{\"format\":\"pt\",\"note\":\"x\"}}";
  std::string path = dir.file("other.safetensors");
  std::string bytes = safetensorsBytes(header, kOneTwo + kHalfThree);
  writeBytes(path, bytes.data(), bytes.size());

  auto r = SafetensorsReader::open(path);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ((*r)->tensors().size(), 2u);
  ASSERT_NE((*r)->metadataValue("format"), nullptr);
  EXPECT_EQ(*(*r)->metadataValue("format"), "pt");
  float a[2], b[2];
  ASSERT_TRUE((*r)->readF32("a", {1, 2}, a).isOk());
  ASSERT_TRUE((*r)->readF32("b", {2}, b).isOk());
  EXPECT_EQ(a[0], 1.0f);
  EXPECT_EQ(a[1], 2.0f);
  EXPECT_EQ(b[0], -0.5f);
  EXPECT_EQ(b[1], 3.0f);
}

TEST(SafetensorsTest, RoundTripKeepsValuesShapesAndMetadata) {
  TempDir dir;
  std::vector<float> x(24), y(3);
  for (int i = 0; i < 24; ++i)
    x[i] = 0.25f * i - 1.f;
  y = {1e-30f, -7.f, 3.5e20f};
  std::string path = dir.file("rt.safetensors");
  ASSERT_TRUE(writeSafetensors(path,
                               {{"h.0.attn.c_attn.weight", x.data(), {2, 3, 4}},
                                {"ln_f.bias", y.data(), {3}}},
                               {{"seed", "42"}, {"quote\"d", "a\\b"}})
                  .isOk());
  auto r = SafetensorsReader::open(path);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  std::vector<float> x2(24), y2(3);
  ASSERT_TRUE((*r)->readF32("h.0.attn.c_attn.weight", {2, 3, 4}, x2.data())
                  .isOk());
  ASSERT_TRUE((*r)->readF32("ln_f.bias", {3}, y2.data()).isOk());
  EXPECT_EQ(x, x2);
  EXPECT_EQ(y, y2);
  EXPECT_EQ(*(*r)->metadataValue("seed"), "42");
  EXPECT_EQ(*(*r)->metadataValue("quote\"d"), "a\\b");
}

TEST(SafetensorsTest, TruncatedFileNamesFileAndTensor) {
  TempDir dir;
  std::string header =
      "{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
  std::string path = dir.file("cut.safetensors");
  std::string bytes = safetensorsBytes(header, kOneTwo + kHalfThree).substr(0, 8 + header.size() + 12);
  writeBytes(path, bytes.data(), bytes.size());
  auto r = SafetensorsReader::open(path);
  ASSERT_FALSE(r.isOk());
  expectContains(r.status(), "cut.safetensors");
  expectContains(r.status(), "truncated: tensor 'w' ends at byte 16");

  // Cut inside the header.
  std::string tiny = safetensorsBytes(header, "").substr(0, 20);
  writeBytes(path, tiny.data(), tiny.size());
  expectContains(SafetensorsReader::open(path).status(), "truncated");
  writeBytes(path, "abc", 3);
  expectContains(SafetensorsReader::open(path).status(), "truncated");
}

TEST(SafetensorsTest, BadHeaderJsonIsReported) {
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  std::string bytes = safetensorsBytes("{\"w\":{\"dtype\":\"F32\",", "");
  writeBytes(path, bytes.data(), bytes.size());
  expectContains(SafetensorsReader::open(path).status(), "bad header");
  bytes = safetensorsBytes("[1,2]", "");
  writeBytes(path, bytes.data(), bytes.size());
  expectContains(SafetensorsReader::open(path).status(), "not a JSON object");
  bytes = safetensorsBytes("{\"w\":{\"dtype\":\"F32\",\"shape\":[3],"
                   "\"data_offsets\":[0,8]}}",
                   kOneTwo);
  writeBytes(path, bytes.data(), bytes.size());
  expectContains(SafetensorsReader::open(path).status(),
                 "tensor 'w': shape [3] of F32 needs 12 bytes");
  std::string huge(8, '\xff');
  writeBytes(path, huge.data(), huge.size());
  expectContains(SafetensorsReader::open(path).status(), "header length");
}

TEST(SafetensorsTest, OverlappingTensorsAreRejected) {
  TempDir dir;
  std::string path = dir.file("overlap.safetensors");
  std::string bytes = safetensorsBytes(
      "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
      kOneTwo + kHalfThree);
  writeBytes(path, bytes.data(), bytes.size());
  expectContains(SafetensorsReader::open(path).status(), "overlap");
}

TEST(SafetensorsTest, WrongDTypeShapeOrMissingTensorNamesTheTensor) {
  TempDir dir;
  std::string path = dir.file("m.safetensors");
  std::string bytes = safetensorsBytes(
      "{\"h\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}",
      kOneTwo + kHalfThree);
  writeBytes(path, bytes.data(), bytes.size());
  auto r = SafetensorsReader::open(path);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  float out[4];
  expectContains((*r)->readF32("h", {4}, out), "tensor 'h' is BF16, expected F32");
  expectContains((*r)->readF32("w", {1, 2}, out),
                 "tensor 'w' has shape [2], expected [1, 2]");
  Status missing = (*r)->readF32("wte", {2}, out);
  expectContains(missing, "m.safetensors' has no tensor 'wte'");
  EXPECT_EQ(missing.code(), ErrorCode::NotFound);
}

TEST(SafetensorsTest, CheckpointRoundTripRestoresParamsAndOptimizerState) {
  TempDir dir;
  std::vector<float> w(6), mw(6), vw(6), b(2), mb(2), vb(2);
  for (int i = 0; i < 6; ++i) {
    w[i] = i * 0.5f;
    mw[i] = -i * 0.01f;
    vw[i] = i * 1e-4f;
  }
  b = {1.f, -1.f};
  mb = {0.1f, 0.2f};
  vb = {0.3f, 0.4f};
  std::vector<CheckpointParam> params = {
      {"h.0.mlp.c_fc.weight", {2, 3}, w.data(), mw.data(), vw.data()},
      {"h.0.mlp.c_fc.bias", {2}, b.data(), mb.data(), vb.data()}};
  CheckpointInfo info{17, 1234, modelFingerprint(params)};
  std::string path = dir.file("rank0.safetensors");
  ASSERT_TRUE(saveCheckpoint(path, params, info).isOk());

  std::vector<float> w2(6), mw2(6), vw2(6), b2(2), mb2(2), vb2(2);
  std::vector<CheckpointParam> into = {
      {"h.0.mlp.c_fc.weight", {2, 3}, w2.data(), mw2.data(), vw2.data()},
      {"h.0.mlp.c_fc.bias", {2}, b2.data(), mb2.data(), vb2.data()}};
  CheckpointInfo loaded;
  Status s = loadCheckpoint(path, into, modelFingerprint(into), &loaded);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(loaded.step, 17);
  EXPECT_EQ(loaded.seed, 1234u);
  EXPECT_EQ(w2, w);
  EXPECT_EQ(mw2, mw);
  EXPECT_EQ(vw2, vw);
  EXPECT_EQ(b2, b);
  EXPECT_EQ(mb2, mb);
  EXPECT_EQ(vb2, vb);
  // The optimizer state is in the file under its documented names.
  auto r = SafetensorsReader::open(path);
  ASSERT_TRUE(r.isOk());
  EXPECT_NE((*r)->find("optim.m.h.0.mlp.c_fc.bias"), nullptr);
  EXPECT_NE((*r)->find("optim.v.h.0.mlp.c_fc.weight"), nullptr);
}

TEST(SafetensorsTest, CheckpointKeepsTheOptimizersSettings) {
  TempDir dir;
  std::vector<float> w(4, 1.f), m(4), v(4);
  std::vector<CheckpointParam> params = {
      {"w", {4}, w.data(), m.data(), v.data()}};
  // Written without settings (as files from before they were stored):
  // none come back.
  std::string old = dir.file("old.safetensors");
  ASSERT_TRUE(
      saveCheckpoint(old, params, {3, 2, modelFingerprint(params)}).isOk());
  CheckpointInfo loaded;
  ASSERT_TRUE(loadCheckpoint(old, params, "", &loaded).isOk());
  EXPECT_FALSE(loaded.optimizer.has_value());
  // With them: every field back exactly, under "optimizer.<name>".
  OptimizerSettings settings;
  settings.adam.lr = 6e-4;
  settings.adam.beta2 = 0.95;
  settings.adam.eps = 1.0 / 3.0;
  settings.adam.maxGradNorm = 1;
  settings.lr = {2, LrDecayStyle::Linear, 90, 6e-5};
  CheckpointInfo info{3, 2, modelFingerprint(params)};
  info.optimizer = settings;
  std::string path = dir.file("new.safetensors");
  ASSERT_TRUE(saveCheckpoint(path, params, info).isOk());
  ASSERT_TRUE(loadCheckpoint(path, params, "", &loaded).isOk());
  ASSERT_TRUE(loaded.optimizer.has_value());
  EXPECT_EQ(loaded.optimizer->adam.eps, 1.0 / 3.0);
  EXPECT_EQ(loaded.optimizer->lr.decay, LrDecayStyle::Linear);
  EXPECT_EQ(loaded.optimizer->lr.decaySteps, 90);
  EXPECT_EQ(describeOptimizer(*loaded.optimizer), describeOptimizer(settings));
  auto r = SafetensorsReader::open(path);
  ASSERT_TRUE(r.isOk());
  const std::string *style = (*r)->metadataValue("optimizer.lr_decay_style");
  ASSERT_NE(style, nullptr);
  EXPECT_EQ(*style, "linear");
}

TEST(SafetensorsTest, CheckpointOfAnotherModelIsRefused) {
  TempDir dir;
  std::vector<float> w(4, 1.f), m(4), v(4);
  std::vector<CheckpointParam> params = {{"w", {4}, w.data(), m.data(), v.data()}};
  std::string path = dir.file("ck.safetensors");
  ASSERT_TRUE(
      saveCheckpoint(path, params, {1, 2, modelFingerprint(params)}).isOk());
  std::vector<CheckpointParam> other = {{"w", {2, 2}, w.data(), m.data(), v.data()}};
  EXPECT_NE(modelFingerprint(other), modelFingerprint(params));
  Status s = loadCheckpoint(path, other, modelFingerprint(other), nullptr);
  expectContains(s, "ck.safetensors");
  expectContains(s, "fingerprint");
  // Without a fingerprint check the shape check still catches it.
  expectContains(loadCheckpoint(path, other, "", nullptr),
                 "tensor 'w' has shape [4], expected [2, 2]");
}

TEST(SafetensorsTest, JsonParsesEscapesNumbersAndRejectsGarbage) {
  auto v = parseJson(" {\"a\": [1, -2, 3.5e2, true, null], "
                     "\"s\": \"x\\n\\u00e9\\ud83d\\ude00\"} ");
  ASSERT_TRUE(v.isOk()) << v.status().message();
  const JsonValue *a = v->get("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->array.size(), 5u);
  EXPECT_TRUE(a->array[1].isInteger);
  EXPECT_EQ(a->array[1].integer, -2);
  EXPECT_FALSE(a->array[2].isInteger);
  EXPECT_EQ(a->array[2].number, 350.0);
  EXPECT_EQ(v->get("s")->string, "x\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(parseJson(jsonQuote("a\"b\\c\n\x01")).take().string,
            "a\"b\\c\n\x01");
  for (const char *bad : {"{", "{\"a\":1,}", "[01]", "{\"a\":1 \"b\":2}",
                          "\"\\ud800\"", "{\"a\":1,\"a\":2}", "1 2", ""})
    EXPECT_FALSE(parseJson(bad).isOk()) << bad;
}

} // namespace
