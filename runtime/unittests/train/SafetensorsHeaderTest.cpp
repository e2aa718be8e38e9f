//===- SafetensorsHeaderTest.cpp - Hostile safetensors headers ------------===//
//
// What the reader refuses before any data is read, and that a header of
// 200,000 entries opens.
//
//===----------------------------------------------------------------------===//

#include "TempDir.h"
#include "train/Safetensors.h"

#include <gtest/gtest.h>

using namespace bitpipe::runtime;
using bitpipe::runtime::testing::oneFloatTensorsFile;
using bitpipe::runtime::testing::safetensorsBytes;
using bitpipe::runtime::testing::TempDir;
using bitpipe::runtime::testing::writeBytes;

namespace {

Status openStatus(const TempDir &dir, const std::string &header,
                  const std::string &data) {
  std::string path = dir.file("h.safetensors");
  std::string bytes = safetensorsBytes(header, data);
  writeBytes(path, bytes.data(), bytes.size());
  auto r = SafetensorsReader::open(path);
  return r.isOk() ? Status::ok() : r.status();
}

void expectRefused(const Status &s, const std::string &needle) {
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find(needle), std::string::npos)
      << "message: " << s.message() << "\nexpected: " << needle;
}

const std::string kEight(8, '\0');

TEST(SafetensorsHeaderTest, DuplicateTensorNamesAreRefused) {
  TempDir dir;
  expectRefused(
      openStatus(dir,
                 "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
                 "[0,4]},\"w\":{\"dtype\":\"F32\",\"shape\":[1],"
                 "\"data_offsets\":[4,8]}}",
                 kEight),
      "bad header: JSON: duplicate member name \"w\"");
}

TEST(SafetensorsHeaderTest, TrailingGarbageAfterTheHeaderObjectIsRefused) {
  TempDir dir;
  expectRefused(
      openStatus(dir,
                 "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
                 "[0,4]}}  x",
                 kEight),
      "bad header: JSON: unexpected characters after the JSON value");
}

TEST(SafetensorsHeaderTest, OffsetsOutsideTheFileOrOverlappingAreRefused) {
  TempDir dir;
  expectRefused(
      openStatus(dir,
                 "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":"
                 "[4,12]}}",
                 kEight),
      "truncated: tensor 'w' ends at byte 12 of the data, but the file "
      "holds only 8 data bytes");
  expectRefused(
      openStatus(dir,
                 "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
                 "[18446744073709551612,18446744073709551616]}}",
                 kEight),
      "tensor 'w': a data offset is not a non-negative integer");
  expectRefused(
      openStatus(dir,
                 "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":"
                 "[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],"
                 "\"data_offsets\":[4,8]}}",
                 kEight),
      "tensors 'a' and 'b' overlap");
  expectRefused(
      openStatus(dir,
                 "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
                 "[8,4]}}",
                 kEight),
      "tensor 'w': data_offsets begin after they end");
}

TEST(SafetensorsHeaderTest, DeeplyNestedHeaderIsRefused) {
  TempDir dir;
  expectRefused(
      openStatus(dir, "{\"__metadata__\":" + std::string(100000, '['), ""),
      "bad header: JSON: nesting too deep");
}

/// Writes a file of \p n tensors; returns its path.
std::string writeHeaderFile(const TempDir &dir, int n) {
  std::string path = dir.file("n" + std::to_string(n) + ".safetensors");
  std::string bytes = oneFloatTensorsFile(n);
  writeBytes(path, bytes.data(), bytes.size());
  return path;
}

/// Opens \p path and finds each of its \p n tensors by name, as a
/// checkpoint load does.
void expectAllFound(const std::string &path, int n) {
  auto r = SafetensorsReader::open(path);
  ASSERT_TRUE(r.isOk()) << r.status().message();
  EXPECT_EQ((*r)->tensors().size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    ASSERT_NE((*r)->find("t" + std::to_string(i)), nullptr) << "t" << i;
}

// A 200,000-entry header once took over a minute (the duplicate-name check
// scanned the members parsed so far). This test checks that such a header
// opens and every entry is found; how its cost grows with the entry count
// is measured, as a ratio, by bench/safetensors-header (bench/RESULTS.md).
TEST(SafetensorsHeaderTest, LargeHeadersOpenAndEveryEntryIsFound) {
  TempDir dir;
  expectAllFound(writeHeaderFile(dir, 200000), 200000);
}

} // namespace
