//===- Crc32cTest.cpp - CRC-32C against published test vectors -----------===//

#include "core/Crc32c.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace bitpipe::runtime;

namespace {

// RFC 3720 (iSCSI), appendix B.4, and the "check" value of the CRC
// catalogue (CRC-32/ISCSI: check = 0xe3069283 for "123456789").
TEST(Crc32cTest, MatchesPublishedVectors) {
  EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
  EXPECT_EQ(crc32c("", 0), 0u);
  std::vector<unsigned char> zeros(32, 0x00), ones(32, 0xff), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<unsigned char>(i);
    down[i] = static_cast<unsigned char>(31 - i);
  }
  EXPECT_EQ(crc32c(zeros.data(), 32), 0x8a9136aau);
  EXPECT_EQ(crc32c(ones.data(), 32), 0x62a8ab43u);
  EXPECT_EQ(crc32c(up.data(), 32), 0x46dd794eu);
  EXPECT_EQ(crc32c(down.data(), 32), 0x113fdb5cu);
}

TEST(Crc32cTest, IsIncrementalAtEveryCut) {
  std::string text = "The quick brown fox jumps over the lazy dog, twice over";
  uint32_t whole = crc32c(text.data(), text.size());
  for (size_t cut = 0; cut <= text.size(); ++cut)
    EXPECT_EQ(
        crc32c(text.data() + cut, text.size() - cut, crc32c(text.data(), cut)),
        whole)
        << "cut at " << cut;
}

TEST(Crc32cTest, EverySingleBitFlipChangesIt) {
  std::vector<unsigned char> data(100);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = static_cast<unsigned char>(i * 7 + 3);
  uint32_t good = crc32c(data.data(), data.size());
  for (size_t i = 0; i < data.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      data[i] ^= static_cast<unsigned char>(1u << bit);
      EXPECT_NE(crc32c(data.data(), data.size()), good) << i << ":" << bit;
      data[i] ^= static_cast<unsigned char>(1u << bit);
    }
}

TEST(Crc32cTest, HexIsEightLowerCaseDigits) {
  EXPECT_EQ(crc32cHex(0xe3069283u), "e3069283");
  EXPECT_EQ(crc32cHex(0x1u), "00000001");
}

} // namespace
