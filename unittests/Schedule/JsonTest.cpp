//===- JsonTest.cpp - The schedule library's strict JSON reader -----------===//

#include "bitpipe/Schedule/Json.h"

#include <gtest/gtest.h>

using namespace bitpipe::sched;

namespace {

std::string errorOf(const std::string &text) {
  Result<JsonValue> r = parseJson(text);
  EXPECT_FALSE(r) << "accepted: " << text;
  return r.error;
}

} // namespace

TEST(Json, ReadsEveryKindOfValue) {
  Result<JsonValue> r = parseJson(
      " {\"a\": [1, -2.5e3, 0.25], \"b\": {\"c\": \"x\\ny\\u00e9\\ud83d\\ude00\"},"
      " \"t\": true, \"f\": false, \"n\": null}\n");
  ASSERT_TRUE(r) << r.error;
  ASSERT_EQ(r->kind, JsonValue::Kind::Object);
  const JsonValue *a = r->get("a");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->array.size(), 3u);
  EXPECT_EQ(a->array[0].number, 1);
  EXPECT_EQ(a->array[1].number, -2500);
  EXPECT_EQ(a->array[2].number, 0.25);
  EXPECT_EQ(r->get("b")->get("c")->string, "x\ny\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(r->get("t")->boolean);
  EXPECT_EQ(r->get("f")->kind, JsonValue::Kind::Bool);
  EXPECT_FALSE(r->get("f")->boolean);
  EXPECT_EQ(r->get("n")->kind, JsonValue::Kind::Null);
  EXPECT_EQ(r->get("missing"), nullptr);
  // Members keep the file's order.
  EXPECT_EQ(r->object[0].first, "a");
  EXPECT_EQ(r->object[4].first, "n");
}

TEST(Json, QuotesNumbersShortestFirst) {
  EXPECT_EQ(parseJson("300e9")->str(), "300000000000");
  EXPECT_EQ(parseJson("-1")->str(), "-1");
  EXPECT_EQ(parseJson("0.1")->str(), "0.1");
  EXPECT_EQ(parseJson("\"s\"")->str(), "\"s\"");
}

TEST(Json, RejectsWhatRfc8259Rejects) {
  EXPECT_EQ(errorOf("{\"a\": 1,}"),
            "line 1, column 9: expected a quoted member name, got '}'");
  EXPECT_EQ(errorOf("[1, 2,]"), "line 1, column 7: expected a JSON value, got ']'");
  EXPECT_EQ(errorOf("{\"a\": 1,\n \"a\": 2}"),
            "line 2, column 2: expected each member name once, \"a\" is "
            "repeated, got '\"'");
  EXPECT_EQ(errorOf("01"),
            "line 1, column 2: expected no leading zero in a number, got '1'");
  EXPECT_EQ(errorOf("1."), "line 1, column 3: expected a digit, got the end of the text");
  EXPECT_EQ(errorOf("1e999"),
            "line 1, column 1: expected a number within double range, got '1'");
  EXPECT_EQ(errorOf("// c\n1"), "line 1, column 1: expected a JSON value, got '/'");
  EXPECT_EQ(errorOf("\"a\tb\""),
            "line 1, column 3: expected no control character inside a "
            "string, got '\t'");
  EXPECT_EQ(errorOf("\"\\x\""),
            "line 1, column 3: expected one of \\\" \\\\ \\/ \\b \\f \\n \\r "
            "\\t \\u, got 'x'");
  EXPECT_EQ(errorOf("\"\\ud800\""),
            "line 1, column 8: expected a low surrogate \\uDC00-\\uDFFF after "
            "a high one, got '\"'");
  EXPECT_EQ(errorOf("{} x"),
            "line 1, column 4: expected the end of the text after the value, "
            "got 'x'");
  EXPECT_EQ(errorOf("tru"), "line 1, column 1: expected a JSON value, got 't'");
  EXPECT_EQ(errorOf(""), "line 1, column 1: expected a JSON value, got the end of the text");
  EXPECT_EQ(errorOf(std::string(100, '[')),
            "line 1, column 66: expected at most 64 levels of nesting, got '['");
}
