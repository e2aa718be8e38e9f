//===- DiagnosticText.h - How diagnostics spell values ---------*- C++ -*-===//
//
// Lists and type lists, spelled one way in every pass's diagnostics:
// "[0, 3]", "["a", "b"]", "(tensor<2xf32>, tensor<4xf32>)".
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_SUPPORT_DIAGNOSTICTEXT_H
#define BITPIPE_SUPPORT_DIAGNOSTICTEXT_H

#include "mlir/IR/TypeRange.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace bitpipe::detail {

/// "[0, 3]": any range of streamable values.
template <typename Range> std::string formatList(const Range &values) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "[";
  llvm::interleaveComma(values, os);
  os << "]";
  return text;
}

/// "["a", "b"]".
inline std::string quotedList(llvm::ArrayRef<std::string> names) {
  std::string text = "[";
  for (auto [i, name] : llvm::enumerate(names))
    text += (i ? ", \"" : "\"") + name + "\"";
  return text + "]";
}

/// "(tensor<2xf32>, tensor<4xf32>)".
inline std::string formatTypes(mlir::TypeRange types) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "(";
  llvm::interleaveComma(types, os);
  os << ")";
  return text;
}

} // namespace bitpipe::detail

#endif // BITPIPE_SUPPORT_DIAGNOSTICTEXT_H
