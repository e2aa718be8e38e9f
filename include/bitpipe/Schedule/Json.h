//===- Json.h - A small strict JSON reader for the schedule library -*- C++ -*-===//
//
// The schedule library depends on the C++ standard library only
// (docs/architecture.md, "Layers"), so it can use neither llvm::json nor the
// runtime's reader (runtime/lib/core/Json.h, which is built on the runtime's
// Status). This is the library's own reader for the few files it reads
// (cluster descriptions, docs/clusters.md): RFC 8259 values into a plain
// tree, strict (no comments, no trailing commas, no duplicate keys), with
// errors that give the line and column.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SCHEDULE_JSON_H
#define BITPIPE_SCHEDULE_JSON_H

#include "bitpipe/Schedule/Error.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bitpipe::sched {

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  /// Members in file order; the reader rejects duplicate keys.
  std::vector<std::pair<std::string, JsonValue>> object;

  /// The member `key` of an object, or null when absent.
  const JsonValue *get(std::string_view key) const;
  /// "a number", "an object", ...: for messages.
  const char *kindName() const;
  /// The value as JSON text (numbers with up to 17 significant digits), for
  /// messages that quote what the file said.
  std::string str() const;
};

/// Parses one JSON value; whitespace may follow it, nothing else. Errors read
/// "line L, column C: expected ..., got ...".
Result<JsonValue> parseJson(std::string_view text);

} // namespace bitpipe::sched

#endif // BITPIPE_SCHEDULE_JSON_H
