//===- Json.h - The runtime's JSON reader and string quoting ----*- C++ -*-===//
//
// The project's JSON reader (bitpipe/base/JsonTree.h) in the runtime's terms: a
// parse error is a Status naming the byte offset. One reader for everything
// the runtime reads as JSON: the compiled program's manifest (exec),
// safetensors headers and trace and metrics files (train), and the tools'.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_JSON_H
#define BITPIPE_RUNTIME_CORE_JSON_H

#include "bitpipe/base/JsonTree.h"
#include "core/Status.h"

#include <string>
#include <string_view>

namespace bitpipe::runtime {

using json::JsonValue;

/// Parses one JSON value; trailing whitespace is allowed, anything else after
/// it is an error. Errors give the byte offset.
Expected<JsonValue> parseJson(std::string_view text);

/// \p s as a quoted JSON string.
inline std::string jsonQuote(std::string_view s) { return json::quote(s); }

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_JSON_H
