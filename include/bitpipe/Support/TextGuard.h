//===- TextGuard.h - Refusing text the parsers cannot survive ---*- C++ -*-===//
//
// Two inputs that no model config or IR file contains bring LLVM 19's
// parsers down before they can say anything: nesting (llvm::json::parse
// and MLIR's attribute, type and region parsers recurse once per level, so
// 100,000 '[' overflow the stack) and very long integer literals (MLIR
// converts a literal into an APInt before checking its width, in time
// quadratic in its digits: 20,000 digits take 10 s, 60,000 over 100 s;
// a shape of 80,000 dimensions takes over 10 s for the same reason).
// Every tool that hands user text to one of those parsers first scans it
// here, linearly, skipping strings (and MLIR's comments), and refuses it
// with the offset of the first excess (docs/robustness.md, "Limits").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_TEXTGUARD_H
#define BITPIPE_SUPPORT_TEXTGUARD_H

#include "llvm/ADT/StringRef.h"

#include <cctype>
#include <cstddef>
#include <optional>
#include <string>

namespace bitpipe {

enum class TextSyntax { Json, Mlir };

/// Far deeper than any config (Hugging Face's nest 3 levels) or IR (a
/// stage function nests a handful of regions and attributes).
constexpr int kMaxTextNesting = 100;
/// Far longer than any integer a model needs (an int64 has 19 digits, a
/// 128-bit hexadecimal constant 34 characters).
constexpr size_t kMaxIntegerLiteralDigits = 100;
/// Far longer than any name or shape (a 16-dimensional shape of 7-digit
/// sizes has about 130 characters).
constexpr size_t kMaxWordLength = 1000;

/// What the scan found: where, and what, in words.
struct TextExcess {
  size_t offset;
  std::string what;
};

/// The first place where `text` nests brackets deeper than
/// kMaxTextNesting, or (MLIR) writes an integer literal longer than
/// kMaxIntegerLiteralDigits digits or a name, number or shape longer than
/// kMaxWordLength characters; nothing when there is none.
inline std::optional<TextExcess> findTextExcess(llvm::StringRef text,
                                                TextSyntax syntax) {
  const bool mlir = syntax == TextSyntax::Mlir;
  // What a name, number or shape is made of, and what may start a name.
  auto isRunChar = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' ||
           c == '$' || c == '.';
  };
  auto isPrefixChar = [](char c) {
    return c == '%' || c == '#' || c == '@' || c == '^' || c == '!';
  };
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') { // A string: nothing in it nests or is a number.
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i; // The escaped character cannot end the string.
      continue;
    }
    if (mlir && c == '/' && i + 1 < text.size() && text[i + 1] == '/') {
      size_t eol = text.find('\n', i);
      i = eol == llvm::StringRef::npos ? text.size() : eol;
      continue;
    }
    bool opens = c == '[' || c == '{' || (mlir && (c == '(' || c == '<'));
    bool closes = c == ']' || c == '}' || (mlir && (c == ')' || c == '>'));
    if (mlir && c == '>' && i > 0 && text[i - 1] == '-')
      closes = false; // "->" of a function type closes nothing.
    if (opens && ++depth > kMaxTextNesting)
      return TextExcess{i, "brackets nested deeper than " +
                               std::to_string(kMaxTextNesting) + " levels"};
    if (closes && depth > 0)
      --depth;
    // A word: a name, a number, a shape such as 4x8xf32. MLIR re-lexes a
    // shape's remainder once per dimension, in time quadratic in its length.
    if (mlir && isRunChar(c)) {
      size_t end = i;
      while (end < text.size() && isRunChar(text[end]))
        ++end;
      // An integer literal starts a token; digits inside a word (%arg12,
      // the 8 of 4x8xf32, f32) are not parsed as one.
      if (std::isdigit(static_cast<unsigned char>(c)) &&
          (i == 0 || !isPrefixChar(text[i - 1]))) {
        bool hex = c == '0' && i + 1 < end &&
                   (text[i + 1] == 'x' || text[i + 1] == 'X');
        size_t digits = hex ? i + 2 : i;
        while (digits < end &&
               (hex ? std::isxdigit(static_cast<unsigned char>(text[digits]))
                    : std::isdigit(static_cast<unsigned char>(text[digits]))))
          ++digits;
        if (digits - i > kMaxIntegerLiteralDigits)
          return TextExcess{i, "an integer literal of " +
                                   std::to_string(digits - i) +
                                   " characters (at most " +
                                   std::to_string(kMaxIntegerLiteralDigits) +
                                   ")"};
      }
      if (end - i > kMaxWordLength)
        return TextExcess{i, "a name, number or shape of " +
                                 std::to_string(end - i) +
                                 " characters (at most " +
                                 std::to_string(kMaxWordLength) + ")"};
      i = end - 1;
    }
  }
  return std::nullopt;
}

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_TEXTGUARD_H
