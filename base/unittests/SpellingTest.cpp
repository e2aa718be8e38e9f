//===- SpellingTest.cpp - "Did you mean ...?" -----------------------------===//

#include "bitpipe/base/Spelling.h"

#include <gtest/gtest.h>

using namespace bitpipe::base;

namespace {

TEST(SpellingTest, EditDistanceCountsInsertionsDeletionsAndSubstitutions) {
  EXPECT_EQ(editDistance("", ""), 0u);
  EXPECT_EQ(editDistance("kv_head", "kv_heads"), 1u);
  EXPECT_EQ(editDistance("layres", "layers"), 2u);
  EXPECT_EQ(editDistance("chimera", "chimrea"), 2u);
  EXPECT_EQ(editDistance("abc", ""), 3u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
}

TEST(SpellingTest, SuggestsOnlyAClearlyClosestName) {
  const std::vector<std::string> keys = {"layers", "heads", "kv_heads",
                                         "hidden", "vocab"};
  EXPECT_EQ(didYouMean("kv_head", keys), " (did you mean 'kv_heads'?)");
  EXPECT_EQ(didYouMean("layres", keys), " (did you mean 'layers'?)");
  // Too far from every name to be a typo of one.
  EXPECT_EQ(didYouMean("num_layers", keys), "");
  EXPECT_EQ(didYouMean("dropout", keys), "");
  // A known name needs no suggestion.
  EXPECT_EQ(didYouMean("heads", keys), "");
  // Two names equally close: no guess.
  EXPECT_FALSE(closestName("ab", {"ac", "bb"}));
  EXPECT_EQ(closestName("1f1c", {"1f1b", "gpipe", "bitpipe"}), "1f1b");
}

} // namespace
