//===- InputLoaderTest.cpp - What bp_rt_load_input fills ------------------===//
//
// The dropout key of a micro-batch: the words [seed low, seed high, g low,
// g high] of the run's seed and the micro-batch's sample group
// g = (s * K + c) * N + m (docs/training-semantics.md), written out here
// from that page for micro-batches, copies and steps; the group its tokens
// are sampled by; and the count it must be asked for.
//
//===----------------------------------------------------------------------===//

#include "InputLoader.h"
#include "Manifest.h"
#include "TempDir.h"
#include "TestManifests.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

using namespace bitpipe::runtime;
using namespace bitpipe::runtime::testing;

namespace {

constexpr uint64_t kSeed = 0x0123456789abcdefULL;

/// A token file for the fake model (vocabulary 32, rows of 8 + 1).
std::string writeTokens(const TempDir &dir) {
  std::vector<uint16_t> tokens(64);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<uint16_t>((7 * i + 3) % 32);
  const std::string path = dir.file("tokens.bin");
  writeBytes(path, tokens.data(), tokens.size() * sizeof(uint16_t));
  return path;
}

TEST(ExecInputLoader, DropoutKeyIsTheSeedAndTheSampleGroup) {
  Expected<Manifest> m = parseManifest(dropoutKeyManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  const uint64_t N = 2, K = 2; // micro-batches per copy, copies
  ASSERT_EQ(m->schedule.microbatches, int64_t(N));
  ASSERT_EQ(m->schedule.dataParallel, int64_t(K));
  TempDir dir;
  auto loader = InputLoader::open(*m, writeTokens(dir), TokenDType::U16, kSeed,
                                  SamplingMode::Random);
  ASSERT_TRUE(loader.isOk()) << loader.status().message();
  // Step 2^31 puts g above 2^32: its high word is 2.
  for (uint64_t step : {uint64_t{0}, uint64_t{1}, uint64_t{1} << 31})
    for (uint64_t copy = 0; copy < K; ++copy)
      for (uint64_t mb = 0; mb < N; ++mb) {
        const uint64_t g = (step * K + copy) * N + mb;
        int32_t words[4] = {-1, -1, -1, -1};
        Status s = (*loader)->load(
            static_cast<int64_t>(step), static_cast<int>(copy),
            static_cast<int64_t>(mb), InputKind::DropoutKey, words, 4);
        ASSERT_TRUE(s.isOk()) << s.message();
        EXPECT_EQ(words[0], static_cast<int32_t>(0x89abcdefu));
        EXPECT_EQ(words[1], 0x01234567);
        EXPECT_EQ(static_cast<uint32_t>(words[2]), uint32_t(g));
        EXPECT_EQ(static_cast<uint32_t>(words[3]), uint32_t(g >> 32));
        if (step == uint64_t{1} << 31) {
          EXPECT_EQ(words[3], 2);
        }
      }
}

// The key's group is the one the micro-batch's tokens are sampled by: the
// tokens of (step, copy, mb) are the sampler's batch for the key's g.
TEST(ExecInputLoader, DropoutKeyNamesTheGroupOfTheTokens) {
  Expected<Manifest> m = parseManifest(dropoutKeyManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  TempDir dir;
  const std::string path = writeTokens(dir);
  auto loader =
      InputLoader::open(*m, path, TokenDType::U16, kSeed, SamplingMode::Random);
  ASSERT_TRUE(loader.isOk()) << loader.status().message();
  auto data = TokenDataset::open(path, TokenDType::U16, m->model.vocab);
  ASSERT_TRUE(data.isOk()) << data.status().message();
  SamplerConfig config;
  config.batchSize = m->model.microbatchSize;
  config.seqLen = m->model.seqLen;
  config.seed = kSeed;
  auto sampler = BatchSampler::create(**data, config);
  ASSERT_TRUE(sampler.isOk()) << sampler.status().message();
  const size_t n = static_cast<size_t>(config.batchSize * config.seqLen);
  for (int64_t step : {0, 1})
    for (int copy : {0, 1})
      for (int64_t mb : {0, 1}) {
        int32_t words[4];
        ASSERT_TRUE((*loader)
                        ->load(step, copy, mb, InputKind::DropoutKey, words, 4)
                        .isOk());
        const uint64_t g = static_cast<uint32_t>(words[2]) |
                           uint64_t{static_cast<uint32_t>(words[3])} << 32;
        std::vector<int32_t> tokens(n), expected(n);
        ASSERT_TRUE((*loader)
                        ->load(step, copy, mb, InputKind::Tokens, tokens.data(),
                               static_cast<int64_t>(n))
                        .isOk());
        ASSERT_TRUE(sampler->gptBatch(g, expected.data(), nullptr).isOk());
        EXPECT_EQ(tokens, expected)
            << "step " << step << " copy " << copy << " mb " << mb;
      }
}

TEST(ExecInputLoader, ADropoutKeyIsFourWords) {
  Expected<Manifest> m = parseManifest(dropoutKeyManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  TempDir dir;
  auto loader = InputLoader::open(*m, writeTokens(dir), TokenDType::U16, kSeed,
                                  SamplingMode::Random);
  ASSERT_TRUE(loader.isOk()) << loader.status().message();
  std::vector<int32_t> out(16, -1);
  // The ids' count is not the key's, nor the key's the ids'.
  for (int64_t count : {3, 5, 16}) {
    Status s =
        (*loader)->load(0, 0, 0, InputKind::DropoutKey, out.data(), count);
    ASSERT_FALSE(s.isOk()) << count;
    EXPECT_NE(s.message().find("load_input of a dropout key of " +
                               std::to_string(count) +
                               " words; a key is 4 int32"),
              std::string::npos)
        << s.message();
  }
  EXPECT_FALSE(
      (*loader)->load(0, 0, 0, InputKind::Tokens, out.data(), 4).isOk());
  // Micro-batches outside the schedule are refused for keys as for ids.
  Status s = (*loader)->load(0, 0, 2, InputKind::DropoutKey, out.data(), 4);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("load_input of micro-batch 2; the schedule has 2"),
            std::string::npos)
      << s.message();
  for (int32_t w : out)
    EXPECT_EQ(w, -1) << "nothing written by a refused call";
}

} // namespace
