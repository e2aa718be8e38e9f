//===- SafetensorsHeaderTest.cpp - Hostile safetensors headers ------------===//
//
// What the reader refuses before any data is read, and that reading a
// header costs time linear in its size.
//
//===----------------------------------------------------------------------===//

#include "TempDir.h"
#include "train/Safetensors.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

using namespace bitpipe::runtime;
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

/// A header of \p n one-float tensors and its data.
std::string headerFile(int n) {
  std::string header = "{";
  for (int i = 0; i < n; ++i)
    header += (i ? ",\"t" : "\"t") + std::to_string(i) +
              "\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[" +
              std::to_string(4 * i) + "," + std::to_string(4 * i + 4) + "]}";
  header += "}";
  return safetensorsBytes(header, std::string(4 * static_cast<size_t>(n), '\0'));
}

/// Writes a file of \p n tensors; returns its path.
std::string writeHeaderFile(const TempDir &dir, int n) {
  std::string path = dir.file("n" + std::to_string(n) + ".safetensors");
  std::string bytes = headerFile(n);
  writeBytes(path, bytes.data(), bytes.size());
  return path;
}

/// Seconds to open \p path and look up its \p n tensors by name, as a
/// checkpoint load does.
double openSeconds(const std::string &path, int n) {
  auto start = std::chrono::steady_clock::now();
  auto r = SafetensorsReader::open(path);
  bool found = r.isOk();
  for (int i = 0; found && i < n; ++i)
    found = (*r)->find("t" + std::to_string(i)) != nullptr;
  auto end = std::chrono::steady_clock::now();
  EXPECT_TRUE(found) << (r.isOk() ? "a tensor is missing"
                                  : r.status().message());
  return std::chrono::duration<double>(end - start).count();
}

// A 200,000-entry header took over a minute when duplicate names were found
// by scanning the members parsed so far (quadratic: 200,000 entries took
// 116x as long as 20,000). Linear parsing makes 10x the entries cost 10x
// the time, up to about 30x on a loaded machine where the small header
// still fits in the caches and the large one does not; 45x leaves room for
// that and still fails any quadratic step. The two sizes alternate, and
// each keeps its fastest of five, so both see the same load.
TEST(SafetensorsHeaderTest, HeaderParsingIsLinearInTheEntryCount) {
  TempDir dir;
  std::string smallPath = writeHeaderFile(dir, 20000);
  std::string largePath = writeHeaderFile(dir, 200000);
  double small = 1e30, large = 1e30;
  for (int trial = 0; trial < 5; ++trial) {
    small = std::min(small, openSeconds(smallPath, 20000));
    large = std::min(large, openSeconds(largePath, 200000));
  }
  std::printf("20,000 entries: %.4f s, 200,000: %.4f s, ratio %.1f\n", small,
              large, large / small);
  EXPECT_LT(large / small, 45.0);
}

} // namespace
