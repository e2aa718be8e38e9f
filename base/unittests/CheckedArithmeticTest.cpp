//===- CheckedArithmeticTest.cpp - Sizes and counts that cannot wrap ------===//

#include "bitpipe/base/CheckedArithmetic.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

using namespace bitpipe;

namespace {

TEST(CheckedArithmeticTest, RefusesWhatWrapsAndKeepsTheOutput) {
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

TEST(CheckedArithmeticTest, ProductsAndSumsOfCounts) {
  const int64_t p31 = int64_t(1) << 31, p40 = int64_t(1) << 40,
                p62 = int64_t(1) << 62;
  // 2^62 * 2 is 2^63, one past int64; a zero factor does not rescue a
  // product that already left it, since the factors are taken in order.
  EXPECT_EQ(checkedProduct({p31, p31}), p62);
  EXPECT_EQ(checkedProduct({p62, 2}), std::nullopt);
  EXPECT_EQ(checkedProduct({p62, 2, 0}), std::nullopt);
  EXPECT_EQ(checkedProduct({}), 1);
  std::vector<int64_t> factors = {3, 5, 7};
  EXPECT_EQ(checkedProduct(factors), 105);
  factors.push_back(kMaxCount);
  EXPECT_EQ(checkedProduct(factors), std::nullopt);

  EXPECT_EQ(checkedSum({kMaxCount - 1, 1}), kMaxCount);
  EXPECT_EQ(checkedSum({kMaxCount, 1}), std::nullopt);
  EXPECT_EQ(checkedSum({}), 0);

  EXPECT_EQ(saturatingProduct({p40, p40}), kMaxCount);
  EXPECT_EQ(saturatingProduct({6, 7}), 42);
  EXPECT_EQ(saturatingSum({kMaxCount, kMaxCount}), kMaxCount);
  EXPECT_EQ(saturatingSum({40, 2}), 42);
}

} // namespace
