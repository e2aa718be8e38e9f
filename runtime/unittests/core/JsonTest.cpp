//===- JsonTest.cpp - The runtime's JSON reader on hostile input ----------===//

#include "core/Json.h"

#include <gtest/gtest.h>

#include <string>

using namespace bitpipe::runtime;

namespace {

void expectError(const std::string &text, const std::string &needle) {
  Expected<JsonValue> v = parseJson(text);
  ASSERT_FALSE(v.isOk()) << text.substr(0, 80);
  EXPECT_NE(v.status().message().find(needle), std::string::npos)
      << "message: " << v.status().message() << "\nexpected: " << needle;
}

TEST(JsonTest, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string ok = std::string(60, '[') + std::string(60, ']');
  EXPECT_TRUE(parseJson(ok).isOk());
  // 100,000 levels overflow the stack of a recursive parser without a
  // bound.
  expectError(std::string(100000, '['), "JSON: nesting too deep at byte 65");
  std::string objects;
  for (int i = 0; i < 100000; ++i)
    objects += "{\"a\":";
  expectError(objects, "nesting too deep");
}

TEST(JsonTest, TrailingGarbageIsRefused) {
  expectError("{} x", "JSON: unexpected characters after the JSON value at "
                      "byte 3");
  expectError(std::string("{}\0", 3),
              "unexpected characters after the JSON value");
  EXPECT_TRUE(parseJson("{}  \n\t ").isOk());
}

TEST(JsonTest, NumbersBeyondADoubleAreRefusedNotInfinite) {
  expectError("{\"x\": 1e400}",
              "JSON: number 1e400 is beyond the range of a double (about "
              "1.8e308) at byte 6");
  expectError("[-2e308]", "number -2e308 is beyond the range of a double");
  Expected<JsonValue> big = parseJson("[1.7e308, 1e-400]");
  ASSERT_TRUE(big.isOk()) << big.status().message();
  EXPECT_EQ(big->array[0].number, 1.7e308);
  EXPECT_EQ(big->array[1].number, 0.0); // underflow rounds, as JSON allows
}

TEST(JsonTest, DuplicateNamesAreRefusedInSmallAndLargeObjects) {
  // The error is at the second name and names the first's place too.
  expectError("{\"a\":1,\"a\":2}",
              "JSON: duplicate member name \"a\" (also at line 1, column 2) "
              "at byte 7");
  expectError("{\n \"a\": 1,\n \"b\": 2,\n \"a\": 3\n}",
              "duplicate member name \"a\" (also at line 2, column 2)");
  // Past the linear scan (16 members) the hash set must catch it too,
  // whether the first copy came before or after the switch.
  for (int dupOf : {0, 5, 20, 39}) {
    std::string text = "{";
    for (int i = 0; i < 40; ++i)
      text += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
    text += "\"k" + std::to_string(dupOf) + "\":0}";
    size_t first = text.find("\"k" + std::to_string(dupOf) + "\":");
    expectError(text, "duplicate member name \"k" + std::to_string(dupOf) +
                          "\" (also at line 1, column " +
                          std::to_string(first + 1) + ")");
  }
  std::string distinct = "{";
  for (int i = 0; i < 40; ++i)
    distinct += std::string(i ? "," : "") + "\"k" + std::to_string(i) +
                "\":" + std::to_string(i);
  Expected<JsonValue> v = parseJson(distinct + "}");
  ASSERT_TRUE(v.isOk()) << v.status().message();
  EXPECT_EQ(v->object.size(), 40u);
  EXPECT_EQ(v->get("k39")->integer, 39);
}

// JSON is UTF-8: every well-formed sequence is kept as it is, and a byte
// that starts none is refused where it stands (as llvm::json refuses it),
// whatever file kind the reader serves.
TEST(JsonTest, StringsAreWellFormedUtf8) {
  Expected<JsonValue> v =
      parseJson("[\"caf\xc3\xa9\", \"\xe2\x82\xac\", \"\xf0\x9f\x98\x80\"]");
  ASSERT_TRUE(v.isOk()) << v.status().message();
  EXPECT_EQ(v->array[0].string, "caf\xc3\xa9");
  EXPECT_EQ(v->array[2].string, "\xf0\x9f\x98\x80");
  expectError("[\"a\xffb\"]", "JSON: invalid UTF-8 in a string at byte 3");
  for (const char *bad : {
           "\x80",             // a continuation byte alone
           "\xc3",             // a lead byte without its continuation
           "\xc0\xaf",         // an overlong '/'
           "\xe0\x80\xaf",     // overlong again, three bytes
           "\xed\xa0\x80",     // a UTF-16 surrogate
           "\xf4\x90\x80\x80", // above U+10FFFF
       })
    expectError(std::string("{\"k\": \"") + bad + "\"}",
                "invalid UTF-8 in a string at byte 7");
}

} // namespace

// The dependency-free API the schedule library reads cluster files with
// (bitpipe/base/JsonTree.h): errors carry the offset, which maps to a line and
// column, and values name their kind and print back for messages.
TEST(JsonTest, TreeApiGivesOffsetsLinesAndValueText) {
  bitpipe::json::JsonValue v;
  bitpipe::json::JsonError error;
  const std::string text = "{\n  \"a\": [1,\n  2 3]\n}";
  ASSERT_FALSE(bitpipe::json::readJson(text, v, error));
  EXPECT_EQ(error.what, "expected ',' or ']'");
  EXPECT_EQ(bitpipe::json::lineAndColumn(text, error.offset),
            (std::pair<size_t, size_t>(3, 5)));
  ASSERT_TRUE(bitpipe::json::readJson(
      "{\"n\": 300e9, \"m\": -1, \"s\": \"x\", \"l\": [], \"o\": {}}", v,
      error));
  EXPECT_EQ(v.get("n")->str(), "300000000000");
  EXPECT_EQ(v.get("m")->str(), "-1");
  EXPECT_EQ(v.get("s")->str(), "\"x\"");
  EXPECT_STREQ(v.get("l")->kindName(), "an array");
  EXPECT_STREQ(v.get("o")->kindName(), "an object");
  EXPECT_STREQ(v.get("n")->kindName(), "a number");
}
