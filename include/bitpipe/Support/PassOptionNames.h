//===- PassOptionNames.h - The options a pass takes -------------*- C++ -*-===//
//
// What bitpipe-opt checks a pass's or pipeline's textual options against
// before MLIR parses them, so that a misspelt option gets a "did you mean"
// and the list of valid ones, not only MLIR's "no such option".
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_PASSOPTIONNAMES_H
#define BITPIPE_SUPPORT_PASSOPTIONNAMES_H

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <string>
#include <vector>

namespace bitpipe {

/// Splits textual pass options ("a=1 b={x y} c='p q'") into its entries
/// ("a=1", "b={x y}", "c='p q'"): at spaces outside braces, brackets and
/// quotes, as MLIR's option parser reads them.
inline std::vector<llvm::StringRef> splitPassOptions(llvm::StringRef text) {
  std::vector<llvm::StringRef> entries;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : ' ';
    if (quote) {
      quote = c == quote ? 0 : quote;
      continue;
    }
    if (c == '\'' || c == '"')
      quote = c;
    else if (c == '{' || c == '[')
      ++depth;
    else if ((c == '}' || c == ']') && depth > 0)
      --depth;
    else if (c == ' ' && depth == 0) {
      if (i > start)
        entries.push_back(text.slice(start, i));
      start = i + 1;
    }
  }
  return entries;
}

/// The option names in MLIR's printed form of a pass's or pipeline's
/// options, "{a=1 b=x,y c=}" (PassOptions::print).
inline std::vector<std::string> optionNamesInPrintedForm(llvm::StringRef text) {
  std::vector<std::string> names;
  text = text.trim();
  if (!text.consume_front("{") || !text.consume_back("}"))
    return names;
  for (llvm::StringRef entry : splitPassOptions(text))
    names.push_back(entry.split('=').first.str());
  return names;
}

/// The option names of a pipeline's options struct (PassPipelineOptions),
/// sorted: read from its registry of options, which, unlike its printed
/// form, also holds the list options that are empty.
template <typename Options> std::vector<std::string> optionNamesOf() {
  struct Probe : Options {
    std::vector<std::string> names() const {
      std::vector<std::string> out;
      for (const auto &entry : this->OptionsMap)
        out.push_back(entry.getKey().str());
      std::sort(out.begin(), out.end());
      return out;
    }
  };
  return Probe().names();
}

} // namespace bitpipe

#endif // BITPIPE_SUPPORT_PASSOPTIONNAMES_H
