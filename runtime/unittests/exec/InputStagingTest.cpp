//===- InputStagingTest.cpp - A step's inputs in one block sized up front -===//

#include "InputStaging.h"
#include "Manifest.h"
#include "TestManifests.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;
using bitpipe::runtime::testing::dropoutKeyManifest;
using bitpipe::runtime::testing::pipeDpManifest;

namespace {

TEST(ExecInputStaging, HoldsTwoInputsPerMicroBatchOfTheCopy) {
  Expected<Manifest> m = parseManifest(pipeDpManifest());
  ASSERT_TRUE(m.isOk()) << m.status().message();
  const size_t perInput =
      (m->model.microbatchSize * m->model.seqLen * sizeof(int32_t) + 63) / 64 *
      64;
  const size_t capacity = InputStaging::capacityFor(*m);
  EXPECT_EQ(capacity, 2 * m->schedule.microbatches * perInput);

  // A step that loads tokens and labels for every micro-batch fits, every
  // step, without growing.
  InputStaging staging(capacity);
  const size_t bytes = m->model.microbatchSize * m->model.seqLen * 4;
  for (int step = 0; step < 3; ++step) {
    staging.reset();
    size_t expected = 0;
    for (int64_t i = 0; i < 2 * m->schedule.microbatches; ++i) {
      Expected<size_t> at = staging.take(bytes);
      ASSERT_TRUE(at.isOk()) << "input " << i << ": " << at.status().message();
      EXPECT_EQ(*at, expected);
      EXPECT_EQ(*at % InputStaging::kAlignment, 0u);
      expected += perInput;
    }
    EXPECT_FALSE(staging.take(1).isOk()) << "the block is full";
  }
}

// Each forward that takes a dropout key loads one for each micro-batch it
// runs: a 64-byte slice (16 bytes of key) per micro-batch on top of the ids.
TEST(ExecInputStaging,
     HoldsADropoutKeyPerMicroBatchForEachForwardThatTakesOne) {
  Expected<Manifest> plain = parseManifest(pipeDpManifest());
  Expected<Manifest> m = parseManifest(dropoutKeyManifest());
  ASSERT_TRUE(plain.isOk()) << plain.status().message();
  ASSERT_TRUE(m.isOk()) << m.status().message();
  const size_t capacity = InputStaging::capacityFor(*m);
  EXPECT_EQ(capacity, InputStaging::capacityFor(*plain) +
                          m->schedule.microbatches * InputStaging::kAlignment);

  // Tokens, labels and a key for every micro-batch fit, every step.
  InputStaging staging(capacity);
  const size_t ids = m->model.microbatchSize * m->model.seqLen * 4;
  for (int step = 0; step < 2; ++step) {
    staging.reset();
    for (int64_t mb = 0; mb < m->schedule.microbatches; ++mb)
      for (size_t bytes : {ids, ids, size_t{16}}) {
        Expected<size_t> at = staging.take(bytes);
        ASSERT_TRUE(at.isOk())
            << "micro-batch " << mb << ": " << at.status().message();
      }
    EXPECT_FALSE(staging.take(1).isOk()) << "the block is full";
  }
}

// More than the manifest allows is the program's error, said with the
// sizes; never a bigger block (freeing pinned memory waits for the device).
TEST(ExecInputStaging, MoreThanTheManifestAllowsIsAnError) {
  InputStaging staging(128);
  EXPECT_EQ(*staging.take(100), 0u);
  Expected<size_t> full = staging.take(100);
  ASSERT_FALSE(full.isOk());
  EXPECT_NE(full.status().message().find("an input of 100 bytes does not fit "
                                         "the 0 bytes of pinned input "
                                         "staging left of 128"),
            std::string::npos)
      << full.status().message();
  staging.reset();
  EXPECT_EQ(*staging.take(100), 0u) << "a new step starts again";
}

} // namespace
