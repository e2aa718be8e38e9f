//===- Json.h - The runtime's JSON reader and string quoting ----*- C++ -*-===//
//
// A strict RFC 8259 parser into a plain tree, and string escaping for the
// writers. One reader for everything the runtime reads as JSON: the
// compiled program's manifest (exec), safetensors headers and trace and
// metrics files (train), and the tools'. In core because none of those
// owns it. No dependency: the runtime links into every generated
// executable. Integers are kept exactly (int64) besides their double value,
// since safetensors byte offsets may exceed 2^53 in principle.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_JSON_H
#define BITPIPE_RUNTIME_CORE_JSON_H

#include "core/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitpipe::runtime {

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
};

/// Parses one JSON value; trailing whitespace is allowed, anything else after
/// it is an error. Errors give the byte offset.
Expected<JsonValue> parseJson(std::string_view text);

/// \p s as a quoted JSON string.
std::string jsonQuote(std::string_view s);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_JSON_H
