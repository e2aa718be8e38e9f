//===- PassOptionUtil.h - Reading pass options into requests ----*- C++ -*-===//
//
// Options a user leaves out are left to the schedule registry's defaults,
// so a conversion into its request must tell "not given" from a value.
// Numeric options the registry does not own are range-checked here, with
// one message format: "<pass>: option '<name>' must be ..., got <value>".
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_LIB_TRANSFORMS_PASSOPTIONUTIL_H
#define BITPIPE_LIB_TRANSFORMS_PASSOPTIONUTIL_H

#include "mlir/Pass/PassOptions.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <optional>
#include <string>

namespace bitpipe {

/// The option's value when the user gave it, else nullopt. An option parsed
/// from text knows whether it was given; one set from an options struct
/// (a pipeline building its passes) does not, and counts as given when it
/// differs from `unset`, its default.
template <typename T>
std::optional<T> givenValue(const mlir::detail::PassOptions::Option<T> &option,
                            T unset) {
  if (option.hasValue() || option.getValue() != unset)
    return option.getValue();
  return std::nullopt;
}

/// The range a numeric option must lie in: [min, max], or (min, max] when
/// `minExclusive`. Always finite.
struct OptionRange {
  double min;
  bool minExclusive;
  double max;
};

/// Nothing when `value` is finite and within `range`; otherwise the
/// message naming the pass, the option, the value and the range.
inline std::optional<std::string> checkOptionRange(llvm::StringRef pass,
                                                   llvm::StringRef option,
                                                   double value,
                                                   OptionRange range) {
  bool aboveMin = range.minExclusive ? value > range.min : value >= range.min;
  if (std::isfinite(value) && aboveMin && value <= range.max)
    return std::nullopt;
  std::string message;
  llvm::raw_string_ostream os(message);
  os << pass << ": option '" << option << "' must be a finite number in "
     << (range.minExclusive ? "(" : "[") << llvm::format("%.15g", range.min)
     << ", " << llvm::format("%.15g", range.max) << "], got "
     << llvm::format("%.15g", value);
  return message;
}

} // namespace bitpipe

#endif // BITPIPE_LIB_TRANSFORMS_PASSOPTIONUTIL_H
