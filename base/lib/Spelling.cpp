//===- Spelling.cpp - "Did you mean ...?" for a misspelt name -------------===//

#include "bitpipe/base/Spelling.h"

#include <algorithm>

namespace bitpipe::base {

size_t editDistance(std::string_view a, std::string_view b) {
  // One row of the dynamic program at a time.
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::optional<std::string> closestName(std::string_view word,
                                       const std::vector<std::string> &known) {
  const size_t allowed = std::clamp<size_t>(word.size() / 3, 1, 3);
  std::optional<std::string> best;
  size_t bestDistance = allowed + 1;
  bool tied = false;
  for (const std::string &name : known) {
    size_t d = editDistance(word, name);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
      tied = false;
    } else if (d == bestDistance) {
      tied = true;
    }
  }
  if (tied || bestDistance == 0)
    return std::nullopt;
  return best;
}

std::string didYouMean(std::string_view word,
                       const std::vector<std::string> &known) {
  std::optional<std::string> name = closestName(word, known);
  return name ? " (did you mean '" + *name + "'?)" : "";
}

} // namespace bitpipe::base
