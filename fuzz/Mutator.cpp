//===- Mutator.cpp - Deterministic seeded mutations of inputs ---*- C++ -*-===//

#include "Mutator.h"

#include <cctype>

using namespace bitpipe::fuzz;

// Tokens every target gets besides its dictionary: the boundaries where
// parsers and size checks break (docs/robustness.md).
static const char *const kCommonTokens[] = {
    "{", "}", "[", "]", "\"", ":", ",", "\\", "\\u0000", "1e400", "-1e400",
    "-1", "0", "-0", "NaN", "nan", "Infinity", "-Infinity", "inf", "1e-400",
    "null", "true", "2147483647", "2147483648", "4294967296",
    "4611686018427387904", "9223372036854775807", "9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "1.5", "0x10"};

Mutator::Mutator(uint64_t seed, std::vector<std::string> seeds,
                 std::vector<std::string> dictionary, size_t maxLength)
    : rng_(seed), seeds_(std::move(seeds)), dictionary_(std::move(dictionary)),
      maxLength_(maxLength) {
  for (const char *t : kCommonTokens)
    dictionary_.push_back(t);
}

// Modulo, not std::uniform_int_distribution, whose algorithm the standard
// leaves to the library: the same seed must give the same inputs anywhere.
uint64_t Mutator::below(uint64_t n) { return rng_() % n; }

const std::string &Mutator::anySeed() { return seeds_[below(seeds_.size())]; }

const std::string &Mutator::anyToken() {
  return dictionary_[below(dictionary_.size())];
}

void Mutator::mutateOnce(std::string &s) {
  size_t size = s.size();
  switch (below(10)) {
  case 0: // flip a bit
    if (size)
      s[below(size)] ^= static_cast<char>(1u << below(8));
    break;
  case 1: // set a byte
    if (size)
      s[below(size)] = static_cast<char>(below(256));
    break;
  case 2: // insert a byte
    s.insert(s.begin() + below(size + 1), static_cast<char>(below(256)));
    break;
  case 3: // delete a range
    if (size)
      s.erase(below(size), 1 + below(16));
    break;
  case 4: { // duplicate a range
    if (!size)
      break;
    size_t at = below(size);
    std::string piece = s.substr(at, 1 + below(64));
    s.insert(below(size + 1), piece);
    break;
  }
  case 5: { // splice: a prefix of this input, a suffix of another seed
    const std::string &other = anySeed();
    s = s.substr(0, below(size + 1)) +
        other.substr(below(other.size() + 1));
    break;
  }
  case 6: // insert a dictionary token
  case 7:
    s.insert(below(size + 1), anyToken());
    break;
  case 8: { // replace a number with a dictionary token
    std::vector<size_t> starts;
    for (size_t i = 0; i < size; ++i)
      if (std::isdigit(static_cast<unsigned char>(s[i])) &&
          (i == 0 || !std::isdigit(static_cast<unsigned char>(s[i - 1]))))
        starts.push_back(i);
    if (starts.empty())
      break;
    size_t begin = starts[below(starts.size())], end = begin;
    while (end < size && (std::isalnum(static_cast<unsigned char>(s[end])) ||
                          s[end] == '.' || s[end] == '-' || s[end] == '+'))
      ++end;
    s.replace(begin, end - begin, anyToken());
    break;
  }
  case 9: { // repeat a short piece of the input or a token: deep nesting
    static const size_t kCounts[] = {10, 100, 1000, 10000, 100000};
    std::string piece = below(2) && size ? s.substr(below(size), 1 + below(8))
                                         : anyToken();
    size_t count = kCounts[below(5)];
    std::string repeated;
    repeated.reserve(piece.size() * count);
    for (size_t i = 0; i < count && repeated.size() < maxLength_; ++i)
      repeated += piece;
    s.insert(below(size + 1), repeated);
    break;
  }
  }
  if (s.size() > maxLength_)
    s.resize(maxLength_);
}

std::string Mutator::next() {
  std::string s = anySeed();
  size_t count = 1 + below(4);
  for (size_t i = 0; i < count; ++i)
    mutateOnce(s);
  return s;
}

static int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

std::vector<std::string> bitpipe::fuzz::parseDictionary(const std::string &text,
                                                        std::string &error) {
  std::vector<std::string> tokens;
  size_t lineNo = 0, pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos)
      eol = text.size();
    std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++lineNo;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#')
      continue;
    size_t open = line.find('"');
    size_t close = line.find_last_of('"');
    if (open == std::string::npos || close == open) {
      error = "line " + std::to_string(lineNo) +
              ": expected \"token\" or name=\"token\"";
      return {};
    }
    std::string token;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] != '\\') {
        token += line[i];
        continue;
      }
      if (i + 1 < close && (line[i + 1] == '\\' || line[i + 1] == '"')) {
        token += line[++i];
      } else if (i + 3 < close && line[i + 1] == 'x' &&
                 hexDigit(line[i + 2]) >= 0 && hexDigit(line[i + 3]) >= 0) {
        token += static_cast<char>(hexDigit(line[i + 2]) * 16 +
                                   hexDigit(line[i + 3]));
        i += 3;
      } else {
        error = "line " + std::to_string(lineNo) +
                ": unknown escape (expected \\\\, \\\" or \\xNN)";
        return {};
      }
    }
    tokens.push_back(token);
  }
  return tokens;
}
