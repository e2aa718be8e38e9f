//===- DatasetTest.cpp - Token file, sampler and BERT masking -------------===//

#include "TempDir.h"
#include "bitpipe/runtime.h"
#include "train/MaskedLM.h"
#include "train/TokenDataset.h"

#include <gtest/gtest.h>

#include <set>

using namespace bitpipe::runtime;
using bitpipe::runtime::testing::TempDir;
using bitpipe::runtime::testing::writeBytes;

namespace {

/// A uint16 file whose token at position i is i % modulo.
std::string writeU16(const TempDir &dir, int64_t n, int64_t modulo = 65536) {
  std::vector<uint16_t> t(n);
  for (int64_t i = 0; i < n; ++i)
    t[i] = static_cast<uint16_t>(i % modulo);
  std::string path = dir.file("tokens.bin");
  writeBytes(path, t.data(), t.size() * 2);
  return path;
}

TEST(DatasetTest, ReadsLittleEndianUint16AndUint32) {
  TempDir dir;
  const unsigned char u16[] = {0x01, 0x00, 0x34, 0x12, 0xff, 0xff};
  writeBytes(dir.file("a.bin"), u16, sizeof u16);
  auto d16 = TokenDataset::open(dir.file("a.bin"), TokenDType::U16, 65536);
  ASSERT_TRUE(d16.isOk()) << d16.status().message();
  EXPECT_EQ((*d16)->numTokens(), 3);
  int32_t out[3];
  ASSERT_TRUE((*d16)->read(0, 3, out).isOk());
  EXPECT_EQ(out[0], 1);
  EXPECT_EQ(out[1], 0x1234);
  EXPECT_EQ(out[2], 0xffff);

  const unsigned char u32[] = {0x01, 0x02, 0x03, 0x00, 0x07, 0, 0, 0};
  writeBytes(dir.file("b.bin"), u32, sizeof u32);
  auto d32 = TokenDataset::open(dir.file("b.bin"), TokenDType::U32, 1 << 20);
  ASSERT_TRUE(d32.isOk());
  ASSERT_TRUE((*d32)->read(0, 2, out).isOk());
  EXPECT_EQ(out[0], 0x030201);
  EXPECT_EQ(out[1], 7);
}

TEST(DatasetTest, MissingFileIsNamed) {
  auto d = TokenDataset::open("/nonexistent/tok.bin", TokenDType::U16, 10);
  ASSERT_FALSE(d.isOk());
  EXPECT_EQ(d.status().code(), ErrorCode::NotFound);
  EXPECT_NE(d.status().message().find("/nonexistent/tok.bin"),
            std::string::npos);
}

TEST(DatasetTest, FileSizeMustMatchTheDType) {
  TempDir dir;
  const char bytes[6] = {};
  writeBytes(dir.file("odd.bin"), bytes, 6);
  auto d = TokenDataset::open(dir.file("odd.bin"), TokenDType::U32, 10);
  ASSERT_FALSE(d.isOk());
  EXPECT_NE(d.status().message().find("not a multiple of 4"),
            std::string::npos);
}

TEST(DatasetTest, TooShortFileSaysHowManyTokensItHasAndNeeds) {
  TempDir dir;
  std::string path = writeU16(dir, 5);
  auto d = TokenDataset::open(path, TokenDType::U16, 100);
  ASSERT_TRUE(d.isOk());
  SamplerConfig c;
  c.batchSize = 2;
  c.seqLen = 8;
  auto s = BatchSampler::create(**d, c);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.status().message().find("it has 5 tokens, one sample needs 9"),
            std::string::npos)
      << s.status().message();
}

TEST(DatasetTest, TokenOutsideTheVocabularyIsReported) {
  TempDir dir;
  std::string path = writeU16(dir, 100); // token i at position i
  auto d = TokenDataset::open(path, TokenDType::U16, 50);
  ASSERT_TRUE(d.isOk());
  std::vector<int32_t> out(60);
  Status s = (*d)->read(10, 60, out.data());
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("token 50 at position 50"), std::string::npos)
      << s.message();
  EXPECT_FALSE((*d)->validateAll().isOk());
  EXPECT_TRUE((*d)->read(0, 50, out.data()).isOk());
}

TEST(DatasetTest, GptTargetsAreTheNextTokens) {
  TempDir dir;
  std::string path = writeU16(dir, 10000); // token == position
  auto d = TokenDataset::open(path, TokenDType::U16, 65536);
  ASSERT_TRUE(d.isOk());
  for (SamplingMode mode : {SamplingMode::Random, SamplingMode::Sequential}) {
    SamplerConfig c;
    c.batchSize = 3;
    c.seqLen = 16;
    c.seed = 5;
    c.mode = mode;
    auto s = BatchSampler::create(**d, c);
    ASSERT_TRUE(s.isOk());
    std::vector<int32_t> tok(48), tgt(48);
    ASSERT_TRUE(s->gptBatch(11, tok.data(), tgt.data()).isOk());
    for (int b = 0; b < 3; ++b) {
      int64_t o = s->sampleOffset(11, b);
      EXPECT_LE(o + 17, 10000);
      for (int t = 0; t < 16; ++t) {
        EXPECT_EQ(tok[b * 16 + t], o + t);
        EXPECT_EQ(tgt[b * 16 + t], o + t + 1);
      }
    }
  }
}

