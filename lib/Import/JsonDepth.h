//===- JsonDepth.h - Refusing deeply nested JSON before parsing -*- C++ -*-===//
//
// llvm::json::parse recurses once per nesting level, so a file of 100,000
// '[' overflows the stack. The importer first measures the nesting with a
// linear scan (strings skipped) and refuses input nested deeper than
// kMaxJsonDepth (docs/models.md, "Limits").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_IMPORT_JSONDEPTH_H
#define BITPIPE_LIB_IMPORT_JSONDEPTH_H

#include "llvm/ADT/StringRef.h"

#include <cstddef>
#include <optional>

namespace bitpipe {

/// Far deeper than any model config (Hugging Face's nest 3 levels).
constexpr int kMaxJsonDepth = 100;

/// The byte offset where `text` first opens its (kMaxJsonDepth+1)-th nested
/// array or object, or nothing when it never nests that deep.
inline std::optional<size_t> findExcessiveJsonNesting(llvm::StringRef text) {
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // The escaped character cannot end the string.
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0)
      --depth;
  }
  return std::nullopt;
}

} // namespace bitpipe

#endif // BITPIPE_LIB_IMPORT_JSONDEPTH_H
