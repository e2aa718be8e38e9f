//===- Json.cpp - The runtime's JSON reader -------------------------------===//

#include "Json.h"

namespace bitpipe::runtime {

Expected<JsonValue> parseJson(std::string_view text) {
  JsonValue value;
  json::JsonError error;
  if (!json::readJson(text, value, error))
    return Status::error(ErrorCode::FormatError,
                         formatString("JSON: %s at byte %zu",
                                      error.what.c_str(), error.offset));
  return value;
}

} // namespace bitpipe::runtime