TEST(DatasetTest, RandomSamplingIsDeterministicAndDiffersPerMicroBatch) {
  TempDir dir;
  std::string path = writeU16(dir, 1 << 16);
  auto d = TokenDataset::open(path, TokenDType::U16, 65536);
  ASSERT_TRUE(d.isOk());
  SamplerConfig c;
  c.batchSize = 4;
  c.seqLen = 32;
  c.seed = 99;
  auto s1 = BatchSampler::create(**d, c);
  auto s2 = BatchSampler::create(**d, c);
  c.seed = 100;
  auto s3 = BatchSampler::create(**d, c);
  ASSERT_TRUE(s1.isOk() && s2.isOk() && s3.isOk());
  std::set<int64_t> offsets;
  int sameAsOtherSeed = 0;
  for (uint64_t mb = 0; mb < 64; ++mb)
    for (int b = 0; b < 4; ++b) {
      EXPECT_EQ(s1->sampleOffset(mb, b), s2->sampleOffset(mb, b));
      sameAsOtherSeed += s1->sampleOffset(mb, b) == s3->sampleOffset(mb, b);
      offsets.insert(s1->sampleOffset(mb, b));
    }
  // 256 draws from 65504 starts: a collision or two at most.
  EXPECT_GE(offsets.size(), 250u);
  EXPECT_LE(sameAsOtherSeed, 2);
}

TEST(DatasetTest, SequentialWindowsWalkTheFileAndWrap) {
  TempDir dir;
  std::string path = writeU16(dir, 101); // 100 inputs + 1 target: 10 windows
  auto d = TokenDataset::open(path, TokenDType::U16, 65536);
  ASSERT_TRUE(d.isOk());
  SamplerConfig c;
  c.batchSize = 2;
  c.seqLen = 10;
  c.mode = SamplingMode::Sequential;
  auto s = BatchSampler::create(**d, c);
  ASSERT_TRUE(s.isOk());
  EXPECT_EQ(s->sampleOffset(0, 0), 0);
  EXPECT_EQ(s->sampleOffset(0, 1), 10);
  EXPECT_EQ(s->sampleOffset(1, 0), 20);
  EXPECT_EQ(s->sampleOffset(4, 1), 90);
  EXPECT_EQ(s->sampleOffset(5, 0), 0); // the next epoch
}

TEST(DatasetTest, GlobalMicroBatchIndicesAreDistinct) {
  // Steps x data-parallel replicas x micro-batches (both BitPipe directions
  // included in the N of a replica) never share an index.
  std::set<uint64_t> seen;
  for (uint64_t step = 0; step < 5; ++step)
    for (int dp = 0; dp < 3; ++dp)
      for (int mb = 0; mb < 8; ++mb)
        EXPECT_TRUE(seen.insert(globalMicroBatchIndex(step, dp, 3, mb, 8))
                        .second);
  EXPECT_EQ(*seen.rbegin(), 5u * 3 * 8 - 1);
}

TEST(DatasetTest, MaskedLMFollowsThe15PercentAnd801010Rule) {
  const int64_t n = 200000, vocab = 1000;
  std::vector<int32_t> tokens(n), inputs(n), labels(n);
  for (int64_t i = 0; i < n; ++i)
    tokens[i] = static_cast<int32_t>(1 + i % 997); // never 0 (the mask id)
  MaskedLMConfig c;
  c.vocabSize = vocab;
  c.maskTokenId = 0;
  c.seed = 3;
  ASSERT_TRUE(buildMaskedLMBatch(tokens.data(), n, 17, c, inputs.data(),
                                 labels.data())
                  .isOk());
  int64_t selected = 0, masked = 0, kept = 0, replaced = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (labels[i] == BP_IGNORE_INDEX) {
      EXPECT_EQ(inputs[i], tokens[i]);
      continue;
    }
    ++selected;
    EXPECT_EQ(labels[i], tokens[i]);
    if (inputs[i] == 0)
      ++masked;
    else if (inputs[i] == tokens[i])
      ++kept;
    else
      ++replaced;
    EXPECT_LT(inputs[i], vocab);
  }
  EXPECT_NEAR(double(selected) / n, 0.15, 0.005);
  EXPECT_NEAR(double(masked) / selected, 0.80, 0.01);
  // A random replacement may draw the original token (1 in 1000).
  EXPECT_NEAR(double(kept) / selected, 0.10, 0.01);
  EXPECT_NEAR(double(replaced) / selected, 0.10, 0.01);
}

TEST(DatasetTest, MaskedLMIsDeterministicPerMicroBatchAndSkipsSpecials) {
  const int64_t n = 4096;
  std::vector<int32_t> tokens(n), in1(n), lab1(n), in2(n), lab2(n), in3(n),
      lab3(n);
  for (int64_t i = 0; i < n; ++i)
    tokens[i] = static_cast<int32_t>(i % 50);
  MaskedLMConfig c;
  c.vocabSize = 100;
  c.maskTokenId = 99;
  c.seed = 1;
  c.specialTokens = {0, 1};
  ASSERT_TRUE(
      buildMaskedLMBatch(tokens.data(), n, 4, c, in1.data(), lab1.data())
          .isOk());
  ASSERT_TRUE(
      buildMaskedLMBatch(tokens.data(), n, 4, c, in2.data(), lab2.data())
          .isOk());
  ASSERT_TRUE(
      buildMaskedLMBatch(tokens.data(), n, 5, c, in3.data(), lab3.data())
          .isOk());
  EXPECT_EQ(in1, in2);
  EXPECT_EQ(lab1, lab2);
  EXPECT_NE(lab1, lab3);
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] <= 1) {
      EXPECT_EQ(lab1[i], BP_IGNORE_INDEX);
    }
  }
  c.maskTokenId = 100;
  EXPECT_FALSE(
      buildMaskedLMBatch(tokens.data(), n, 4, c, in1.data(), lab1.data())
          .isOk());
}

} // namespace
