//===- BpeTokenizer.cpp - Hugging Face byte-level BPE, for token files ----===//

#include "train/BpeTokenizer.h"

#include "bitpipe/base/JsonTree.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace bitpipe::runtime {

namespace {

using json::JsonValue;

/// GPT-2's printable stand-in for byte \p b, as UTF-8: itself for the
/// printable Latin-1 bytes, else U+0100 + its place among the others. Made
/// once: every byte of the text is mapped.
const std::string &byteCharacter(unsigned char b) {
  static const std::vector<std::string> table = [] {
    auto printable = [](int c) {
      return (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
    };
    std::vector<std::string> t(256);
    int others = 0;
    for (int c = 0; c < 256; ++c) {
      int cp = printable(c) ? c : 256 + others++;
      if (cp < 0x80) {
        t[c] += static_cast<char>(cp);
      } else {
        t[c] += static_cast<char>(0xC0 | (cp >> 6));
        t[c] += static_cast<char>(0x80 | (cp & 0x3F));
      }
    }
    return t;
  }();
  return table[b];
}

/// One character of the text: its code point (or, for a byte that is no
/// UTF-8, the byte) and its bytes.
struct Char {
  uint32_t cp;
  size_t begin, end;
};

std::vector<Char> decodeUtf8(std::string_view text) {
  std::vector<Char> chars;
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    int n = c < 0x80         ? 1
            : (c >> 5) == 6  ? 2
            : (c >> 4) == 14 ? 3
            : (c >> 3) == 30 ? 4
                             : 0;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1F : n == 3 ? c & 0x0F : c & 7;
    bool valid = n > 0 && i + n <= text.size();
    for (int k = 1; valid && k < n; ++k) {
      unsigned char d = static_cast<unsigned char>(text[i + k]);
      valid = (d >> 6) == 2;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (!valid) { // the byte alone, as an "other" character
      chars.push_back({0xFFFFFFFFu, i, i + 1});
      ++i;
      continue;
    }
    chars.push_back({cp, i, i + n});
    i += n;
  }
  return chars;
}

bool in(uint32_t cp, uint32_t lo, uint32_t hi) { return cp >= lo && cp <= hi; }

/// Unicode's White_Space.
bool isSpace(uint32_t cp) {
  return in(cp, 9, 13) || cp == 32 || cp == 0x85 || cp == 0xA0 ||
         cp == 0x1680 || in(cp, 0x2000, 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/// \p{N}: exact below U+0100; above, the common digit and number blocks.
bool isNumber(uint32_t cp) {
  if (cp < 0x100)
    return in(cp, '0', '9') || cp == 0xB2 || cp == 0xB3 || cp == 0xB9 ||
           in(cp, 0xBC, 0xBE);
  return in(cp, 0x0660, 0x0669) || in(cp, 0x06F0, 0x06F9) ||
         in(cp, 0x0966, 0x096F) || in(cp, 0x2070, 0x2079) ||
         in(cp, 0x2080, 0x2089) || in(cp, 0x2150, 0x2189) ||
         in(cp, 0x2460, 0x249B) || cp == 0x3007 || in(cp, 0x3021, 0x3029) ||
         in(cp, 0xFF10, 0xFF19);
}

/// \p{L}: exact below U+0100; above, any character that is no space or
/// number and not in the combining, punctuation, symbol, private-use or
/// emoji blocks below (the approximation BpeTokenizer.h states).
bool isLetter(uint32_t cp) {
  if (cp == 0xFFFFFFFFu) // a byte that is no UTF-8
    return false;
  if (cp < 0x100)
    return in(cp, 'A', 'Z') || in(cp, 'a', 'z') || cp == 0xAA || cp == 0xB5 ||
           cp == 0xBA || in(cp, 0xC0, 0xD6) || in(cp, 0xD8, 0xF6) || cp >= 0xF8;
  if (isSpace(cp) || isNumber(cp))
    return false;
  static const uint32_t notLetters[][2] = {
      {0x02C2, 0x02C5}, {0x02D2, 0x02DF}, {0x0300, 0x036F},  {0x2000, 0x206F},
      {0x20A0, 0x20FF}, {0x2100, 0x214F}, {0x2190, 0x2BFF},  {0x3000, 0x3004},
      {0x3008, 0x3020}, {0x3030, 0x3030}, {0x303D, 0x303F},  {0xE000, 0xF8FF},
      {0xFE00, 0xFE0F}, {0xFE30, 0xFE4F}, {0xFF01, 0xFF0F},  {0xFF1A, 0xFF20},
      {0xFF3B, 0xFF40}, {0xFF5B, 0xFF65}, {0x1F000, 0x1FAFF}};
  for (const auto &range : notLetters)
    if (in(cp, range[0], range[1]))
      return false;
  return true;
}

/// GPT-2's pattern: the pieces of \p chars, as [begin, end) character
/// indices, in order.
///   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
std::vector<std::pair<size_t, size_t>>
splitGpt2(const std::vector<Char> &chars) {
  std::vector<std::pair<size_t, size_t>> pieces;
  const size_t n = chars.size();
  auto cp = [&](size_t i) { return i < n ? chars[i].cp : 0xFFFFFFFEu; };
  auto other = [&](size_t i) {
    return i < n && !isSpace(cp(i)) && !isLetter(cp(i)) && !isNumber(cp(i));
  };
  size_t i = 0;
  while (i < n) {
    // The contractions.
    if (cp(i) == '\'') {
      static const char *suffixes[] = {"s", "t", "re", "ve", "m", "ll", "d"};
      size_t matched = 0;
      for (const char *s : suffixes) {
        size_t k = 0;
        while (s[k] && cp(i + 1 + k) == static_cast<uint32_t>(s[k]))
          ++k;
        if (!s[k]) {
          matched = 1 + k;
          break;
        }
      }
      if (matched) {
        pieces.push_back({i, i + matched});
        i += matched;
        continue;
      }
    }
    // A run of one class, after at most one space.
    size_t start = i, j = i + (cp(i) == ' ' ? 1 : 0);
    size_t end = j;
    if (isLetter(cp(j)))
      while (isLetter(cp(end)))
        ++end;
    else if (isNumber(cp(j)))
      while (isNumber(cp(end)))
        ++end;
    else if (other(j))
      while (other(end))
        ++end;
    if (end > j) {
      pieces.push_back({start, end});
      i = end;
      continue;
    }
    // White space: all of a run that ends the text or is followed by more
    // white space; before anything else, all but its last character (which
    // goes with what follows), or the one character alone.
    end = i;
    while (end < n && isSpace(cp(end)))
      ++end;
    if (end < n && end - i > 1)
      --end;
    pieces.push_back({i, end});
    i = end;
  }
  return pieces;
}

Status bad(const std::string &path, const std::string &what) {
  return Status::error(ErrorCode::FormatError, path + ": " + what);
}

} // namespace

Expected<BpeTokenizer> BpeTokenizer::load(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(ErrorCode::IoError, path + ": cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  JsonValue root;
  json::JsonError error;
  if (!json::readJson(text, root, error)) {
    auto [line, column] = json::lineAndColumn(text, error.offset);
    return bad(path, formatString("line %zu, column %zu: %s", line, column,
                                  error.what.c_str()));
  }
  const char *kind =
      "bitpipe-tokenize reads byte-level BPE (GPT-2's kind: model \"BPE\" "
      "after a \"ByteLevel\" pre-tokenizer; docs/data.md)";
  const JsonValue *model = root.get("model");
  if (root.kind != JsonValue::Kind::Object || !model ||
      model->kind != JsonValue::Kind::Object)
    return bad(path, "no \"model\" object: not a tokenizer.json of Hugging "
                     "Face's tokenizers");
  const JsonValue *type = model->get("type");
  if (!type || type->kind != JsonValue::Kind::String || type->string != "BPE")
    return bad(path, "model.type is " +
                         (type ? type->str() : std::string("missing")) + "; " +
                         kind);
  // Options that change the algorithm: refused rather than ignored.
  auto mustBeAbsent = [&](const char *field) -> Status {
    const JsonValue *v = model->get(field);
    bool absent = !v || v->kind == JsonValue::Kind::Null ||
                  (v->kind == JsonValue::Kind::String && v->string.empty()) ||
                  (v->kind == JsonValue::Kind::Bool && !v->boolean);
    return absent ? Status::ok()
                  : bad(path, std::string("model.") + field + " is " +
                                  v->str() + "; " + kind + ", which has none");
  };
  for (const char *field : {"dropout", "continuing_subword_prefix",
                            "end_of_word_suffix", "byte_fallback"})
    BP_TRY(mustBeAbsent(field));
  if (const JsonValue *n = root.get("normalizer");
      n && n->kind != JsonValue::Kind::Null) {
    const JsonValue *type = n->get("type");
    return bad(path,
               "normalizer" +
                   (type ? ".type is " + type->str() : " is " + n->str()) +
                   "; " + kind + ", which has no normaliser");
  }

  BpeTokenizer t;
  t.path_ = path;
  bool useRegex = true;
  const JsonValue *pre = root.get("pre_tokenizer");
  const JsonValue *preType = pre ? pre->get("type") : nullptr;
  if (!preType || preType->kind != JsonValue::Kind::String ||
      preType->string != "ByteLevel")
    return bad(path, "pre_tokenizer.type is " +
                         (preType ? preType->str() : std::string("missing")) +
                         "; " + kind);
  if (const JsonValue *v = pre->get("add_prefix_space"))
    t.addPrefixSpace_ = v->kind == JsonValue::Kind::Bool && v->boolean;
  if (const JsonValue *v = pre->get("use_regex"))
    useRegex = v->kind != JsonValue::Kind::Bool || v->boolean;
  if (!useRegex)
    return bad(path, "pre_tokenizer.use_regex is false; bitpipe-tokenize "
                     "splits with GPT-2's pattern only");
  if (const JsonValue *v = model->get("ignore_merges"))
    t.ignoreMerges_ = v->kind == JsonValue::Kind::Bool && v->boolean;

  const JsonValue *vocab = model->get("vocab");
  if (!vocab || vocab->kind != JsonValue::Kind::Object || vocab->object.empty())
    return bad(path, "model.vocab is not a non-empty object of token: id");
  for (const auto &[token, id] : vocab->object) {
    if (!id.isInteger || id.integer < 0 || id.integer >= (int64_t(1) << 32))
      return bad(path, "model.vocab[" + json::quote(token) + "] is " +
                           id.str() + "; expected an id in [0, 2^32)");
    t.vocab_.emplace(token, id.integer);
    t.vocabSize_ = std::max(t.vocabSize_, id.integer + 1);
  }
  // Every byte must have its token, or some text could not be encoded.
  for (int b = 0; b < 256; ++b)
    if (!t.vocab_.count(byteCharacter(static_cast<unsigned char>(b))))
      return bad(path, formatString("model.vocab has no token for byte %d "
                                    "(%s): not a byte-level vocabulary",
                                    b, json::quote(byteCharacter(b)).c_str()));
  const JsonValue *merges = model->get("merges");
  if (!merges || merges->kind != JsonValue::Kind::Array)
    return bad(path, "model.merges is not an array");
  for (size_t i = 0; i < merges->array.size(); ++i) {
    const JsonValue &m = merges->array[i];
    std::string left, right;
    if (m.kind == JsonValue::Kind::String) {
      size_t space = m.string.find(' ');
      if (space == std::string::npos || space == 0 ||
          space + 1 == m.string.size())
        return bad(path, formatString("model.merges[%zu] is %s; expected "
                                      "\"left right\"",
                                      i, m.str().c_str()));
      left = m.string.substr(0, space);
      right = m.string.substr(space + 1);
    } else if (m.kind == JsonValue::Kind::Array && m.array.size() == 2 &&
               m.array[0].kind == JsonValue::Kind::String &&
               m.array[1].kind == JsonValue::Kind::String) {
      left = m.array[0].string;
      right = m.array[1].string;
    } else {
      return bad(path, formatString("model.merges[%zu] is %s; expected "
                                    "\"left right\" or [\"left\", \"right\"]",
                                    i, m.str().c_str()));
    }
    // The first occurrence of a pair is its rank, as in tokenizers.
    t.mergeRank_.emplace(left + '\x01' + right, static_cast<int>(i));
  }
  if (const JsonValue *added = root.get("added_tokens");
      added && added->kind == JsonValue::Kind::Array)
    for (const JsonValue &a : added->array)
      if (const JsonValue *id = a.get("id"); id && id->isInteger)
        t.vocabSize_ = std::max(t.vocabSize_, id->integer + 1);
  return t;
}

Status BpeTokenizer::encodePiece(const std::string &piece,
                                 std::vector<int64_t> &ids) {
  if (auto it = cache_.find(piece); it != cache_.end()) {
    ids.insert(ids.end(), it->second.begin(), it->second.end());
    return Status::ok();
  }
  std::vector<int64_t> out;
  auto whole = vocab_.find(piece);
  if (ignoreMerges_ && whole != vocab_.end()) {
    out.push_back(whole->second);
  } else {
    // One symbol per character (GPT-2's characters are one or two bytes).
    std::vector<std::string> symbols;
    for (size_t i = 0; i < piece.size();) {
      size_t n = (static_cast<unsigned char>(piece[i]) & 0x80) ? 2 : 1;
      symbols.push_back(piece.substr(i, n));
      i += n;
    }
    // The pair of lowest rank, merged wherever it occurs, until none is
    // left.
    while (symbols.size() > 1) {
      int best = -1;
      for (size_t k = 0; k + 1 < symbols.size(); ++k) {
        auto it = mergeRank_.find(symbols[k] + '\x01' + symbols[k + 1]);
        if (it != mergeRank_.end() && (best < 0 || it->second < best))
          best = it->second;
      }
      if (best < 0)
        break;
      std::vector<std::string> merged;
      for (size_t k = 0; k < symbols.size(); ++k) {
        if (k + 1 < symbols.size()) {
          auto it = mergeRank_.find(symbols[k] + '\x01' + symbols[k + 1]);
          if (it != mergeRank_.end() && it->second == best) {
            merged.push_back(symbols[k] + symbols[k + 1]);
            ++k;
            continue;
          }
        }
        merged.push_back(symbols[k]);
      }
      symbols = std::move(merged);
    }
    for (const std::string &s : symbols) {
      auto it = vocab_.find(s);
      if (it == vocab_.end())
        return bad(path_, "the merges make " + json::quote(s) +
                              ", which model.vocab does not hold: the "
                              "merges and the vocabulary disagree");
      out.push_back(it->second);
    }
  }
  ids.insert(ids.end(), out.begin(), out.end());
  cache_.emplace(piece, std::move(out));
  return Status::ok();
}

Status BpeTokenizer::encode(std::string_view text, std::vector<int64_t> &ids) {
  std::string prefixed;
  if (addPrefixSpace_ && !text.empty() && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  std::vector<Char> chars = decodeUtf8(text);
  for (auto [begin, end] : splitGpt2(chars)) {
    std::string piece;
    for (size_t b = chars[begin].begin; b < chars[end - 1].end; ++b)
      piece += byteCharacter(static_cast<unsigned char>(text[b]));
    BP_TRY(encodePiece(piece, ids));
  }
  return Status::ok();
}

} // namespace bitpipe::runtime
