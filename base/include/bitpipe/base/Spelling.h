//===- Spelling.h - "Did you mean ...?" for a misspelt name -----*- C++ -*-===//
//
// The one rule by which every tool suggests a name for one it does not know
// (a config key, a schedule): the known name closest by edit distance,
// when it is close enough to be a typo of it. Plain C++, so that the
// schedule library and the runtime can use it as the compiler does.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_SPELLING_H
#define BITPIPE_BASE_SPELLING_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bitpipe::base {

/// Levenshtein distance: insertions, deletions and substitutions of bytes.
size_t editDistance(std::string_view a, std::string_view b);

/// The name of \p known closest to \p word, when at most a third of
/// \p word's length (at least 1, at most 3) edits away, and no other known
/// name is as close; nothing otherwise (a guess between two would mislead).
std::optional<std::string> closestName(std::string_view word,
                                       const std::vector<std::string> &known);

/// " (did you mean 'kv_heads'?)", or "" when closestName has nothing.
std::string didYouMean(std::string_view word,
                       const std::vector<std::string> &known);

} // namespace bitpipe::base

#endif // BITPIPE_BASE_SPELLING_H
