//===- CheckedMathTest.cpp - Sizes that cannot wrap -----------------------===//

#include "core/CheckedMath.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

using namespace bitpipe::runtime;

namespace {

TEST(CheckedMathTest, RefusesWhatWrapsAndKeepsTheOutput) {
  uint64_t out = 7;
  EXPECT_TRUE(checkedMul<uint64_t>(1ull << 31, 1ull << 32, &out));
  EXPECT_EQ(out, 1ull << 63);
  out = 7;
  EXPECT_FALSE(checkedMul<uint64_t>(1ull << 32, 1ull << 32, &out));
  EXPECT_EQ(out, 7u);
  EXPECT_FALSE(
      checkedAdd<uint64_t>(std::numeric_limits<uint64_t>::max(), 1, &out));
  EXPECT_EQ(out, 7u);
  int64_t s = 0;
  EXPECT_FALSE(checkedMul<int64_t>(int64_t(1) << 62, 2, &s));
  EXPECT_TRUE(
      checkedAdd<int64_t>(int64_t(1) << 62, (int64_t(1) << 62) - 1, &s));
  EXPECT_EQ(s, std::numeric_limits<int64_t>::max());
}

} // namespace
