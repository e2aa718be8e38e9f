//===- JsonTree.cpp - The project's JSON reader ---------------------------===//

#include "bitpipe/base/JsonTree.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <unordered_map>

namespace bitpipe::json {

const JsonValue *JsonValue::get(std::string_view key) const {
  for (const auto &member : object)
    if (member.first == key)
      return &member.second;
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

  bool parseDocument(JsonValue &out) {
    bool s = parseValue(out, 0);
    if (!s)
      return false;
    skipSpace();
    if (pos_ != text_.size())
      return error("unexpected characters after the JSON value");
    return true;
  }

private:
  // Nesting bound: headers are two levels deep, manifests a few more; a
  // hostile file (100,000 '[') must be an error, not a stack overflow of
  // this recursive parser.
  static constexpr int kMaxDepth = 64;
  // Objects up to this many members look for a duplicate name by a scan;
  // larger ones (a safetensors header lists every tensor) through a hash
  // set, so parsing stays linear in the text's size.
  static constexpr size_t kLinearDuplicateScan = 16;

  bool error(const std::string &what) {
    error_ = {what, pos_};
    return false;
  }
  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }
  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  bool parseValue(JsonValue &out, int depth) {
    if (depth > kMaxDepth)
      return error("nesting too deep");
    skipSpace();
    if (pos_ >= text_.size())
      return error("unexpected end of input");
    char c = text_[pos_];
    if (c == '{')
      return parseObject(out, depth);
    if (c == '[')
      return parseArray(out, depth);
    if (c == '"') {
      out.kind = JsonValue::Kind::String;
      return parseString(out.string);
    }
    if (consume("true")) {
      out.kind = JsonValue::Kind::Bool;
      out.boolean = true;
      return true;
    }
    if (consume("false")) {
      out.kind = JsonValue::Kind::Bool;
      return true;
    }
    if (consume("null")) {
      out.kind = JsonValue::Kind::Null;
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(out);
    return error("unexpected character");
  }

  bool parseObject(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Object;
    ++pos_; // '{'
    skipSpace();
    if (consume("}"))
      return true;
    // Where each member's name starts, to say where a duplicate's first
    // occurrence is; and, past the linear scan, each name's member index.
    std::vector<size_t> keyOffsets;
    std::unordered_map<std::string, size_t> index;
    for (;;) {
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return error("expected a member name");
      size_t keyStart = pos_;
      std::string key;
      bool s = parseString(key);
      if (!s)
        return false;
      std::optional<size_t> first;
      if (out.object.size() < kLinearDuplicateScan) {
        for (size_t i = 0; i < out.object.size() && !first; ++i)
          if (out.object[i].first == key)
            first = i;
      } else {
        if (index.empty())
          for (size_t i = 0; i < out.object.size(); ++i)
            index.emplace(out.object[i].first, i);
        auto [it, inserted] = index.emplace(key, out.object.size());
        if (!inserted)
          first = it->second;
      }
      if (first) {
        auto [line, column] = lineAndColumn(text_, keyOffsets[*first]);
        pos_ = keyStart;
        return error("duplicate member name " + quote(key) + " (also at line " +
                     std::to_string(line) + ", column " +
                     std::to_string(column) + ")");
      }
      keyOffsets.push_back(keyStart);
      skipSpace();
      if (!consume(":"))
        return error("expected ':'");
      JsonValue v;
      s = parseValue(v, depth + 1);
      if (!s)
        return false;
      out.object.emplace_back(std::move(key), std::move(v));
      skipSpace();
      if (consume("}"))
        return true;
      if (!consume(","))
        return error("expected ',' or '}'");
    }
  }

  bool parseArray(JsonValue &out, int depth) {
    out.kind = JsonValue::Kind::Array;
    ++pos_; // '['
    skipSpace();
    if (consume("]"))
      return true;
    for (;;) {
      JsonValue v;
      bool s = parseValue(v, depth + 1);
      if (!s)
        return false;
      out.array.push_back(std::move(v));
      skipSpace();
      if (consume("]"))
        return true;
      if (!consume(","))
        return error("expected ',' or ']'");
    }
  }

  static void appendUtf8(std::string &s, uint32_t cp) {
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else if (cp < 0x800) {
      s += static_cast<char>(0xc0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      s += static_cast<char>(0xe0 | (cp >> 12));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      s += static_cast<char>(0xf0 | (cp >> 18));
      s += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      s += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      s += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }

  bool hex4(uint32_t &out) {
    if (pos_ + 4 > text_.size())
      return false;
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return false;
    }
    return true;
  }

  /// The length of the well-formed UTF-8 sequence at \p at (2 to 4 bytes:
  /// no overlong form, no UTF-16 surrogate, nothing above U+10FFFF), or 0.
  static size_t utf8SequenceLength(std::string_view text, size_t at) {
    auto byte = [&](size_t i) -> unsigned {
      return at + i < text.size() ? static_cast<unsigned char>(text[at + i])
                                  : 0;
    };
    auto continuation = [&](size_t i) { return (byte(i) & 0xc0) == 0x80; };
    unsigned lead = byte(0);
    if (lead >= 0xc2 && lead <= 0xdf)
      return continuation(1) ? 2 : 0;
    if (lead >= 0xe0 && lead <= 0xef) {
      // E0 needs A0..BF (no overlong), ED needs 80..9F (no surrogate).
      unsigned low = lead == 0xe0 ? 0xa0 : 0x80;
      unsigned high = lead == 0xed ? 0x9f : 0xbf;
      return byte(1) >= low && byte(1) <= high && continuation(2) ? 3 : 0;
    }
    if (lead >= 0xf0 && lead <= 0xf4) {
      // F0 needs 90..BF (no overlong), F4 needs 80..8F (<= U+10FFFF).
      unsigned low = lead == 0xf0 ? 0x90 : 0x80;
      unsigned high = lead == 0xf4 ? 0x8f : 0xbf;
      return byte(1) >= low && byte(1) <= high && continuation(2) &&
                     continuation(3)
                 ? 4
                 : 0;
    }
    return 0;
  }

  bool parseString(std::string &out) {
    ++pos_; // '"'
    for (;;) {
      if (pos_ >= text_.size())
        return error("unterminated string");
      char c = text_[pos_++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return error("control character in a string");
      if (static_cast<unsigned char>(c) >= 0x80) {
        // JSON is UTF-8 (RFC 8259): a byte that starts no well-formed
        // sequence is refused where it stands, as llvm::json refuses it.
        size_t length = utf8SequenceLength(text_, --pos_);
        if (length == 0)
          return error("invalid UTF-8 in a string");
        out.append(text_.substr(pos_, length));
        pos_ += length;
        continue;
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        return error("unterminated escape");
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
        uint32_t cp;
        if (!hex4(cp))
          return error("bad \\u escape");
        // A UTF-16 surrogate pair encodes one code point above U+FFFF.
        if (cp >= 0xd800 && cp < 0xdc00) {
          uint32_t lo;
          if (!consume("\\u") || !hex4(lo) || lo < 0xdc00 || lo >= 0xe000)
            return error("unpaired surrogate");
          cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        } else if (cp >= 0xdc00 && cp < 0xe000) {
          return error("unpaired surrogate");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return error("bad escape");
      }
    }
  }

  bool parseNumber(JsonValue &out) {
    size_t start = pos_;
    bool integral = true;
    if (text_[pos_] == '-')
      ++pos_;
    auto digits = [&] {
      size_t d = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9')
        ++pos_;
      return pos_ - d;
    };
    size_t intStart = pos_;
    size_t n = digits();
    if (n == 0 || (n > 1 && text_[intStart] == '0'))
      return error("bad number");
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (digits() == 0)
        return error("bad number");
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-'))
        ++pos_;
      if (digits() == 0)
        return error("bad number");
    }
    std::string token(text_.substr(start, pos_ - start));
    out.kind = JsonValue::Kind::Number;
    out.number = std::strtod(token.c_str(), nullptr);
    // strtod makes 1e400 infinity, which no field means and every "must be
    // positive" check would let through.
    if (!std::isfinite(out.number)) {
      pos_ = start;
      return error("number " + token +
                   " is beyond the range of a double (about 1.8e308)");
    }
    if (integral) {
      errno = 0;
      long long v = std::strtoll(token.c_str(), nullptr, 10);
      if (errno == 0) {
        out.isInteger = true;
        out.integer = v;
      }
    }
    return true;
  }

public:
  const JsonError &failure() const { return error_; }

private:
  std::string_view text_;
  size_t pos_ = 0;
  JsonError error_;
};

} // namespace

bool readJson(std::string_view text, JsonValue &out, JsonError &error) {
  out = JsonValue();
  Parser p(text);
  if (p.parseDocument(out))
    return true;
  error = p.failure();
  return false;
}

std::pair<size_t, size_t> lineAndColumn(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

} // namespace bitpipe::json
