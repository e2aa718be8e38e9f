//===- InputStagingTest.cpp - A step's inputs in one block sized up front -===//

#include "InputStaging.h"
#include "Manifest.h"
#include "TestManifests.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;
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
      std::optional<size_t> at = staging.take(bytes);
      ASSERT_TRUE(at) << "input " << i;
      EXPECT_EQ(*at, expected);
      EXPECT_EQ(*at % InputStaging::kAlignment, 0u);
      expected += perInput;
    }
    EXPECT_FALSE(staging.take(1)) << "the block is full";
  }
  EXPECT_EQ(staging.growths(), 0);
}

TEST(ExecInputStaging, GrowsWhenAStepNeedsMoreAndCountsIt) {
  InputStaging staging(128);
  EXPECT_EQ(*staging.take(100), 0u);
  EXPECT_FALSE(staging.take(100));
  EXPECT_EQ(staging.grow(100), 256u);
  EXPECT_EQ(staging.growths(), 1);
  EXPECT_EQ(*staging.take(100), 0u) << "the new block starts again";
  EXPECT_EQ(staging.grow(1000), 1024u) << "at least what was asked";
}

} // namespace
