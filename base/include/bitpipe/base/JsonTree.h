//===- JsonTree.h - The project's JSON reader -------------------*- C++ -*-===//
//
// A strict RFC 8259 parser into a plain tree (no comments, no trailing
// commas, no duplicate member names), and string quoting for the writers.
// The one reader for everything read as JSON outside the compiler's LLVM
// code: the compiled program's manifest, safetensors headers, traces and
// metrics (the runtime, through runtime/lib/core/Json.h), and cluster
// descriptions and traces read back (the schedule library,
// docs/clusters.md). Part of the base library, which depends on nothing:
// the runtime links it into every generated executable, and the schedule
// library depends on the standard library and the base library only
// (docs/architecture.md). Integers are kept exactly (int64)
// besides their double value, since safetensors byte offsets may exceed
// 2^53 in principle.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_JSONTREE_H
#define BITPIPE_BASE_JSONTREE_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitpipe::json {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  bool isInteger = false; // number has no fraction/exponent and fits int64
  int64_t integer = 0;
  std::string string;
  std::vector<JsonValue> array;
  /// Members in file order (duplicates are rejected by the parser).
  std::vector<std::pair<std::string, JsonValue>> object;

  /// The member \p key of an object, or null.
  const JsonValue *get(std::string_view key) const;
  /// "a number", "an object", ...: for messages.
  const char *kindName() const;
  /// The value as JSON text (numbers with up to 17 significant digits), for
  /// messages that quote what a file said.
  std::string str() const;
};

/// Why a text is not JSON: what was wrong, and the byte offset where.
struct JsonError {
  std::string what;
  size_t offset = 0;
};

/// Parses one JSON value into \p out; trailing whitespace is allowed,
/// anything else after it is an error. False, with \p error, on bad input.
bool readJson(std::string_view text, JsonValue &out, JsonError &error);

/// The 1-based line and column of byte \p offset of \p text.
std::pair<size_t, size_t> lineAndColumn(std::string_view text, size_t offset);

/// \p s as a quoted JSON string.
std::string quote(std::string_view s);

} // namespace bitpipe::json

#endif // BITPIPE_BASE_JSONTREE_H
