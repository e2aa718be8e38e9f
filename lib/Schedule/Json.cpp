//===- Json.cpp - A small strict JSON reader ------------------------------===//
//
// Recursive descent over the text; see Json.h for why the schedule library
// has its own.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/Schedule/Json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace bitpipe::sched {

const JsonValue *JsonValue::get(std::string_view key) const {
  for (const auto &[k, v] : object)
    if (k == key)
      return &v;
  return nullptr;
}

const char *JsonValue::kindName() const {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return "a boolean";
  case Kind::Number:
    return "a number";
  case Kind::String:
    return "a string";
  case Kind::Array:
    return "an array";
  case Kind::Object:
    return "an object";
  }
  return "a value";
}

std::string JsonValue::str() const {
  switch (kind) {
  case Kind::Null:
    return "null";
  case Kind::Bool:
    return boolean ? "true" : "false";
  case Kind::Number: {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", number);
    // The shortest of %.15g..%.17g that reads back exactly, so that 300e9
    // prints as 300000000000 and -1 as -1.
    for (int digits = 15; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, number);
      if (std::strtod(buf, nullptr) == number)
        break;
    }
    return buf;
  }
  case Kind::String:
    return "\"" + string + "\"";
  case Kind::Array:
    return "[...]";
  case Kind::Object:
    return "{...}";
  }
  return "";
}

namespace {

class Parser {
public:
  explicit Parser(std::string_view text) : text_(text) {}

  Result<JsonValue> parseDocument() {
    JsonValue v;
    skipSpace();
    if (!parseValue(v, 0))
      return Result<JsonValue>::failure(error_);
    skipSpace();
    if (pos_ != text_.size()) {
      fail("expected the end of the text after the value");
      return Result<JsonValue>::failure(error_);
    }
    return Result<JsonValue>::success(std::move(v));
  }

private:
  // Deep enough for any configuration file, shallow enough that a hostile
  // one cannot overflow the stack.
  static constexpr int kMaxDepth = 64;

  bool fail(const std::string &what) {
    if (!error_.empty())
      return false;
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string got = pos_ < text_.size()
                          ? "'" + std::string(1, text_[pos_]) + "'"
                          : std::string("the end of the text");
    error_ = "line " + std::to_string(line) + ", column " +
             std::to_string(column) + ": " + what + ", got " + got;
    return false;
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return fail("expected a JSON value");
    pos_ += word.size();
    return true;
  }

  bool parseValue(JsonValue &v, int depth) {
    if (depth > kMaxDepth)
      return fail("expected at most " + std::to_string(kMaxDepth) +
                  " levels of nesting");
    if (pos_ >= text_.size())
      return fail("expected a JSON value");
    char c = text_[pos_];
    switch (c) {
    case '{':
      return parseObject(v, depth);
    case '[':
      return parseArray(v, depth);
    case '"':
      v.kind = JsonValue::Kind::String;
      return parseString(v.string);
    case 't':
      v.kind = JsonValue::Kind::Bool;
      v.boolean = true;
      return literal("true");
    case 'f':
      v.kind = JsonValue::Kind::Bool;
      v.boolean = false;
      return literal("false");
    case 'n':
      v.kind = JsonValue::Kind::Null;
      return literal("null");
    default:
      if (c == '-' || (c >= '0' && c <= '9'))
        return parseNumber(v);
      return fail("expected a JSON value");
    }
  }

  bool parseObject(JsonValue &v, int depth) {
    v.kind = JsonValue::Kind::Object;
    ++pos_; // '{'
    skipSpace();
    if (consume('}'))
      return true;
    while (true) {
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return fail("expected a quoted member name");
      size_t keyPos = pos_;
      std::string key;
      if (!parseString(key))
        return false;
      if (v.get(key)) {
        pos_ = keyPos;
        return fail("expected each member name once, \"" + key +
                    "\" is repeated");
      }
      skipSpace();
      if (!consume(':'))
        return fail("expected ':' after member name \"" + key + "\"");
      skipSpace();
      JsonValue member;
      if (!parseValue(member, depth + 1))
        return false;
      v.object.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (consume('}'))
        return true;
      if (!consume(','))
        return fail("expected ',' or '}' in an object");
    }
  }

  bool parseArray(JsonValue &v, int depth) {
    v.kind = JsonValue::Kind::Array;
    ++pos_; // '['
    skipSpace();
    if (consume(']'))
      return true;
    while (true) {
      skipSpace();
      JsonValue element;
      if (!parseValue(element, depth + 1))
        return false;
      v.array.push_back(std::move(element));
      skipSpace();
      if (consume(']'))
        return true;
      if (!consume(','))
        return fail("expected ',' or ']' in an array");
    }
  }

  static void appendUtf8(std::string &out, unsigned cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool parseHex4(unsigned &cp) {
    cp = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (pos_ >= text_.size())
        return fail("expected four hex digits after \\u");
      char c = text_[pos_];
      unsigned d = c >= '0' && c <= '9'   ? c - '0'
                   : c >= 'a' && c <= 'f' ? c - 'a' + 10
                   : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                          : 16;
      if (d == 16)
        return fail("expected four hex digits after \\u");
      cp = cp * 16 + d;
    }
    return true;
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    while (true) {
      if (pos_ >= text_.size())
        return fail("expected a closing '\"'");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c < 0x20)
        return fail("expected no control character inside a string");
      if (c != '\\') {
        out += static_cast<char>(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size())
        return fail("expected an escape after '\\'");
      char e = text_[pos_++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned cp;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00) {
          unsigned low;
          if (!consume('\\') || !consume('u') || !parseHex4(low) ||
              low < 0xDC00 || low >= 0xE000)
            return fail("expected a low surrogate \\uDC00-\\uDFFF after a "
                        "high one");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return fail("expected a high surrogate before a low one");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        --pos_;
        return fail("expected one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u");
      }
    }
  }

  bool digits() {
    if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9')
      return fail("expected a digit");
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
      ++pos_;
    return true;
  }

  bool parseNumber(JsonValue &v) {
    size_t start = pos_;
    consume('-');
    if (consume('0')) {
      if (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        return fail("expected no leading zero in a number");
    } else if (!digits()) {
      return false;
    }
    if (consume('.') && !digits())
      return false;
    if (consume('e') || consume('E')) {
      if (!consume('+'))
        consume('-');
      if (!digits())
        return false;
    }
    std::string number(text_.substr(start, pos_ - start));
    v.kind = JsonValue::Kind::Number;
    v.number = std::strtod(number.c_str(), nullptr);
    if (!std::isfinite(v.number)) {
      pos_ = start;
      return fail("expected a number within double range");
    }
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

} // namespace

Result<JsonValue> parseJson(std::string_view text) {
  return Parser(text).parseDocument();
}

} // namespace bitpipe::sched
